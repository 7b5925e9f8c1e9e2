"""Each row picks one of its options, each option a node; a node's load costs convexly; numba-compiled.

The problem of stage 3 (``stages/followers.py``), split into independent components (one per leader): row r
picks an option o (a first follower), which costs ``opt_cost[o]`` (0 keeps the current one, 1 changes it) and
adds one unit to the option's node v; node v ends with ``base[v] + m[v]`` and costs ``scale * ((base[v] +
m[v])**2 - base[v]**2)``, its component's ``scale`` above every change count. The optimum is the min-cost flow
rows -> nodes -> sink whose j-th unit into the sink from v costs ``scale * (2 * (base[v] + j) - 1)``, the
network the stage gave OR-Tools, component by component (0.6-0.7 ms each, 1,000 of them at 1,000,000 replicas).

Here, per component: every row first takes its cheapest option given the units placed before it (greedy), then
negative cycles of the residual network are cancelled until none is left, which is the optimality condition of
a min-cost flow. The residual network has the component's nodes and the sink: a row on node u that could take
option o on node w gives an arc u -> w of cost ``opt_cost[o] - opt_cost[its own]``; v -> sink costs the next
unit, ``scale * (2 * (base[v] + m[v]) + 1)``, and sink -> v (when v holds a row) gives back the last one,
``-scale * (2 * (base[v] + m[v]) - 1)``. Bellman-Ford from a source joined to every node finds a negative cycle
when one exists; it shows as a cycle of the predecessor pointers, searched after every pass, and its rows move.
Every cancellation lowers the integer cost, so the loop ends; the flow it ends with is an optimum (the cost is
OR-Tools'; where optima tie the choice may differ). Components are solved one after another in one call.
"""
from __future__ import annotations

import numpy as np
from numba import njit


