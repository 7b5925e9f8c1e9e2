"""A network under construction: arc arrays (tail, head, capacity, cost) and node supplies, built in blocks."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Network:
    """Arcs are appended in vectorized blocks; ``add`` returns the arc ids of the block."""

    num_nodes: int = 0
    tails: list = field(default_factory=list)
    heads: list = field(default_factory=list)
    caps: list = field(default_factory=list)
    costs: list = field(default_factory=list)
    supply: np.ndarray | None = None
    forced: list = field(default_factory=list)  # (tails, heads, amounts): flow fixed in advance (lower bounds)
    _count: int = 0

    def nodes(self, n: int) -> np.ndarray:
        """Reserve ``n`` new nodes; return their ids."""
        ids = np.arange(self.num_nodes, self.num_nodes + n, dtype=np.int64)
        self.num_nodes += n
        return ids

    def add(self, tail, head, cap, cost) -> np.ndarray:
        tail = np.asarray(tail, dtype=np.int64).ravel()
        n = len(tail)
        head = np.broadcast_to(np.asarray(head, dtype=np.int64), (n,)) if np.ndim(head) == 0 else np.asarray(head, dtype=np.int64).ravel()
        cap = np.broadcast_to(np.asarray(cap, dtype=np.int64), (n,))
        cost = np.broadcast_to(np.asarray(cost, dtype=np.int64), (n,))
        self.tails.append(tail)
        self.heads.append(head)
        self.caps.append(np.ascontiguousarray(cap))
        self.costs.append(np.ascontiguousarray(cost))
        ids = np.arange(self._count, self._count + n, dtype=np.int64)
        self._count += n
        return ids

    def set_supply(self, supply: np.ndarray) -> None:
        self.supply = np.asarray(supply, dtype=np.int64)

    def force(self, tails, heads, amounts) -> None:
        """Send ``amounts`` from ``tails`` to ``heads`` unconditionally (a hard lower bound on those arcs):
        the tails supply that much less and the heads need that much less."""
        self.forced.append((np.asarray(tails, dtype=np.int64).ravel(),
                            np.broadcast_to(np.asarray(heads, dtype=np.int64), np.shape(np.asarray(tails).ravel())),
                            np.asarray(amounts, dtype=np.int64).ravel()))

    def supplies(self) -> np.ndarray:
        """Node supplies after the forced flow is taken out."""
        s = np.zeros(self.num_nodes, dtype=np.int64)
        if self.supply is not None:
            s[: len(self.supply)] += self.supply
        for t, h, a in self.forced:
            np.subtract.at(s, t, a)
            np.add.at(s, h, a)
        return s

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        cat = lambda xs: np.concatenate(xs) if xs else np.zeros(0, dtype=np.int64)  # noqa: E731
        return cat(self.tails), cat(self.heads), cat(self.caps), cat(self.costs)

    @property
    def num_arcs(self) -> int:
        return self._count


def convex_arcs(net: Network, tails: np.ndarray, head: int | np.ndarray, lo: np.ndarray, hi: np.ndarray,
                limit: np.ndarray, penalty: int | None) -> None:
    """Soft interval [lo, hi] on the flow from each tail to head, as three arcs of increasing cost.

    The first ``lo`` units earn ``-penalty`` each, the next ``hi - lo`` are free, and up to ``limit`` more cost
    ``+penalty`` each: a min-cost flow then meets every interval whenever it can, and otherwise misses by as
    few units as possible. Intervals may be negative after fixed load is subtracted (clipped to 0).

    ``penalty=None`` makes the interval hard: ``lo`` units are forced and at most ``hi - lo`` more may pass. The
    costs then stay small (the solver's cost scaling runs far fewer phases); the network may be infeasible.
    """
    lo = np.maximum(np.asarray(lo, dtype=np.int64), 0)
    hi = np.maximum(np.asarray(hi, dtype=np.int64), lo)
    limit = np.asarray(limit, dtype=np.int64)
    heads = head if np.ndim(head) else np.full(len(tails), head, dtype=np.int64)
    if penalty is None:
        net.force(np.asarray(tails)[lo > 0], np.asarray(heads)[lo > 0], lo[lo > 0])
        keep = hi > lo
        net.add(np.asarray(tails)[keep], np.asarray(heads)[keep], (hi - lo)[keep], 0)
        return
    first = np.minimum(lo, limit)
    second = np.minimum(hi - lo, np.maximum(limit - first, 0))
    third = np.maximum(limit - first - second, 0)
    for cap, cost in ((first, -penalty), (second, 0), (third, penalty)):
        keep = cap > 0
        if keep.any():
            net.add(np.asarray(tails)[keep], np.asarray(heads)[keep], cap[keep], cost)
