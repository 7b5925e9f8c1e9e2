"""``plan(state, request)``: the library's planner. Resolve the request, skip a cluster already at every target,
run the stage chain, verify, certify.

    resolve (broker changes, scope, target RF) → pre-check → chain (stages, each checked) → proposal →
    verification → metrics before and after → certificate (built once from the plan and the stages' evidence)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, fields as dataclass_fields, replace
from typing import Any, Mapping, Sequence

import numpy as np

from .certificate import BytesCertificate, Certificate, DiskCertificate, MovesVerdict, certify, count_targets
from .chain.demote_step import demote_chain
from .chain.base import Context, Progress, run_chain
from .chain.precheck import improves, meets_every_target, must_change
from .chain.steps import flow_chain, template_chain
from .dir_balance import DirMoves, emptied_dirs, open_capacity, place
from .dirs import misplaced
from .errors import InputError, PlanningError, RequestError
from .summary import format_bytes
from .formats.writers import election_json, reassignment_json
from .metrics import (Changes, StateMetrics, above_capacity, compare, disk_max_over_mean_of, disk_use, disk_within,
                      measure, topic_lower_bound)
from .model import ClusterState
from .request import PlanRequest
from .resolve import Resolved, pinned_rows, resolve
from .stages.demote import demotable
from .verify import PlanVerificationError, verify_demotion, verify_plan


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
    skipped: bool  # True when nothing is proposed: the pre-check found nothing to do, or no change improved it
    request: PlanRequest
    prechecked: bool = False  # True when the pre-check found nothing to do (the chain did not run)
    dir_moves: DirMoves | None = None  # intra-broker moves between log directories (JBOD), when known

    @property
    def strategy(self) -> str:
        return self.request.strategy

    @property
    def is_empty(self) -> bool:
        return len(self.file_rows) == 0

    @property
    def file_rows(self) -> np.ndarray:
        """The partitions the plan file lists: those whose replica list changes, and those with a replica moving
        between log directories of its broker."""
        if self.dir_moves is None or not len(self.dir_moves):
            return self.changes.changed_rows
        return np.union1d(self.changes.changed_rows, self.dir_moves.rows)


@dataclass(frozen=True)
class PlanFiles:
    """The texts ``flowbalance plan`` writes: the reassignment, its rollback, and the leader election."""

    plan: str
    rollback: str
    election: str


def plan(state: ClusterState, request: PlanRequest | None = None, *, pinned: np.ndarray | None = None,
         notes: Sequence[str] = (), progress: Progress | None = None, memo: dict | None = None,
         **fields: Any) -> Plan:
    """Plan a reassignment of ``state`` (never mutated) as ``request`` asks (or ``PlanRequest(**fields)``).

    ``pinned`` (bool per partition) holds partitions exactly as they are: neither moved nor reordered, still
    counted in every broker's load (in flight, unhealthy, or placed by Confluent; see ``flowbalance.status``);
    ``notes`` start the certificate's notes (why they were held). ``progress`` is called with (step, of, name)
    as each step starts. ``memo``: a dict shared by plans of the same ``state`` and ``pinned`` whose requests differ
    only in ``extra_moves`` (the frontier's budget points): stage 1 and each budget slack are solved once for all.
    The plans are the same as without it."""
    request = _request_of(request, fields)
    capped = _dir_capacity(state, request)
    p = _plan_once(capped, request, pinned, notes, progress, memo)
    for _ in range(SPILL_ROUNDS - 1):
        tighter = _spill_capacity(capped, p)
        if tighter is None:
            break
        try:
            p, capped = _plan_once(tighter, request, pinned, notes, progress, None), tighter
        except PlanningError:  # the tighter capacity cannot be met either
            break
    _check_dir_capacity(p)
    return p


def _check_dir_capacity(p: Plan) -> None:
    """A log directory's capacity is a hard rule: a plan that leaves one above it is a PlanningError (naming the
    worst), not a plan."""
    d = p.after.dirs
    if d is None:
        return
    used = d.dir_bytes()
    over = np.flatnonzero((d.capacity >= 0) & (used > d.capacity))
    if len(over):
        i = int(over[np.argmax(used[over] - d.capacity[over])])
        raise PlanningError(
            f"log directory capacity cannot be met: broker {int(d.dir_broker[i])} {d.dir_path[i]} would hold "
            f"{format_bytes(int(used[i]))} against its capacity {format_bytes(int(d.capacity[i]))} ({len(over)} "
            f"director{'ies' if len(over) != 1 else 'y'} above); its other directories cannot pack the rest: add "
            "capacity, or remove the broker instead")


SPILL_ROUNDS = 4  # plans at most, when emptying a log directory leaves its broker's others unable to pack the rest


def _plan_once(state: ClusterState, request: PlanRequest, pinned: np.ndarray | None, notes: Sequence[str],
               progress: Progress | None, memo: dict | None) -> Plan:
    """One plan of ``state`` (see ``plan``)."""
    say = progress or (lambda step, of, name: None)
    t0 = time.perf_counter()
    r = resolve(state, request, pinned)
    chain = demote_chain() if request.demote else flow_chain() if request.strategy == "flow" else template_chain()
    of = len(chain) + 2
    say(1, of, "measuring")
    mb = measure(r.before, target_rf=r.target_rf)
    tstar = topic_lower_bound(r.before, r.target_rf, r.movable) if request.strict_per_topic else None
    ctx = Context(r, mb, _moves_bound(r, max(mb.min_moves, tstar or 0)), notes=list(notes), memo=memo)
    prechecked = not request.demote and meets_every_target(r)
    if not prechecked:
        run_chain(ctx, chain, say, 2, of)
    after, ma, skipped = _proposal(ctx, prechecked)
    after, dir_moves = _with_dirs(r, after)
    say(of, of, "verifying")
    t = time.perf_counter()
    _verify(r, after, skipped)
    ctx.seconds["verify"] = time.perf_counter() - t
    changes = compare(r.before, after)
    ma = ma if ma is not None else measure(after)
    cert = _certificate(ctx, after, changes, skipped, ma)
    ctx.seconds["total"] = time.perf_counter() - t0
    return Plan(before=r.before, after=after, target_rf=r.target_rf, movable=r.movable, changes=changes,
                metrics_before=mb, metrics_after=ma, certificate=cert, stages_run=tuple(ctx.ran),
                seconds=ctx.seconds, skipped=skipped, request=request, prechecked=prechecked, dir_moves=dir_moves)


def _dir_capacity(state: ClusterState, request: PlanRequest) -> ClusterState:
    """``state`` with a broker whose log directory is being emptied limited to what its other directories hold
    (when their capacities are known): the replicas they cannot take then leave the broker, moved by the disk
    stage's capacity repair, and the rest move between its directories."""
    if state.dirs is None or not request.remove_log_dirs:
        return state
    cap = open_capacity(state, emptied_dirs(state.dirs, request.remove_log_dirs))
    if not (cap >= 0).any():
        return state
    b = state.brokers
    new = np.where(cap >= 0, np.where(b.capacity >= 0, np.minimum(b.capacity, cap), cap), b.capacity)
    return state.with_brokers(replace(b, capacity=new.astype(np.int64)))


