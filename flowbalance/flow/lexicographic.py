"""Lexicographic min-cost flow: among the flows of least ``first`` cost, one of least ``second`` cost.

Why: the bytes objective wants the fewest moves, then the fewest bytes. One flow with costs ``W·first + second``
(W above any difference in ``second``) gives it too, but its costs reach 2^24-2^50, and OR-Tools' cost scaling
then took 9.6 s (3 racks) and 12.9 s (grown over time) on the 1,000,000-replica pooled networks. Here the
first cost is solved alone (0/1 costs: a few primal-dual phases), and the second only where the first leaves a
choice, on that part's contraction: 1.0-1.4 s on the same networks (docs/performance.md, session 22).

The method, and why it is exact:

1. A min-cost flow f for ``first`` by primal-dual (``flow/primal_dual.py``), with its node potentials p: every
   arc's reduced cost ``r = first + p[tail] - p[head]`` is >= 0 where f leaves room and <= 0 where f has flow.
2. Any flow x of least first cost differs from f by a circulation, which splits into cycles of f's residual
   network. Each cycle's reduced costs sum to its first cost (the potentials cancel round a cycle), the cycles'
   first costs sum to cost(x) - cost(f) = 0, and every residual arc has a reduced cost >= 0: so every arc of
   every cycle has reduced cost 0. The cycles lie within the strongly connected components of f's residual arcs
   of reduced cost 0, and every arc not inside one (either end outside, or r != 0) carries f's flow in every x.
3. Conversely a flow that keeps those arcs at f and meets the supplies on the arcs inside the components
   satisfies complementary slackness with p, so its first cost is least. The second cost's min-cost flow on the
   arcs inside the components (supplies: what the fixed arcs leave at each node) is therefore the answer.

The second solve runs on the contraction of those arcs (``flow/contract.py``: at 1,000,000 replicas the
keep-or-move choice of each partition folds into its cell, leaving about 1,000 nodes), by OR-Tools; by compiled
primal-dual when ``PRIMAL_DUAL_FROM_NODES`` nodes or more remain, at most ``MAX_PHASES`` phases (sizes as costs
make one phase per distinct path length), OR-Tools taking over after that.
"""
from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from .contract import contract
from .mincost import try_min_cost_arrays
from .primal_dual import KERNEL_FROM_NODES, CostRangeError, PhaseLimitError, primal_dual

PRIMAL_DUAL_FROM_NODES = KERNEL_FROM_NODES  # second solves this large run primal-dual's compiled phases
MAX_PHASES = 150  # the second solve's primal-dual phases before OR-Tools takes it over (module doc)


def solve_lexicographic(num_nodes: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray,
                        first: np.ndarray, second: np.ndarray, supply: np.ndarray
                        ) -> tuple[np.ndarray, int, int] | None:
    """(flow per arc in the order given, its first cost, its second cost), or None when no flow meets the
    supplies. ``first`` must be small integers (primal-dual's range: below 2**52 along any path)."""
    tails, heads = np.asarray(tails, dtype=np.int64), np.asarray(heads, dtype=np.int64)
    caps, supply = np.asarray(caps, dtype=np.int64), np.asarray(supply, dtype=np.int64)
    first, second = np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)
    if not len(tails) == len(heads) == len(caps) == len(first) == len(second):
        raise ValueError("tails, heads, caps, first and second must have one entry per arc")
    if len(supply) != num_nodes:
        raise ValueError(f"supply has {len(supply)} entries for num_nodes {num_nodes}")
    res = primal_dual(num_nodes, tails, heads, caps, first, supply)
    if res is None:
        return None
    flow, first_cost, pot = res
    free = _free_arcs(num_nodes, tails, heads, caps, first, flow, pot)
    fixed_flow = np.where(free, 0, flow)
    left = (supply - np.bincount(tails, fixed_flow, minlength=num_nodes).astype(np.int64)
            + np.bincount(heads, fixed_flow, minlength=num_nodes).astype(np.int64))
    arcs = np.flatnonzero(free)
    if len(arcs):
        flow = flow.copy()
        flow[arcs] = _second_flow(num_nodes, tails[arcs], heads[arcs], caps[arcs], second[arcs], left)
    return flow, first_cost, int((flow * second).sum())


def _free_arcs(n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, first: np.ndarray,
               flow: np.ndarray, pot: np.ndarray) -> np.ndarray:
    """Per arc, whether its flow may differ among the flows of least first cost: reduced cost 0 and both ends in
    one strongly connected component of the residual arcs of reduced cost 0 (module doc, step 2)."""
    zero = first + pot[tails] - pot[heads] == 0
    forward, backward = zero & (flow < caps), zero & (flow > 0)
    rt = np.concatenate([tails[forward], heads[backward]])
    rh = np.concatenate([heads[forward], tails[backward]])
    graph = csr_matrix((np.ones(len(rt), dtype=np.int8), (rt, rh)), shape=(n, n))
    _, component = connected_components(graph, directed=True, connection="strong")
    return zero & (component[tails] == component[heads]) & (tails != heads)


def _second_flow(n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, costs: np.ndarray,
                 supply: np.ndarray) -> np.ndarray:
    """A min-cost flow of the free arcs, solved on their contraction (``flow/contract.py``: every other node's
    supply is 0, since the first flow met it with fixed arcs; the keep-or-move choices fold into ~1,000 nodes)."""
    small = contract(n, tails, heads, caps, costs, supply)
    args = (small.num_nodes, small.tails, small.heads, small.caps, small.costs, small.supply)
    res = None
    if small.num_nodes >= PRIMAL_DUAL_FROM_NODES:
        try:
            res = primal_dual(*args, check_after=-1, max_phases=MAX_PHASES)
        except (PhaseLimitError, CostRangeError):
            res = None
    if res is None:
        res = try_min_cost_arrays(*args)
    if res is None:
        raise RuntimeError("the free arcs have no flow")  # cannot happen: the first flow's is one
    return small.expand(res[0])
