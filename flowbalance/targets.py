"""Balance targets: each live broker's share of a total (by weight) as an integer interval [lo, hi].

With equal weights this is the classic {q, q+1} rule (q = floor(R/N)); with weights it is the floor and ceiling
of each broker's quota R*w/W (the largest-remainder intervals). Removed brokers get [0, 0].
"""
from __future__ import annotations

import numpy as np

_EPS = 1e-9


def quotas(total: int, weight: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Each broker's exact share of ``total`` (0 for removed brokers)."""
    w = np.where(live, weight, 0.0)
    wsum = w.sum()
    if wsum <= 0:
        return np.zeros(len(weight))
    return total * w / wsum


def intervals(total: int, weight: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer intervals [lo, hi] per broker with sum(lo) <= total <= sum(hi)."""
    q = quotas(total, weight, live)
    lo = np.floor(q + _EPS).astype(np.int64)
    hi = np.ceil(q - _EPS).astype(np.int64)
    hi = np.maximum(hi, lo)
    return lo, hi


def min_arrivals(counts: np.ndarray, total_after: int, lo: np.ndarray, hi: np.ndarray, live: np.ndarray) -> int:
    """M*: a lower bound on the replica arrivals needed to bring every live broker into [lo, hi] (and empty the
    removed ones). It is reached exactly for a pure rebalance with equal weights; removals, RF changes and weights
    can force chains of moves that cost more (the planner then reports its minimum-cost optimum instead).

    Choose targets t within the intervals as close to the current counts as possible: arrivals are at least
    sum (t - c)+ over live brokers, and whatever the clipped targets fall short of the new total must arrive too.
    """
    c = counts[live].astype(np.int64)
    t = np.clip(c, lo[live], hi[live])
    short = total_after - int(t.sum())
    return int(np.maximum(t - c, 0).sum()) + max(short, 0)


def within(counts: np.ndarray, lo: np.ndarray, hi: np.ndarray, live: np.ndarray) -> bool:
    """True when every live broker is within its interval and every removed broker is empty."""
    ok_live = np.all((counts[live] >= lo[live]) & (counts[live] <= hi[live]))
    ok_removed = np.all(counts[~live] == 0)
    return bool(ok_live and ok_removed)


def share_intervals(totals: np.ndarray, weight_live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group (e.g. topic) and live broker: [floor, ceil] of the group's total times the broker's weight share,
    flattened group-major."""
    q = np.asarray(totals)[:, None] * (weight_live / weight_live.sum())[None, :]
    return np.floor(q + 1e-9).astype(np.int64).ravel(), np.ceil(q - 1e-9).astype(np.int64).ravel()
