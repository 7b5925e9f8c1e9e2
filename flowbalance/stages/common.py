"""Helpers the stages share: live-broker positions, membership matrices, and soft-interval penalties."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..flow.network import Network
from ..model import PAD, Brokers, ClusterState, live_positions  # noqa: F401 (used by the stages)
from ..racks import rack_bounds, rack_totals_fixed
from ..targets import capped_intervals, capped_share_intervals, intervals, load_intervals  # noqa: F401
from ..targets import share_intervals  # noqa: F401 (used by the stages)

# Min-cost flow costs are int64 and OR-Tools scales them by the node count; keep every cost times the
# node count below this bound.
COST_BOUND = 2**60


def membership(idx: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """member[i, j] = True when row i of the broker-index matrix ``idx`` holds the broker at live position j."""
    rows = idx.shape[0]
    member = np.zeros((rows, width), dtype=bool)
    for j in range(idx.shape[1]):
        col = idx[:, j]
        ok = col != PAD
        lp = np.where(ok, pos[np.maximum(col, 0)], -1)
        ok &= lp >= 0
        member[np.flatnonzero(ok), lp[ok]] = True
    return member


def penalties(move_cost: int, units: int, num_nodes: int, levels: int) -> list[int]:
    """Penalty per violated unit for each priority level, each above everything the lower levels can add.

    Level 0 outranks ``units`` moves; each further level outranks ``units`` units of the level below, as far as
    the int64 cost range allows (then each level is at least 4x the one below it).
    """
    out = []
    base = move_cost * (units + 1)
    for _ in range(levels):
        out.append(base)
        factor = units + 1
        while factor > 4 and base * factor * (num_nodes + 1) * 4 > COST_BOUND:
            factor //= 2
        base = base * max(factor, 4)
    return out


def apply_changes(replicas: np.ndarray, removed: dict[int, list[int]], added: dict[int, list[int]]) -> np.ndarray:
    """Same as ``apply_changes_arrays``, with ``removed`` / ``added`` mapping a row to broker ids."""
    rr, rc = [], []
    for r, ids in removed.items():
        row = replicas[r]
        for x in ids:
            rr.append(r)
            rc.append(int(np.flatnonzero(row == x)[0]))
    ar = [r for r, ids in added.items() for _ in ids]
    ai = [x for ids in added.values() for x in ids]
    return apply_changes_arrays(replicas, np.asarray(rr, dtype=np.int64), np.asarray(rc, dtype=np.int64),
                                np.asarray(ar, dtype=np.int64), np.asarray(ai, dtype=np.int64))


def apply_changes_arrays(replicas: np.ndarray, rel_rows: np.ndarray, rel_cols: np.ndarray, add_rows: np.ndarray,
                         add_ids: np.ndarray) -> np.ndarray:
    """New lists, vectorized: kept replicas stay in place, the k-th added broker of a row (in id order) takes the
    row's k-th released slot (in list order), extra added brokers are appended, surplus slots are dropped.

    ``rel_rows`` / ``rel_cols`` name released slots; ``add_rows`` / ``add_ids`` the brokers that arrive."""
    rel_rows = np.asarray(rel_rows, dtype=np.int64)
    rel_cols = np.asarray(rel_cols, dtype=np.int64)
    add_rows = np.asarray(add_rows, dtype=np.int64)
    add_ids = np.asarray(add_ids, dtype=np.int64)
    P, W = replicas.shape
    out = replicas.copy()
    if len(rel_rows) == 0 and len(add_rows) == 0:
        return out
    o = np.lexsort((rel_cols, rel_rows))
    rel_rows, rel_cols = rel_rows[o], rel_cols[o]
    o = np.lexsort((add_ids, add_rows))
    add_rows, add_ids = add_rows[o], add_ids[o]
    rel_rank = _rank_within(rel_rows)
    add_rank = _rank_within(add_rows)
    stride = W + len(add_rows) + 1
    rel_key = rel_rows * stride + rel_rank
    add_key = add_rows * stride + add_rank
    # rel_key is sorted and unique: a binary search finds each add_key's match (np.isin sorts both again)
    at = np.minimum(np.searchsorted(rel_key, add_key), max(len(rel_key) - 1, 0))
    matched_add = (rel_key[at] == add_key) if len(rel_key) else np.zeros(len(add_key), dtype=bool)
    pos = at[matched_add]
    out[rel_rows, rel_cols] = PAD
    out[rel_rows[pos], rel_cols[pos]] = add_ids[matched_add]
    extra_rows, extra_ids = add_rows[~matched_add], add_ids[~matched_add]
    touched = sorted_unique(np.concatenate([rel_rows, add_rows]))
    if len(extra_rows) == 0 and len(rel_rows) == int(matched_add.sum()):
        return out  # every change was an in-place swap: no row changes length
    n_extra = np.bincount(np.searchsorted(touched, extra_rows), minlength=len(touched))
    E = int(n_extra.max()) if len(n_extra) else 0
    block = np.full((len(touched), W + E), PAD, dtype=np.int64)
    block[:, :W] = out[touched]
    if len(extra_rows):
        ti = np.searchsorted(touched, extra_rows)
        block[ti, W + _rank_within(extra_rows)] = extra_ids
    order = np.argsort(block == PAD, axis=1, kind="stable")
    block = np.take_along_axis(block, order, axis=1)
    width = max(W, int((block != PAD).sum(axis=1).max()))
    if width > W:
        wide = np.full((P, width), PAD, dtype=np.int32)
        wide[:, :W] = out
        out = wide
    out[touched] = block[:, :width].astype(np.int32)
    return out


def move_column(replicas: np.ndarray, rows: np.ndarray, col: np.ndarray, to: int) -> np.ndarray:
    """``replicas`` with, in each of ``rows``, the entry of column ``col`` (>= ``to``) moved to column ``to`` and
    the entries from ``to`` up to it one column later; the rest of the row, and its padding at the end, stay. One
    gather for all rows (the leader and follower stages reorder up to hundreds of thousands of lists)."""
    out = replicas.copy()
    if not len(rows):
        return out
    col = np.asarray(col)[:, None]
    j = np.arange(out.shape[1])[None, :]
    src = np.where(j == to, col, np.where((j > to) & (j <= col), j - 1, j))
    out[rows] = np.take_along_axis(out[rows], src, axis=1)
    return out


def sorted_unique(x: np.ndarray) -> np.ndarray:
    """``np.unique(x)`` by a sort: numpy 2.4's plain ``unique`` hashes first and then sorts the distinct values,
    5x slower on a million int64 keys."""
    x = np.sort(x)
    return x[np.r_[True, x[1:] != x[:-1]]] if len(x) else x


DENSE_KEYS = 1 << 24  # key ranges up to this size are ranked with a table (``dense_unique``)


def dense_unique(keys: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` (inverse flat, int64) for keys in [0, ``size``): with a table of
    ``size`` flags when ``size`` is at most ``DENSE_KEYS``, two passes where ``unique`` sorts (3,000,000 pair keys
    on 1,000 brokers: 0.02 s against 0.2-0.6 s)."""
    keys = np.asarray(keys, dtype=np.int64)
    if size > DENSE_KEYS:
        uniq, inverse = np.unique(keys, return_inverse=True)
        return uniq, inverse.ravel().astype(np.int64)
    seen = np.zeros(size, dtype=bool)
    seen[keys] = True
    return np.flatnonzero(seen), (np.cumsum(seen, dtype=np.int32) - 1)[keys].astype(np.int64)


