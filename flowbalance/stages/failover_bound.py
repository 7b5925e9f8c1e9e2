"""A counting lower bound on the failover stage's worst spread, row by row (``failover_problem`` explains rows).

For failed broker f, whatever the choice (any order of the free rows that keeps every broker's leaders within
its interval [lo_b, hi_b]; forced rows as they are):

* max side: f leads at least ``need_f`` free rows (its interval's floor less its forced rows) and hands each to
  one of that row's other live replicas; survivor b leads at least ``lo_b`` and can take at most ``cap[f, b]`` of
  them (the free rows holding both f and b). Water-filling gives the smallest possible row maximum;
* min side: f leads at most ``avail_f`` free rows, survivor b leads at most ``hi_b``; water-filling gives the
  largest possible row minimum;
* the row's total is the same for every choice, so its maximum is at least the average and its minimum at
  most the average.

Each row's bound holds for every choice, so the largest of them bounds the worst spread. Per-topic leader
intervals are not used: the bound holds with or without them.

Blocks (``block_bound``): rows alone miss brokers that share many partitions with each other. For a set S of k live
brokers, every free row whose live replicas all lie in S (n_S of them) is led by a broker of S and fails over to
another: the block's k(k - 1) values ``V[f, b]`` (f, b in S) add up to at least
``D ((k - 1) (sum of L_b over S) + n_S + forced pairs inside S) - (their shares)``, so one row of S has a value
of at least that sum / (k (k - 1)), while that row's minimum is at most its largest possible minimum (the min
side above). Candidate sets grow greedily from each broker by the most shared partitions, up to ``BLOCK_MAX``
brokers. (A history-grown, rack-aware cluster of 1,000 brokers: rows 1, blocks 19, found 20.)
"""
from __future__ import annotations

import hashlib
import itertools
import math

import numpy as np

from .failover_problem import BIG, FailoverProblem, loads, values


def row_bounds(prob: FailoverProblem, choice: np.ndarray) -> np.ndarray:
    """Per failed broker, a lower bound on its row's scaled spread (0 for rows of removed brokers); ``choice``
    (any feasible one) only gives the row totals, which every choice shares."""
    return bounds(prob, choice)[0]


def bounds(prob: FailoverProblem, choice: np.ndarray, blocks: bool = False) -> tuple[np.ndarray, int]:
    """The rows' bounds and a scaled lower bound on the worst spread: their largest, and with ``blocks`` the
    largest block bound too.

    A pure function of the problem's intervals, forced rows, shares, survivors, replica sets (in any order) and
    the rows' averages, so the last answer is kept with a digest of those (``_digest``): the certificate bounds
    the plan's problem again, and when it is the failover stage's (the same sets, intervals and leader counts)
    the answer is not computed twice (1.05 s at 3,000,000 replicas, against 0.1 s a digest)."""
    avg = _row_average(prob, choice)
    key = _digest(prob, avg, blocks)
    if _LAST.get("key") == key:
        rows, bound = _LAST["value"]
        return rows.copy(), bound
    value = _bounds(prob, avg, blocks)
    _LAST.update(key=key, value=(value[0].copy(), value[1]))
    return value


_LAST: dict = {}  # the last answer of ``bounds`` and its inputs' digest


def _digest(p: FailoverProblem, avg: tuple[np.ndarray, np.ndarray], blocks: bool) -> bytes:
    """A digest of everything ``_bounds`` reads; the replica sets row by row in sorted order (the order of a
    partition's replicas does not matter to it)."""
    h = hashlib.sha256(np.array([p.N, p.D, int(blocks), *p.members.shape], dtype=np.int64))
    for a in (p.lo, p.hi, p.fixed_L, p.fixed_M, p.R, p.valid, np.sort(p.members, axis=1), *avg):
        h.update(np.ascontiguousarray(a))  # the buffer itself: no copy (sha256: 0.1 s a digest at 3,000 brokers)
    return h.digest()


