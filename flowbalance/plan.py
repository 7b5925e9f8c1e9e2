"""``plan()``: the library entry point. Applies broker changes, runs the chained stages, verifies, certifies.

Flow: request (remove / add / replace / RF / topics) → pre-check → stage 1 replicas → stage 2 leaders →
stage 3 first followers → verification → metrics before and after → certificate (M*, moves, optimality).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from .errors import InputError, PlanningError
from .metrics import Changes, StateMetrics, byte_counts, compare, disk_max_over_mean, leader_counts, measure, pair_matrix, rack_violations, replica_counts, topic_spread
from .model import ClusterState
from .stages.direct import balance_direct, direct_applies
from .stages.followers import balance_followers
from .stages.leaders import balance_leaders
from .stages.common import share_intervals
from .stages.replicas import balance_replicas
from .stages.disk import DiskResult, balance_disk
from .stages.fewest_bytes import BytesResult, fewest_bytes
from .targets import intervals, min_arrivals, within
from .templates.place import TemplateResult, place_by_templates
from .verify import PlanVerificationError, verify_plan

STAGES = ("replicas", "leaders", "followers")
STRATEGIES = ("flow", "template")
OBJECTIVES = ("moves", "bytes")
BALANCES = ("count", "count+bytes", "bytes")


@dataclass
class Certificate:
    """What the plan proves: the lower bound, the moves made, and whether the moves are optimal (and why)."""

    min_moves: int  # M*: lower bound for count balance
    topic_min_moves: int | None  # Σ over topics of each topic's M* (per-topic balance), when per-topic is on
    lower_bound: int
    moves: int
    proven_optimal: bool
    reason: str
    leader_lower_bound: int
    leader_changes: int
    notes: list[str] = field(default_factory=list)
    disk: "DiskCertificate | None" = None
    bytes_objective: "BytesCertificate | None" = None


@dataclass
class BytesCertificate:
    """``--objective bytes``: the bytes the fewest-moves plan moves, and the proven least for those moves."""

    moves: int  # stage 1's fewest moves
    bytes_moved: int  # the bytes those moves copy (before any disk stage)
    lower_bound: int
    quantum: int  # bytes per cost unit of the size-cost flow (1 = exact)
    exact: bool


@dataclass
class DiskCertificate:
    """``--balance bytes|count+bytes`` (or capacity repair): disk use against the limits, and the bytes gap."""

    balance: str
    tolerance: float
    max_over_mean_before: float
    max_over_mean_after: float
    within_tolerance: bool
    limit_raised: int  # brokers whose limit is their largest partition (it alone is above the tolerance)
    bytes_moved: int
    bytes_lower_bound: int  # no plan with every broker at or under the final disk limits moves fewer bytes
    method: str
    exact: bool


@dataclass
class Plan:
    """A planned reassignment: the new state, what changes, metrics before and after, and the certificate."""

    before: ClusterState  # the current assignment, with the requested broker changes applied
    after: ClusterState
    target_rf: np.ndarray
    movable: np.ndarray
    changes: Changes
    metrics_before: StateMetrics
    metrics_after: StateMetrics
    certificate: Certificate
    stages_run: tuple[str, ...]
    seconds: dict[str, float]
    skipped: bool  # True when the pre-check found nothing to do
    strategy: str = "flow"

    @property
    def is_empty(self) -> bool:
        return len(self.changes.changed_rows) == 0


def plan(
    state: ClusterState,
    *,
    remove: Iterable[int] = (),
    add: Iterable[int] = (),
    replace: Mapping[int, int] | None = None,
    replication_factor: int | Mapping[str, int] | None = None,
    topics: str | None = None,
    exclude_topics: str | None = None,
    per_topic: bool = True,
    stages: Sequence[str] = STAGES,
    strategy: str = "flow",
    progress: Callable[[str], None] | None = None,
    objective: str = "moves",
    balance: str = "count",
    disk_tolerance: float = 1.05,
    pinned: np.ndarray | None = None,
    notes: Sequence[str] = (),
) -> Plan:
    """Plan a reassignment of ``state`` (never mutated). See the module docstring for the steps.

    ``strategy="template"`` lays the selected topics on rotation-order templates matched to the partitions
    (placement and replica order together) instead of the three flow stages. ``progress`` is called with the
    name of each step as it starts (the CLI shows it on a terminal).

    ``objective="bytes"``: among the fewest-move plans, the one moving the fewest bytes. ``balance`` adds disk
    balance: ``count+bytes`` keeps stage 1's count balance, ``bytes`` balances disk only; either brings every
    broker's disk under ``disk_tolerance`` × its share where achievable. Known disk capacities are hard limits
    whenever sizes are known.

    ``pinned`` (bool per partition of ``state``) holds partitions exactly as they are: neither moved nor
    reordered, still counted in every broker's load (partitions in flight, unhealthy, or placed by Confluent
    placement constraints; see ``flowbalance.status``). ``notes`` start the certificate's notes (why they were held)."""
    say = progress or (lambda _step: None)
    t0 = time.perf_counter()
    seconds: dict[str, float] = {}
    stages = tuple(stages)
    for s in stages:
        if s not in STAGES:
            raise InputError("--stages", "", f"unknown stage (choose from {', '.join(STAGES)})", s)
    if strategy not in STRATEGIES:
        raise InputError("--strategy", "", f"unknown strategy (choose from {', '.join(STRATEGIES)})", strategy)
    if strategy == "template" and stages != STAGES:
        raise InputError("--stages", "", "the template strategy places and orders replicas together; "
                         "--stages applies to the flow strategy", ",".join(stages))
    _check_bytes_request(state, strategy, objective, balance, disk_tolerance)
    before = _apply_broker_changes(state, remove=list(remove), add=list(add), replace=dict(replace or {}))
    movable = _movable(before, topics, exclude_topics, pinned)
    target_rf = _target_rf(before, replication_factor, movable)
    _check_feasible(before, target_rf, movable)
    _check_capacity(before, target_rf)
    disk_on = balance != "count"
    cap_known = before.has_sizes and bool((before.brokers.capacity[before.brokers.live] >= 0).any())
    original_leader = before.replicas[:, 0].copy()
    prefer = dict(replace or {})

    say("measuring")
    mb = measure(before, target_rf=target_rf)  # M* for the certificate and for stage 1's pruned attempt
    tstar = topic_lower_bound(before, target_rf, movable) if per_topic else None
    notes: list[str] = list(notes)
    stage1 = None
    skipped = _meets_every_target(before, target_rf, per_topic, stages, balance, disk_tolerance)
    disk_res: DiskResult | None = None
    bytes_res: BytesResult | None = None
    reps = before.replicas
    run: list[str] = []
    tres: TemplateResult | None = None
    mc = cand = None  # the template candidate and its metrics
    if not skipped and strategy == "template":
        t = time.perf_counter()
        say("templates")
        tres = place_by_templates(before, target_rf, movable, per_topic=per_topic)
        seconds["templates"] = time.perf_counter() - t
        run.append("templates")
        notes.append(_template_note(tres))
        cand = before.with_replicas(tres.replicas)
        reps = cand.replicas
        if not _leaders_balanced(cand, per_topic):
            # racks of unequal size skip single tuples, broker weights and topics left out are not in the
            # templates: leaders can come out uneven, so reorder them (no data moves)
            t = time.perf_counter()
            cand = cand.with_replicas(balance_leaders(cand, cand.replicas[:, 0].copy(), movable, per_topic=per_topic))
            cand = cand.with_replicas(balance_followers(cand, movable))
            reps = cand.replicas
            seconds["leaders"] = time.perf_counter() - t
            run += ["leaders", "followers"]
            notes.append("template strategy: leaders were uneven after the templates (racks of unequal size, "
                         "weights or topics left out); stages 2 and 3 reordered them")
        mc = measure(cand)
        if not (_must_change(before, target_rf) or _improves(mb, mc, per_topic)):
            skipped = True
            reps = before.replicas
            notes.append("template strategy: the templates would not lower any spread, so nothing is proposed")
    elif not skipped:
        cur = before
        if "replicas" in stages and balance == "bytes":
            # disk balance only: stage 1 moves what must move (removals, RF, racks), the disk stage places
            if _must_change(cur, target_rf):
                t = time.perf_counter()
                say("stage 1: replicas")
                res = balance_replicas(cur, target_rf, movable, per_topic=False, prefer=prefer, count_targets=False)
                cur = cur.with_replicas(res.replicas)
                notes.append("stage 1 (--balance bytes): only what must move, no count targets")
                seconds["replicas"] = time.perf_counter() - t
                run.append("replicas")
        elif "replicas" in stages:
            t = time.perf_counter()
            say("stage 1: replicas")
            if objective == "moves" and direct_applies(cur, target_rf, movable, per_topic):
                new, value = balance_direct(cur)
                notes.append(f"pure rebalance: direct network solved by max flow (flow value {value})")
            else:
                res = balance_replicas(cur, target_rf, movable, per_topic=per_topic, prefer=prefer,
                                       lower_bound=max(mb.min_moves, tstar or 0))
                new = res.replicas
                stage1 = res
                notes.append(_stage1_note(res))
            cur = cur.with_replicas(new)
            seconds["replicas"] = time.perf_counter() - t
            run.append("replicas")
            if objective == "bytes":
                t = time.perf_counter()
                say("stage 1: fewest bytes")
                bytes_res = fewest_bytes(before, cur, target_rf, movable, per_topic=per_topic, prefer=prefer)
                cur = cur.with_replicas(bytes_res.replicas)
                notes.append(bytes_res.note)
                seconds["bytes"] = time.perf_counter() - t
        elif not np.array_equal(target_rf, before.rf) or _rows_on_removed(before).any():
            raise InputError("--stages", "", "RF changes and broker removals need the replicas stage "
                             "(--stages replicas,...)", ",".join(stages))
        if "replicas" in stages and (disk_on or (cap_known and _above_capacity(cur))):
            t = time.perf_counter()
            say("disk balance")
            disk_res = balance_disk(before, cur, target_rf, movable, tolerance=disk_tolerance if disk_on else 1e9,
                                    counts=balance != "bytes", per_topic=per_topic)
            if disk_res.score.capacity_excess > 0:
                raise PlanningError(_capacity_message(before, cur.with_replicas(disk_res.replicas)))
            cur = cur.with_replicas(disk_res.replicas)
            notes.append(f"disk balance: {disk_res.method}" if disk_on else
                         f"capacity repair: stage 1 put a broker above its disk capacity; {disk_res.method}")
            seconds["disk"] = time.perf_counter() - t
            run.append("disk")
        if "leaders" in stages:
            t = time.perf_counter()
            say("stage 2: leaders")
            # keeping the first replica after stage 1 costs nothing: it is the original leader when that stayed,
            # otherwise the broker that took the leader's slot (a replacement takes over its broker's leaderships)
            cur = cur.with_replicas(balance_leaders(cur, cur.replicas[:, 0].copy(), movable, per_topic=per_topic))
            seconds["leaders"] = time.perf_counter() - t
            run.append("leaders")
        if "followers" in stages:
            t = time.perf_counter()
            say("stage 3: followers")
            cur = cur.with_replicas(balance_followers(cur, movable))
            seconds["followers"] = time.perf_counter() - t
            run.append("followers")
        reps = cur.replicas
    after = before.with_replicas(reps)
    t = time.perf_counter()
    say("verifying")
    verify_plan(before, after, target_rf, movable)
    if cap_known and _above_capacity(after) and not skipped:
        raise PlanVerificationError("a planned broker is above its disk capacity")
    seconds["verify"] = time.perf_counter() - t
    changes = compare(before, after)
    ma = mc if mc is not None and reps is cand.replicas else measure(after)
    if "followers" in run and not (after.rf >= 3).any() and (after.rf == 2).any():
        notes.append("RF 2: the first follower is the only other replica, so reordering cannot change failover; "
                     "only placement does")
    if tres is not None:
        cert = _template_certificate(before, after, target_rf, per_topic, changes, mb, tstar, original_leader,
                                     notes, tres)
    else:
        cert = _certificate(before, after, target_rf, per_topic, changes, mb, tstar, original_leader, notes,
                            stages, stage1)
    if bytes_res is not None and bytes_res.applied:
        cert.bytes_objective = BytesCertificate(moves=bytes_res.moves, bytes_moved=bytes_res.bytes_moved,
                                                lower_bound=bytes_res.bytes_lower_bound, quantum=bytes_res.quantum,
                                                exact=bytes_res.quantum == 1)
    if disk_res is not None or (disk_on and skipped):
        cert.disk = _disk_certificate(before, after, balance, disk_tolerance, disk_res, changes)
        if balance == "bytes":
            cert.proven_optimal = False
            cert.reason = ("--balance bytes: disk use is the target, not replica counts; the disk line gives the "
                           "bytes against their lower bound")
        elif disk_res is not None and changes.moves > cert.lower_bound and cert.proven_optimal:
            cert.proven_optimal = False
            cert.reason = (f"disk balance moved {changes.moves - cert.lower_bound} replicas beyond the fewest "
                           f"({cert.lower_bound}); see the disk gap")
    seconds["total"] = time.perf_counter() - t0
    return Plan(before=before, after=after, target_rf=target_rf, movable=movable, changes=changes,
                metrics_before=mb, metrics_after=ma, certificate=cert, stages_run=tuple(run), seconds=seconds,
                skipped=skipped, strategy=strategy)


