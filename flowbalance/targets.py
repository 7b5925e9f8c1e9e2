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
    lo, hi = _floor_ceil(quotas(total, weight, live))
    return lo, np.maximum(hi, lo)


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
    flattened group-major. With equal weights every broker's share is the same float, so each group's interval is
    computed once and repeated (the same arrays; alone 0.06-0.66 s -> 0.01-0.02 s at 3,000 topics x 3,000 brokers)."""
    weight_live = np.asarray(weight_live)
    share = weight_live / weight_live.sum()
    if len(share) and (share == share[0]).all():
        lo, hi = _floor_ceil(np.asarray(totals) * share[0])
        return np.repeat(lo, len(share)), np.repeat(hi, len(share))
    return _floor_ceil((np.asarray(totals)[:, None] * share[None, :]).ravel())


def _floor_ceil(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[floor, ceil] of shares ``q`` within ``_EPS`` of an integer (int64)."""
    return np.floor(q + _EPS).astype(np.int64), np.ceil(q - _EPS).astype(np.int64)


def capped_quotas(total: np.ndarray, weight: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Water-filled shares: per group g (rows) and broker (columns), min(w_b·L_g, cap_gb) with the level L_g set so
    each row sums to ``total[g]`` (``cap`` < 0: no cap; a broker with weight 0 gets nothing). Brokers closed to new
    replicas are capped at what they hold: their share of a level above it goes to the others. A row whose
    uncapped brokers cannot take the rest (every broker capped) keeps the caps and sums below its total.
    Vectorized over groups; each pass caps the brokers whose cap is under the level, at most one pass per broker."""
    total = np.asarray(total, dtype=np.float64)
    w = np.broadcast_to(np.asarray(weight, dtype=np.float64), cap.shape)
    capped = np.zeros(cap.shape, dtype=bool)
    has_cap = cap >= 0
    for _ in range(cap.shape[1] + 1):
        free_w = np.where(capped, 0.0, w).sum(axis=1)
        rest = total - np.where(capped, cap, 0).sum(axis=1)
        level = np.where(free_w > 0, np.maximum(rest, 0) / np.where(free_w > 0, free_w, 1.0), 0.0)
        more = has_cap & ~capped & (cap < w * level[:, None] - _EPS)
        if not more.any():
            break
        capped |= more
    return np.where(capped, cap, w * level[:, None])


def capped_intervals(total: int, weight: np.ndarray, live: np.ndarray, cap: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``intervals`` with a ceiling per broker (``cap`` < 0: none): a capped broker's interval is at most its cap,
    the others share the rest by weight. Without a cap this is ``intervals`` exactly."""
    if not (np.asarray(cap)[live] >= 0).any():
        return intervals(total, weight, live)
    q = capped_quotas(np.array([total]), np.where(live, weight, 0.0), np.where(live, cap, -1)[None, :])[0]
    lo, hi = _floor_ceil(np.where(live, q, 0.0))
    return lo, np.maximum(hi, lo)


def load_intervals(total: int, weight: np.ndarray, live: np.ndarray, cap: np.ndarray | None = None,
                   floor: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Broker intervals for ``total`` replicas with a ceiling per broker (``cap`` < 0: none; brokers closed to new
    replicas, ``capped_intervals``) and a floor per broker (``floor``: replicas that may not leave it, of pinned,
    held or out-of-scope partitions). A broker whose interval lies below its floor is held at its floor, [f, f],
    and the others share the rest by weight, again and again until no floor is above its interval (each pass
    holds at least one more broker, and holding one only lowers the others' share). The balance a plan can reach
    when partitions stay put: without it a broker with more fixed load than its share leaves the others' targets
    unreachable. Without a floor above its interval this is ``intervals`` / ``capped_intervals`` exactly."""
    live = np.asarray(live, dtype=bool)

    def base(t: int, members: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if cap is None:
            return intervals(t, weight, members)
        return capped_intervals(t, weight, members, cap)

    lo, hi = base(total, live)
    if floor is None:
        return lo, hi
    fl = np.where(live, np.asarray(floor, dtype=np.int64), 0)
    held = np.zeros(len(live), dtype=bool)
    while True:
        more = live & ~held & (fl > hi)
        if not more.any():
            return lo, hi
        held |= more
        rest_lo, rest_hi = base(total - int(fl[held].sum()), live & ~held)
        lo, hi = np.where(held, fl, rest_lo), np.where(held, fl, rest_hi)


def capped_share_intervals(totals: np.ndarray, weight_live: np.ndarray, cap: np.ndarray | None
                           ) -> tuple[np.ndarray, np.ndarray]:
    """``share_intervals`` with a ceiling per (group, live broker) (``cap`` [G, NL], < 0: none), flattened
    group-major. Without caps this is ``share_intervals`` exactly."""
    if cap is None or not (cap >= 0).any():
        return share_intervals(totals, weight_live)
    return _floor_ceil(capped_quotas(np.asarray(totals), weight_live, cap).ravel())