def _rank_within(sorted_keys: np.ndarray) -> np.ndarray:
    """0, 1, 2, ... within each run of equal values of a sorted array."""
    n = len(sorted_keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    return np.arange(n) - first


@dataclass
class StageInput:
    """What every stage reads first: brokers, live positions, broker-index matrix, movable rows."""

    b: Brokers
    N: int
    live_idx: np.ndarray
    lpos: np.ndarray
    NL: int
    idx: np.ndarray
    mov: np.ndarray
    Pm: int

    @staticmethod
    def of(state: ClusterState, movable: np.ndarray) -> "StageInput":
        b = state.brokers
        live_idx, lpos = live_positions(b.live)
        mov = np.flatnonzero(movable)
        return StageInput(b=b, N=len(b), live_idx=live_idx, lpos=lpos, NL=len(live_idx), idx=state.replica_index,
                          mov=mov, Pm=len(mov))


def rack_forced_intervals(brokers: Brokers, live_idx: np.ndarray, rack_of_live: np.ndarray, K: int,
                          movable_rf: np.ndarray, fixed_c: np.ndarray, topic_of: np.ndarray | None = None,
                          num_topics: int = 0, cap: np.ndarray | None = None, topic_cap: np.ndarray | None = None
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None] | None:
    """Targets when the rack rule fixes every rack's total: lo_r == hi_r for every rack and every movable
    partition (``racks.rack_bounds``; e.g. RF = number of racks, or RF 4 over racks of 4 and 1 brokers: 3 + 1),
    so rack r holds (Σ_p hi_r(p) + its fixed load) whatever the plan. The best balance is then each broker's
    weight share *within its rack* (cluster-wide shares cannot all be met when the racks differ in size).
    ``topic_of`` (topic position of each movable partition, ``num_topics`` of them) adds per-topic targets.
    Returns (lo, hi) per broker and per-topic (lo, hi) flattened topic-major over live positions, or None when
    the rack totals are not fixed. ``cap`` [N] / ``topic_cap`` [T, NL] (-1: none): ceilings of brokers closed to
    new replicas, water-filled within each rack (``targets.capped_intervals``)."""
    if K < 2 or len(movable_rf) == 0:
        return None
    sizes = np.bincount(rack_of_live, minlength=K).astype(np.int64)
    if not rack_totals_fixed(movable_rf, sizes):  # checked once per distinct RF
        return None
    _, r_hi = rack_bounds(movable_rf, sizes)
    N = len(brokers)
    lo = np.zeros(N, dtype=np.int64)
    hi = np.zeros(N, dtype=np.int64)
    NL = len(live_idx)
    T = num_topics if topic_of is not None else 0
    tlo = np.zeros((T, NL), dtype=np.int64) if T else None
    thi = np.zeros((T, NL), dtype=np.int64) if T else None
    for r in range(K):
        pos = np.flatnonzero(rack_of_live == r)
        members = live_idx[pos]
        in_rack = np.zeros(N, dtype=bool)
        in_rack[members] = True
        rack_total = int(r_hi[:, r].sum()) + int(fixed_c[members].sum())
        b_lo, b_hi = load_intervals(rack_total, brokers.weight, in_rack, cap, fixed_c)
        lo[members], hi[members] = b_lo[members], b_hi[members]
        if T:
            per_topic = np.bincount(topic_of, weights=r_hi[:, r], minlength=T).astype(np.int64)
            a, c = capped_share_intervals(per_topic, brokers.weight[members],
                                          None if topic_cap is None else topic_cap[:, pos])
            tlo[:, pos] = a.reshape(T, len(pos))
            thi[:, pos] = c.reshape(T, len(pos))
    return lo, hi, (tlo.ravel() if T else None), (thi.ravel() if T else None)


def pair_counts(idx: np.ndarray, lpos: np.ndarray, NL: int) -> np.ndarray:
    """[NL, NL]: how many partitions each live leader shares with each live broker as its first follower."""
    out = np.zeros((NL, NL), dtype=np.int64)
    if idx.shape[1] < 2 or NL == 0:
        return out
    a, f = idx[:, 0], idx[:, 1]
    ok = (a >= 0) & (f >= 0)
    la, lf = lpos[a[ok]], lpos[f[ok]]
    ok2 = (la >= 0) & (lf >= 0)
    np.add.at(out, (la[ok2], lf[ok2]), 1)
    return out


TOPIC_STEPS = 3  # graded per-topic excess: the d-th unit beyond an interval costs min(d, STEPS + 1)


def graded_move_cost(total: int) -> int:
    """The cost of one move when per-topic balance ranks below the moves: above any difference in the graded
    per-topic cost of ``total`` replicas (at most STEPS + 1 per replica, on either side)."""
    return 2 * (TOPIC_STEPS + 1) * total + 1


def graded_arcs(net: Network, tails: np.ndarray, heads: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 limit: np.ndarray, scale: int = 1) -> None:
    """A soft interval [lo, hi] whose cost grows with the distance: the d-th unit above hi costs min(d, STEPS+1),
    the d-th unit missing below lo as much (a convex cost, so a min-cost flow spreads a topic's excess over brokers
    instead of piling it on one: a flat penalty per unit is indifferent between the two); every cost times
    ``scale``."""
    lo = np.minimum(np.maximum(lo, 0), limit)
    hi = np.minimum(np.maximum(hi, lo), limit)
    S = TOPIC_STEPS
    segs = [(np.maximum(lo - S, 0), -(S + 1))]  # deep below the floor
    for d in range(S, 0, -1):
        segs.append(((lo >= d).astype(np.int64), -d))
    segs.append((hi - lo, 0))
    used = hi.copy()
    for d in range(1, S + 1):
        cap = (limit - used > 0).astype(np.int64)
        segs.append((cap, d))
        used = used + cap
    segs.append((np.maximum(limit - used, 0), S + 1))
    for cap, cost in segs:
        keep = cap > 0
        if keep.any():
            net.add(tails[keep], heads[keep], cap[keep], cost * scale)


def widen(lo: np.ndarray, hi: np.ndarray, slack: int) -> tuple[np.ndarray, np.ndarray]:
    """Intervals [lo, hi] widened by ``slack`` on each side (never below 0)."""
    if not slack:
        return lo, hi
    return np.maximum(lo - slack, 0), hi + slack
