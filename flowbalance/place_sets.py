"""The replica sets of new partitions (``flowbalance place``): how many new replicas each broker takes, then which
partitions they form. Arrays in, arrays out, in dense broker indices; the order inside each set (leader, first
follower) is chosen afterwards by the planner's own stages 2-4 (``flowbalance.place``).

Counts (``new_counts``): one replica at a time to the broker that keeps the topic most even, then the cluster
(replicas less each broker's weighted share), then the fewest leaders, then the lowest id. Only brokers that may
take a replica (``eligible``) take one, each at most once per partition (so at most P), and each rack's total
stays within [P·lo_r, P·hi_r] of the rack rule (``racks.distinct_rack_bounds``): the racks' floors are filled
first (inside each rack by the same key). This is water-filling: for a new topic on equal brokers without racks,
every broker gets ⌊PK/N⌋ or ⌈PK/N⌉ and the ⌈⌉ go to the least loaded brokers, which is the most even cluster the
±1 rule allows.

Sets (``partition_sets``): partition by partition, R partitions left. A broker with R replicas left must be in
this one, and each rack r takes between max(lo_r, t_r - (R-1)·hi_r) and min(hi_r, t_r - (R-1)·lo_r) of it (t_r
its replicas left); the rest are picked by the fewest earlier partitions shared with the brokers already picked
(so each broker's partitions meet many different brokers, which lets a failed broker's leaderships spread), then
the most replicas left, then the id. Without racks, and with RF at most the racks, this never gets stuck (at least
K brokers, and K racks, have replicas left, and at most K must be picked). When the rack rule allows several
replicas per rack and the greedy gets stuck, the sets come from the column-major fill instead: the replicas laid
out broker after broker, rack after rack, and slot s given to partition s mod P; a run of at most P slots meets
each partition at most once, and a rack's run of t_r slots gives every partition ⌊t_r/P⌋ or ⌈t_r/P⌉ of them.
"""
from __future__ import annotations

import numpy as np

from .racks import distinct_rack_bounds
from .targets import quotas

_ROUND = 9  # decimals kept in the keys, so that float noise never decides a tie


