"""The certificate of a plan: for each objective in force, its value, the bound it is proven against, the verdict.

Built once, never patched. The moves verdict is a function of the plan alone (before, after, the partitions that
may move, per-topic on or off), so ``plan``, ``report --plan``, ``compare`` and ``fleet`` print the same numbers:

* **targets**: every live broker's replica count within its share's [floor, ceil] (within its rack's share when the
  rack rule fixes every rack's total; a broker closed to new replicas at most what it holds, its share of a level
  above that going to the others: ``targets.capped_intervals``; a broker holding more replicas of partitions that
  may not move than its share held at that load, the others sharing the rest: ``targets.load_intervals``), removed
  brokers empty, and with per-topic balance every topic's movable
  replicas within their shares too — what stage 1 aims at (``count_targets``).
* **closed-form bound**: the fewest arrivals that reach the targets from the current counts (M* for brokers,
  Σ per-topic M* for topics; ``targets.min_arrivals``). A plan that meets the targets with that many moves is
  proven minimal by it.
* **fewest moves for the targets**: otherwise (removals, RF changes and the rack rule can force chains of moves),
  the minimum-cost flow optimum over every plan that meets the targets under the hard rules. Stage 1 computes it
  (its evidence is used when it solved exactly these targets); for a plan file it is solved again.
* **counts reached**: a plan that does not meet the targets is measured against the fewest moves that reach its
  own per-broker (per-topic) counts: Σ of the count increases, never above its moves.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .metrics import Changes, StateMetrics, TopicSpread, compare, measure, rack_violations, topic_spread
from .model import ClusterState, live_positions
from .racks import rack_bounds
from .stages.common import rack_forced_intervals
from .controls import closed_caps, topic_caps
from .verify import closed_arrivals
from .targets import capped_intervals, capped_share_intervals, load_intervals, share_intervals  # noqa: F401
from .targets import intervals, min_arrivals
from .topic_level import TopicLevel, topic_level
from .failover_level import FailoverLevel, failover_fields, failover_level


@dataclass(frozen=True, eq=False)
class CountTargets:
    """Per-broker (and per-topic) replica-count targets for a plan from ``state``."""

    lo: np.ndarray  # [N] per broker (all rows counted)
    hi: np.ndarray
    topic_lo: np.ndarray | None  # [T, NL] per (movable topic, live broker), movable rows counted; None: off
    topic_hi: np.ndarray | None
    within_racks: bool  # the rack rule fixes every rack's total: shares within each rack
    closed_bound: int  # fewest arrivals that reach these targets from ``state``


@dataclass(frozen=True)
class MovesVerdict:
    """The moves objective: value, the bound it is proven against, what that bound is for, and the verdict."""

    moves: int
    bound: int  # the printed bound: the moves are proven minimal exactly when they equal it (and targets are met)
    bound_for: str  # "count balance", "per-topic balance", "balance within racks", "the counts this plan reaches"
    by_flow: bool  # the bound is the minimum-cost flow optimum for the targets (not a closed form)
    targets_met: bool
    missed: tuple[str, ...]  # which targets are missed: "broker totals", "per-topic balance"
    closed_bound: int  # the closed-form bound for the targets (context)
    min_moves: int  # M*: cluster-wide count balance (context)
    topic_min_moves: int | None  # Σ per-topic M* (context), when per-topic balance is on
    counts_planned: bool = True  # False: the request moves no replica toward the targets (a demotion, ...)

    @property
    def proven(self) -> bool:
        return self.targets_met and self.moves == self.bound

    def text(self) -> str:
        """One line: "351 moves, proven minimal for balance within racks: bound 351 (min-cost flow)"."""
        how = " (min-cost flow)" if self.by_flow else ""
        n = f"{self.moves:,} move{'s' if self.moves != 1 else ''}"
        if self.proven:
            return f"{n}, proven minimal for {self.bound_for}: bound {self.bound:,}{how}"
        if self.targets_met:
            return f"{n}, above the fewest for {self.bound_for}: bound {self.bound:,}{how}"
        if not self.counts_planned:
            return (f"{n}; {' and '.join(self.missed)} not met: this request moves no replica toward them "
                    f"(reordering only); the counts this plan reaches need at least {self.bound:,}")
        return (f"{n}; {' and '.join(self.missed)} not met (not reachable under the request's rules, "
                f"or not attempted); the counts this plan reaches need at least {self.bound:,}")


@dataclass(frozen=True)
class BytesCertificate:
    """``objective="bytes"``: the bytes the fewest-moves plan moves, and the proven least for those moves."""

    moves: int
    bytes_moved: int
    lower_bound: int
    quantum: int  # bytes per cost unit of the size-cost flow (1 = exact)
    exact: bool


@dataclass(frozen=True)
class DiskCertificate:
    """Disk balance (or capacity repair): disk use against the limits, and the bytes against their bound."""

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


@dataclass(frozen=True)
class Certificate:
    """What a plan proves, objective by objective, and the notes of the stages that made it."""

    moves_verdict: MovesVerdict
    targets: CountTargets  # the per-broker (per-topic) targets the verdict judged
    leader_changes: int
    leader_lower_bound: int  # leaderships that must change because their broker left (or its share shrank)
    reason: str
    notes: tuple[str, ...] = ()
    bytes_objective: BytesCertificate | None = None
    disk: DiskCertificate | None = None
    topics: TopicLevel | None = None  # the per-topic level (None: not measured)
    failover: FailoverLevel | None = None  # the single-broker failover level (None: not measured)

    @property
    def moves(self) -> int:
        return self.moves_verdict.moves

    @property
    def lower_bound(self) -> int:
        return self.moves_verdict.bound

    @property
    def proven_optimal(self) -> bool:
        return self.moves_verdict.proven

    @property
    def min_moves(self) -> int:
        return self.moves_verdict.min_moves

    @property
    def topic_min_moves(self) -> int | None:
        return self.moves_verdict.topic_min_moves


# ---- targets and bounds --------------------------------------------------------------------------

def count_targets(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray, per_topic: bool
                  ) -> CountTargets:
    """The targets stage 1 aims at for a plan from ``state`` (see the module docstring)."""
    b = state.brokers
    live, live_idx = b.live, np.flatnonzero(b.live)
    N, NL = len(b), len(live_idx)
    trf = np.asarray(target_rf, dtype=np.int64)
    total = int(trf.sum())
    idx = state.replica_index
    c_all = np.bincount(idx[idx >= 0], minlength=N).astype(np.int64)
    cap = closed_caps(state)  # brokers closed to new replicas: at most what they hold (water-filled targets)
    fixed = idx[~np.asarray(movable, dtype=bool)]
    fixed_c = np.bincount(fixed[fixed >= 0], minlength=N).astype(np.int64)  # a floor: it may not leave
    lo, hi = load_intervals(total, b.weight, live, cap, fixed_c)
    mov = np.flatnonzero(movable)
    tpos, c_tb, rt, T = _topic_counts(state, mov, live_idx, trf, per_topic)
    tlo = thi = tcap = None
    if T:
        tcap = topic_caps(state, live_idx, c_tb)
        tlo, thi = capped_share_intervals(rt, b.weight[live_idx], tcap)
    forced = None
    if b.has_racks and len(mov):
        _, rack_of_live = np.unique(b.rack[live_idx], return_inverse=True)
        K = int(rack_of_live.max()) + 1 if NL else 1
        forced = rack_forced_intervals(b, live_idx, rack_of_live, K, trf[mov], fixed_c,
                                       tpos if T else None, T, cap, tcap)
    if forced is not None:
        lo, hi = forced[0], forced[1]
        if T:
            tlo, thi = forced[2], forced[3]
    bound = min_arrivals(c_all, total, lo, hi, live)
    if T:
        tlo, thi = tlo.reshape(T, NL), thi.reshape(T, NL)
        bound = max(bound, _topic_arrivals(c_tb, rt, tlo, thi))
    return CountTargets(lo, hi, tlo, thi, forced is not None, int(bound))


def _topic_counts(state: ClusterState, mov: np.ndarray, live_idx: np.ndarray, trf: np.ndarray, per_topic: bool):
    """Per (movable topic, live broker) counts of the movable rows, the topics' target totals, and T."""
    if not per_topic or not len(mov):
        return None, None, None, 0
    NL = len(live_idx)
    lpos = np.full(len(state.brokers), -1, dtype=np.int64)
    lpos[live_idx] = np.arange(NL)
    _, tpos = np.unique(state.topic[mov], return_inverse=True)
    T = int(tpos.max()) + 1
    rt = np.bincount(tpos, weights=trf[mov], minlength=T).astype(np.int64)
    return tpos, _tb_counts(state.replica_index[mov], tpos, lpos, T, NL), rt, T


