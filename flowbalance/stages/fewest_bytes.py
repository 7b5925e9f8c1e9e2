"""``--objective bytes``: among the plans with stage 1's fewest moves, the one that moves the fewest bytes.

A second min-cost flow on the same network as stage 1, with every interval hard and widened to stage 1's counts
(so stage 1's plan is feasible and nothing found is less balanced anywhere), where a move of partition p costs
W + s'_p: s'_p is its size in quanta of δ bytes (floor), and W is one more than stage 1's plan costs in quanta.
Any plan with one move more costs at least W·(M+1) > W·M + (stage 1's bytes), so the optimum keeps the fewest
moves M and among those minimizes the quantized bytes exactly. δ is 1 byte whenever the costs fit the solver's
int64 range; otherwise the plan's bytes are within δ·M of the least possible, and δ·(its quantized bytes) is a
proven lower bound (floor quanta never overstate a size).

The pooled network (``stages/pooled.py``) reaches that optimum without W: a flow of the fewest moves first, then
the least quantized bytes among the flows with that many (``flow/lexicographic.py``: exact; at 1,000,000 replicas
1.0-1.4 s where one cost-scaling solve with W's costs of 2^24 and up took 9.6-12.9 s). The keep network, when the
pooled units cannot be realized, still uses W + s'_p.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..flow.mincost import FlowError
from ..metrics import arrivals
from ..model import ClusterState
from .common import COST_BOUND
from .pooled import balance_pooled
from .replicas import balance_keep


@dataclass
class BytesResult:
    """The re-chosen replica matrix and what certifies it."""

    replicas: np.ndarray
    quantum: int  # δ: bytes per cost unit (1 = exact)
    bytes_lower_bound: int  # δ × the optimum's quantized bytes: no plan with the same moves and balance moves fewer
    applied: bool  # False when the second flow could not run (the stage-1 plan is kept)
    note: str
    moves: int = 0  # replica moves of the re-chosen plan (stage 1's fewest)
    bytes_moved: int = 0  # its bytes


def fewest_bytes(before: ClusterState, stage1: ClusterState, target_rf: np.ndarray, movable: np.ndarray, *,
                 per_topic: bool, prefer: dict[int, int] | None = None) -> BytesResult:
    """Re-solve stage 1 with size costs; ``before`` is the state to plan, ``stage1`` the fewest-moves plan."""
    mov = np.flatnonzero(movable)
    size = np.maximum(before.size[mov], 0).astype(np.int64)
    arr = arrivals(before, stage1)[mov]
    moves = int(arr.sum())
    smax = int(size.max()) if len(size) else 0
    if moves == 0 or smax == 0:
        return BytesResult(stage1.replicas, 1, 0, True, "bytes objective: nothing moves, or no sizes", moves,
                           int((arr * size).sum()))
    b = before.brokers
    NL = int(b.live.sum())
    K = len(b.rack_names) if b.has_racks else 1
    T = len(np.unique(before.topic[mov]))
    nodes = len(mov) * (1 + K) + T * K + T * NL + NL + 2
    # (W + s') · max(nodes, moves + 1) · 8 must stay below COST_BOUND, with W ≤ moves · s'max + 1
    scale = (moves + 2) * max(nodes, moves + 1) * 8
    quantum = max(1, -(-smax * scale // COST_BOUND))
    q = size // quantum
    W = int((arr * q).sum()) + 1
    cost = W + q
    res = None
    how_solved = "a flow of the fewest moves, then the fewest quantized bytes among them (lexicographic)"
    try:
        res = balance_pooled(before, target_rf, movable, per_topic=per_topic, prefer=prefer, move_size=q,
                             achieved=stage1).replicas
        if res is None:
            res = balance_keep(before, target_rf, movable, per_topic=per_topic, move_cost=cost,
                               achieved=stage1).replicas
            how_solved = f"second flow with move cost W + size (W = {W:,})"
    except FlowError:
        res = None
    if res is None:
        return BytesResult(stage1.replicas, quantum, 0, False,
                           "bytes objective: the widened network had no flow (stage 1 left a rule unmet); "
                           "the fewest-moves plan is kept")
    out = before.with_replicas(res)
    arr2 = arrivals(before, out)[mov]
    if int(arr2.sum()) > moves:  # cannot happen when stage 1 was optimal: keep the fewest moves regardless
        return BytesResult(stage1.replicas, quantum, 0, False,
                           "bytes objective: the size-cost flow used more moves; the fewest-moves plan is kept")
    lb = quantum * int((arr2 * q).sum())
    how = ("exact (sizes in bytes)" if quantum == 1 else
           f"sizes in quanta of {quantum:,} bytes: within {quantum * int(arr2.sum()):,} bytes of the least")
    return BytesResult(res, quantum, lb, True,
                       f"bytes objective: {how_solved}; {how}",
                       int(arr2.sum()), int((arr2 * size).sum()))