def rack_limits(rack: np.ndarray, eligible: np.ndarray, rf: int) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) per rack index: the least and most replicas of one partition of RF ``rf`` in each rack, over the
    eligible brokers per rack; one pseudo-rack [0, rf] when there are no racks (``rack`` all -1)."""
    if not len(rack) or (rack < 0).any():
        return np.zeros(1, dtype=np.int64), np.array([rf], dtype=np.int64)
    sizes = np.bincount(rack[eligible], minlength=int(rack.max()) + 1)
    _, _, _, lo, hi = distinct_rack_bounds(np.array([rf]), sizes)
    return lo[0], hi[0]


def new_counts(p: int, rf: int, topic_now: np.ndarray, load: np.ndarray, leaders: np.ndarray, weight: np.ndarray,
               eligible: np.ndarray, live: np.ndarray, rack: np.ndarray) -> np.ndarray:
    """New replicas per broker (int64 [N], summing to ``p * rf``) by the module's water-filling.
    ``topic_now``: the topic's replicas now (0 for a new topic); ``load``, ``leaders``: the cluster's."""
    n = len(weight)
    group = np.where(rack >= 0, rack, 0).astype(np.int64)
    lo, hi = rack_limits(rack, eligible, rf)
    q_topic = quotas(int(topic_now.sum()) + p * rf, weight, eligible)
    q_load = quotas(int(load[live].sum()) + p * rf, weight, live)
    counts = np.zeros(n, dtype=np.int64)
    rack_total = np.zeros(len(lo), dtype=np.int64)
    order_id = np.arange(n)
    for r in np.flatnonzero(lo > 0):  # the racks' floors first
        for _ in range(p * int(lo[r])):
            _add_one(counts, rack_total, group, (eligible & (group == r)), p, None, topic_now, q_topic, load,
                     q_load, leaders, order_id)
    for _ in range(p * rf - int(counts.sum())):
        _add_one(counts, rack_total, group, eligible, p, p * hi, topic_now, q_topic, load, q_load, leaders, order_id)
    return counts


def _add_one(counts, rack_total, group, allowed, p, rack_cap, topic_now, q_topic, load, q_load, leaders, ids) -> None:
    """One more replica to the best allowed broker below P (and its rack below ``rack_cap``), in place."""
    ok = allowed & (counts < p)
    if rack_cap is not None:
        ok &= rack_total[group] < rack_cap[group]
    cand = np.flatnonzero(ok)
    if not len(cand):  # cannot happen when RF <= eligible brokers (checked by the caller)
        raise ValueError("no broker can take another replica")
    keys = (ids[cand], leaders[cand], np.round(load[cand] + counts[cand] + 1 - q_load[cand], _ROUND),
            np.round(topic_now[cand] + counts[cand] + 1 - q_topic[cand], _ROUND))
    b = cand[np.lexsort(keys)[0]]
    counts[b] += 1
    rack_total[group[b]] += 1


def partition_sets(counts: np.ndarray, p: int, rf: int, rack: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """[p, rf] broker indices, each partition's set (unordered), every broker in ``counts[b]`` of them, the rack
    rule held; the greedy of the module doc, or the column-major fill when the greedy gets stuck."""
    group = np.where(rack >= 0, rack, 0).astype(np.int64)
    lo, hi = rack_limits(rack, eligible, rf)
    got = _greedy_sets(counts.copy(), p, rf, group, lo, hi)
    return got if got is not None else column_fill(counts, p, rf, group)


def _greedy_sets(left: np.ndarray, p: int, rf: int, group: np.ndarray, lo: np.ndarray, hi: np.ndarray):
    """The greedy of the module doc; None when it gets stuck."""
    n = len(left)
    shared = np.zeros((n, n), dtype=np.int64)
    rack_left = np.bincount(group, weights=left, minlength=len(lo)).astype(np.int64)
    out = np.empty((p, rf), dtype=np.int64)
    for i in range(p):
        rest = p - i - 1
        need = np.maximum(lo, rack_left - rest * hi)
        allow = np.minimum(hi, rack_left - rest * lo)
        chosen = _pick_partition(left, p - i, rf, group, need, allow, shared)
        if chosen is None:
            return None
        out[i] = chosen
        left[chosen] -= 1
        np.subtract.at(rack_left, group[chosen], 1)
        shared[np.ix_(chosen, chosen)] += 1
        if (left > rest).any() or (rack_left > rest * hi).any() or (rack_left < rest * lo).any():
            return None
    return out


def _pick_partition(left, remaining, rf, group, need, allow, shared):
    """One partition's brokers: the forced ones, then each rack's need, then the best by the module doc's key."""
    chosen: list[int] = [int(b) for b in np.flatnonzero(left == remaining)]
    in_rack = np.bincount(group[chosen], minlength=len(need)) if chosen else np.zeros(len(need), dtype=np.int64)
    if len(chosen) > rf or (in_rack > allow).any():
        return None
    for r in np.flatnonzero(need > in_rack):
        for _ in range(int(need[r] - in_rack[r])):
            if not _pick_one(left, group, chosen, in_rack, shared, group == r, allow):
                return None
    while len(chosen) < rf:
        if not _pick_one(left, group, chosen, in_rack, shared, np.ones(len(left), dtype=bool), allow):
            return None
    return np.array(chosen, dtype=np.int64)


def _pick_one(left, group, chosen, in_rack, shared, among, allow) -> bool:
    """Add the best broker of ``among`` with replicas left, not chosen, whose rack has room; False when none."""
    ok = among & (left > 0) & (in_rack[group] < allow[group])
    ok[chosen] = False
    cand = np.flatnonzero(ok)
    if not len(cand):
        return False
    met = shared[np.ix_(chosen, cand)].sum(axis=0) if chosen else np.zeros(len(cand), dtype=np.int64)
    b = int(cand[np.lexsort((cand, -left[cand], met))[0]])
    chosen.append(b)
    in_rack[group[b]] += 1
    return True


def column_fill(counts: np.ndarray, p: int, rf: int, group: np.ndarray) -> np.ndarray:
    """[p, rf]: the replicas laid out broker after broker, rack after rack (ids ascending), slot s to partition
    s mod p, column s // p (see the module doc for why the sets are valid)."""
    order = np.lexsort((np.arange(len(counts)), group))
    layout = np.repeat(order, counts[order])
    return layout.reshape(rf, p).T.copy()
