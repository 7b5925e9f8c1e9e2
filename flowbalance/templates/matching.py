"""Map partitions onto templates by a minimum-weight perfect bipartite matching (arrays in, arrays out).

Cost of giving partition p template t: replicas of t that p does not hold (moves) first, then a leader change,
then a first-follower change, weighted so that the order is strict (lexicographic): one move outweighs every
leader change of the topic, one leader change outweighs every follower change.

Up to ``DENSE_LIMIT`` partitions the full P x P matrix goes to ``scipy.optimize.linear_sum_assignment``
(exact). Above it, only candidate pairs are kept: templates sharing two brokers with the partition (one when
the partition has fewer live replicas), a bounded number per key, plus the pairing p_i <-> t_i so that a
perfect matching always exists; ``scipy.sparse.csgraph.min_weight_full_bipartite_matching`` solves that
graph. Its result is optimal over the candidates; the caller compares the moves with a lower bound.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import min_weight_full_bipartite_matching

DENSE_LIMIT = 5_000
CANDIDATES_PER_KEY = 12


def weights(n: int) -> tuple[int, int]:
    """(move weight, leader weight) for a topic of n partitions; a follower change weighs 1."""
    w_lead = n + 1
    w_move = n * w_lead + n + 1
    return w_move, w_lead


def pair_costs(cur: np.ndarray, tmpl: np.ndarray, rows: np.ndarray, cols: np.ndarray, n: int) -> np.ndarray:
    """Cost of partition ``cur[rows[i]]`` taking template ``tmpl[cols[i]]`` (broker indices, -1 padded)."""
    w_move, w_lead = weights(n)
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
        rows, cols = linear_sum_assignment(dense_costs(cur, tmpl))
        out = np.empty(n, dtype=np.int64)
        out[rows] = cols
        return out, True
    rows, cols = _candidates(cur, tmpl)
    cost = pair_costs(cur, tmpl, rows, cols, n) + 1  # +1: explicit zeros would read as missing edges
    graph = csr_matrix((cost.astype(np.float64), (rows, cols)), shape=(n, n))
    r, c = min_weight_full_bipartite_matching(graph)
    out = np.empty(n, dtype=np.int64)
    out[r] = c
    return out, False


def _keys(m: np.ndarray, n_brokers: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, key) for every unordered pair of live brokers in each row; rows with one live broker key on it."""
    rows, keys = [], []
    live = m >= 0
    width = m.shape[1]
    for a in range(width):
        for b in range(a + 1, width):
            ok = live[:, a] & live[:, b]
            lo = np.minimum(m[:, a], m[:, b])
            hi = np.maximum(m[:, a], m[:, b])
            r = np.flatnonzero(ok)
            rows.append(r)
            keys.append(lo[r] * n_brokers + hi[r] + n_brokers)  # offset: pair keys never equal single keys
    single = live.sum(axis=1) == 1
    r = np.flatnonzero(single)
    rows.append(r)
    keys.append(m[r, np.argmax(live[r], axis=1)] if len(r) else np.zeros(0, dtype=np.int64))
    return np.concatenate(rows), np.concatenate(keys).astype(np.int64)


def _candidates(cur: np.ndarray, tmpl: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate (partition, template) pairs: shared keys, a bounded spread-out slice per key, plus p_i <-> t_i."""
    n = len(cur)
    nb = int(max(cur.max(initial=0), tmpl.max(initial=0))) + 1
    # templates: every pair key, and every single broker (for partitions that hold one live broker)
    trow, tkey = _keys(tmpl, nb)
    srow = np.repeat(np.arange(n), tmpl.shape[1])
    trow = np.concatenate([trow, srow])
    tkey = np.concatenate([tkey, tmpl.reshape(-1)])
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
    pair = np.unique(rows.astype(np.int64) * n + cols)
    return pair // n, pair % n
