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
    smcf = min_cost_flow.SimpleMinCostFlow()
    if len(tails):
        arcs = smcf.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, costs)
    else:
        arcs = np.zeros(0, dtype=np.int64)
    supply = net.supplies()
    nz = np.flatnonzero(supply)
    if len(nz):
        smcf.set_nodes_supplies(nz.astype(np.int64), supply[nz])
    if net.num_nodes and smcf.num_nodes() < net.num_nodes:
        smcf.add_arc_with_capacity_and_unit_cost(net.num_nodes - 1, net.num_nodes - 1, 0, 0)
    status = smcf.solve()
    if status == smcf.INFEASIBLE:
        return None
    if status != smcf.OPTIMAL:
        raise FlowError(f"min-cost flow failed with status {status}")
    flows = smcf.flows(arcs) if len(tails) else np.zeros(0, dtype=np.int64)
    return np.asarray(flows, dtype=np.int64), int(smcf.optimal_cost())