def _spill_capacity(state: ClusterState, p: Plan) -> ClusterState | None:
    """When a broker emptying a log directory was given a capacity (``_dir_capacity``) and its other directories
    still could not pack what it kept (sizes that do not fit, however the total does), that broker's capacity
    lowered by the bytes above its directories' capacities, for one more plan; None when nothing is above."""
    m = p.dir_moves
    if m is None or m.within_limits or not p.request.remove_log_dirs:
        return None
    d = p.after.dirs
    over = np.maximum(d.dir_bytes() - np.where(d.capacity >= 0, d.capacity, np.iinfo(np.int64).max), 0)
    b = state.brokers
    cap = b.capacity.copy()
    changed = False
    for broker in np.unique(d.dir_broker[over > 0]).tolist():
        i = int(b.index_of(np.array([broker]))[0])
        if cap[i] >= 0:  # the bytes above, and room for one more of its largest replicas (packing slack)
            biggest = int(np.maximum(d.size[(d.key % 2**31) == broker], 0).max(initial=0))
            cap[i] = max(cap[i] - int(over[d.dirs_of(broker)].sum()) - biggest, 0)
            changed = True
    return state.with_brokers(replace(b, capacity=cap)) if changed else None


def _with_dirs(r: Resolved, after: ClusterState) -> tuple[ClusterState, DirMoves | None]:
    """``after`` with every replica in a log directory when the brokers' directories are known (JBOD): staying
    replicas keep theirs unless directory balance or a directory being emptied takes them out, arriving ones go
    where their broker's directories stay most even (``dir_balance``); and the intra-broker moves."""
    req, dirs = r.request, r.before.dirs
    if dirs is None:
        if req.balance_dirs or req.remove_log_dirs:
            name = "balance_dirs" if req.balance_dirs else "remove_log_dirs"
            raise RequestError(name, "needs the brokers' log directories: kafka-log-dirs output (sizes) with "
                                     "several directories per broker")
        return after, None
    placed, moves = place(dirs, after, balance=req.balance_dirs, tolerance=float(req.dir_tolerance),
                          emptied=emptied_dirs(dirs, req.remove_log_dirs))
    return replace(after, dirs=placed), moves


