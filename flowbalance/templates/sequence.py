"""Permutation templates in rotation order: the ordered replica tuples the template strategy lays partitions on.

Brokers get positions 0..N-1 (rack-interleaved when the rack rule applies). Position s of the sequence is the
tuple starting at broker ``s mod N`` in block ``g = s // N``; a block is one offset pattern (d1, d2, ...)
applied to every start, so each block leads every broker once and holds every broker once in each position.
Blocks cycle through d1 = 1..N-1 fastest, so every N(N-1) positions use each (leader, first follower) pair
exactly once; the later offsets (RF >= 3) advance once per such round. For brokers 1-4 and RF 2 this is the
seed's list: (1,2)(2,3)(3,4)(4,1), (1,3)(2,4)(3,1)(4,2), (1,4)(2,1)(3,2)(4,3).

All topics draw consecutive runs from one shared counter, so leaders and pairs balance across topics as well
as within each topic. With racks, a tuple that breaks the rack rule (``racks.py``: RF <= racks, two replicas in
one rack; above, more in a rack than its share of an even spread) is skipped. When every rack has the same number
of brokers, the interleaved order makes validity depend only on the offsets: for RF <= racks whole patterns are
chosen valid, above it whole blocks are skipped, and the balance properties still hold.
"""
from __future__ import annotations

import numpy as np

from ..model import Brokers
from ..racks import rack_bounds

_SCAN_LIMIT = 64  # give up after scanning this many times the tuples asked for (only when racks forbid them)


class NoValidTemplate(ValueError):
    """The scan found too few tuples that keep the rack rule."""


def broker_order(brokers: Brokers, rack_aware: bool) -> np.ndarray:
    """Dense indices of the live brokers in template order: by id, or racks interleaved (r0 b0, r1 b0, ...)."""
    live = np.flatnonzero(brokers.live)
    if not rack_aware:
        return live
    racks = brokers.rack[live]
    groups = [live[racks == r] for r in np.unique(racks)]  # each group sorted by id (brokers are sorted)
    out = []
    for j in range(max(len(g) for g in groups)):
        out.extend(int(g[j]) for g in groups if j < len(g))
    return np.asarray(out, dtype=np.int64)


class TemplateSequence:
    """The rotation-order tuples over ``order`` (broker indices), taken in runs from a shared position counter."""

    def __init__(self, order: np.ndarray, rack_of: np.ndarray | None):
        self.order = np.asarray(order, dtype=np.int64)
        self.N = len(self.order)
        self.rack = None if rack_of is None else np.asarray(rack_of, dtype=np.int64)[self.order]
        self.R = 0 if self.rack is None else len(np.unique(self.rack))
        self.rack_sizes = None if self.rack is None else np.bincount(self.rack).astype(np.int64)
        # equal racks interleaved: rack of position i is i mod R, so validity depends on the offsets alone
        self.periodic = (self.rack is not None and self.N % self.R == 0
                         and np.array_equal(self.rack, np.tile(self.rack[: self.R], self.N // self.R)))
        self.position = 0
        self._rest_cache: dict[tuple[int, int, int], tuple[int, ...]] = {}

    def take(self, k: int, m: int) -> np.ndarray:
        """The next ``m`` valid tuples of length ``k`` (broker indices, int64 [m, k]); advances the counter."""
        N = self.N
        if k > N:
            raise ValueError("RF above the number of brokers")
        out = np.empty((m, k), dtype=np.int64)
        got = 0
        scanned = 0
        # equal racks with RF <= racks: the patterns are valid by construction; otherwise each tuple is checked
        racks_apply = self.rack is not None and not (self.periodic and k <= self.R)
        if racks_apply:
            lo, hi = rack_bounds(np.array([k]), self.rack_sizes)
        while got < m:
            g, i0 = divmod(self.position, N)
            pattern = self._pattern(k, g)
            starts = np.arange(i0, N)
            pos = (starts[:, None] + np.asarray(pattern)[None, :]) % N
            if racks_apply:
                ok = _rule_holds(self.rack[pos], lo[0], hi[0])
            else:
                ok = np.ones(len(pos), dtype=bool)
            keep = np.flatnonzero(ok)[: m - got]
            out[got:got + len(keep)] = pos[keep]
            got += len(keep)
            # advance past the last tuple used (or the whole block when more are needed)
            used_to = int(keep[-1]) + 1 if got == m and len(keep) else len(starts)
            self.position += used_to
            scanned += used_to
            if scanned > _SCAN_LIMIT * max(m, N * N) and got < m:
                raise NoValidTemplate("no rack-valid template tuple found")
        return self.order[out]

    def _pattern(self, k: int, g: int) -> tuple[int, ...]:
        """Offsets (0, d1, d2, ...) of block g for RF k."""
        N = self.N
        if k == 1:
            return (0,)
        r, d_index = divmod(g, N - 1)
        if self.periodic and k <= self.R:
            # only first offsets in another rack; each round uses every such d1 once
            valid = [d for d in range(1, N) if d % self.R != 0]
            r, d_index = divmod(g, len(valid))
            d1 = valid[d_index]
        else:
            d1 = d_index + 1
        return (0, d1) + self._rest(k, d1, r)

    def _rest(self, k: int, d1: int, r: int) -> tuple[int, ...]:
        """The r-th (cyclically) choice of the offsets after d1, in lexicographic order, decoded in mixed radix."""
        if k <= 2:
            return ()
        key = (k, d1, r)
        hit = self._rest_cache.get(key)
        if hit is not None:
            return hit
        N, R = self.N, self.R
        by_rack = self.periodic and k <= R
        used_off = {0, d1}
        used_res = {0, d1 % R} if by_rack else set()
        sizes = []
        for j in range(k - 2):  # how many choices each later position has (the same whatever was chosen)
            sizes.append((R - 2 - j) * (N // R) if by_rack else N - 2 - j)
        total = int(np.prod(sizes))
        idx = r % total
        chosen = []
        for j in range(k - 2):
            below = int(np.prod(sizes[j + 1:])) if j + 1 < len(sizes) else 1
            q, idx = divmod(idx, below)
            allowed = [e for e in range(1, N) if e not in used_off and (not by_rack or e % R not in used_res)]
            e = allowed[q]
            chosen.append(e)
            used_off.add(e)
            if by_rack:
                used_res.add(e % R)
        res = tuple(chosen)
        if len(self._rest_cache) < 100_000:
            self._rest_cache[key] = res
        return res


def _rule_holds(racks: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per tuple (a row of rack indices): every rack's count within [lo, hi] of the rack rule."""
    n, k = racks.shape
    R = len(hi)
    counts = np.bincount((np.arange(n)[:, None] * R + racks).ravel(), minlength=n * R).reshape(n, R)
    return ((counts >= lo) & (counts <= hi)).all(axis=1)
