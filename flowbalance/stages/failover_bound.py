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
"""
from __future__ import annotations

import math

import numpy as np

from .failover_problem import BIG, FailoverProblem, loads, values


def row_bounds(prob: FailoverProblem, choice: np.ndarray) -> np.ndarray:
    """Per failed broker, a lower bound on its row's scaled spread (0 for rows of removed brokers); ``choice``
    (any feasible one) only gives the row totals, which every choice shares."""
    p = prob
    cap, nfree = co_members(p)
    lo2 = np.maximum(p.lo, p.fixed_L)
    hi2 = np.minimum(p.hi, p.fixed_L + nfree)
    need = np.maximum(lo2 - p.fixed_L, 0)
    avail = np.minimum(hi2 - p.fixed_L, nfree)
    low = p.D * (lo2[None, :] + p.fixed_M) - p.R  # smallest possible V[f, b] before f's free rows
    base = p.D * (hi2[None, :] + p.fixed_M) - p.R  # largest possible V[f, b] before f's free rows
    V = values(p, *loads(p, choice))
    n = np.maximum(p.valid.sum(axis=1), 1)
    total = np.where(p.valid, V, 0).sum(axis=1)
    avg_hi, avg_lo = -((-total) // n), total // n
    hmax = np.maximum(_fill_max(p, low, cap, need), avg_hi)
    xmin = np.minimum(_fill_min(p, base, cap, avail), avg_lo)
    return np.where(p.valid.any(axis=1), np.maximum(hmax - xmin, 0), 0)


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
