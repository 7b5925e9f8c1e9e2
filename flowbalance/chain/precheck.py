"""The pre-check: a cluster already at every target gets no plan (nothing proposed, byte-identical empty files).
Failover is at its target when its worst spread equals the certificate's bound: no reordering can lower it (with a
move budget, which may also move replicas for it: when it is at most 1, or at the rack rule's floor).

Also the targets the chain's stages test for themselves: leader balance, ideal first-follower pairs, and whether
a request must change something whatever the spreads say.
"""
from __future__ import annotations

import numpy as np

from ..metrics import (StateMetrics, above_capacity, disk_within, leader_counts, pair_matrix, rack_violations,
                       replica_counts, topic_spread)
from ..failover_level import failover_level
from ..model import ClusterState
from ..resolve import Resolved, rows_on_removed
from ..stages.failover_moves import rack_failover_floor
from .budget import scope_of
from ..controls import closed_caps
from ..targets import intervals, load_intervals, within


def meets_every_target(r: Resolved) -> bool:
    """True when nothing can improve: counts, racks, removals, RF, leaders and pairs all at their targets (and,
    with disk balance, every broker's disk within the tolerance; with known capacities, none above it)."""
    state, req = r.before, r.request
    if not np.array_equal(r.target_rf, state.rf):
        return False
    replicas_on = "replicas" in req.stages
    if state.has_sizes and replicas_on:
        if above_capacity(state) or (req.disk_balance and not disk_within(state, req.disk_tolerance)):
            return False
    # per-topic balance is a target when strict, or when a move budget is given to spend on it
    budget = budget_given(r)
    topics = req.strict_per_topic or (budget and req.topics_after_moves)
    if not _counts_at_target(state, topics, replicas_on, req.balance == "bytes", r.movable):
        return False
    # every topic's leaders are a target only when topics are balanced strictly (the failover stage trades them)
    if "leaders" in req.stages and not leaders_balanced(state, req.strict_per_topic):
        return False
    # failover: no order of these replica sets has a smaller worst spread (the certificate's bound is met); with a
    # move budget, placement may go lower: then the target is 1, or the rack rule's floor for every placement
    if "followers" not in req.stages:
        return True
    level = failover_level(state, r.movable)
    if not level.met:
        return False
    return not (budget and level.spread > max(1, rack_failover_floor(state, r.target_rf, r.movable) or 0))


def budget_given(r: Resolved) -> bool:
    """Whether the request gives a move budget above 0 for its scope."""
    return r.request.extra_moves_for(scope_of(r)) > 0


def _counts_at_target(state: ClusterState, per_topic: bool, replicas_on: bool, bytes_only: bool,
                      movable: np.ndarray) -> bool:
    """Replica counts within the targets: the certificate's broker intervals (closed brokers capped, the load of
    partitions that may not move a floor), no rack violation, nothing on removed brokers, topics when asked."""
    b = state.brokers
    c = replica_counts(state)
    if not replicas_on:
        return not c[~b.live].any()
    if bytes_only:
        return not len(rack_violations(state)) and not c[~b.live].any()
    cap = closed_caps(state)  # brokers closed to new replicas: at most what they hold
    idx = state.replica_index[~np.asarray(movable, dtype=bool)]
    fixed = np.bincount(idx[idx >= 0], minlength=len(b)).astype(np.int64)  # may not leave: a floor
    bounds = load_intervals(int(c.sum()), b.weight, b.live, cap, fixed)
    if not within(c, *bounds, b.live) or len(rack_violations(state)):
        return False
    return not (per_topic and topic_spread(state).unbalanced_topics)


def leaders_balanced(state: ClusterState, per_topic: bool) -> bool:
    """Leader counts within their intervals (and per topic when asked)."""
    b = state.brokers
    if not within(leader_counts(state), *intervals(state.num_partitions, b.weight, b.live), b.live):
        return False
    return not (per_topic and topic_spread(state.with_replicas(state.replicas[:, :1])).unbalanced_topics > 0)


def pairs_ideal(state: ClusterState) -> bool:
    """Per leader, first-follower counts within 1 of each other over every broker that could be chosen."""
    idx = state.replica_index
    rows = state.rf >= 3
    if idx.shape[1] < 3 or not rows.any():
        return True
    n = len(state.brokers)
    M = pair_matrix(state)
    sub = idx[rows]
    cand = np.zeros((n, n), dtype=bool)
    for j in range(1, sub.shape[1]):
        ok = sub[:, j] >= 0
        cand[sub[ok, 0], sub[ok, j]] = True
    for lead in np.flatnonzero(cand.any(axis=1)):
        vals = M[lead][cand[lead]]
        if vals.max() - vals.min() > 1:
            return False
    return True


def must_change(r: Resolved) -> bool:
    """RF changes, replicas on removed brokers and rack violations must be fixed whatever the spreads say."""
    s = r.before
    return (not np.array_equal(r.target_rf, s.rf) or bool(rows_on_removed(s).any())
            or len(rack_violations(s)) > 0)


def improves(mb: StateMetrics, mc: StateMetrics, per_topic: bool) -> bool:
    """True when the candidate lowers at least one spread (replicas, topics, leaders, broker or rack failover)."""
    pairs = [(mc.replica_spread, mb.replica_spread), (mc.leader_spread, mb.leader_spread),
             (mc.failover.worst[1], mb.failover.worst[1]), (mc.rack_failover.worst[1], mb.rack_failover.worst[1])]
    if per_topic:
        pairs.append((mc.topic.spread, mb.topic.spread))
    return any(a < b for a, b in pairs)
