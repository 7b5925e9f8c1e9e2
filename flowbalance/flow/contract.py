"""A min-cost flow network made smaller, with the same optimal flows: supply nodes folded into their arcs' heads
and parallel arcs of equal cost merged; ``Contracted.expand`` maps a flow of the small network back.

Why: the second solve of the bytes objective (``flow/lexicographic.py``) is, at 1,000,000 replicas, 300,000-
800,000 supply nodes (a partition, or a partition's rack, with one replica to keep or move) over about 1,000 other
nodes. Folded, it is 1,000 nodes and 100,000-160,000 arcs: 0.05-0.3 s where the unfolded network took 1.8-4.1 s.

**Folding a supply node.** Node v has supply s > 0, no arc into it, and arcs out of it: ``b``, one with room for
all of s (the widest; of equal widths the dearest), and the others a_1..a_k with capacities u_i summing to at
most s. Every flow sends f_i <= u_i along a_i and the rest, s - sum f_i, along b. Write f_i = u_i - y_i: then
head(a_i) receives u_i less y_i, head(b) receives s - sum u_i plus sum y_i, and the cost is the constant
sum c_i u_i + c_b (s - sum u_i) plus sum (c_b - c_i) y_i. So v goes, its supply moves to the heads (u_i to
head(a_i), the rest to head(b)), and each a_i becomes an arc head(a_i) -> head(b) of capacity u_i and cost
c_b - c_i carrying y_i (dropped when both heads are one node: y_i is then u_i where c_b < c_i, else 0; so is
every arc from a node to itself, saturated when its cost is negative). Flows of the two networks map one to one,
and their costs differ by the constant: optima map to optima.

**Merging parallel arcs.** Arcs with the same tail, head and cost become one arc with their capacities summed;
its flow is handed back to them in arc order, each filled before the next (any split costs the same).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Contracted:
    """The small network (nodes renumbered 0..num_nodes-1, only those an arc touches) and how to map back."""

    num_nodes: int
    tails: np.ndarray
    heads: np.ndarray
    caps: np.ndarray
    costs: np.ndarray
    supply: np.ndarray
    _source_of: np.ndarray  # per original arc: the small network's arc whose flow gives it, -1 for b arcs
    _offset: np.ndarray  # per original arc: the flow its merged arc gives the arcs before it (merge order)
    _b_rest: np.ndarray  # per original arc that is some folded node's b: that node's s - sum u_i, else -1
    _b_arcs: np.ndarray  # per folded node: its b arc
    _a_of_b: np.ndarray  # per folded node's a_i arc: its node's position in _b_arcs
    _loop_y: np.ndarray  # per arc dropped as a loop: its flow (an a_i arc: its y_i), its capacity if its cost < 0
    _caps: np.ndarray  # per original arc: its capacity

    def expand(self, flow: np.ndarray) -> np.ndarray:
        """The original network's flow per arc from ``flow``, a flow of the small network."""
        merged = np.asarray(flow, dtype=np.int64)
        caps = self._caps
        out = np.zeros(len(caps), dtype=np.int64)
        has = self._source_of >= 0
        share = np.clip(merged[self._source_of[has]] - self._offset[has], 0, None)
        out[has] = np.minimum(share, caps[has])
        loops = ~has & (self._a_of_b < 0) & (self._b_rest < 0)  # arcs from a node to itself
        out[loops] = self._loop_y[loops]
        a_arcs = np.flatnonzero(self._a_of_b >= 0)
        y = np.where(has[a_arcs], out[a_arcs], self._loop_y[a_arcs])
        out[a_arcs] = caps[a_arcs] - y  # folded: the small arc carries y_i, a_i itself u_i - y_i
        sent_y = np.bincount(self._a_of_b[a_arcs], weights=y, minlength=len(self._b_arcs)).astype(np.int64)
        out[self._b_arcs] = self._b_rest[self._b_arcs] + sent_y
        return out


