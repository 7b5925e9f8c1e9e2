"""Stage 2: preferred leaders by reordering replica lists only (network B as a min-cost flow).

Each movable partition sends one unit to one of its replicas (the new preferred leader): cost 0 for its current
first replica, 1 for any other (one leadership change). Leaders per broker are soft intervals [floor, ceil] of each
broker's share, per topic too (at lower priority), so the optimum balances leaders wherever the replica sets allow
and then changes the fewest leaders. No replica moves: only the order changes.
"""
from __future__ import annotations

import numpy as np

from ..flow.mincost import solve_min_cost
from ..flow.network import Network, convex_arcs
from ..model import PAD, ClusterState
from ..targets import intervals
from .common import StageInput, penalties, share_intervals


def balance_leaders(state: ClusterState, current_leader: np.ndarray, movable: np.ndarray, *,
                    per_topic: bool = True) -> np.ndarray:
    """New replica matrix with each movable partition's chosen leader moved to the front."""
    si = StageInput.of(state, movable)
    b, N, live_idx, lpos, NL, idx, mov, Pm = si.b, si.N, si.live_idx, si.lpos, si.NL, si.idx, si.mov, si.Pm
    live = b.live
    if Pm == 0:
        return state.replicas
    P = state.num_partitions
    fixed = ~movable
    fl = idx[fixed, 0]
    fixed_l = np.bincount(fl[fl >= 0], minlength=N).astype(np.int64)
    lo, hi = intervals(P, b.weight, live)

    net = Network()
    pnode = net.nodes(Pm)
    topics_m, tpos_of = np.unique(state.topic[mov], return_inverse=True)
    Tm = len(topics_m)
    tnode = net.nodes(Tm * NL) if per_topic else None
    bnode = net.nodes(NL)
    sink = int(net.nodes(1)[0])
    supply = np.zeros(net.num_nodes, dtype=np.int64)
    supply[pnode] = 1
    supply[sink] = -Pm
    net.set_supply(supply)
    pen_topic, pen_broker = penalties(1, P, net.num_nodes, 2)

    sub = idx[mov]
    K = sub.shape[1]
    rows = np.repeat(np.arange(Pm), K)
    cols = np.tile(np.arange(K), Pm)
    bi = sub.ravel()
    ok = bi != PAD
    rows, cols, bi = rows[ok], cols[ok], bi[ok]
    lp = lpos[bi]
    ok = lp >= 0
    rows, cols, bi, lp = rows[ok], cols[ok], bi[ok], lp[ok]
    cost = np.where(b.ids[bi] == current_leader[mov][rows], 0, 1)
    heads = tnode[tpos_of[rows] * NL + lp] if per_topic else bnode[lp]
    cand = net.add(pnode[rows], heads, 1, cost)

    if per_topic:
        pt = np.bincount(tpos_of, minlength=Tm).astype(np.int64)
        tlo, thi = share_intervals(pt, b.weight[live_idx])
        convex_arcs(net, tnode, np.tile(bnode, Tm), tlo, thi, np.repeat(pt, NL), pen_topic)
    convex_arcs(net, bnode, sink, lo[live_idx] - fixed_l[live_idx], hi[live_idx] - fixed_l[live_idx],
                np.full(NL, Pm, dtype=np.int64), pen_broker)

    flows, _ = solve_min_cost(net)
    pick = flows[cand] > 0
    new_col = np.zeros(Pm, dtype=np.int64)
    new_col[rows[pick]] = cols[pick]
    out = state.replicas.copy()
    for r in np.flatnonzero(new_col > 0).tolist():
        row = mov[r]
        lst = [int(x) for x in out[row] if x != PAD]
        leader = lst.pop(int(new_col[r]))
        out[row, : len(lst) + 1] = [leader] + lst
    return out