def _tb_counts(sub: np.ndarray, tpos: np.ndarray, lpos: np.ndarray, T: int, NL: int) -> np.ndarray:
    r, col = np.nonzero(sub >= 0)
    lp = lpos[sub[r, col]]
    ok = lp >= 0
    return np.bincount(tpos[r[ok]] * NL + lp[ok], minlength=T * NL).reshape(T, NL).astype(np.int64)


def _topic_arrivals(c: np.ndarray, rt: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> int:
    """Fewest arrivals that bring every (topic, broker) count into [lo, hi] with each topic's total rt."""
    t = np.clip(c, lo, hi)
    short = rt - t.sum(axis=1)
    return int(np.maximum(t - c, 0).sum() + np.maximum(short, 0).sum())


def _topic_matrix(state: ClusterState, movable: np.ndarray) -> tuple[np.ndarray, int]:
    mov = np.flatnonzero(movable)
    if not len(mov):
        return mov, 0
    _, tpos = np.unique(state.topic[mov], return_inverse=True)
    return tpos, int(tpos.max()) + 1


def missed_targets(targets: CountTargets, before: ClusterState, after: ClusterState,
                   movable: np.ndarray) -> tuple[str, ...]:
    """Which targets and rules ``after`` misses: "the scope" (a partition that may not move was changed), "the
    rack rule", "broker totals", "per-topic balance" (empty: all met). The flow optimum for the targets is a
    bound only over plans that meet them all; a plan file from elsewhere may not."""
    missed = []
    fixed = ~movable
    if fixed.any() and not _same_rows(before.replicas[fixed], after.replicas[fixed]):
        missed.append("the scope")
    if movable[rack_violations(after)].any():  # partitions held in place are judged as they are
        missed.append("the rack rule")
    if len(closed_arrivals(before, after)):
        missed.append("the excluded brokers")
    b = after.brokers
    idx = after.replica_index
    c = np.bincount(idx[idx >= 0], minlength=len(b))
    live = b.live
    if not (np.all((c[live] >= targets.lo[live]) & (c[live] <= targets.hi[live])) and not c[~live].any()):
        missed.append("broker totals")
    if targets.topic_lo is not None:
        live_idx, lpos = live_positions(after.brokers.live)
        tpos, T = _topic_matrix(after, movable)
        c_tb = _tb_counts(idx[movable], tpos, lpos, T, len(live_idx))
        if not np.all((c_tb >= targets.topic_lo) & (c_tb <= targets.topic_hi)):
            missed.append("per-topic balance")
    return tuple(missed)


def topic_excess(targets: CountTargets, after: ClusterState, movable: np.ndarray) -> int:
    """The largest distance of a movable (topic, live broker) count outside its per-topic target interval (0: every
    topic within its share). ``targets`` must have per-topic intervals (``count_targets(..., per_topic=True)``)."""
    if targets.topic_lo is None or not movable.any():
        return 0
    live_idx, lpos = live_positions(after.brokers.live)
    tpos, T = _topic_matrix(after, movable)
    c_tb = _tb_counts(after.replica_index[movable], tpos, lpos, T, len(live_idx))
    return int(max(0, (targets.topic_lo - c_tb).max(initial=0), (c_tb - targets.topic_hi).max(initial=0)))


def _same_rows(a: np.ndarray, b: np.ndarray) -> bool:
    w = max(a.shape[1], b.shape[1])
    pad = lambda x: np.pad(x, ((0, 0), (0, w - x.shape[1])), constant_values=-1)  # noqa: E731
    return bool(np.array_equal(pad(a), pad(b)))


def counts_reached_bound(before: ClusterState, after: ClusterState, movable: np.ndarray, per_topic: bool) -> int:
    """Fewest moves of any plan that ends with ``after``'s per-broker (per-topic) counts: each count increase is an
    arrival. Never above the moves of ``after`` itself."""
    ib, ia = before.replica_index, after.replica_index
    N = len(before.brokers)
    cb = np.bincount(ib[ib >= 0], minlength=N)
    ca = np.bincount(ia[ia >= 0], minlength=N)
    bound = int(np.maximum(ca - cb, 0).sum())
    if per_topic and movable.any():
        # per (topic, broker) over every broker (arrivals on a broker that then leaves are moves too)
        tpos, T = _topic_matrix(before, movable)
        allpos = np.arange(N, dtype=np.int64)
        tb_b = _tb_counts(ib[movable], tpos, allpos, T, N)
        tb_a = _tb_counts(ia[movable], tpos, allpos, T, N)
        bound = max(bound, int(np.maximum(tb_a - tb_b, 0).sum()))  # rows that may not move do not change
    return bound


def fewest_moves_for_targets(before: ClusterState, target_rf: np.ndarray, movable: np.ndarray, per_topic: bool,
                             closed_bound: int) -> int:
    """The minimum-cost flow optimum: the fewest moves of any plan meeting the targets under the hard rules
    (stage 1's own solve; its tie-breaks cost less than one move, so the number of moves is the optimum)."""
    from .stages.replicas import balance_replicas

    res = balance_replicas(before, target_rf, movable, per_topic=per_topic, lower_bound=closed_bound)
    return compare(before, before.with_replicas(res.replicas)).moves


# ---- the certificate -----------------------------------------------------------------------------

def moves_verdict(before: ClusterState, after: ClusterState, target_rf: np.ndarray, movable: np.ndarray,
                  per_topic: bool, *, moves: int, min_moves: int, topic_min_moves: int | None,
                  fewest: int | None = None, targets: CountTargets | None = None,
                  counts_planned: bool = True) -> MovesVerdict:
    """The moves verdict of ``before`` → ``after``. ``fewest``: the flow optimum for the targets when the caller
    already has it (stage 1's evidence); otherwise it is solved here, and only when it is needed.
    ``counts_planned`` False: the request moved no replica toward the targets (said so when they are missed)."""
    targets = targets if targets is not None else count_targets(before, target_rf, movable, per_topic)
    missed = missed_targets(targets, before, after, movable)
    closed = targets.closed_bound
    common = dict(moves=moves, targets_met=not missed, missed=missed, closed_bound=closed, min_moves=min_moves,
                  topic_min_moves=topic_min_moves, counts_planned=counts_planned)
    if missed:
        return MovesVerdict(bound=counts_reached_bound(before, after, movable, per_topic),
                            bound_for="the counts this plan reaches", by_flow=False, **common)
    what = ("balance within racks" if targets.within_racks else
            "per-topic balance" if targets.topic_lo is not None else "count balance")
    if moves <= closed:
        return MovesVerdict(bound=closed, bound_for=what, by_flow=False, **common)
    if fewest is None:
        fewest = fewest_moves_for_targets(before, target_rf, movable, per_topic, closed)
    return MovesVerdict(bound=max(fewest, closed), bound_for=what, by_flow=fewest > closed, **common)


def leader_lower_bound(before: ClusterState, after: ClusterState) -> int:
    """Leaderships that must change: those whose broker left the partition, and beyond the brokers' shares."""
    b = before.brokers
    original_leader = before.replicas[:, 0]
    still = (after.replicas == original_leader[:, None]).any(axis=1)
    kept = np.bincount(b.index_of(original_leader[still]), minlength=len(b)).astype(np.int64)
    lo, hi = intervals(before.num_partitions, b.weight, b.live)
    return min_arrivals(kept, before.num_partitions, lo, hi, b.live)


def reason_text(v: MovesVerdict) -> str:
    """Why the verdict holds, in words an operator can check against the printed numbers."""
    if v.proven and not v.by_flow:
        return f"moves equal the closed-form lower bound for {v.bound_for}"
    if v.proven:
        return (f"moves equal the minimum-cost flow optimum for {v.bound_for} under the request's rules (racks, "
                f"removals, RF, scope); the closed-form bound {v.closed_bound:,} is not reachable")
    if v.targets_met:
        return f"{v.moves - v.bound:,} moves above the fewest for {v.bound_for} ({v.bound:,})"
    if not v.counts_planned:
        return (f"the request moves no replica toward the balance targets (a demotion, or no replicas stage), so "
                f"{', '.join(v.missed)} stay unmet; the counts this plan reaches need at least {v.bound:,} moves")
    return (f"not every balance target is met ({', '.join(v.missed)}); the counts this plan reaches need at "
            f"least {v.bound:,} moves")


def certify(before: ClusterState, after: ClusterState, target_rf: np.ndarray, movable: np.ndarray,
            per_topic: bool, *, changes: Changes | None = None, metrics_before: StateMetrics | None = None,
            fewest: int | None = None, context: Callable[[MovesVerdict], str] | None = None,
            notes: tuple[str, ...] = (), topic_mode: str | None = None, after_topics: TopicSpread | None = None,
            bytes_objective: BytesCertificate | None = None, disk: DiskCertificate | None = None,
            counts_planned: bool = True) -> Certificate:
    """The certificate of ``before`` → ``after`` (a plan, or a plan file). ``per_topic``: strict per-topic targets
    are targets of the moves verdict. ``topic_mode`` (``topic_level.MODES``; default "strict" or "off" as
    ``per_topic`` says) gives the per-topic level; ``after_topics`` is ``after``'s per-topic spread when measured.
    ``fewest`` is stage 1's flow optimum when it has one; ``context`` adds what the stages know to the verdict's
    reason (e.g. the template matching). ``counts_planned``: see ``moves_verdict``."""
    from .metrics import topic_lower_bound

    changes = changes if changes is not None else compare(before, after)
    mb = metrics_before if metrics_before is not None else measure(before, target_rf=target_rf)
    tstar = topic_lower_bound(before, target_rf, movable) if per_topic else None
    targets = count_targets(before, target_rf, movable, per_topic)
    v = moves_verdict(before, after, target_rf, movable, per_topic, moves=changes.moves, min_moves=mb.min_moves,
                      topic_min_moves=tstar, fewest=fewest, targets=targets, counts_planned=counts_planned)
    mode = topic_mode if topic_mode is not None else ("strict" if per_topic else "off")
    topics = _topic_level(before, after, target_rf, movable, mode, (targets, v.missed) if per_topic else None,
                          after_topics)
    return Certificate(moves_verdict=v, targets=targets, leader_changes=changes.leader_changes,
                       leader_lower_bound=leader_lower_bound(before, after),
                       reason=_reason(v, context), notes=tuple(notes), bytes_objective=bytes_objective,
                       disk=disk, topics=topics, failover=failover_level(after, movable))


def _topic_level(before: ClusterState, after: ClusterState, target_rf: np.ndarray, movable: np.ndarray, mode: str,
                 judged: tuple[CountTargets, tuple[str, ...]] | None, after_topics: TopicSpread | None) -> TopicLevel:
    """The per-topic level; ``judged``: the strict targets and what the plan misses of them, when the moves
    verdict already judged them (strict mode), so they are not built twice."""
    if judged is None:
        strict = count_targets(before, target_rf, movable, True)
        judged = (strict, missed_targets(strict, before, after, movable))
    strict, missed_all = judged
    missed = "per-topic balance" in missed_all
    spread = after_topics if after_topics is not None else topic_spread(after)
    return topic_level(before, after, target_rf, mode, spread, missed, strict.closed_bound)


def _reason(v: MovesVerdict, context: Callable[[MovesVerdict], str] | None) -> str:
    extra = context(v) if context is not None else ""
    return f"{reason_text(v)}; {extra}" if extra else reason_text(v)


def certificate_fields(cert: Certificate) -> dict:
    """The certificate's moves verdict as plain data: the same keys in ``plan --json``, ``report --json``,
    ``compare --json`` and the fleet summary."""
    v = cert.moves_verdict
    return {
        "moves": v.moves,
        "lower_bound": v.bound,
        "bound_for": v.bound_for,
        "bound_by_flow": v.by_flow,
        "closed_form_bound": v.closed_bound,
        "min_moves": v.min_moves,
        "topic_min_moves": v.topic_min_moves,
        "targets_met": v.targets_met,
        "missed_targets": list(v.missed),
        "proven_optimal": v.proven,
        "optimality": cert.reason,
        "verdict": v.text(),
        "per_topic": None if cert.topics is None else _topic_fields(cert.topics, v.moves),
        "failover": None if cert.failover is None else failover_fields(cert.failover),
    }


def _topic_fields(t: TopicLevel, moves: int) -> dict:
    return {"mode": t.mode, "spread": _plain(t.spread), "worst_topic": t.worst_topic, "floor": _plain(t.floor),
            "strict_met": t.strict_met, "strict_moves_bound": t.strict_moves, "text": t.text(moves)}


def _plain(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)
