"""The rack rule: how many replicas of a partition each rack may hold, shared by every stage and check.

A partition of replication factor k over the racks that hold live brokers (s_r live brokers in rack r) spreads
its replicas as evenly as the brokers allow: the per-rack count vector, sorted descending, is the
lexicographically smallest one that fits (c_r <= s_r, Σ c_r = k). With L the smallest integer such that
Σ_r min(s_r, L) >= k (the *level*), the vectors that reach it are exactly those with

    lo_r <= c_r <= hi_r,   hi_r = min(s_r, L),   lo_r = max(min(s_r, L - 1), k - Σ_{q≠r} hi_q),   Σ c_r = k.

Racks of at least L brokers take L - 1 or L replicas (L when every such rack must), smaller racks take every
broker they have. Equal racks give the familiar ⌈k/R⌉ at most per rack (k <= R: at most one per rack, exactly one
when k = R). Examples: RF 4 over racks of 4 and 1 brokers is 3 + 1; RF 5 over racks of 3, 3 and 1 is 2, 2, 1.

Clusters have millions of partitions but few distinct RFs, so everything is computed once per distinct k.
"""
from __future__ import annotations

import numpy as np

from .model import Brokers


def live_rack_sizes(brokers: Brokers) -> tuple[np.ndarray, np.ndarray]:
    """(rack indices, live brokers in each) over the racks that hold a live broker, ascending by rack index;
    empty when the brokers have no racks. Removed brokers do not count."""
    if not brokers.has_racks:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    ids, sizes = np.unique(brokers.rack[brokers.live], return_counts=True)
    return ids.astype(np.int64), sizes.astype(np.int64)


def rack_levels(k: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """L per entry of ``k``: the smallest integer with Σ_r min(s_r, L) >= k (0 for k = 0). When k is above the
    live brokers (Σ s_r < k) no placement exists; then L = k, which caps nothing."""
    k = np.asarray(k, dtype=np.int64)
    s = np.asarray(sizes, dtype=np.int64)
    uniq, inv = np.unique(k, return_inverse=True)
    smax = int(s.max(initial=0))
    # reach[L] = Σ_r min(s_r, L) for L = 0..smax: nondecreasing, strictly increasing up to smax
    reach = np.minimum(s[None, :], np.arange(smax + 1)[:, None]).sum(axis=1) if len(s) else np.zeros(1, np.int64)
    level = np.searchsorted(reach, uniq, side="left").astype(np.int64)
    level = np.where(uniq > reach[-1], uniq, level)
    return level[inv].reshape(k.shape)


def distinct_rack_bounds(k: np.ndarray, sizes: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rule once per distinct k: (distinct k [U], inverse [len(k)], level [U], lo [U, R], hi [U, R]).

    ``sizes`` may hold zeros (racks without a live broker): such a rack gets [0, 0]. When k is above the live
    brokers, lo = hi = s (every live broker; the caller refuses such a request)."""
    k = np.asarray(k, dtype=np.int64).ravel()
    s = np.asarray(sizes, dtype=np.int64).ravel()
    uniq, inv = np.unique(k, return_inverse=True)
    level = rack_levels(uniq, s)
    hi = np.minimum(s[None, :], level[:, None])
    others = hi.sum(axis=1, keepdims=True) - hi
    lo = np.maximum(np.minimum(s[None, :], np.maximum(level[:, None] - 1, 0)), uniq[:, None] - others)
    lo = np.clip(lo, 0, hi)
    return uniq, inv, level, lo, hi


def rack_bounds(k: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi), int64 [len(k), R]: the least and most replicas of each partition in each rack (see the module
    docstring). Computed per distinct k, then expanded."""
    _, inv, _, lo, hi = distinct_rack_bounds(k, sizes)
    return lo[inv], hi[inv]


def rack_totals_fixed(k: np.ndarray, sizes: np.ndarray) -> bool:
    """True when lo_r == hi_r for every rack and every k: each partition's count per rack is then the same in
    every plan, so every rack's total replica count is fixed whatever the plan."""
    _, _, _, lo, hi = distinct_rack_bounds(k, sizes)
    return bool(np.array_equal(lo, hi))