def _leaders_balanced(state: ClusterState, per_topic: bool) -> bool:
    """Leader counts within their intervals (and per topic when asked)."""
    b = state.brokers
    L = leader_counts(state)
    if not within(L, *intervals(state.num_partitions, b.weight, b.live), b.live):
        return False
    return not (per_topic and _topic_leaders_unbalanced(state))


def _must_change(state: ClusterState, target_rf: np.ndarray) -> bool:
    """RF changes, replicas on removed brokers and rack violations must be fixed whatever the spreads say."""
    return (not np.array_equal(target_rf, state.rf) or bool(_rows_on_removed(state).any())
            or len(rack_violations(state)) > 0)


def _improves(mb: StateMetrics, mc: StateMetrics, per_topic: bool) -> bool:
    """True when the candidate lowers at least one spread (replicas, topics, leaders, broker or rack failover)."""
    pairs = [(mc.replica_spread, mb.replica_spread), (mc.leader_spread, mb.leader_spread),
             (mc.failover.worst[1], mb.failover.worst[1]), (mc.rack_failover.worst[1], mb.rack_failover.worst[1])]
    if per_topic:
        pairs.append((mc.topic.spread, mb.topic.spread))
    return any(a < b for a, b in pairs)


def _template_note(res: TemplateResult) -> str:
    how = ("exact Hungarian matching per group" if res.sparse_groups == 0 else
           f"exact matching for {res.groups - res.sparse_groups} groups, candidate-pair matching for "
           f"{res.sparse_groups} large ones")
    return (f"template strategy: {res.groups} group{'s' if res.groups != 1 else ''} laid on rotation-order templates; {how}; "
            f"{res.moves} moves against the templates' own bound {res.bound}")


