"""Stage 2: preferred leaders by reordering replica lists only (network B as a min-cost flow).

Each movable partition sends one unit to one of its replicas (the new preferred leader): cost 0 for its current
first replica, 1 for any other (one leadership change). Leaders per broker are soft intervals [floor, ceil] of each
broker's share, per topic too (at lower priority), so the optimum balances leaders wherever the replica sets allow
and then changes the fewest leaders. No replica moves: only the order changes.
"""
from __future__ import annotations

import numpy as np

from ..flow.mincost import solve_min_cost, try_min_cost
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
    topics_m, tpos_of = np.unique(state.topic[mov], return_inverse=True)
    Tm = len(topics_m)
    pt = np.bincount(tpos_of, minlength=Tm).astype(np.int64)
    if per_topic:
        tlo, thi = share_intervals(pt, b.weight[live_idx])
        # a (topic, broker) node matters only when its interval can bind: a floor above 0, or more candidate
        # partitions than the ceiling; the others are left out and their arcs go straight to the broker
        key = tpos_of[rows] * NL + lp
        need = (tlo > 0) | (np.bincount(key, minlength=Tm * NL) > thi)
        tsel = np.flatnonzero(need)

    def build(hard: bool) -> tuple[Network, np.ndarray]:
        net = Network()
        pnode = net.nodes(Pm)
        bnode = net.nodes(NL)
        if per_topic:
            tnode_of = np.full(Tm * NL, -1, dtype=np.int64)
            tnode_of[tsel] = net.nodes(len(tsel))
        sink = int(net.nodes(1)[0])
        supply = np.zeros(net.num_nodes, dtype=np.int64)
        supply[pnode] = 1
        supply[sink] = -Pm
        net.set_supply(supply)
        pen_topic, pen_broker = (None, None) if hard else penalties(1, P, net.num_nodes, 2)
        heads = np.where(tnode_of[key] >= 0, tnode_of[key], bnode[lp]) if per_topic else bnode[lp]
        cand = net.add(pnode[rows], heads, 1, cost)
        if per_topic:
            convex_arcs(net, tnode_of[tsel], bnode[tsel % NL], tlo[tsel], thi[tsel], pt[tsel // NL], pen_topic)
        convex_arcs(net, bnode, sink, lo[live_idx] - fixed_l[live_idx], hi[live_idx] - fixed_l[live_idx],
                    np.full(NL, Pm, dtype=np.int64), pen_broker)
        return net, cand

    # hard intervals first (fast); soft priority penalties when not every interval can be met
    net, cand = build(hard=True)
    res = try_min_cost(net)
    if res is None:
        net, cand = build(hard=False)
        res = solve_min_cost(net)
    flows = res[0]
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
