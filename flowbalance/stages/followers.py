"""Stage 3: (leader, first follower) pairs, so that a failed broker's leaderships spread evenly.

With leaders and replica sets fixed, each movable partition of RF >= 3 picks its first follower among its
other replicas. When leader l fails, broker f takes over the partitions whose first follower is f, ending with
L_f + m(l, f) leaderships. Per leader the problem splits; one min-cost flow solves all leaders at once with
convex unit costs on each (l, f) pair: the j-th partition assigned to f costs C·(2(base_f + j) − 1), which
minimizes Σ_f (base_f + m(l, f))² per leader; a change of first follower costs 1 (C exceeds the total
number of changes, so spreading comes first and then the fewest changed lists).

From ``COMPILED_FROM_ROWS`` rows the same optimum comes from ``flow.convex_choice`` (numba: a greedy start, then
negative cycles cancelled), every leader in one call: at 1,000,000 replicas 0.15-0.3 s where OR-Tools' 1,000
solves took 0.9-1.2 s on two processes. Below it OR-Tools stays (numba's import alone costs 0.45 s). Where
optima tie the two may choose differently; their costs are equal (tests/test_convex_choice.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..flow.mincost import solve_min_cost_split
from ..flow.network import Network
from ..model import PAD, ClusterState
from .common import dense_unique, move_column

COMPILED_FROM_ROWS = 100_000  # partitions choosing a first follower from which the compiled solver runs (module doc)


def balance_followers(state: ClusterState, movable: np.ndarray) -> np.ndarray:
    """New replica matrix with each chosen first follower moved to position 1 (leaders untouched)."""
    idx = state.replica_index
    if idx.shape[1] < 3:
        return state.replicas
    choose = movable & (state.rf >= 3)
    rows_all = np.flatnonzero(choose)
    if len(rows_all) == 0:
        return state.replicas
    pc = _Pairs.of(idx, choose, len(state.brokers))
    new_col = np.ones(len(rows_all), dtype=np.int64)
    taken = _compiled(pc) if len(rows_all) >= COMPILED_FROM_ROWS else _by_flow(pc)
    new_col[pc.r[taken]] = pc.c[taken]
    moved = np.flatnonzero(new_col != 1)
    return move_column(state.replicas, rows_all[moved], new_col[moved], 1)


@dataclass(frozen=True)
class _Pairs:
    """The choice as arrays: per option (a row's candidate first follower, rows in order) its row ``r``, column
    ``c`` and (leader, follower) pair ``pair_of``; per pair (sorted by leader, then follower) its key
    ``l * N + f`` in ``uniq``, its ``base`` (the follower's leaders and fixed pairs, less its leader's smallest)
    and its leader's ``C``; per row its leader."""

    N: int
    part_lead: np.ndarray
    r: np.ndarray
    c: np.ndarray
    pair_of: np.ndarray
    uniq: np.ndarray
    base: np.ndarray
    C: np.ndarray

    @classmethod
    def of(cls, idx: np.ndarray, choose: np.ndarray, N: int) -> "_Pairs":
        lead = idx[:, 0]
        L = np.bincount(lead[lead >= 0], minlength=N).astype(np.int64)
        # fixed pairs (RF 2 partitions, or partitions that may not change) count toward the base
        fixed = ~choose & (idx[:, 1] >= 0)
        fixed_keys = lead[fixed].astype(np.int64) * N + idx[fixed, 1]
        sub = idx[choose]
        K, Pc = sub.shape[1], len(sub)
        r = np.repeat(np.arange(Pc), K - 1)
        c = np.tile(np.arange(1, K), Pc)
        f = sub[r, c]
        ok = f != PAD
        r, c, f = r[ok], c[ok], f[ok]
        uniq, pair_of = dense_unique(sub[r, 0].astype(np.int64) * N + f, N * N)
        fk, fc = (np.unique(fixed_keys, return_counts=True) if len(fixed_keys)
                  else (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        base = L[uniq % N].copy()
        if len(fk):
            at = np.minimum(np.searchsorted(fk, uniq), len(fk) - 1)
            base += np.where(fk[at] == uniq, fc[at], 0)
        # leaders are independent components, so each gets its own C = (its candidate partitions) + 1: smaller
        # costs, fewer scaling phases
        per_leader = np.bincount(sub[:, 0], minlength=N).astype(np.int64)
        C = per_leader[uniq // N] + 1
        # every leader places all its partitions, so a constant per leader does not change the optimum: measure
        # the base from the leader's smallest, which keeps the costs (and the solver's scaling phases) small
        low = np.full(N, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(low, uniq // N, base)
        return cls(N, sub[:, 0], r, c, pair_of, uniq, base - low[uniq // N], C)


def _by_flow(pc: _Pairs) -> np.ndarray:
    """The options taken (indices into ``pc.r``), by the min-cost flow of the module doc, leader by leader
    (OR-Tools)."""
    N, uniq = pc.N, pc.uniq
    Pc = len(pc.part_lead)
    net = Network()
    pnode = net.nodes(Pc)
    qnode = net.nodes(len(uniq))
    sinks = net.nodes(N)  # one per leader: the leaders are independent components, solved one by one
    supply = np.zeros(net.num_nodes, dtype=np.int64)
    supply[pnode] = 1
    supply[sinks] = -np.bincount(pc.part_lead, minlength=N)
    net.set_supply(supply)
    component = np.concatenate([pc.part_lead, uniq // N, np.arange(N)])
    cand = net.add(pnode[pc.r], qnode[pc.pair_of], 1, np.where(pc.c == 1, 0, 1))
    # convex unit arcs per pair: capacity = number of candidate partitions of that pair
    n_pair = np.bincount(pc.pair_of, minlength=len(uniq)).astype(np.int64)
    pair_rep = np.repeat(np.arange(len(uniq)), n_pair)
    j = np.arange(len(pair_rep)) - np.repeat(np.cumsum(n_pair) - n_pair, n_pair) + 1
    net.add(qnode[pair_rep], sinks[uniq[pair_rep] // N], 1, pc.C[pair_rep] * (2 * (pc.base[pair_rep] + j) - 1))
    return np.flatnonzero(solve_min_cost_split(net, component)[cand] > 0)


def _compiled(pc: _Pairs) -> np.ndarray:
    """``_by_flow``'s optimum by ``flow.convex_choice`` (module doc): per leader its rows, its pairs with their
    base, and its C. Where optima tie it may take another."""
    from ..flow.convex_choice import convex_choice  # numba: imported on large clusters only (module doc)

    order = np.argsort(pc.part_lead, kind="stable")  # rows by leader
    pos = np.empty_like(order)
    pos[order] = np.arange(len(order))
    by_row = np.argsort(pos[pc.r], kind="stable")  # options in the rows' new order, each row's in its order
    leaders = np.flatnonzero(np.bincount(pc.part_lead))
    pair_lead = pc.uniq // pc.N
    opt_start = np.r_[0, np.cumsum(np.bincount(pc.r, minlength=len(order))[order])]
    taken = convex_choice(_ends(pc.part_lead[order], leaders), opt_start, pc.pair_of[by_row],
                          (pc.c[by_row] != 1).astype(np.int64), _ends(pair_lead, leaders), pc.base,
                          pc.C[np.searchsorted(pair_lead, leaders)])
    return by_row[taken]


def _ends(keys: np.ndarray, leaders: np.ndarray) -> np.ndarray:
    """Where each leader's block starts in the sorted ``keys``, and the end."""
    return np.r_[np.searchsorted(keys, leaders), len(keys)]
