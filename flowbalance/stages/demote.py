"""Demotion before maintenance: every preferred leadership off the demoted brokers, by reordering only.

The leader stage's network (``leaders.py``) with the demoted brokers' candidates left out (their leader ceiling is
0): each partition that has a live replica on a broker not demoted sends its unit to one of those, cost 0 for its
current leader and 1 for any other (one leadership change). No other live broker ends above the larger of its
leaders now and the ceiling of its share (``demote_intervals``), hard when that is reachable, else as close as the
leader stage's soft solve gets (the excess spread over the brokers). So the demoted leaderships go to the brokers
below their share, and nothing else changes unless there is no room: the fewest leadership changes for a demotion
that raises no broker above its share (a maintenance step, not a rebalance: plan the rebalance separately).

A partition whose live replicas are all demoted (or whose other replicas are on removed or offline brokers, or that
is held in place) cannot be demoted: it keeps its order and is reported (``DemoteResult.stuck``). Per-topic leader
balance is not a target here (the fewest changes come first); the first followers are balanced after it by
stage 3, which never changes a leader.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..model import ClusterState
from ..targets import intervals
from .common import StageInput
from .leaders import _choose, _problem, _to_front


@dataclass(frozen=True, eq=False)
class DemoteResult:
    """The reordered replicas, the partitions led by a demoted broker that could not be demoted, and how many
    leaderships moved off the demoted brokers."""

    replicas: np.ndarray
    stuck: np.ndarray  # rows still led by a demoted broker
    moved_off: int


def demotable(state: ClusterState, movable: np.ndarray, demoted: np.ndarray) -> np.ndarray:
    """bool [P]: movable partitions with a live replica on a broker that is not demoted (``demoted`` bool [N])."""
    idx = state.replica_index
    ok = idx >= 0
    safe = np.maximum(idx, 0)
    return np.asarray(movable, bool) & (ok & state.brokers.live[safe] & ~demoted[safe]).any(axis=1)


def demote_intervals(state: ClusterState, can: np.ndarray, demoted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Leader intervals per broker (all brokers; 0 for the demoted ones): each other live broker within
    [min(its leaders now, floor of its share), max(its leaders now, ceil of its share)], its share being of the
    leaderships the brokers not demoted can take (every partition less those that stay on a demoted broker). A
    broker at or above its share takes none of the demoted leaderships, one below it takes them up to its share,
    and nothing else needs to change: the fewest changes are the demoted leaderships wherever there is room."""
    b, idx = state.brokers, state.replica_index
    open_b = b.live & ~demoted
    lead = idx[:, 0]
    stay = (lead >= 0) & ~np.asarray(can, bool) & demoted[np.maximum(lead, 0)]
    lo, hi = intervals(state.num_partitions - int(stay.sum()), b.weight, open_b)
    now = np.bincount(lead[lead >= 0], minlength=len(b)).astype(np.int64)
    lo = np.where(open_b, np.minimum(lo, now), 0)
    hi = np.where(open_b, np.maximum(hi, now), 0)
    return lo, hi


def demote_leaders(state: ClusterState, movable: np.ndarray, demoted: np.ndarray) -> DemoteResult:
    """Move every leadership off ``demoted`` (bool [N]) where the partition allows it (module doc)."""
    b = state.brokers
    idx = state.replica_index
    led = (idx[:, 0] >= 0) & demoted[np.maximum(idx[:, 0], 0)]
    can = demotable(state, movable, demoted)
    si = StageInput.of(state, can)
    replicas = state.replicas
    if si.Pm:
        pb = _problem(state, si, can, state.replicas[:, 0].copy(), False)
        keep = ~demoted[si.live_idx][pb.lp]  # no candidate on a demoted broker: its leader ceiling is 0
        fixed = idx[~can, 0]
        fixed = fixed[fixed >= 0]
        fixed_l = np.bincount(fixed, minlength=si.N).astype(np.int64)
        lo, hi = demote_intervals(state, can, demoted)
        lo = np.maximum(lo - fixed_l, 0)[si.live_idx]
        hi = np.maximum(hi - fixed_l, 0)[si.live_idx]
        pb = replace(pb, rows=pb.rows[keep], cols=pb.cols[keep], lp=pb.lp[keep], cost=pb.cost[keep],
                     cell=pb.cell[keep], lo=lo, hi=hi)
        pick = _choose(pb) > 0
        new_col = np.zeros(pb.Pm, dtype=np.int64)
        new_col[pb.rows[pick]] = pb.cols[pick]
        replicas = _to_front(state.replicas, si.mov, new_col)
    stuck = np.flatnonzero(led & ~can)
    return DemoteResult(replicas=replicas, stuck=stuck, moved_off=int((led & can).sum()))
