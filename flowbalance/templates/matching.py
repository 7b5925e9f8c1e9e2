"""Map partitions onto templates by a minimum-weight perfect bipartite matching (arrays in, arrays out).

Cost of giving partition p template t: replicas of t that p does not hold (moves) first, then a leader change,
then a first-follower change, weighted so that the order is strict (lexicographic): one move outweighs every
leader change of the topic, one leader change outweighs every follower change.

Up to ``DENSE_LIMIT`` partitions the full P x P matrix goes to ``scipy.optimize.linear_sum_assignment``
(exact). Above it, only candidate pairs are kept: templates sharing two brokers with the partition, or one,
a bounded spread-out slice per shared key, plus the pairing p_i <-> t_i so that a
perfect matching always exists. That assignment problem is solved as a min-cost flow (OR-Tools): on a
100,000-partition topic it took seconds where ``scipy.sparse.csgraph.min_weight_full_bipartite_matching`` took
over two minutes on the same candidate graph. Costs there are small (a move 8, a leader change 2, a follower change 1: per
partition a move outweighs both tie-breaks) because large costs slow the cost scaling down. The result is
optimal over the candidates; the caller compares the moves with a lower bound. Topics above ``TOPIC_LIMIT``
partitions are refused (a 100,000-partition topic takes about 35 s and 1.3 GB; use the flow strategy).
"""
from __future__ import annotations

import numpy as np

from ..flow.mincost import solve_min_cost
from ..flow.network import Network

DENSE_LIMIT = 5_000
TOPIC_LIMIT = 100_000
SPARSE_WEIGHTS = (8, 2)  # per partition a move outweighs both tie-breaks; small costs keep the solver fast
CANDIDATES_PER_KEY = 12


def weights(n: int) -> tuple[int, int]:
    """(move weight, leader weight) for a topic of n partitions; a follower change weighs 1."""
    w_lead = n + 1
    w_move = n * w_lead + n + 1
    return w_move, w_lead


def pair_costs(cur: np.ndarray, tmpl: np.ndarray, rows: np.ndarray, cols: np.ndarray, n: int,
               w: tuple[int, int] | None = None) -> np.ndarray:
    """Cost of partition ``cur[rows[i]]`` taking template ``tmpl[cols[i]]`` (broker indices, -1 padded);
    ``w`` = (move, leader) weights, the strict ones of ``weights(n)`` by default."""
    w_move, w_lead = weights(n) if w is None else w
    c = cur[rows]
    t = tmpl[cols]
    k = t.shape[1]
    held = np.zeros(len(rows), dtype=np.int64)
    for b in range(k):
        held += (c == t[:, b:b + 1]).any(axis=1)
    cost = (k - held) * w_move
    cost += (c[:, 0] != t[:, 0]) * w_lead
    if k > 1:
        f = c[:, 1] if c.shape[1] > 1 else np.full(len(rows), -1)
        cost += f != t[:, 1]
    return cost


def dense_costs(cur: np.ndarray, tmpl: np.ndarray) -> np.ndarray:
    """The full cost matrix [partition, template] as float64 (exact: every value is far below 2^53),
    built in place so the peak is one matrix plus a boolean mask."""
    n = len(cur)
    w_move, w_lead = weights(n)
    k = tmpl.shape[1]
    cost = np.full((n, n), float(k * w_move))
    hit = np.empty((n, n), dtype=bool)
    for b in range(k):
        col = tmpl[None, :, b]
        hit[:] = False
        for a in range(cur.shape[1]):
            hit |= cur[:, a, None] == col
        np.subtract(cost, float(w_move), out=cost, where=hit)
    np.not_equal(cur[:, 0, None], tmpl[None, :, 0], out=hit)
    np.add(cost, float(w_lead), out=cost, where=hit)
    if k > 1:
        f = cur[:, 1] if cur.shape[1] > 1 else np.full(n, -1)
        np.not_equal(f[:, None], tmpl[None, :, 1], out=hit)
        np.add(cost, 1.0, out=cost, where=hit)
    return cost


def match(cur: np.ndarray, tmpl: np.ndarray, *, dense_limit: int = DENSE_LIMIT) -> tuple[np.ndarray, bool]:
    """For each partition (row of ``cur``, broker indices with removed brokers as -1) the index of its template,
    and whether the matching is exact (dense) or optimal over the candidate pairs only (sparse)."""
    n = len(cur)
    if n == 0:
        return np.zeros(0, dtype=np.int64), True
    if n <= dense_limit:
        from scipy.optimize import linear_sum_assignment  # 0.2 s to import: only here
        rows, cols = linear_sum_assignment(dense_costs(cur, tmpl))
        out = np.empty(n, dtype=np.int64)
        out[rows] = cols
        return out, True
    rows, cols = _candidates(cur, tmpl)
    net = Network()
    net.nodes(2 * n)
    net.add(rows, n + cols, 1, pair_costs(cur, tmpl, rows, cols, n, SPARSE_WEIGHTS))
    net.set_supply(np.concatenate([np.ones(n, dtype=np.int64), -np.ones(n, dtype=np.int64)]))
    flow, _ = solve_min_cost(net)
    used = flow > 0
    out = np.empty(n, dtype=np.int64)
    out[rows[used]] = cols[used]
    return out, False


def _keys(m: np.ndarray, n_brokers: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, key) for every unordered pair of live brokers in each row, and for every single live broker."""
    rows, keys = [], []
    live = m >= 0
    width = m.shape[1]
    for a in range(width):
        r = np.flatnonzero(live[:, a])
        rows.append(r)
        keys.append(m[r, a])
        for b in range(a + 1, width):
            r = np.flatnonzero(live[:, a] & live[:, b])
            lo = np.minimum(m[r, a], m[r, b])
            hi = np.maximum(m[r, a], m[r, b])
            rows.append(r)
            keys.append(lo * n_brokers + hi + n_brokers)  # offset: pair keys never equal single keys
    return np.concatenate(rows), np.concatenate(keys).astype(np.int64)


def _candidates(cur: np.ndarray, tmpl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate (partition, template) pairs: shared keys, a bounded spread-out slice per key, plus p_i <-> t_i."""
    n = len(cur)
    nb = int(max(cur.max(initial=0), tmpl.max(initial=0))) + 1
    trow, tkey = _keys(tmpl, nb)
    order = np.lexsort((trow, tkey))
    tkey, trow = tkey[order], trow[order]
    prow, pkey = _keys(cur, nb)
    lo = np.searchsorted(tkey, pkey, side="left")
    hi = np.searchsorted(tkey, pkey, side="right")
    span = hi - lo
    take = np.minimum(span, CANDIDATES_PER_KEY)
    # each partition starts at its own place in the key's run, so partitions sharing a key spread over it
    start = np.where(span > 0, (prow * 2654435761) % np.maximum(span, 1), 0)
    total = int(take.sum())
    rep = np.repeat(np.arange(len(pkey)), take)
    within = np.arange(total) - np.repeat(np.cumsum(take) - take, take)
    pos = lo[rep] + (start[rep] + within) % np.maximum(span[rep], 1)
    rows = np.concatenate([prow[rep], np.arange(n)])
    cols = np.concatenate([trow[pos], np.arange(n)])
    pair = np.sort(rows.astype(np.int64) * n + cols)
    pair = pair[np.concatenate([[True], pair[1:] != pair[:-1]])]
    return pair // n, pair % n