def _stage1_note(res) -> str:
    if res.network == "pooled":
        how = ("pruned pools reached the lower bound" if res.pruned else
               f"pooled relaxation optimum {res.flow_bound} moves, realized exactly")
        return f"stage 1: pooled network ({res.nodes:,} nodes, {res.arcs:,} arcs); {how}"
    return (f"stage 1: full keep network ({res.nodes:,} nodes, {res.arcs:,} arcs); the pooled optimum "
            f"({res.flow_bound} moves) could not be realized")


# ---- request handling ----------------------------------------------------------------------------

def _check_contradictions(state: ClusterState, remove: list[int], add: list[int], replace: dict[int, int]) -> None:
    """A request that says two things of one broker is refused, never resolved silently."""
    b = state.brokers
    holding = np.bincount(state.replica_index[state.replica_index >= 0], minlength=len(b)) > 0
    removing, adding = set(remove), set(add)
    both = sorted(removing & adding)
    if both:
        raise InputError("--add/--remove", "", "a broker is both added and removed", both[0])
    for old, new in replace.items():
        if old == new:
            raise InputError("--replace", "", "a broker cannot replace itself", f"{old}:{new}")
        if old in removing or old in adding:
            flag = "--remove" if old in removing else "--add"
            raise InputError(f"--replace/{flag}", "", f"broker {old} is replaced and also named in {flag}", f"{old}:{new}")
        if new in removing or new in adding or new in replace:
            flag = "--remove" if new in removing else ("--add" if new in adding else "--replace")
            raise InputError(f"--replace/{flag}", "", f"the new broker {new} is also named in {flag}", f"{old}:{new}")
        if b.contains(new) and holding[b.index_of([new])[0]]:
            raise InputError("--replace", "", f"the new broker {new} already holds replicas: a replacement must be "
                             f"a new (empty) broker; to move {old}'s replicas onto the others use --remove {old}",
                             f"{old}:{new}")
    for x in add:
        if b.contains(x) and holding[b.index_of([x])[0]]:
            raise InputError("--add", "", f"broker {x} already exists and holds replicas: --add names new brokers", x)


