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
    supply = net.supplies()
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
    node_order = np.argsort(comp, kind="stable")
    n_count = np.bincount(comp, minlength=int(comp.max()) + 1)
    n_start = np.cumsum(n_count) - n_count
    local = np.empty(len(comp), dtype=np.int64)
    local[node_order] = np.arange(len(comp)) - n_start[comp[node_order]]
    arc_order = np.argsort(arc_comp, kind="stable")
    a_count = np.bincount(arc_comp, minlength=len(n_count))
    a_start = np.cumsum(a_count) - a_count
    lt, lh = local[tails], local[heads]
    for k in np.flatnonzero(a_count).tolist():
        sl = arc_order[a_start[k]: a_start[k] + a_count[k]]
        nodes = node_order[n_start[k]: n_start[k] + n_count[k]]
        sup = np.zeros(len(nodes), dtype=np.int64)
        sup[local[nodes]] = supply[nodes]
        res = _solve(lt[sl], lh[sl], caps[sl], costs[sl], sup, len(nodes))
        if res is None:
            if infeasible_ok:
                return None
            raise FlowError(f"min-cost flow found no feasible flow in component {k}")
        flows[sl] = res[0]
    return flows