def _moves_bound(r: Resolved, uncapped: int) -> int:
    """The bound stage 1's pruned attempt must reach: M* (and Σ per-topic M* when strict), or with brokers closed to
    new replicas the certificate's bound for their capped targets (the uncapped M* may be above or below it)."""
    if not r.before.brokers.no_new.any():
        return uncapped
    return count_targets(r.before, r.target_rf, r.movable, r.request.strict_per_topic).closed_bound


def _request_of(request: PlanRequest | None, fields: Mapping[str, Any]) -> PlanRequest:
    """The request given, or one built from keyword fields (``replication_factor`` may be a topic → RF map)."""
    if request is not None:
        if fields:
            raise RequestError(tuple(fields), "give a PlanRequest or its fields, not both")
        return request
    fields = dict(fields)
    rf = fields.get("replication_factor")
    if isinstance(rf, Mapping):
        fields["topic_rf"] = fields.pop("replication_factor")
    unknown = sorted(set(fields) - {f.name for f in dataclass_fields(PlanRequest)})
    if unknown:
        raise RequestError(tuple(unknown), "unknown request field")
    return PlanRequest(**fields)


def _proposal(ctx: Context, skipped: bool) -> tuple[ClusterState, StateMetrics | None, bool]:
    """The state to propose. Templates are proposed only when they must change something or lower a spread; a
    flow plan that moves no data only when its reordering lowers a spread (and the notes say which)."""
    r = ctx.resolved
    if skipped:
        return ctx.current, None, skipped
    if r.request.strategy != "template":
        return _reorder_only(ctx)
    mc = measure(ctx.current)
    if must_change(r) or improves(ctx.metrics_before, mc, r.request.per_topic):
        return ctx.current, mc, False
    ctx.notes.append("template strategy: the templates would not lower any spread, so nothing is proposed")
    return r.before, None, True


def _reorder_only(ctx: Context) -> tuple[ClusterState, StateMetrics | None, bool]:
    """A flow plan that moves nothing is a reordering: proposed when it lowers the leader or failover spread."""
    r = ctx.resolved
    if must_change(r) or compare(r.before, ctx.current).moves > 0:
        return ctx.current, None, False
    if r.request.demote:  # a demotion is proposed whenever it reorders anything (its note says what)
        same = np.array_equal(r.before.replicas, ctx.current.replicas)
        return (r.before, None, True) if same else (ctx.current, measure(ctx.current), False)
    mc = measure(ctx.current)
    mb = ctx.metrics_before
    lowered = [f"{name} {a:g} → {b:g}" for name, a, b in (
        ("leader spread", mb.leader_spread, mc.leader_spread),
        ("worst failover spread", mb.failover.worst[1], mc.failover.worst[1]),
        ("worst rack failover spread", mb.rack_failover.worst[1], mc.rack_failover.worst[1])) if b < a]
    if not lowered:
        ctx.notes.append("no data moves are needed and reordering would lower no spread, so nothing is proposed")
        return r.before, None, True
    ctx.notes.append("no data moves are needed; proposed only because reordering lowers " + ", ".join(lowered))
    return ctx.current, mc, False