def _apply_broker_changes(state: ClusterState, *, remove: list[int], add: list[int], replace: dict[int, int]) -> ClusterState:
    _check_contradictions(state, remove, add, replace)
    b = state.brokers
    for old, new in replace.items():
        if not b.contains(old):
            raise InputError("--replace", "", "unknown broker to replace", f"{old}:{new}")
        if old == new:
            raise InputError("--replace", "", "a broker cannot replace itself", f"{old}:{new}")
    for x in remove:
        if not b.contains(x):
            raise InputError("--remove", "", "unknown broker (not in the broker file or the assignment)", x)
    new_ids = [x for x in add if not b.contains(x)] + [n for n in replace.values() if not b.contains(n)]
    if new_ids and b.has_racks:
        # a replacement inherits the rack of the broker it replaces; plain additions need a rack
        by_rack: dict[str | None, list[int]] = {}
        inherit = {n: o for o, n in replace.items()}
        for n in new_ids:
            if n in inherit:
                r = int(b.rack[b.index_of([inherit[n]])[0]])
                by_rack.setdefault(b.rack_names[r], []).append(n)
            else:
                raise InputError("--add", "", "racks are in use: list the new broker with its rack in the broker file", n)
        for rack, ids in by_rack.items():
            b = b.with_added(ids, rack=rack)
    elif new_ids:
        b = b.with_added(new_ids)
    gone = list(remove) + list(replace.keys())
    if gone:
        b = b.with_removed(gone)
    if not b.live.any():
        raise InputError("--remove", "", "this would remove every broker", ",".join(map(str, gone)))
    return state.with_brokers(b)


