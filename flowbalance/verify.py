"""Checks every plan before it is written: target RF of distinct live brokers, rack rule (``racks.py``) on the
replica sets it places, fixed partitions kept."""
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
