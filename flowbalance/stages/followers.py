"""Stage 3: (leader, first follower) pairs, so that a failed broker's leaderships spread evenly.

With leaders and replica sets fixed, each movable partition of RF >= 3 picks its first follower among its
other replicas. When leader l fails, broker f takes over the partitions whose first follower is f, ending with
L_f + m(l, f) leaderships. Per leader the problem splits; one min-cost flow solves all leaders at once with
convex unit costs on each (l, f) pair: the j-th partition assigned to f costs C·(2(base_f + j) − 1), which
minimizes Σ_f (base_f + m(l, f))² per leader; a change of first follower costs 1 (C exceeds the total
number of changes, so spreading comes first and then the fewest changed lists).
"""
from __future__ import annotations

import numpy as np

from ..flow.mincost import solve_min_cost_split
from ..flow.network import Network
from ..model import PAD, ClusterState
from .common import dense_unique


def balance_followers(state: ClusterState, movable: np.ndarray) -> np.ndarray:
    """New replica matrix with each chosen first follower moved to position 1 (leaders untouched)."""
    b = state.brokers
    N = len(b)
    idx = state.replica_index
    if idx.shape[1] < 3:
        return state.replicas
    choose = movable & (state.rf >= 3)
    rows_all = np.flatnonzero(choose)
    if len(rows_all) == 0:
        return state.replicas
    lead = idx[:, 0]
    L = np.bincount(lead[lead >= 0], minlength=N).astype(np.int64)
    # fixed pairs (RF 2 partitions, or partitions that may not change) count toward the base
    fixed = ~choose & (idx[:, 1] >= 0) if idx.shape[1] > 1 else np.zeros(len(idx), bool)
    fixed_keys = lead[fixed].astype(np.int64) * N + idx[fixed, 1]

    sub = idx[rows_all]
    K = sub.shape[1]
    Pc = len(rows_all)
    r = np.repeat(np.arange(Pc), K - 1)
    c = np.tile(np.arange(1, K), Pc)
    f = sub[r, c]
    ok = f != PAD
    r, c, f = r[ok], c[ok], f[ok]
    l = sub[r, 0]
    keys = l.astype(np.int64) * N + f
    uniq, pair_of = dense_unique(keys, N * N)

    net = Network()
    pnode = net.nodes(Pc)
    qnode = net.nodes(len(uniq))
    sinks = net.nodes(N)  # one per leader: the leaders are independent components, solved one by one
    part_lead = sub[:, 0]
    supply = np.zeros(net.num_nodes, dtype=np.int64)
    supply[pnode] = 1
    supply[sinks] = -np.bincount(part_lead, minlength=N)
    net.set_supply(supply)
    component = np.concatenate([part_lead, uniq // N, np.arange(N)])
    cand = net.add(pnode[r], qnode[pair_of], 1, np.where(c == 1, 0, 1))

    # convex unit arcs per pair: capacity = number of candidate partitions of that pair. Leaders are independent
    # components, so each gets its own C = (its candidate partitions) + 1: smaller costs, fewer scaling phases.
    n_pair = np.bincount(pair_of, minlength=len(uniq)).astype(np.int64)
    fk, fc = (np.unique(fixed_keys, return_counts=True) if len(fixed_keys)
              else (np.zeros(0, np.int64), np.zeros(0, np.int64)))
    base = L[uniq % N].copy()
    if len(fk):
        at = np.minimum(np.searchsorted(fk, uniq), len(fk) - 1)
        base += np.where(fk[at] == uniq, fc[at], 0)
    per_leader = np.bincount(lead[rows_all], minlength=N).astype(np.int64)
    C = per_leader[uniq // N] + 1
    # every leader places all its partitions, so a constant per leader does not change the optimum: measure the
    # base from the leader's smallest, which keeps the costs (and the solver's scaling phases) small
    low = np.full(N, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(low, uniq // N, base)
    base = base - low[uniq // N]
    pair_rep = np.repeat(np.arange(len(uniq)), n_pair)
    j = np.arange(len(pair_rep)) - np.repeat(np.cumsum(n_pair) - n_pair, n_pair) + 1
    net.add(qnode[pair_rep], sinks[uniq[pair_rep] // N], 1, C[pair_rep] * (2 * (base[pair_rep] + j) - 1))

    flows = solve_min_cost_split(net, component)
    pick = flows[cand] > 0
    new_col = np.ones(Pc, dtype=np.int64)
    new_col[r[pick]] = c[pick]
    out = state.replicas.copy()
    moved = np.flatnonzero(new_col != 1)
    if len(moved):
        rows = rows_all[moved]
        block = out[rows].copy()
        col = new_col[moved]
        ff = block[np.arange(len(rows)), col]
        # shift positions 1 .. col-1 one step right, then put the chosen follower at position 1
        width = block.shape[1]
        jj = np.arange(width)[None, :]
        src = np.where((jj >= 2) & (jj <= col[:, None]), jj - 1, jj)
        block = np.take_along_axis(block, src, axis=1)
        block[:, 1] = ff
        out[rows] = block
    return out