def _movable(state: ClusterState, topics: str | None, exclude: str | None,
             pinned: np.ndarray | None = None) -> np.ndarray:
    ok_topic = np.ones(len(state.topics), dtype=bool)
    for flag, pattern, want in (("--topics", topics, True), ("--exclude-topics", exclude, False)):
        if pattern is None:
            continue
        try:
            rx = re.compile(pattern)
        except re.error as err:
            raise InputError(flag, "", f"invalid regular expression: {err}", pattern) from None
        hit = np.array([rx.fullmatch(t) is not None for t in state.topics], dtype=bool)
        ok_topic &= hit if want else ~hit
        if want and not hit.any():
            raise InputError(flag, "", "matches no topic", pattern)
    movable = ok_topic[state.topic]
    on_removed = _rows_on_removed(state)
    if pinned is not None:
        held = np.asarray(pinned, dtype=bool) & on_removed
        if held.any():
            r = int(np.flatnonzero(held)[0])
            raise PlanningError(
                f"partition {state.topics[state.topic[r]]}-{int(state.partition[r])} must stay in place (in flight, "
                f"unhealthy or placed by Confluent) but has a replica on a removed broker; {int(held.sum())} such "
                "partitions in all")
        movable &= ~np.asarray(pinned, dtype=bool)
    stuck = on_removed & ~movable
    if stuck.any():
        r = int(np.flatnonzero(stuck)[0])
        raise PlanningError(
            f"topic {state.topics[state.topic[r]]} is excluded but has replicas on a removed broker; include it")
    return movable


def _rows_on_removed(state: ClusterState) -> np.ndarray:
    idx = state.replica_index
    rem = state.brokers.removed
    return ((idx >= 0) & rem[np.maximum(idx, 0)]).any(axis=1)


def _target_rf(state: ClusterState, rf: int | Mapping[str, int] | None, movable: np.ndarray) -> np.ndarray:
    target = state.rf.astype(np.int64).copy()
    if rf is None:
        return target
    if isinstance(rf, int) and not isinstance(rf, bool):
        if rf < 1:
            raise InputError("--replication-factor", "", "must be at least 1", rf)
        target[movable] = rf
        return target
    for topic, k in dict(rf).items():
        if topic not in state.topics:
            raise InputError("--topic-rf", "", "unknown topic", topic)
        if type(k) is not int or k < 1:
            raise InputError("--topic-rf", "", "replication factor must be an integer >= 1", f"{topic}={k}")
        t = state.topics.index(topic)
        rows = state.topic == t
        if not movable[rows].all():
            raise InputError("--topic-rf", "", "topic is excluded by --topics / --exclude-topics, or some of its "
                             "partitions must stay in place", topic)
        target[rows] = k
    return target