def contract(num_nodes: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, costs: np.ndarray,
             supply: np.ndarray) -> Contracted:
    """Fold every supply node that the module doc allows, merge parallel arcs, drop untouched nodes (their supply
    must be 0: a node with supply and no arc has no flow either way)."""
    tails, heads = np.asarray(tails, dtype=np.int64), np.asarray(heads, dtype=np.int64)
    caps, costs = np.asarray(caps, dtype=np.int64), np.asarray(costs, dtype=np.int64)
    supply = np.asarray(supply, dtype=np.int64)
    E = len(tails)
    folded, b_of = _foldable(num_nodes, tails, heads, caps, costs, supply)
    a_mask = folded[tails]
    a_mask[b_of[folded]] = False
    a_arcs = np.flatnonzero(a_mask)
    b_arcs = b_of[folded]
    node_pos = np.full(num_nodes, -1, dtype=np.int64)
    node_pos[np.flatnonzero(folded)] = np.arange(len(b_arcs))
    a_of_b = np.full(E, -1, dtype=np.int64)
    a_of_b[a_arcs] = node_pos[tails[a_arcs]]
    new_supply = np.where(folded, 0, supply)
    new_supply += np.bincount(heads[a_arcs], weights=caps[a_arcs], minlength=num_nodes).astype(np.int64)
    others = np.bincount(tails[a_arcs], weights=caps[a_arcs], minlength=num_nodes).astype(np.int64)
    rest = supply[folded] - others[folded]
    new_supply += np.bincount(heads[b_arcs], weights=rest, minlength=num_nodes).astype(np.int64)
    b_rest = np.full(E, -1, dtype=np.int64)
    b_rest[b_arcs] = rest
    # the arcs of the folded network, one per original arc (b arcs and folded self-loops: none)
    t2, h2, c2 = tails.copy(), heads.copy(), costs.copy()
    t2[a_arcs], h2[a_arcs] = heads[a_arcs], heads[b_of[tails[a_arcs]]]
    c2[a_arcs] = costs[b_of[tails[a_arcs]]] - costs[a_arcs]
    live = ~folded[tails] | a_mask
    loop = t2 == h2
    live &= ~loop
    loop_y = np.where(loop & (c2 < 0), caps, 0)
    return _merged(num_nodes, t2, h2, caps, c2, new_supply, live, b_rest, b_arcs, a_of_b, loop_y)


def _foldable(n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, costs: np.ndarray,
              supply: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(per node, whether it folds; per node, its b arc, -1 where none)."""
    candidate = (supply > 0) & (np.bincount(heads, minlength=n) == 0) & (np.bincount(tails, minlength=n) > 0)
    arcs = np.flatnonzero(candidate[tails])
    arcs = arcs[np.lexsort((arcs, -costs[arcs], -caps[arcs], tails[arcs]))]
    first = np.r_[True, tails[arcs][1:] != tails[arcs][:-1]] if len(arcs) else np.zeros(0, dtype=bool)
    b_of = np.full(n, -1, dtype=np.int64)
    b_of[tails[arcs[first]]] = arcs[first]
    total = np.bincount(tails, weights=caps, minlength=n).astype(np.int64)
    b_cap = np.where(b_of >= 0, caps[np.maximum(b_of, 0)] if len(caps) else 0, 0)
    folded = candidate & (b_cap >= supply) & (total - b_cap <= supply)
    return folded, np.where(folded, b_of, -1)


def _merged(n, tails, heads, caps, costs, supply, live, b_rest, b_arcs, a_of_b, loop_y) -> Contracted:
    """The ``live`` arcs with equal (tail, head, cost) merged, nodes renumbered to those an arc touches."""
    arcs = np.flatnonzero(live)
    order = arcs[np.lexsort((arcs, costs[arcs], heads[arcs], tails[arcs]))]
    key_t, key_h, key_c = tails[order], heads[order], costs[order]
    new = np.r_[True, (key_t[1:] != key_t[:-1]) | (key_h[1:] != key_h[:-1]) | (key_c[1:] != key_c[:-1])] \
        if len(order) else np.zeros(0, dtype=bool)
    group = np.cumsum(new) - 1
    merged_caps = np.bincount(group, weights=caps[order], minlength=int(new.sum())).astype(np.int64)
    offset = np.zeros(len(order), dtype=np.int64)  # capacity of the group's arcs before each (fill order)
    run = np.cumsum(caps[order])
    starts = np.flatnonzero(new)
    offset[:] = run - caps[order] - np.repeat(run[starts] - caps[order][starts], np.diff(np.r_[starts, len(order)]))
    source_of = np.full(len(tails), -1, dtype=np.int64)
    source_of[order] = group
    offsets = np.zeros(len(tails), dtype=np.int64)
    offsets[order] = offset
    touched = np.zeros(n, dtype=bool)
    touched[key_t[new]] = touched[key_h[new]] = True
    if supply[~touched].any():
        raise ValueError("a node with supply has no arc")
    local = np.cumsum(touched) - 1
    return Contracted(int(touched.sum()), local[key_t[new]], local[key_h[new]], merged_caps, key_c[new],
                      supply[touched], source_of, offsets, b_rest, b_arcs, a_of_b, loop_y, caps)
