"""Min-cost flow with OR-Tools' compiled SimpleMinCostFlow (networkx is the reference oracle in tests)."""
from __future__ import annotations

import numpy as np
from ortools.graph.python import min_cost_flow

from ..forked import Forked, can_fork
from .network import Network


# networks of independent components (``solve_split_arrays``) with this many arcs are solved by two processes
# (``flowbalance.forked``: OR-Tools holds the GIL)
SPLIT_FORK_FROM_ARCS = 200_000


class FlowError(RuntimeError):
    """The solver could not solve a network that should always be feasible (a bug, not bad input)."""


def solve_min_cost(net: Network) -> tuple[np.ndarray, int]:
    """Solve; return (flow per arc in insertion order, optimal cost)."""
    res = try_min_cost(net)
    if res is None:
        raise FlowError("min-cost flow found no feasible flow")
    return res


def try_min_cost(net: Network) -> tuple[np.ndarray, int] | None:
    """Solve; (flow per arc in insertion order, optimal cost), or None when no flow meets the supplies."""
    return try_min_cost_arrays(net.num_nodes, *net.arrays(), net.supplies())


def try_min_cost_arrays(num_nodes: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, costs: np.ndarray,
                        supply: np.ndarray) -> tuple[np.ndarray, int] | None:
    """``try_min_cost`` on arc arrays (int64) and node supplies, for callers that build their arcs without a
    ``Network``: (flow per arc in the order given, optimal cost), or None when no flow meets the supplies."""
    return _solve(tails, heads, caps, costs, supply, num_nodes)


def _solve(tails, heads, caps, costs, supply, num_nodes) -> tuple[np.ndarray, int] | None:
    """One OR-Tools solve of nodes 0 .. num_nodes-1; None when infeasible."""
    smcf = min_cost_flow.SimpleMinCostFlow()
    arcs = smcf.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, costs) if len(tails) else None
    nz = np.flatnonzero(supply)
    if len(nz):
        smcf.set_nodes_supplies(nz.astype(np.int64), supply[nz])
    if num_nodes and smcf.num_nodes() < num_nodes:
        smcf.add_arc_with_capacity_and_unit_cost(num_nodes - 1, num_nodes - 1, 0, 0)
    status = smcf.solve()
    if status == smcf.INFEASIBLE:
        return None
    if status != smcf.OPTIMAL:
        raise FlowError(f"min-cost flow failed with status {status}")
    flows = smcf.flows(arcs) if arcs is not None else np.zeros(0, dtype=np.int64)
    return np.asarray(flows, dtype=np.int64), int(smcf.optimal_cost())


def solve_min_cost_split(net: Network, component: np.ndarray, *, infeasible_ok: bool = False) -> np.ndarray | None:
    """Solve a network made of independent components (``component[node]``; no arc joins two) one component
    at a time; return the flow per arc in insertion order (None when a component is infeasible and
    ``infeasible_ok``). Many small solves beat one large one: each stays in
    cache and the cost scaling of one component does not wait for the others."""
    tails, heads, caps, costs = net.arrays()
    return solve_split_arrays(tails, heads, caps, costs, net.supplies(), component, infeasible_ok=infeasible_ok)