def _check_feasible(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray) -> None:
    n_live = int(state.brokers.live.sum())
    big = np.flatnonzero(target_rf > n_live)
    if len(big):
        r = int(big[0])
        raise PlanningError(
            f"replication factor {int(target_rf[r])} of {state.topics[state.topic[r]]}-{int(state.partition[r])} "
            f"is above the number of live brokers ({n_live})")


# ---- bytes ---------------------------------------------------------------------------------------

def _check_bytes_request(state: ClusterState, strategy: str, objective: str, balance: str, tolerance: float) -> None:
    if objective not in OBJECTIVES:
        raise InputError("--objective", "", f"unknown objective (choose from {', '.join(OBJECTIVES)})", objective)
    if balance not in BALANCES:
        raise InputError("--balance", "", f"unknown balance (choose from {', '.join(BALANCES)})", balance)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not (1.0 <= float(tolerance) <= 10.0):
        raise InputError("--disk-tolerance", "", "must be a number from 1.0 to 10.0 (max/mean disk use)", tolerance)
    if (objective == "bytes" or balance != "count") and not state.has_sizes:
        flag, value = ("--objective", objective) if objective == "bytes" else ("--balance", balance)
        raise InputError(flag, "", "needs partition sizes (--sizes: kafka-log-dirs output or a topic,partition,bytes "
                         "table)", value)
    if strategy == "template" and (objective == "bytes" or balance != "count"):
        flag, value = ("--objective", objective) if objective == "bytes" else ("--balance", balance)
        raise InputError(flag, "", "applies to the flow strategy (templates place by counts)", value)


def _disk_use(state: ClusterState) -> np.ndarray:
    d = byte_counts(state)
    return np.zeros(len(state.brokers), dtype=np.int64) if d is None else d


def _above_capacity(state: ClusterState) -> bool:
    cap = state.brokers.capacity
    d = _disk_use(state)
    return bool(((cap >= 0) & (d > cap) & state.brokers.live).any())


def _disk_within(state: ClusterState, tolerance: float) -> bool:
    b = state.brokers
    d = _disk_use(state)
    live = b.live
    share = d.sum() * b.weight[live] / b.weight[live].sum()
    return bool(not d[~live].any() and (d[live] <= np.floor(tolerance * share + 1e-6)).all())


def _check_capacity(state: ClusterState, target_rf: np.ndarray) -> None:
    """When every live broker has a capacity, the bytes to place must fit in their sum."""
    b = state.brokers
    cap = b.capacity[b.live]
    if not state.has_sizes or not len(cap) or (cap < 0).any():
        return
    need = int((np.maximum(state.size, 0) * target_rf).sum())
    if need > int(cap.sum()):
        from .summary import format_bytes
        raise PlanningError(f"disk capacity cannot be met: the partitions need {format_bytes(need)} "
                            f"({need} bytes) and the live brokers' capacities add up to {format_bytes(int(cap.sum()))}")


def _capacity_message(before: ClusterState, after: ClusterState) -> str:
    from .summary import format_bytes
    b = after.brokers
    d = _disk_use(after)
    over = np.flatnonzero((b.capacity >= 0) & (d > b.capacity) & b.live)
    i = int(over[np.argmax(d[over] - b.capacity[over])])
    return (f"disk capacity cannot be met: broker {int(b.ids[i])} would still hold {format_bytes(int(d[i]))} "
            f"against its capacity {format_bytes(int(b.capacity[i]))} ({len(over)} broker"
            f"{'s' if len(over) != 1 else ''} above capacity after disk balancing); add brokers or capacity, or "
            "relax the request")


def _max_over_mean(state: ClusterState) -> float:
    return disk_max_over_mean(_disk_use(state), state.brokers.weight, state.brokers.live) or 0.0