def _verify(r: Resolved, after: ClusterState, skipped: bool) -> None:
    verify_plan(r.before, after, r.target_rf, r.movable)
    bad = misplaced(after)
    if len(bad):
        raise PlanVerificationError(f"{len(bad)} partitions have a replica in a log directory of another broker")
    if r.request.demote:
        b = r.before.brokers
        demoted = np.zeros(len(b), dtype=bool)
        demoted[b.index_of(np.asarray(r.request.demote, dtype=np.int64))] = True
        verify_demotion(r.before, after, demoted, demotable(r.before, r.movable, demoted))
    b = r.before.brokers
    cap_known = r.before.has_sizes and bool((b.capacity[b.live] >= 0).any())
    if cap_known and above_capacity(after) and not skipped:
        raise PlanVerificationError("a planned broker is above its disk capacity")


def _certificate(ctx: Context, after: ClusterState, changes: Changes, skipped: bool,
                 metrics_after: StateMetrics) -> Certificate:
    """The certificate from the plan and the stages' evidence (see ``flowbalance.certificate``)."""
    r, req = ctx.resolved, ctx.request
    notes = list(ctx.notes)
    if "followers" in ctx.ran and not (after.rf >= 3).any() and (after.rf == 2).any():
        notes.append("RF 2: a partition's order only chooses which of its two replicas leads; the failover "
                     "bound is the placement's, and only moving replicas goes below it")
    stage1 = ctx.evidence.get("replicas")
    return certify(r.before, after, r.target_rf, r.movable, req.strict_per_topic, changes=changes,
                   metrics_before=ctx.metrics_before, fewest=stage1.fewest if stage1 is not None else None,
                   context=lambda v: _reason_context(ctx, v), notes=tuple(notes),
                   topic_mode=topic_mode(req), after_topics=metrics_after.topic,
                   bytes_objective=_bytes_certificate(ctx), disk=_disk_certificate(ctx, after, changes, skipped),
                   counts_planned=req.balances_counts)


def _reason_context(ctx: Context, v: MovesVerdict) -> str:
    """What the stages add to the verdict's reason (what the plan aimed at, which stage made extra moves)."""
    if ctx.request.balance == "bytes":
        return "balance bytes: disk use is the target, not replica counts (see the disk line)"
    spent = _budget_spent(ctx)
    if spent and not v.proven:
        parts = " and ".join(f"{n:,} on {what}" for what, n in spent)
        return f"the move budget spent {sum(n for _, n in spent):,} moves beyond the fewest: {parts} (see its notes)"
    if v.proven or not v.targets_met:
        return ""
    if "templates" in ctx.evidence:
        res = ctx.evidence["templates"]
        how = "exact matching" if res.sparse_groups == 0 else "matching over candidate pairs"
        return f"template strategy: {res.moves} moves onto its templates ({how}; their own bound {res.bound})"
    if "disk" in ctx.ran:
        return "the disk stage traded them for disk balance (see the disk line)"
    return ""


def _budget_spent(ctx: Context) -> list[tuple[str, int]]:
    """What each part of the move budget spent beyond the fewest moves, the parts that spent any."""
    parts = (("per-topic balance", ctx.evidence.get("budget")), ("failover", ctx.evidence.get("failover_budget")))
    return [(what, ev.spent) for what, ev in parts if ev is not None and ev.spent > 0]


def _bytes_certificate(ctx: Context) -> BytesCertificate | None:
    res = ctx.evidence.get("bytes")
    if res is None or not res.applied:
        return None
    return BytesCertificate(moves=res.moves, bytes_moved=res.bytes_moved, lower_bound=res.bytes_lower_bound,
                            quantum=res.quantum, exact=res.quantum == 1)


