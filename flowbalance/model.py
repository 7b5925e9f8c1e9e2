"""The cluster model: brokers and partitions held as numpy arrays, with a small readable object API on top.

Partitions are always kept sorted by (topic name, partition number), so every later stage sees the same
order whatever the order of the input lines; replica lists are an int32 matrix of broker ids padded with -1.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

PAD = -1
# ``Brokers.index_of``: from this many ids at once, a table indexed by id when the largest id is at most
# LOOKUP_IDS_PER times the number of brokers (the table stays small)
LOOKUP_FROM = 4096
LOOKUP_IDS_PER = 64


def live_positions(live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indices of live brokers, map from broker index to live position or -1)."""
    live_idx = np.flatnonzero(live)
    pos = np.full(len(live), -1, dtype=np.int64)
    pos[live_idx] = np.arange(len(live_idx))
    return live_idx, pos


@dataclass(frozen=True)
class Broker:
    """One broker, as the object API shows it."""

    id: int
    rack: str | None
    weight: float
    capacity_bytes: int | None
    removed: bool


@dataclass(frozen=True, eq=False)
class Brokers:
    """The broker table: ids sorted ascending; racks as indices into ``rack_names`` (-1 = no rack)."""

    ids: np.ndarray  # int32 [N], sorted, unique
    rack: np.ndarray  # int32 [N], index into rack_names, -1 when unknown
    rack_names: tuple[str, ...]  # sorted
    weight: np.ndarray  # float64 [N], > 0
    capacity: np.ndarray  # int64 [N], -1 when unknown
    removed: np.ndarray  # bool [N]
    # bool [N]: brokers closed to new replicas (fenced, cordoned, drained slowly, full): they keep what they hold
    # and receive nothing; None: none closed
    closed: np.ndarray | None = None
    # broker id -> {log directory path: capacity in bytes}, from a broker file (JBOD); empty when not given
    dir_capacity: dict = field(default_factory=dict)

    @staticmethod
    def build(
        ids: Sequence[int] | np.ndarray,
        racks: Sequence[str | None] | None = None,
        weights: Sequence[float] | None = None,
        capacities: Sequence[int | None] | None = None,
        removed: Sequence[bool] | None = None,
        closed: Sequence[bool] | None = None,
    ) -> "Brokers":
        ids_arr = np.asarray(ids, dtype=np.int64)
        n = len(ids_arr)
        order = np.argsort(ids_arr, kind="stable")
        ids_sorted = ids_arr[order]
        if n and np.any(ids_sorted[1:] == ids_sorted[:-1]):
            raise ValueError("duplicate broker id")
        rack_list = list(racks) if racks is not None else [None] * n
        names = tuple(sorted({r for r in rack_list if r is not None}))
        name_index = {name: i for i, name in enumerate(names)}
        rack_idx = np.array([name_index[r] if r is not None else -1 for r in rack_list], dtype=np.int32)
        w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
        cap = (
            np.full(n, -1, dtype=np.int64)
            if capacities is None
            else np.array([-1 if c is None else int(c) for c in capacities], dtype=np.int64)
        )
        rem = np.zeros(n, dtype=bool) if removed is None else np.asarray(removed, dtype=bool)
        shut = None if closed is None or not np.any(closed) else np.asarray(closed, dtype=bool)
        return Brokers(
            ids=ids_sorted.astype(np.int32),
            rack=rack_idx[order] if n else rack_idx,
            rack_names=names,
            weight=w[order] if n else w,
            capacity=cap[order] if n else cap,
            removed=rem[order] if n else rem,
            closed=None if shut is None else shut[order],
        )

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def has_racks(self) -> bool:
        return bool(len(self.ids)) and bool(np.all(self.rack >= 0))

    @property
    def live(self) -> np.ndarray:
        """Mask of brokers that are targets (not to be removed)."""
        return ~self.removed

    @property
    def no_new(self) -> np.ndarray:
        """Mask of live brokers closed to new replicas (they may keep or lose replicas, never gain one)."""
        if self.closed is None:
            return np.zeros(len(self.ids), dtype=bool)
        return self.closed & ~self.removed

    def with_closed(self, ids: Iterable[int]) -> "Brokers":
        """These brokers closed to new replicas too (see ``closed``)."""
        ids = list(ids)
        if not ids:
            return self
        shut = self.no_new.copy()
        shut[self.index_of(np.asarray(ids, dtype=np.int64))] = True
        return replace(self, closed=shut)

    @property
    def weighted(self) -> bool:
        """True when the live brokers do not all have the same weight."""
        w = self.weight[self.live]
        return bool(len(w)) and not bool(np.all(w == w[0]))

    def index_of(self, ids: np.ndarray | Sequence[int]) -> np.ndarray:
        """Dense indices of broker ids (-1 stays -1); ids must be known (else KeyError naming the first that is
        not). Many ids (a replica matrix) are looked up in a table indexed by id when the ids are small enough
        (3-4x faster than a binary search: a replica matrix is indexed once per state, a dozen times a plan)."""
        arr = np.asarray(ids)
        n = len(self.ids)
        if arr.size >= LOOKUP_FROM and n and int(self.ids[0]) >= 0 and int(self.ids[-1]) <= LOOKUP_IDS_PER * n:
            top = int(self.ids[-1])
            table = np.full(top + 2, -2, dtype=np.int32)  # -2: unknown; slot top + 1 takes every id outside
            table[self.ids] = np.arange(n, dtype=np.int32)
            out = table[np.where((arr >= 0) & (arr <= top), arr, top + 1)]
            out[arr == PAD] = PAD
            known = out != -2
        else:
            idx = np.minimum(np.searchsorted(self.ids, arr), max(n - 1, 0))
            out = np.where(arr == PAD, PAD, idx).astype(np.int32)
            known = (arr == PAD) | (self.ids[idx] == arr) if n else arr == PAD
        if not np.all(known):
            raise KeyError(int(np.asarray(arr)[~known].flat[0]))
        return out

    def contains(self, broker_id: int) -> bool:
        i = np.searchsorted(self.ids, broker_id)
        return bool(i < len(self.ids) and self.ids[i] == broker_id)

    def with_removed(self, ids: Iterable[int]) -> "Brokers":
        idx = self.index_of(np.asarray(list(ids), dtype=np.int64))
        rem = self.removed.copy()
        rem[idx] = True
        return replace(self, removed=rem)

    def with_added(self, ids: Iterable[int], rack: str | None = None) -> "Brokers":
        new = [int(i) for i in ids if not self.contains(int(i))]
        if not new:
            return self
        all_ids = list(self.ids.tolist()) + new
        racks = [self.rack_names[r] if r >= 0 else None for r in self.rack] + [rack] * len(new)
        weights = list(self.weight) + [1.0] * len(new)
        caps = [None if c < 0 else int(c) for c in self.capacity] + [None] * len(new)
        removed = list(self.removed) + [False] * len(new)
        out = Brokers.build(all_ids, racks, weights, caps, removed, list(self.no_new) + [False] * len(new))
        return replace(out, dir_capacity=self.dir_capacity) if self.dir_capacity else out

    def __iter__(self) -> Iterator[Broker]:
        for i in range(len(self.ids)):
            yield self.broker_at(i)

    def broker_at(self, i: int) -> Broker:
        r = int(self.rack[i])
        c = int(self.capacity[i])
        return Broker(
            id=int(self.ids[i]),
            rack=self.rack_names[r] if r >= 0 else None,
            weight=float(self.weight[i]),
            capacity_bytes=c if c >= 0 else None,
            removed=bool(self.removed[i]),
        )