def _disk_certificate(before, after, balance, tolerance, res: DiskResult | None, changes) -> DiskCertificate:
    b = before.brokers
    share = _disk_use(after)[b.live].sum() * b.weight[b.live] / b.weight[b.live].sum()
    tol_limit = np.floor(tolerance * share + 1e-6).astype(np.int64)
    raised = int((res.limit[b.live] > tol_limit).sum()) if res is not None else 0
    return DiskCertificate(
        balance=balance, tolerance=float(tolerance), max_over_mean_before=_max_over_mean(before),
        max_over_mean_after=_max_over_mean(after), within_tolerance=_disk_within(after, tolerance),
        limit_raised=raised, bytes_moved=int(changes.bytes_moved or 0),
        bytes_lower_bound=res.bytes_lower_bound if res is not None else 0,
        method=res.method if res is not None else "nothing to do", exact=bool(res is not None and res.exact))


# ---- pre-check -----------------------------------------------------------------------------------

def _meets_every_target(state: ClusterState, target_rf: np.ndarray, per_topic: bool, stages: Sequence[str],
                        balance: str = "count", tolerance: float = 1.05) -> bool:
    """True when nothing can improve: counts, racks, removals, RF, leaders and pairs all at their targets (and,
    with disk balance, every broker's disk within the tolerance; with known capacities, none above it)."""
    b = state.brokers
    live = b.live
    if not np.array_equal(target_rf, state.rf):
        return False
    if state.has_sizes and "replicas" in stages:
        if _above_capacity(state):
            return False
        if balance != "count" and not _disk_within(state, tolerance):
            return False
    c = replica_counts(state)
    if "replicas" in stages and balance == "bytes":
        if len(rack_violations(state)) or c[~live].any():
            return False
    elif "replicas" in stages:
        if not within(c, *intervals(int(c.sum()), b.weight, live), live):
            return False
        if len(rack_violations(state)):
            return False
        if per_topic and topic_spread(state).unbalanced_topics:
            return False
    elif c[~live].any():
        return False
    if "leaders" in stages and not _leaders_balanced(state, per_topic):
        return False
    if "followers" in stages and not _pairs_ideal(state):
        return False
    return True


def _topic_leaders_unbalanced(state: ClusterState) -> bool:
    lead_only = state.with_replicas(state.replicas[:, :1])
    return topic_spread(lead_only).unbalanced_topics > 0


def _pairs_ideal(state: ClusterState) -> bool:
    """Per leader, first-follower counts within 1 of each other over every broker that could be chosen."""
    idx = state.replica_index
    if idx.shape[1] < 3:
        return True
    n = len(state.brokers)
    rows = state.rf >= 3
    if not rows.any():
        return True
    M = pair_matrix(state)
    sub = idx[rows]
    cand = np.zeros((n, n), dtype=bool)
    for j in range(1, sub.shape[1]):
        ok = sub[:, j] >= 0
        cand[sub[ok, 0], sub[ok, j]] = True
    for l in np.flatnonzero(cand.any(axis=1)):
        vals = M[l][cand[l]]
        if vals.max() - vals.min() > 1:
            return False
    return True


# ---- certificate ---------------------------------------------------------------------------------

def topic_lower_bound(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray) -> int:
    """Σ over movable topics of that topic's M*: arrivals per topic are disjoint, so this bounds the moves too.
    Vectorized over a (topic, live broker) count matrix; the same rule as ``targets.min_arrivals`` per topic."""
    b = state.brokers
    live_idx = np.flatnonzero(b.live)
    NL = len(live_idx)
    topics, tpos = np.unique(state.topic[movable], return_inverse=True)
    T = len(topics)
    if T == 0 or NL == 0:
        return 0
    lpos = np.full(len(b), -1, dtype=np.int64)
    lpos[live_idx] = np.arange(NL)
    sub = state.replica_index[movable]
    r, col = np.nonzero(sub >= 0)
    lp = lpos[sub[r, col]]
    ok = lp >= 0
    c = np.bincount(tpos[r[ok]] * NL + lp[ok], minlength=T * NL).reshape(T, NL)
    rt = np.bincount(tpos, weights=target_rf[movable], minlength=T)
    lo, hi = share_intervals(rt, b.weight[live_idx])
    t = np.clip(c, lo.reshape(T, NL), hi.reshape(T, NL))
    short = rt.astype(np.int64) - t.sum(axis=1)
    return int(np.maximum(t - c, 0).sum() + np.maximum(short, 0).sum())


