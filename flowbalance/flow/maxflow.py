"""Max flow with OR-Tools' compiled SimpleMaxFlow (push-relabel): arc arrays in, flow per arc out.

networkx is the reference oracle in the tests. (scipy's ``maximum_flow`` served here before: it sums parallel arcs
and returns a flow matrix, so every call paid a duplicate check and a search per arc for its flow, 0.5 s of the
leader stage on a 40-broker, 150,000-replica cluster.)
"""
from __future__ import annotations

import numpy as np
from ortools.graph.python import max_flow


def solve_max_flow(num_nodes: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray,
                   source: int, sink: int) -> tuple[np.ndarray, int]:
    """Return (flow on each arc, in the order given; flow value). Parallel arcs are allowed."""
    tails = np.asarray(tails, dtype=np.int64)
    heads = np.asarray(heads, dtype=np.int64)
    caps = np.asarray(caps, dtype=np.int64)
    if len(tails) == 0 or source == sink:
        return np.zeros(len(tails), dtype=np.int64), 0
    mf = max_flow.SimpleMaxFlow()
    arcs = mf.add_arcs_with_capacity(tails, heads, caps)
    if num_nodes and max(int(tails.max()), int(heads.max())) < num_nodes - 1:
        mf.add_arc_with_capacity(num_nodes - 1, num_nodes - 1, 0)  # every node exists, as in the other solvers
    status = mf.solve(source, sink)
    if status != mf.OPTIMAL:
        raise RuntimeError(f"max flow failed with status {status}")
    return np.asarray(mf.flows(arcs), dtype=np.int64), int(mf.optimal_flow())
