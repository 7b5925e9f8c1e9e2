"""Stage 1 fast path for a pure rebalance (network A, direct arcs only), solved by scipy max flow.

When every partition may move, weights are equal, and there are no racks, per-topic targets, RF changes or
removals, every maximum flow of the direct network releaser → partition → gainer moves exactly M* replicas
(flow-networks.md §3.2): each source–sink path holds one arrival. The integer residue nodes ρs / ρt let the flow
decide which brokers keep the ceiling.
"""
from __future__ import annotations

import numpy as np

from ..model import ClusterState
from ..targets import intervals
from .common import apply_changes
from ..flow.maxflow import solve_max_flow


def direct_applies(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray, per_topic: bool) -> bool:
    b = state.brokers
    return (not per_topic and bool(movable.all()) and not b.has_racks and not b.weighted
            and not b.removed.any() and bool(np.array_equal(target_rf, state.rf)))


def balance_direct(state: ClusterState) -> tuple[np.ndarray, int]:
    """New replica matrix and the max-flow value (= the number of moves = M*)."""
    b = state.brokers
    n = len(b)
    idx = state.replica_index
    c = np.bincount(idx[idx >= 0], minlength=n).astype(np.int64)
    R = int(c.sum())
    lo, hi = intervals(R, b.weight, b.live)
    q = lo
    r = R - int(lo.sum())
    s_b = np.maximum(c - hi, 0)
    g_b = np.maximum(lo - c, 0)
    H = c >= q + 1 if r > 0 else np.zeros(n, dtype=bool)
    h = int(H.sum())
    sigma = max(h - r, 0) if r > 0 else 0
    tau = max(r - h, 0) if r > 0 else 0
    releaser = (s_b > 0) | (H & (sigma > 0))
    gainer = (g_b > 0) | (~H & (tau > 0) & (r > 0))
    P = state.num_partitions
    # nodes: source, sink, rho_s, rho_t, brokers, partitions
    S, T, RS, RT = 0, 1, 2, 3
    B0 = 4
    P0 = B0 + n
    tails, heads, caps = [], [], []

    def add(t, h_, cap):
        tails.append(np.asarray(t, dtype=np.int64).ravel())
        heads.append(np.broadcast_to(np.asarray(h_, dtype=np.int64), np.shape(np.asarray(t).ravel())).ravel())
        caps.append(np.broadcast_to(np.asarray(cap, dtype=np.int64), np.shape(np.asarray(t).ravel())).ravel())

    rel = np.flatnonzero(s_b > 0)
    add(np.full(len(rel), S), B0 + rel, s_b[rel])
    if sigma > 0:
        add([S], [RS], [sigma])
        hs = np.flatnonzero(H)
        add(np.full(len(hs), RS), B0 + hs, 1)
    gn = np.flatnonzero(g_b > 0)
    add(B0 + gn, np.full(len(gn), T), g_b[gn])
    if tau > 0:
        nh = np.flatnonzero(~H)
        add(B0 + nh, np.full(len(nh), RT), 1)
        add([RT], [T], [tau])
    # releaser -> partition it hosts
    rows, cols = np.nonzero(idx >= 0)
    bi = idx[rows, cols]
    sel = releaser[bi]
    rel_arc_t, rel_arc_h = B0 + bi[sel], P0 + rows[sel]
    add(rel_arc_t, rel_arc_h, 1)
    # partition -> gainer that does not host it (only partitions on a releaser)
    prow = np.unique(rows[sel])
    gains = np.flatnonzero(gainer)
    if len(prow) and len(gains):
        pp = np.repeat(prow, len(gains))
        gg = np.tile(gains, len(prow))
        hosted = (idx[pp] == gg[:, None]).any(axis=1)
        pp, gg = pp[~hosted], gg[~hosted]
    else:
        pp = gg = np.zeros(0, dtype=np.int64)
    arr_start = sum(len(x) for x in tails)
    add(P0 + pp, B0 + gg, 1)
    t_all, h_all, c_all = np.concatenate(tails), np.concatenate(heads), np.concatenate(caps)
    flows, value = solve_max_flow(P0 + P, t_all, h_all, c_all, S, T)
    rel_start = arr_start - len(rel_arc_t)
    out_rel = flows[rel_start:arr_start] > 0
    out_arr = flows[arr_start:] > 0
    removed = {}
    for p, x in zip((rel_arc_h[out_rel] - P0).tolist(), b.ids[bi[sel][out_rel]].tolist()):
        removed.setdefault(p, []).append(x)
    added = {}
    for p, u in zip(pp[out_arr].tolist(), b.ids[gg[out_arr]].tolist()):
        added.setdefault(p, []).append(u)
    return apply_changes(state.replicas, removed, added), value