def _certificate(before, after, target_rf, per_topic, changes, mb, tstar, original_leader, notes, stages,
                 stage1=None) -> Certificate:
    b = before.brokers
    live = b.live
    mstar = mb.min_moves
    lb = max(mstar, tstar or 0)
    moves = changes.moves
    ma_counts = replica_counts(after)
    balanced = within(ma_counts, *intervals(int(target_rf.sum()), b.weight, live), live)
    topics_ok = (not per_topic) or topic_spread(after).unbalanced_topics == 0
    if stage1 is not None and stage1.rack_forced and not (balanced and topics_ok):
        # RF = number of racks fixes each rack's total: the targets are shares within each rack
        notes.append("the rack rule fixes each partition's replicas per rack (e.g. RF equals the number of racks), "
                     "so every rack's total is fixed; replicas are balanced within each rack (cluster-wide shares "
                     "cannot all be met when racks differ in size)")
        lb = stage1.bound
        if moves == lb:
            proven, reason = True, "moves equal the lower bound for balance within racks"
        elif stage1.network == "pooled":
            proven, reason = True, "minimum-cost flow optimum (pooled relaxation realized exactly) for balance within racks"
        else:
            proven, reason = False, "the closest plan for balance within racks"
        return _with_leaders(before, after, changes, original_leader, notes, mstar, tstar, lb, moves, proven, reason)
    if moves == lb and balanced and topics_ok:
        proven, reason = True, "moves equal the lower bound" + (" M*" if lb == mstar else " (per-topic)")
    elif balanced and topics_ok and "replicas" in stages:
        proven = True
        binding = []
        if b.has_racks:
            binding.append("the rack rule")
        if b.removed.any():
            binding.append("emptying removed brokers")
        if not np.array_equal(target_rf, before.rf):
            binding.append("replication-factor changes")
        if per_topic:
            binding.append("per-topic balance")
        reason = ("minimum-cost flow optimum over the full network; M* is not reachable because of "
                  + (" and ".join(binding) if binding else "the replica sets"))
    else:
        proven = False
        missed = []
        if not balanced:
            missed.append("broker totals")
        if not topics_ok:
            missed.append("per-topic balance")
        reason = "not every balance target is reachable (" + ", ".join(missed) + "); this is the closest plan"
        if "replicas" not in stages:
            reason = "the replicas stage did not run"
    return _with_leaders(before, after, changes, original_leader, notes, mstar, tstar, lb, moves, proven, reason)


def _template_certificate(before, after, target_rf, per_topic, changes, mb, tstar, original_leader, notes,
                          res: TemplateResult) -> Certificate:
    """Templates fix the target layout; the matching is optimal for them, not over every balanced plan."""
    lb = max(mb.min_moves, tstar or 0)
    moves = changes.moves
    b = before.brokers
    balanced = within(replica_counts(after), *intervals(int(target_rf.sum()), b.weight, b.live), b.live)
    topics_ok = (not per_topic) or topic_spread(after).unbalanced_topics == 0
    if moves == lb and balanced and topics_ok:
        proven, reason = True, "moves equal the lower bound" + (" M*" if lb == mb.min_moves else " (per-topic)")
    elif res.certified:
        proven = False
        reason = ("template strategy: the fewest moves onto these templates (" +
                  ("exact matching" if res.sparse_groups == 0 else "the templates' own bound is reached") +
                  f"); a balanced plan may need only {lb}")
    else:
        proven = False
        reason = (f"template strategy: matching over candidate pairs; {res.moves} moves against the templates' "
                  f"bound {res.bound} and the balance bound {lb}")
    return _with_leaders(before, after, changes, original_leader, notes, mb.min_moves, tstar, lb, moves, proven,
                         reason)


def _with_leaders(before, after, changes, original_leader, notes, mstar, tstar, lb, moves, proven, reason
                  ) -> Certificate:
    """The certificate, with the leader lower bound: leaderships that must change because their broker left."""
    b = before.brokers
    live = b.live
    still = (after.replicas == original_leader[:, None]).any(axis=1)
    ol = b.index_of(original_leader[still])
    L0 = np.bincount(ol, minlength=len(b)).astype(np.int64)
    llo, lhi = intervals(before.num_partitions, b.weight, live)
    lstar = min_arrivals(L0, before.num_partitions, llo, lhi, live)
    return Certificate(min_moves=mstar, topic_min_moves=tstar, lower_bound=lb, moves=moves, proven_optimal=proven,
                       reason=reason, leader_lower_bound=lstar, leader_changes=changes.leader_changes, notes=notes)
