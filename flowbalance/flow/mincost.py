"""Min-cost flow with OR-Tools' compiled SimpleMinCostFlow (networkx is the reference oracle in tests)."""
from __future__ import annotations

import numpy as np
from ortools.graph.python import min_cost_flow

from .network import Network


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
    tails, heads, caps, costs = net.arrays()
    return _solve(tails, heads, caps, costs, net.supplies(), net.num_nodes)


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
                       supply: np.ndarray, component: np.ndarray, *, infeasible_ok: bool = False
                       ) -> np.ndarray | None:
    """``solve_min_cost_split`` on arc arrays (int64) and node supplies, for callers that build millions of arcs
    without a ``Network``. Each component's arcs reach its solver in insertion order, so the flows are the same
    whichever way the network was built; when the arcs already come grouped by component (the realization's do),
    a component's arcs are a slice of the arrays, not a gather."""
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
    out = np.zeros(len(tails), dtype=np.int64)
    for k in np.flatnonzero(a_count).tolist():
        a, z = int(a_start[k]), int(a_start[k] + a_count[k])
        nodes = node_order[n_start[k]: n_start[k] + n_count[k]]
        sup = np.zeros(len(nodes), dtype=np.int64)
        sup[local[nodes]] = supply[nodes]
        res = _solve(lt[a:z], lh[a:z], caps[a:z], costs[a:z], sup, len(nodes))
        if res is None:
            if infeasible_ok:
                return None
            raise FlowError(f"min-cost flow found no feasible flow in component {k}")
        out[a:z] = res[0]
    if arc_order is None:
        return out
    flows[arc_order] = out
    return flows


def _grouped(key: np.ndarray, n_keys: int) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """(stable order grouping equal keys, or None when they are grouped already in ascending order; each key's
    first position in that order; its count)."""
    count = np.bincount(key, minlength=n_keys)
    start = np.cumsum(count) - count
    if len(key) < 2 or bool((key[1:] >= key[:-1]).all()):
        return None, start, count
    return np.argsort(key, kind="stable"), start, count
