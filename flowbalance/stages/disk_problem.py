"""The disk-balancing problem (``--balance bytes|count+bytes``) as arrays over movable partitions × live brokers.

Shared by the flow-based improvement (``disk.py``) and the exact solver for small cases (``disk_exact.py``), so
both solve one problem and the tests can compare them. An assignment is an int64 matrix [P, W] of live broker
positions per movable partition (-1 padding), the same shape as ``start``.

Objective, in this order:
  1. no live broker above its disk capacity (a hard limit: no such assignment means the request is impossible);
  2. the fewest bytes above the tolerance limit, sum over brokers of max(0, disk - upper);
  3. the fewest bytes moved: for every replica on a broker that did not hold the partition originally, its size;
  4. the fewest replica moves (arrivals), so zero-size partitions are not moved for nothing.
Constraints: each partition keeps its number of replicas on distinct brokers, per rack between ``rack_lo`` and
``rack_hi``; with count balance, broker totals (and per-topic totals) stay within their intervals.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _per_rack(bound: np.ndarray, P: int, K: int) -> np.ndarray:
    """A rack bound as int64 [P, K]: a bound per partition ([P]) applies to every rack."""
    a = np.asarray(bound, dtype=np.int64)
    return np.broadcast_to(a[:, None] if a.ndim == 1 else a, (P, K)).copy()


@dataclass
class DiskProblem:
    """Arrays of one disk-balancing problem (see the module docstring)."""

    size: np.ndarray  # int64 [P]: bytes of each movable partition (unknown sizes count as 0)
    start: np.ndarray  # int64 [P, W]: live positions holding each partition now (after stage 1), -1 padded
    original: np.ndarray  # int64 [P, W0]: live positions in the original assignment (-1 for padding or removed)
    topic: np.ndarray  # int64 [P]: topic index 0..T-1 (movable topics only)
    rack: np.ndarray  # int64 [NL]: rack index of each live broker (all 0 when racks are not used)
    rack_lo: np.ndarray  # int64 [P, K]: least replicas of the partition in each rack ([P]: the same in every rack)
    rack_hi: np.ndarray  # int64 [P, K]: most replicas of the partition in each rack ([P]: the same in every rack)
    base_bytes: np.ndarray  # int64 [NL]: bytes of partitions that do not move (topics left out)
    base_count: np.ndarray  # int64 [NL]: replicas of partitions that do not move
    upper: np.ndarray  # int64 [NL]: the tolerance limit (soft)
    capacity: np.ndarray  # int64 [NL]: disk capacity (hard), -1 when unknown
    count_lo: np.ndarray | None = None  # int64 [NL]: broker totals (base included); None: counts are free
    count_hi: np.ndarray | None = None
    topic_lo: np.ndarray | None = None  # int64 [T, NL]: per-topic totals; None: not constrained
    topic_hi: np.ndarray | None = None

    def __post_init__(self) -> None:
        """Rack bounds given once per partition ([P]) hold in every rack: widen them to [P, K]."""
        K = int(self.rack.max()) + 1 if len(self.rack) else 1
        P = len(self.size)
        self.rack_lo = _per_rack(self.rack_lo, P, K)
        self.rack_hi = _per_rack(self.rack_hi, P, K)

    @property
    def num_partitions(self) -> int:
        return len(self.size)

    @property
    def num_brokers(self) -> int:
        return len(self.rack)

    @property
    def num_topics(self) -> int:
        return int(self.topic.max()) + 1 if len(self.topic) else 0


@dataclass(frozen=True)
class DiskScore:
    """The four objective terms of an assignment (lower is better, compared in this order)."""

    capacity_excess: int
    tolerance_excess: int
    bytes_moved: int
    moves: int

    def key(self) -> tuple[int, int, int, int]:
        return (self.capacity_excess, self.tolerance_excess, self.bytes_moved, self.moves)


def disk_use(p: DiskProblem, assign: np.ndarray) -> np.ndarray:
    """Bytes on each live broker under ``assign`` (base bytes included)."""
    rows, cols = np.nonzero(assign >= 0)
    add = np.bincount(assign[rows, cols], weights=p.size[rows].astype(np.float64), minlength=p.num_brokers)
    # float64 sums are exact below 2**53 bytes per broker (8 PiB); add back in int64
    return p.base_bytes + np.rint(add).astype(np.int64)


def replica_use(p: DiskProblem, assign: np.ndarray) -> np.ndarray:
    """Replicas on each live broker under ``assign`` (base included)."""
    a = assign[assign >= 0]
    return p.base_count + np.bincount(a, minlength=p.num_brokers).astype(np.int64)


def arrivals(p: DiskProblem, assign: np.ndarray) -> np.ndarray:
    """bool [P, W]: which entries of ``assign`` are on a broker the partition did not hold originally."""
    new = assign >= 0
    for j in range(p.original.shape[1]):
        new &= assign != p.original[:, j:j + 1]
    return new


def score(p: DiskProblem, assign: np.ndarray) -> DiskScore:
    d = disk_use(p, assign)
    cap = p.capacity
    cap_x = int(np.maximum(d - np.where(cap >= 0, cap, d), 0).sum())
    tol_x = int(np.maximum(d - p.upper, 0).sum())
    arr = arrivals(p, assign)
    moved = int((arr * p.size[:, None]).sum())
    return DiskScore(cap_x, tol_x, moved, int(arr.sum()))


def violations(p: DiskProblem, assign: np.ndarray) -> list[str]:
    """Every constraint the assignment breaks (empty when it is feasible, capacity included)."""
    out: list[str] = []
    if assign.shape[0] != p.num_partitions:
        return [f"{assign.shape[0]} rows, expected {p.num_partitions}"]
    want = (p.start >= 0).sum(axis=1)
    have = (assign >= 0).sum(axis=1)
    bad = np.flatnonzero(want != have)
    if len(bad):
        out.append(f"row {int(bad[0])}: {int(have[bad[0]])} replicas, expected {int(want[bad[0]])}")
    if (assign >= p.num_brokers).any():
        out.append("a position beyond the live brokers")
        return out
    srt = np.sort(np.where(assign >= 0, assign, -1 - np.arange(assign.shape[1])[None, :]), axis=1)
    dup = np.flatnonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1)) if assign.shape[1] > 1 else []
    if len(dup):
        out.append(f"row {int(dup[0])}: a broker twice")
    K = int(p.rack.max()) + 1 if len(p.rack) else 1
    per_rack = np.zeros((p.num_partitions, K), dtype=np.int64)
    rows, cols = np.nonzero(assign >= 0)
    np.add.at(per_rack, (rows, p.rack[assign[rows, cols]]), 1)
    bad = np.flatnonzero(((per_rack < p.rack_lo) | (per_rack > p.rack_hi)).any(axis=1))
    if len(bad):
        out.append(f"row {int(bad[0])}: rack rule ({per_rack[bad[0]].tolist()} per rack)")
    d = disk_use(p, assign)
    over = np.flatnonzero((p.capacity >= 0) & (d > p.capacity))
    if len(over):
        out.append(f"broker position {int(over[0])}: {int(d[over[0]])} bytes above capacity {int(p.capacity[over[0]])}")
    if p.count_lo is not None:
        c = replica_use(p, assign)
        bad = np.flatnonzero((c < p.count_lo) | (c > p.count_hi))
        if len(bad):
            out.append(f"broker position {int(bad[0])}: {int(c[bad[0]])} replicas outside "
                       f"[{int(p.count_lo[bad[0]])}, {int(p.count_hi[bad[0]])}]")
    if p.topic_lo is not None:
        T, NL = p.topic_lo.shape
        tc = np.bincount(p.topic[rows] * NL + assign[rows, cols], minlength=T * NL).reshape(T, NL)
        bad = np.argwhere((tc < p.topic_lo) | (tc > p.topic_hi))
        if len(bad):
            t, b = bad[0]
            out.append(f"topic {int(t)} on broker position {int(b)}: {int(tc[t, b])} replicas outside "
                       f"[{int(p.topic_lo[t, b])}, {int(p.topic_hi[t, b])}]")
    return out


def bytes_lower_bound(p: DiskProblem, limit: np.ndarray) -> int:
    """Least bytes any assignment with every broker's disk at most ``limit`` must move: the movable bytes to
    place, less what can stay where it is (a broker keeps at most min(its original movable bytes, its room))."""
    total = int((p.size * (p.start >= 0).sum(axis=1)).sum())
    orig = disk_use(DiskProblem(**{**p.__dict__, "base_bytes": np.zeros_like(p.base_bytes)}), p.original)
    room = np.maximum(np.asarray(limit, dtype=np.int64) - p.base_bytes, 0)
    return max(0, total - int(np.minimum(orig, room).sum()))
