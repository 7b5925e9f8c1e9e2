"""Checks every plan before it is written: target RF of distinct live brokers, rack rule (``racks.py``) on the
replica sets it places, fixed partitions kept, no new replica on a broker closed to new replicas, and with a
demotion no leadership left on a demoted broker where the partition has another live replica."""
from __future__ import annotations

import numpy as np

from .metrics import rack_violations
from .model import PAD, ClusterState


class PlanVerificationError(AssertionError):
    """A plan broke a hard rule: this is a bug in the planner, never an output."""


def verify_plan(before: ClusterState, after: ClusterState, target_rf: np.ndarray, movable: np.ndarray,
                *, racks: bool = True) -> None:
    if not (np.array_equal(before.topic, after.topic) and np.array_equal(before.partition, after.partition)):
        raise PlanVerificationError("the plan changed the set of partitions")
    reps = after.replicas
    rf = (reps != PAD).sum(axis=1)
    bad = np.flatnonzero(rf != target_rf)
    if len(bad):
        raise PlanVerificationError(f"partition row {bad[0]} has RF {rf[bad[0]]}, expected {target_rf[bad[0]]}")
    if reps.shape[1] > 1:
        srt = np.sort(np.where(reps == PAD, np.iinfo(np.int32).max, reps), axis=1)
        dup = ((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] != np.iinfo(np.int32).max)).any(axis=1)
        if dup.any():
            raise PlanVerificationError(f"partition row {np.flatnonzero(dup)[0]} has a broker twice")
    # left-packed lists
    seen_pad = np.cumsum(reps == PAD, axis=1) > 0
    if np.any(seen_pad & (reps != PAD)):
        raise PlanVerificationError("a replica list has a gap")
    idx = after.brokers.index_of(reps)  # raises on unknown brokers
    used = idx >= 0
    if np.any(after.brokers.removed[idx[used]]):
        raise PlanVerificationError("a replica lands on a removed broker")
    w = max(before.replicas.shape[1], reps.shape[1])
    a = np.pad(before.replicas, ((0, 0), (0, w - before.replicas.shape[1])), constant_values=PAD)
    c = np.pad(reps, ((0, 0), (0, w - reps.shape[1])), constant_values=PAD)
    if not np.array_equal(a[~movable], c[~movable]):
        raise PlanVerificationError("a partition outside the selected topics changed")
    gained = closed_arrivals(before, after)
    if len(gained):
        r = int(gained[0])
        raise PlanVerificationError(
            f"partition {after.topics[after.topic[r]]}-{int(after.partition[r])} gains a replica on a broker closed "
            f"to new replicas (replicas {[int(x) for x in reps[r] if x != PAD]})")
    if racks and after.brokers.has_racks:
        # the rule of racks.py (each rack within [lo_r, hi_r] for the partition's RF over the live brokers per
        # rack) on every replica set the plan places; a set it leaves as it is (topics left out, --stages without
        # replicas) is the input's, reported by the metrics
        placed = (np.sort(a, axis=1) != np.sort(c, axis=1)).any(axis=1)
        bad = np.intersect1d(rack_violations(after), np.flatnonzero(placed))
        if len(bad):
            r = int(bad[0])
            raise PlanVerificationError(
                f"partition {after.topics[after.topic[r]]}-{int(after.partition[r])} breaks the rack rule "
                f"(replicas {[int(x) for x in reps[r] if x != PAD]})")


def closed_arrivals(before: ClusterState, after: ClusterState) -> np.ndarray:
    """Rows where ``after`` puts a replica on a broker closed to new replicas that the row did not hold in
    ``before`` (``Brokers.closed``; reordering is no arrival)."""
    shut = before.brokers.no_new
    if not shut.any():
        return np.zeros(0, dtype=np.int64)
    ids = before.brokers.ids[shut]
    on = np.isin(after.replicas, ids)
    rows = np.flatnonzero(on.any(axis=1))
    if not len(rows):
        return rows
    held = (after.replicas[rows][:, :, None] == before.replicas[rows][:, None, :]).any(axis=2)
    return rows[(on[rows] & ~held).any(axis=1)]


def undemoted(after: ClusterState, demoted: np.ndarray, movable: np.ndarray) -> np.ndarray:
    """Rows of ``movable`` partitions led by a ``demoted`` broker (bool [N]) while another live, not demoted broker
    holds a replica: the leadership could have moved off."""
    idx = after.replica_index
    ok = idx >= 0
    safe = np.maximum(idx, 0)
    other = ok & after.brokers.live[safe] & ~demoted[safe]
    led = ok[:, 0] & demoted[safe[:, 0]]
    return np.flatnonzero(np.asarray(movable, bool) & led & other.any(axis=1))


def verify_demotion(before: ClusterState, after: ClusterState, demoted: np.ndarray, movable: np.ndarray) -> None:
    """A demotion reorders only, and leaves no demoted broker leading where another live replica could lead."""
    if not np.array_equal(np.sort(before.replicas, axis=1), np.sort(after.replicas, axis=1)):
        raise PlanVerificationError("a demotion changed a replica set (it may only reorder)")
    bad = undemoted(after, demoted, movable)
    if len(bad):
        r = int(bad[0])
        raise PlanVerificationError(f"partition {after.topics[after.topic[r]]}-{int(after.partition[r])} is still "
                                    "led by a demoted broker")