def _disk_certificate(ctx: Context, after: ClusterState, changes: Changes, skipped: bool) -> DiskCertificate | None:
    res, req, before = ctx.evidence.get("disk"), ctx.request, ctx.resolved.before
    if res is None and not (req.disk_balance and skipped):
        return None
    b = before.brokers
    share = disk_use(after)[b.live].sum() * b.weight[b.live] / b.weight[b.live].sum()
    tol_limit = np.floor(req.disk_tolerance * share + 1e-6).astype(np.int64)
    return DiskCertificate(
        balance=req.balance, tolerance=float(req.disk_tolerance), max_over_mean_before=disk_max_over_mean_of(before),
        max_over_mean_after=disk_max_over_mean_of(after), within_tolerance=disk_within(after, req.disk_tolerance),
        limit_raised=int((res.limit[b.live] > tol_limit).sum()) if res is not None else 0,
        bytes_moved=int(changes.bytes_moved or 0), bytes_lower_bound=res.bytes_lower_bound if res is not None else 0,
        method=res.method if res is not None else "nothing to do", exact=bool(res is not None and res.exact))


def plan_files(p: Plan, *, all_partitions: bool = False) -> PlanFiles:
    """The plan's files as text, byte for byte what ``flowbalance plan`` and ``fleet`` write: the reassignment
    (changed partitions, or every partition with ``all_partitions``), the rollback (the current assignment of
    the changed partitions) and the partitions whose leader changes (for kafka-leader-election)."""
    rows = None if all_partitions else p.file_rows
    return PlanFiles(plan=reassignment_json(p.after, rows),
                     rollback=reassignment_json(p.before, p.file_rows),
                     election=election_json(p.after, p.changes.leader_changed_rows))


def certify_plan(state: ClusterState, after: ClusterState, request: PlanRequest | None = None, *,
                 pinned: np.ndarray | None = None) -> Certificate:
    """The certificate of a plan read from a file (``report --plan``): ``state`` the current assignment, ``after``
    the plan applied (``flowbalance.planfile.read_plan(...).final``). ``request`` gives what the plan was made
    with: its ``remove`` and ``replace``'s old brokers (marked here), ``exclude_brokers`` (closed here), ``pin`` patterns, scope and per-topic
    setting; the target RF is the plan's own. The same
    numbers and verdict as ``plan`` gives for the same request."""
    from .load import mark_removed
    from .resolve import movable_rows

    request = (request or PlanRequest()).validate()
    before = state.with_brokers(after.brokers)
    gone = list(request.remove) + [old for old, _ in request.replace]  # a replaced broker is removed
    if gone:
        before = mark_removed(before, gone, "remove")
    if request.exclude_brokers:
        before = before.with_brokers(before.brokers.with_closed(request.exclude_brokers))
    after = after.with_brokers(before.brokers)
    movable = movable_rows(before, request, pinned_rows(before, request, pinned))
    return certify(before, after, after.rf.astype(np.int64), movable, request.strict_per_topic,
                   topic_mode=topic_mode(request), counts_planned=request.balances_counts)


def request_targets(state: ClusterState, request: PlanRequest | None = None, *,
                    pinned: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """The per-broker replica-count targets (lo, hi) a plan of ``request`` from ``state`` aims at, indexed like
    ``state.brokers``: within each rack when the rack rule fixes the racks' totals, around pinned load, on the
    live brokers. What ``report`` and ``check`` show as the target when there is no plan yet, so the column says
    what ``plan`` would do. None when the request adds brokers (the rows would not match) or cannot be planned
    (its error is the planner's to give)."""
    request = (request or PlanRequest()).validate()
    if request.add or request.replace:
        return None
    try:
        res = resolve(state, request, pinned)
    except (InputError, PlanningError):
        return None
    t = count_targets(res.before, res.target_rf, res.movable, request.strict_per_topic)
    return t.lo, t.hi


def topic_mode(request: PlanRequest) -> str:
    """The certificate's per-topic mode for ``request``: "strict", "spread" or "off"."""
    return request.per_topic_mode if request.per_topic else "off"
