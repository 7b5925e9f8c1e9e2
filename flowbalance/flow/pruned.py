"""Min-cost flow on a pruned network, proven optimal for the whole one by node potentials (column generation).

Large networks of few nodes and millions of arcs (the split network: 3,000 nodes, 3,000,000 arcs at 1,000,000
replicas) use a small share of their arcs in an optimum. ``solve_pruned`` solves the arcs ``keep`` selects,
then proves the flow optimal for every arc: a feasible flow is a min-cost flow exactly when node potentials
exist under which no arc of its residual network has negative reduced cost. The pruned network is solved by
primal-dual (``flow/primal_dual.py``: 2.6× faster than OR-Tools' cost scaling on the 920,000-arc pruned split
network of a 1,000,000-replica cluster), whose final potentials are such potentials there; a left-out arc is
then harmless when ``cost + d[tail] - d[head] >= 0``. The arcs that are not join the pruned
network and it is solved again, up to ``rounds`` times; then the whole network is solved. The optimal cost is
the whole network's either way (the flow may differ where optima tie).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .mincost import try_min_cost_arrays
from .network import Network
from .primal_dual import CostRangeError, primal_dual


def solve_pruned(net: Network, keep: np.ndarray, *, rounds: int = 6, arrays: tuple | None = None,
                 more: Callable[[np.ndarray | None], tuple | None] | None = None
                 ) -> tuple[np.ndarray, int, int] | None:
    """(flow per arc in insertion order, optimal cost, pruned solves run: 0 when the whole network was solved),
    or None when no flow meets the supplies. ``keep``: the arcs of the first pruned solve (bool per arc).

    The pruned network may lack a path the whole one has, so it gets an extra node Z that takes any supply at a
    cost above every path (``_bypass``) and hands it to any demand: it is always feasible, and a flow through Z
    makes the left-out arcs that avoid it cheaper by reduced cost, so they join. An optimum that still uses Z
    has no proof either way: the whole network is solved. ``arrays``: ``net.arrays()`` when the caller already
    has them (concatenating millions of arcs twice is not free).

    ``more``: arcs of the network not in ``arrays`` (the caller prices them without building them): given the
    potentials, the arcs of those with a negative reduced cost (tails, heads, caps, costs), None when there are
    none; given None, all of them (for the whole network's solve). Arcs it hands over join the pruned network
    and come after ``arrays``' in the flow returned."""
    tails, heads, caps, costs = arrays if arrays is not None else net.arrays()
    supply = net.supplies()
    n = net.num_nodes
    zt, zh, zc, zw = _bypass(supply, n, int(np.abs(costs).max(initial=0)))
    keep = np.asarray(keep, dtype=bool).copy()
    for attempt in range(1, rounds + 1):
        sel = np.flatnonzero(keep)
        t, h = np.concatenate([tails[sel], zt]), np.concatenate([heads[sel], zh])
        c, w = np.concatenate([caps[sel], zc]), np.concatenate([costs[sel], zw])
        try:
            res = primal_dual(n + 1, t, h, c, w, np.append(supply, 0), check_after=-1)
        except CostRangeError:
            break
        if res is None:
            return None  # Z joins every supply to every demand: only the supplies' totals can fail
        d = res[2]
        out = np.flatnonzero(~keep)
        bad = out[costs[out] + d[tails[out]] - d[heads[out]] < 0]
        extra = more(d) if more is not None and len(bad) == 0 else None
        if extra is not None:
            tails, heads, caps, costs = (np.concatenate([a, b]) for a, b in zip((tails, heads, caps, costs), extra))
            keep = np.concatenate([keep, np.ones(len(extra[0]), dtype=bool)])
            continue
        if len(bad) == 0:
            if res[0][len(sel):].any():
                break
            flows = np.zeros(len(tails), dtype=np.int64)
            flows[sel] = res[0][: len(sel)]
            return flows, res[1], attempt
        keep[bad] = True
    extra = more(None) if more is not None else None
    if extra is not None:
        tails, heads, caps, costs = (np.concatenate([a, b]) for a, b in zip((tails, heads, caps, costs), extra))
    res = try_min_cost_arrays(n, tails, heads, caps, costs, supply)
    return None if res is None else (res[0], res[1], 0)


def _bypass(supply: np.ndarray, z: int, max_cost: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Arcs through the extra node ``z``: from every supply (cost above any simple path: nodes x max cost), to
    every demand (cost 0)."""
    src, dst = np.flatnonzero(supply > 0), np.flatnonzero(supply < 0)
    big = (len(supply) + 1) * (max_cost + 1)
    tails = np.concatenate([src, np.full(len(dst), z)])
    heads = np.concatenate([np.full(len(src), z), dst])
    caps = np.concatenate([supply[src], -supply[dst]])
    costs = np.concatenate([np.full(len(src), big), np.zeros(len(dst), dtype=np.int64)])
    return tails, heads, caps, costs


def cheapest(group: np.ndarray, other: np.ndarray, level: np.ndarray, cap: np.ndarray, quota: np.ndarray,
             oversample: float = 1.5) -> np.ndarray:
    """Bool mask: per group g, its entries of the lowest cost levels (``level``: small ints, 0 cheapest) until
    their capacity reaches ``quota[g]``. Of the level that reaches it, a share of about ``oversample`` times
    what is still missing, drawn by a hash of (group, ``other``): groups that tie on the same other ends (every
    pool on every broker with room) do not all pick the same few. Linear time: no sort."""
    return cheapest_parts([(group, other, level, cap)], quota, oversample)[0]


def cheapest_parts(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]], quota: np.ndarray,
                   oversample: float = 1.5) -> list[np.ndarray]:
    """``cheapest`` of the entries of every part together, one mask per part, without joining the parts' arrays
    (at 3,000,000 replicas the arrivals built and the lazy cells' first pieces: 8,400,000 entries)."""
    n_lev = max((int(lv.max(initial=0)) for _, _, lv, _ in parts), default=0) + 1
    n_grp = int(quota.shape[0])
    at = np.zeros(n_grp * n_lev)
    for group, _, level, cap in parts:
        at += np.bincount(group.astype(np.int64) * n_lev + level, weights=cap, minlength=n_grp * n_lev)
    at = at.reshape(n_grp, n_lev)
    upto = np.cumsum(at, axis=1)
    thr = (upto < quota[:, None]).sum(axis=1)  # the first level whose running capacity reaches the quota
    before = np.where(thr > 0, upto[np.arange(n_grp), np.maximum(thr - 1, 0)], 0)
    share = (quota - before) * oversample / np.maximum(at[np.arange(n_grp), np.minimum(thr, n_lev - 1)], 1)
    masks = []
    for group, other, level, _ in parts:
        g_thr = thr[group]
        out = level < g_thr
        on = np.flatnonzero(level == g_thr)  # only the threshold level draws (usually a small share of the entries)
        ga = group[on]
        out[on] = _draw(ga, other[on]) < share[ga]
        masks.append(out)
    return masks


def _draw(group: np.ndarray, other: np.ndarray) -> np.ndarray:
    """A hash of (group, other) as a float in [0, 1)."""
    mix = (group.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ (other.astype(np.uint64)
                                                                        * np.uint64(0xBF58476D1CE4E5B9))
    mix ^= mix >> np.uint64(31)
    return (mix >> np.uint64(11)).astype(np.float64) / float(1 << 53)