def _bounds(p: FailoverProblem, avg: tuple[np.ndarray, np.ndarray], blocks: bool) -> tuple[np.ndarray, int]:
    """``bounds`` from the rows' averages ``avg`` (rounded up, down)."""
    cap, nfree = co_members(p)
    lo2 = np.maximum(p.lo, p.fixed_L)
    need = np.maximum(lo2 - p.fixed_L, 0)
    low = p.D * (lo2[None, :] + p.fixed_M) - p.R  # smallest possible V[f, b] before f's free rows
    hmax = np.maximum(_fill_max(p, low, cap, need), avg[0])
    xmin = _largest_min(p, avg[1], cap, nfree)
    rows = np.where(p.valid.any(axis=1), np.maximum(hmax - xmin, 0), 0)
    worst = int(rows.max(initial=0))
    return rows, max(worst, _blocks(p, cap, xmin)) if blocks else worst


def _row_average(p: FailoverProblem, choice: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's average value over its survivors, rounded up and down (the same for every choice)."""
    V = values(p, *loads(p, choice))
    n = np.maximum(p.valid.sum(axis=1), 1)
    total = np.where(p.valid, V, 0).sum(axis=1)
    return -((-total) // n), total // n


def _largest_min(p: FailoverProblem, avg_lo: np.ndarray, cap: np.ndarray, nfree: np.ndarray) -> np.ndarray:
    """Per row, an upper bound on its smallest value over every choice (the min side of the module doc);
    ``avg_lo``: the rows' averages rounded down."""
    hi2 = np.minimum(p.hi, p.fixed_L + nfree)
    avail = np.minimum(hi2 - p.fixed_L, nfree)
    base = p.D * (hi2[None, :] + p.fixed_M) - p.R  # largest possible V[f, b] before f's free rows
    return np.minimum(_fill_min(p, base, cap, avail), avg_lo)


def in_leaders(prob: FailoverProblem, scaled: int) -> float:
    """A scaled lower bound in leaders. With weights a scaled spread is within 1 of D x the metric's spread
    (two roundings of at most 1/2), so (scaled - 1) / D bounds the metric's; rounded down to 1e-6."""
    if prob.D == 1:
        return float(scaled)
    return max(0.0, math.floor((scaled - 1) / prob.D * 1e6) / 1e6)


def co_members(prob: FailoverProblem) -> tuple[np.ndarray, np.ndarray]:
    """cap[f, b]: free rows holding both f and b (live); nfree[b]: free rows holding b."""
    N, m = prob.N, prob.members
    keys = [m[ok, i] * N + m[ok, j]
            for i in range(m.shape[1]) for j in range(m.shape[1]) if i != j
            for ok in [(m[:, i] >= 0) & (m[:, j] >= 0)]]
    flat = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    cap = np.bincount(flat, minlength=N * N).reshape(N, N).astype(np.int64)
    nfree = np.bincount(m[m >= 0], minlength=N).astype(np.int64)
    return cap, nfree


def _fill_max(p: FailoverProblem, low: np.ndarray, cap: np.ndarray, need: np.ndarray) -> np.ndarray:
    """Per row f: the smallest h with every low[f, b] <= h and room below h for ``need_f`` leaderships (at most
    cap[f, b] to b). Bisection on all rows at once; h = floor + D (need + 1) always has room (the caps hold
    every free row of f, and need_f is at most their number)."""
    floor_h = np.where(p.valid, low, -BIG).max(axis=1)
    lo_, hi_ = floor_h - 1, floor_h + p.D * (need + 1)  # lo_: too small; hi_: enough
    while True:
        open_ = hi_ - lo_ > 1
        if not open_.any():
            return hi_
        mid = (lo_ + hi_) // 2
        room = np.where(p.valid, np.clip((mid[:, None] - low) // p.D, 0, cap), 0).sum(axis=1)
        good = room >= need
        hi_ = np.where(open_ & good, mid, hi_)
        lo_ = np.where(open_ & ~good, mid, lo_)


def _fill_min(p: FailoverProblem, base: np.ndarray, cap: np.ndarray, avail: np.ndarray) -> np.ndarray:
    """Per row f: the largest h such that lifting every base[f, b] to h takes at most ``avail_f`` leaderships,
    each b taking at most cap[f, b]."""
    ceil_h = np.where(p.valid, base + p.D * cap, BIG).min(axis=1)
    lo_ = np.where(p.valid, base, BIG).min(axis=1)  # reachable: nothing to lift
    lo_ = np.where(p.valid.any(axis=1), lo_, 0)
    hi_ = np.where(p.valid.any(axis=1), ceil_h + 1, 1)  # not reachable
    while True:
        open_ = hi_ - lo_ > 1
        if not open_.any():
            return lo_
        mid = (lo_ + hi_) // 2
        lift = np.where(p.valid, np.maximum(-((base - mid[:, None]) // p.D), 0), 0).sum(axis=1)
        good = (lift <= avail) & (mid <= ceil_h)
        lo_ = np.where(open_ & good, mid, lo_)
        hi_ = np.where(open_ & ~good, mid, hi_)


# ---- blocks -----------------------------------------------------------------------------------------------------

BLOCK_MAX = 5  # brokers per candidate block


def block_bound(prob: FailoverProblem, choice: np.ndarray) -> int:
    """The largest block bound (module doc) over greedy candidate blocks, scaled; 0 when there is none."""
    cap, nfree = co_members(prob)
    return _blocks(prob, cap, _largest_min(prob, _row_average(prob, choice)[1], cap, nfree))


def _blocks(p: FailoverProblem, cap: np.ndarray, xmin: np.ndarray) -> int:
    """``block_bound`` from the shared partitions ``cap`` and the rows' largest minima ``xmin``."""
    N, K = p.N, p.members.shape[1]
    if K < 2 or (N + 1) ** K >= 1 << 62:  # member sets are encoded as numbers base N + 1
        return 0
    counts = _member_sets(p)
    lo2 = np.maximum(p.lo, p.fixed_L)
    sets = np.flatnonzero(p.valid.any(axis=1))[:, None]
    score = cap[sets[:, 0]].astype(np.int64)
    best = 0
    for k in range(2, BLOCK_MAX + 1):
        sets, score = _grow(p, sets, score, cap)
        if not len(sets):
            break
        inside = _inside(sets, K, N, counts)
        rows, cols = np.repeat(sets, k, axis=1), np.tile(sets, (1, k))
        off = rows != cols
        forced = np.where(off, p.fixed_M[rows, cols], 0).sum(axis=1)
        shares = np.where(off, p.R[rows, cols], 0).sum(axis=1)
        leaders = np.maximum(lo2[sets].sum(axis=1), p.fixed_L[sets].sum(axis=1) + inside)
        total = p.D * ((k - 1) * leaders + inside + forced) - shares
        top = -(-total // (k * (k - 1)))
        best = max(best, int((top - xmin[sets].max(axis=1)).max()))
    return best


def _grow(p: FailoverProblem, sets: np.ndarray, score: np.ndarray, cap: np.ndarray):
    """Each set with the broker sharing the most partitions with it added (one that survives every member);
    sets with no such broker are dropped. ``score``: partitions each broker shares with the set."""
    ok = score > 0
    for j in range(sets.shape[1]):
        ok &= p.valid[sets[:, j]]
    pick = np.where(ok, score, -1).argmax(axis=1)
    keep = ok[np.arange(len(sets)), pick]
    sets, pick = sets[keep], pick[keep]
    return np.sort(np.column_stack([sets, pick]), axis=1), score[keep] + cap[pick]


def _member_sets(p: FailoverProblem) -> tuple[np.ndarray, np.ndarray]:
    """Distinct live replica sets of the free rows (as numbers) and how many rows have each."""
    return np.unique(_encode(np.sort(p.members, axis=1), p.N), return_counts=True)


def _encode(sorted_members: np.ndarray, N: int) -> np.ndarray:
    """Sorted broker indices (-1 first) as one number base N + 1."""
    key = np.zeros(len(sorted_members), dtype=np.int64)
    for j in range(sorted_members.shape[1]):
        key = key * (N + 1) + (sorted_members[:, j] + 1)
    return key


def _inside(sets: np.ndarray, K: int, N: int, counts: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Free rows whose live replicas (two or more) all lie in each set: a lookup per subset of the set."""
    keys, n = counts
    k = sets.shape[1]
    out = np.zeros(len(sets), dtype=np.int64)
    for r in range(2, min(k, K) + 1):
        for pos in itertools.combinations(range(k), r):
            sub = np.full((len(sets), K), -1, dtype=np.int64)
            sub[:, K - r:] = sets[:, list(pos)]
            key = _encode(sub, N)
            at = np.minimum(np.searchsorted(keys, key), len(keys) - 1)
            out += np.where(keys[at] == key, n[at], 0)
    return out