@dataclass(frozen=True)
class Partition:
    """One partition, as the object API shows it; ``replicas[0]`` is the preferred leader."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    size_bytes: int | None


@dataclass(frozen=True, eq=False)
class ClusterState:
    """A cluster's assignment: partitions sorted by (topic, partition), replicas as a padded id matrix."""

    brokers: Brokers
    topics: tuple[str, ...]  # sorted topic names
    topic: np.ndarray  # int32 [P], index into topics
    partition: np.ndarray  # int32 [P]
    replicas: np.ndarray  # int32 [P, K], broker ids, padded with -1 on the right
    size: np.ndarray  # int64 [P], -1 when unknown
    had_log_dirs: bool = False
    log_dirs: dict = field(default_factory=dict)  # broker id -> list of log dir paths (from kafka-log-dirs)
    dirs: Any = None  # flowbalance.dirs.ReplicaDirs: each replica's log directory (JBOD), or None when unknown

    @staticmethod
    def build(
        brokers: Brokers,
        topic_names: Sequence[str],
        partition: np.ndarray | Sequence[int],
        replicas: np.ndarray,
        size: np.ndarray | None = None,
        *,
        had_log_dirs: bool = False,
        log_dirs: dict | None = None,
    ) -> "ClusterState":
        """Build from one topic name per partition; sorts into canonical (topic, partition) order."""
        topics, topic_idx, order = ClusterState.canonical_order(topic_names, partition)
        part = np.asarray(partition, dtype=np.int64)
        reps = np.asarray(replicas, dtype=np.int32)
        if reps.ndim != 2:
            reps = reps.reshape(len(part), -1)
        sz = np.full(len(part), -1, dtype=np.int64) if size is None else np.asarray(size, dtype=np.int64)
        return ClusterState(
            brokers=brokers,
            topics=tuple(str(t) for t in topics),
            topic=topic_idx[order].astype(np.int32),
            partition=part[order].astype(np.int32),
            replicas=trim_padding(reps[order]),
            size=sz[order],
            had_log_dirs=had_log_dirs,
            log_dirs=dict(log_dirs or {}),
        )

    @staticmethod
    def canonical_order(topic_names: Sequence[str], partition: np.ndarray | Sequence[int]):
        """(sorted topic names, topic index per input row, the permutation into (topic, partition) order):
        what ``build`` applies, for callers that must reorder per-row data of their own the same way."""
        names = np.asarray(topic_names, dtype=object)
        if len(names):
            topics, topic_idx = np.unique(names.astype(str), return_inverse=True)
        else:
            topics, topic_idx = np.array([], dtype=str), np.array([], dtype=np.int64)
        return topics, topic_idx, np.lexsort((np.asarray(partition, dtype=np.int64), topic_idx))

    # ---- sizes -------------------------------------------------------------------------------
    @property
    def num_partitions(self) -> int:
        return len(self.partition)

    @cached_property
    def rf(self) -> np.ndarray:
        """Replication factor of each partition (int32 [P])."""
        return (self.replicas >= 0).sum(axis=1).astype(np.int32)

    @property
    def num_replicas(self) -> int:
        return int(self.rf.sum())

    @cached_property
    def replica_index(self) -> np.ndarray:
        """Replicas as dense broker indices (int32 [P, K], -1 padded)."""
        return self.brokers.index_of(self.replicas)

    @property
    def has_sizes(self) -> bool:
        return bool(len(self.size)) and bool(np.any(self.size >= 0))

    # ---- object API --------------------------------------------------------------------------
    def partitions(self) -> Iterator[Partition]:
        for i in range(self.num_partitions):
            yield self.partition_at(i)

    def partition_at(self, i: int) -> Partition:
        row = self.replicas[i]
        s = int(self.size[i])
        return Partition(
            topic=self.topics[self.topic[i]],
            partition=int(self.partition[i]),
            replicas=tuple(int(b) for b in row[row >= 0]),
            size_bytes=s if s >= 0 else None,
        )

    def find(self, topic: str, partition: int) -> int:
        """Row of (topic, partition), or -1."""
        try:
            t = self.topics.index(topic)
        except ValueError:
            return -1
        lo = np.searchsorted(self.topic, t, side="left")
        hi = np.searchsorted(self.topic, t, side="right")
        j = lo + np.searchsorted(self.partition[lo:hi], partition)
        if j < hi and self.partition[j] == partition:
            return int(j)
        return -1

    def with_replicas(self, replicas: np.ndarray) -> "ClusterState":
        """The same partitions with new replica lists (rows in the same order)."""
        return replace(self, replicas=trim_padding(np.asarray(replicas, dtype=np.int32)))

    def with_brokers(self, brokers: Brokers) -> "ClusterState":
        return replace(self, brokers=brokers)


def trim_padding(reps: np.ndarray) -> np.ndarray:
    """Drop all-padding columns on the right, keep at least one column."""
    if reps.shape[1] == 0:
        return reps
    used = np.flatnonzero((reps >= 0).any(axis=0))
    width = int(used[-1]) + 1 if len(used) else 1
    return np.ascontiguousarray(reps[:, :width])