def convex_choice(row_start: np.ndarray, opt_start: np.ndarray, opt_node: np.ndarray, opt_cost: np.ndarray,
                  node_start: np.ndarray, base: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """The option each row takes (indices into the option arrays), an optimum of the module doc's problem.

    Components k = 0 .. K-1 hold the rows ``row_start[k]:row_start[k + 1]`` and the nodes
    ``node_start[k]:node_start[k + 1]``; row r's options are ``opt_start[r]:opt_start[r + 1]`` (at least one),
    option o lands on node ``opt_node[o]`` (a node of the row's component) at cost ``opt_cost[o]`` (>= 0);
    ``base``: per node; ``scale``: per component, above the sum of every change cost there."""
    arrays = [np.ascontiguousarray(a, dtype=np.int64) for a in (row_start, opt_start, opt_node, opt_cost,
                                                                  node_start, base, scale)]
    row_start, opt_start, opt_node, opt_cost, node_start, base, scale = arrays
    K = len(scale)
    if len(row_start) != K + 1 or len(node_start) != K + 1:
        raise ValueError("row_start, node_start: one start per component and the end expected")
    if len(opt_start) != int(row_start[-1]) + 1 or len(opt_node) != int(opt_start[-1]) or \
            len(opt_cost) != len(opt_node) or len(base) != int(node_start[-1]):
        raise ValueError("opt_start, opt_node, opt_cost, base: sizes do not match the starts")
    if len(opt_start) > 1 and int(np.diff(opt_start).min()) < 1:
        raise ValueError("opt_start: every row needs an option")
    opt_row = np.repeat(np.arange(len(opt_start) - 1), np.diff(opt_start))  # per option: its row
    comp = np.repeat(np.arange(K), np.diff(row_start))[opt_row]  # per option: its row's component
    if len(opt_node) and ((opt_node < node_start[comp]) | (opt_node >= node_start[comp + 1])).any():
        raise ValueError("opt_node: an option's node lies outside its row's component")
    if len(opt_cost) and int(opt_cost.min()) < 0:
        raise ValueError("opt_cost: costs must be non-negative")
    out = np.empty(len(opt_start) - 1, dtype=np.int64)
    _solve(row_start, opt_start, opt_row, opt_node, opt_cost, node_start, base, scale, out)
    return out


@njit(cache=True)
def _solve(row_start, opt_start, opt_row, opt_node, opt_cost, node_start, base, scale, out):
    """Every component in turn: the greedy start, then cycles cancelled until none is left (``out``: per row)."""
    width = 1
    for k in range(len(scale)):
        width = max(width, node_start[k + 1] - node_start[k] + 1)
    m = np.zeros(width, dtype=np.int64)
    dist = np.zeros(width, dtype=np.int64)
    pred_node = np.full(width, -1, dtype=np.int64)
    pred_opt = np.full(width, -1, dtype=np.int64)
    mark = np.full(width, -1, dtype=np.int64)
    for k in range(len(scale)):
        _greedy(row_start[k], row_start[k + 1], opt_start, opt_node, opt_cost, node_start[k], base, scale[k], m,
                out)
        while _cancel_one(row_start[k], row_start[k + 1], opt_start, opt_row, opt_node, opt_cost, node_start[k],
                          node_start[k + 1] - node_start[k], base, scale[k], m, out, dist, pred_node, pred_opt, mark):
            pass


@njit(cache=True)
def _greedy(r0, r1, opt_start, opt_node, opt_cost, v0, base, c, m, out):
    """Each row in order takes its cheapest option given the units before it (the first of equal ones)."""
    m[:] = 0
    for r in range(r0, r1):
        best, best_cost = -1, 0
        for o in range(opt_start[r], opt_start[r + 1]):
            v = opt_node[o] - v0
            cost = c * (2 * (base[opt_node[o]] + m[v]) + 1) + opt_cost[o]
            if best < 0 or cost < best_cost:
                best, best_cost = o, cost
        out[r] = best
        m[opt_node[best] - v0] += 1


@njit(cache=True)
def _cancel_one(r0, r1, opt_start, opt_row, opt_node, opt_cost, v0, nv, base, c, m, out, dist, pred_node,
                pred_opt, mark):
    """Bellman-Ford over the residual network (module doc; node ``nv`` is the sink); when it finds a negative
    cycle, move its rows and return True, else (an optimum) False. After every pass the predecessors are
    searched for a cycle (any such cycle is negative), so a cycle is cancelled as soon as it shows, not after V
    passes (kafka-add-20 at 1,000,000 replicas: 10,020 cycles in 29,316 passes, 0.1 s)."""
    sink = nv
    for v in range(nv + 1):
        dist[v], pred_node[v], pred_opt[v] = 0, -1, -1
    cycle = -1
    for _ in range(nv + 1):
        if not _relax(r0, r1, opt_start, opt_node, opt_cost, v0, nv, base, c, m, out, dist, pred_node, pred_opt):
            return False
        cycle = _on_cycle(nv + 1, pred_node, mark)
        if cycle >= 0:
            break
    if cycle < 0:
        raise RuntimeError("convex_choice: Bellman-Ford relaxed in pass V without a cycle of predecessors")
    v = cycle
    while True:  # each node of the cycle once, with its arc in: a row's move, or a unit to or from the sink
        o = pred_opt[v]
        if o >= 0:
            r = opt_row[o]
            m[opt_node[out[r]] - v0] -= 1
            m[v] += 1
            out[r] = o
        v = pred_node[v]
        if v == cycle:
            break
    return True


@njit(cache=True)
def _relax(r0, r1, opt_start, opt_node, opt_cost, v0, nv, base, c, m, out, dist, pred_node, pred_opt):
    """One Bellman-Ford pass over every arc of the residual network; whether some distance fell."""
    sink, fell = nv, False
    for v in range(nv):
        load = base[v0 + v] + m[v]
        if m[v] > 0 and dist[sink] - c * (2 * load - 1) < dist[v]:
            dist[v], pred_node[v], pred_opt[v], fell = dist[sink] - c * (2 * load - 1), sink, -1, True
        if dist[v] + c * (2 * load + 1) < dist[sink]:
            dist[sink], pred_node[sink], pred_opt[sink], fell = dist[v] + c * (2 * load + 1), v, -1, True
    for r in range(r0, r1):
        own = out[r]
        u = opt_node[own] - v0
        for o in range(opt_start[r], opt_start[r + 1]):
            w = opt_node[o] - v0
            if o != own and dist[u] + opt_cost[o] - opt_cost[own] < dist[w]:
                dist[w], pred_node[w], pred_opt[w], fell = dist[u] + opt_cost[o] - opt_cost[own], u, o, True
    return fell


@njit(cache=True)
def _on_cycle(n, pred_node, mark):
    """A node on a cycle of the predecessor pointers of nodes 0 .. n-1 (-1: none), each node walked once."""
    for v in range(n):
        mark[v] = -1
    for s in range(n):
        v = s
        while v >= 0 and mark[v] < 0:
            mark[v] = s
            v = pred_node[v]
        if v >= 0 and mark[v] == s:
            return v
    return -1