def solve_split_arrays(tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, costs: np.ndarray,
                       supply: np.ndarray, component: np.ndarray, *, infeasible_ok: bool = False,
                       processes: int | None = None) -> np.ndarray | None:
    """``solve_min_cost_split`` on arc arrays (int64) and node supplies, for callers that build millions of arcs
    without a ``Network``. Each component's arcs reach its solver in insertion order, so the flows are the same
    whichever way the network was built; when the arcs already come grouped by component (the realization's do),
    a component's arcs are a slice of the arrays, not a gather. ``processes``: 2 solves the second half of the
    components (by arcs) in a forked process; None: 2 when ``forked.can_fork`` and the network has at least
    ``SPLIT_FORK_FROM_ARCS`` arcs. The flows are the same either way (each component is solved alone)."""
    comp = np.asarray(component, dtype=np.int64)
    flows = np.zeros(len(tails), dtype=np.int64)
    arc_comp = comp[tails]
    n_comp = int(comp.max()) + 1 if len(comp) else 0
    has_arcs = np.bincount(arc_comp, minlength=n_comp) > 0
    if np.any((supply != 0) & ~has_arcs[comp]):
        if infeasible_ok:
            return None
        raise FlowError("a component with supply has no arcs")
    if len(tails) == 0:
        return flows
    if np.any(comp[heads] != arc_comp):
        raise FlowError("an arc joins two components")
    node_order, n_start, n_count = _grouped(comp, n_comp)
    if node_order is None:
        node_order = np.arange(len(comp))
    local = np.empty(len(comp), dtype=np.int64)
    local[node_order] = np.arange(len(comp)) - n_start[comp[node_order]]
    arc_order, a_start, a_count = _grouped(arc_comp, n_comp)
    lt, lh = local[tails], local[heads]
    if arc_order is not None:  # each component's arcs contiguous, in insertion order
        lt, lh, caps, costs = lt[arc_order], lh[arc_order], caps[arc_order], costs[arc_order]
    parts = _Components(lt, lh, caps, costs, supply, node_order, n_start, n_count, local, a_start, a_count)
    if processes is None:
        processes = 2 if len(tails) >= SPLIT_FORK_FROM_ARCS and can_fork() else 1
    bad = parts.solve_forked() if processes >= 2 else parts.solve(np.flatnonzero(a_count))
    if bad is not None:
        if infeasible_ok:
            return None
        raise FlowError(f"min-cost flow found no feasible flow in component {bad}")
    if arc_order is None:
        return parts.out
    flows[arc_order] = parts.out
    return flows


class _Components:
    """The components of ``solve_split_arrays`` (arcs grouped by component, nodes numbered within theirs), solved
    one by one into ``out``."""

    def __init__(self, lt, lh, caps, costs, supply, node_order, n_start, n_count, local, a_start, a_count):
        self.lt, self.lh, self.caps, self.costs, self.supply = lt, lh, caps, costs, supply
        self.node_order, self.n_start, self.n_count, self.local = node_order, n_start, n_count, local
        self.a_start, self.a_count = a_start, a_count
        self.out = np.zeros(len(lt), dtype=np.int64)

    def solve(self, ks: np.ndarray) -> int | None:
        """Solve components ``ks`` (ascending) into ``out``; the first infeasible one, or None."""
        for k in ks.tolist():
            a, z = int(self.a_start[k]), int(self.a_start[k] + self.a_count[k])
            nodes = self.node_order[self.n_start[k]: self.n_start[k] + self.n_count[k]]
            sup = np.zeros(len(nodes), dtype=np.int64)
            sup[self.local[nodes]] = self.supply[nodes]
            res = _solve(self.lt[a:z], self.lh[a:z], self.caps[a:z], self.costs[a:z], sup, len(nodes))
            if res is None:
                return k
            self.out[a:z] = res[0]
        return None

    def solve_forked(self) -> int | None:
        """``solve`` of every component, the second half (by arcs) in a forked child; when the child fails, this
        process solves its half too."""
        ks = np.flatnonzero(self.a_count)
        cut = int(np.searchsorted(np.cumsum(self.a_count[ks]), int(self.a_count.sum()) // 2)) + 1
        mine, theirs = ks[:cut], ks[cut:]
        if not len(theirs):
            return self.solve(ks)
        lo, hi = int(self.a_start[theirs[0]]), int(self.a_start[theirs[-1]] + self.a_count[theirs[-1]])

        def second_half() -> tuple[int | None, np.ndarray]:
            return self.solve(theirs), self.out[lo:hi]
        child = Forked(second_half)
        bad = child.alongside(lambda: self.solve(mine))
        theirs_bad, self.out[lo:hi] = child.result_or(second_half)
        return bad if bad is not None else theirs_bad


def _grouped(key: np.ndarray, n_keys: int) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """(stable order grouping equal keys, or None when they are grouped already in ascending order; each key's
    first position in that order; its count)."""
    count = np.bincount(key, minlength=n_keys)
    start = np.cumsum(count) - count
    if len(key) < 2 or bool((key[1:] >= key[:-1]).all()):
        return None, start, count
    return np.argsort(key, kind="stable"), start, count
