"""Log directories (JBOD): where each replica lives on its broker, and where an arriving replica goes.

A broker with several disks (JBOD) keeps each replica in one log directory; the reassignment JSON's ``log_dirs``
chooses it. ``ReplicaDirs`` holds a cluster's directories — (broker id, path) pairs, with a capacity when known —
and the directory and size of every replica, keyed by (partition row, broker id), so it is independent of the
order of a partition's replica list (reordering a list moves no data). Rows are a ``ClusterState``'s canonical
partition rows; every state derived from it by ``with_replicas`` / ``with_brokers`` keeps them.

``flowbalance.dir_balance.place`` gives every replica of a plan a directory: a replica that stays on its broker
keeps its directory (unless directory balance or a directory being emptied takes it out); the replicas arriving
on a broker are placed largest first, each in the directory with the fewest bytes at that point (what stays,
plus what was placed before it), skipping directories it would take above their limit when another can hold it;
ties go to the first path in sorted order. Deterministic, and within a broker the directories end no further
apart than the largest arriving replica when they start even (the classic largest-first list scheduling).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_ROW_SHIFT = np.int64(2**31)


@dataclass(frozen=True, eq=False)
class ReplicaDirs:
    """A cluster's log directories and where each replica lives.

    Directories are sorted by (broker id, path); replicas are sorted by key = row * 2^31 + broker id."""

    dir_broker: np.ndarray  # int64 [D] broker id
    dir_path: tuple[str, ...]  # [D]
    capacity: np.ndarray  # int64 [D] bytes, -1 unknown
    key: np.ndarray  # int64 [R] sorted: row * 2^31 + broker id
    dir: np.ndarray  # int64 [R] index into the directories
    size: np.ndarray  # int64 [R] the replica's bytes (-1 unknown)
    future_key: np.ndarray  # int64 [F]: intra-broker moves in flight (kafka-log-dirs isFuture)
    future_dir: np.ndarray  # int64 [F]

    @property
    def num_dirs(self) -> int:
        return len(self.dir_broker)

    def dirs_of(self, broker_id: int) -> np.ndarray:
        """The directory indices of one broker (sorted by path)."""
        lo, hi = np.searchsorted(self.dir_broker, [broker_id, broker_id + 1])
        return np.arange(lo, hi)

    @property
    def jbod(self) -> bool:
        """Some broker has more than one directory: the directory of a replica is a choice."""
        return bool(len(self.dir_broker)) and bool((np.bincount(_dense(self.dir_broker)) > 1).any())

    def lookup(self, rows: np.ndarray, broker_ids: np.ndarray) -> np.ndarray:
        """int64: the directory of each (row, broker id) replica, -1 where not known."""
        return self.placed(keys_of(rows, broker_ids))[0]

    def placed(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(directory, size) of each replica key (``keys_of``), both int64 and -1 where the replica has none."""
        d, z = np.full(len(keys), -1, dtype=np.int64), np.full(len(keys), -1, dtype=np.int64)
        if not len(self.key) or not len(keys):
            return d, z
        pos = np.minimum(np.searchsorted(self.key, keys), len(self.key) - 1)
        hit = (self.key[pos] == keys) & (self.dir[pos] >= 0)
        d[hit], z[hit] = self.dir[pos[hit]], self.size[pos[hit]]
        return d, z

    def dir_bytes(self) -> np.ndarray:
        """int64 [D]: the bytes of the replicas in each directory (unknown sizes count 0)."""
        known = self.dir >= 0  # a replica on a broker of unknown directories is in none
        return np.bincount(self.dir[known], weights=np.maximum(self.size[known], 0),
                           minlength=self.num_dirs).astype(np.int64)


def keys_of(rows: np.ndarray, broker_ids: np.ndarray) -> np.ndarray:
    """The replica key of (row, broker id) pairs."""
    return np.asarray(rows, dtype=np.int64) * _ROW_SHIFT + np.asarray(broker_ids, dtype=np.int64)


def _dense(values: np.ndarray) -> np.ndarray:
    return np.unique(values, return_inverse=True)[1]


def _find(sorted_keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """values at the positions of ``query`` in ``sorted_keys`` (-1 where absent)."""
    out = np.full(len(query), -1, dtype=np.int64)
    if not len(sorted_keys) or not len(query):
        return out
    pos = np.minimum(np.searchsorted(sorted_keys, query), len(sorted_keys) - 1)
    hit = sorted_keys[pos] == query
    out[hit] = values[pos[hit]]
    return out


def build_dirs(dir_broker: np.ndarray, dir_path: list[str], replica_rows: np.ndarray, replica_broker: np.ndarray,
               replica_dir: np.ndarray, replica_size: np.ndarray, future_rows: np.ndarray | None = None,
               future_broker: np.ndarray | None = None, future_dir: np.ndarray | None = None,
               capacity: np.ndarray | None = None) -> ReplicaDirs:
    """A ``ReplicaDirs`` from directories in any order (duplicates merged) and replicas given by row, broker id and
    an index into the given directories. A replica listed twice keeps its first directory."""
    dir_broker = np.asarray(dir_broker, dtype=np.int64)
    paths = np.asarray(list(dir_path), dtype=object)
    cap = np.full(len(dir_broker), -1, dtype=np.int64) if capacity is None else np.asarray(capacity, np.int64)
    order = np.lexsort((paths.astype(str), dir_broker)) if len(dir_broker) else np.zeros(0, dtype=np.int64)
    b_sorted, p_sorted = dir_broker[order], paths[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (b_sorted[1:] != b_sorted[:-1]) | (p_sorted[1:] != p_sorted[:-1])
    new_index = np.cumsum(first) - 1  # position in the merged table of each sorted input directory
    remap = np.empty(len(order), dtype=np.int64)
    remap[order] = new_index
    keep_cap = np.full(int(first.sum()), -1, dtype=np.int64)
    np.maximum.at(keep_cap, new_index, cap[order])

    def placed(rows, brokers, dirs):
        k = keys_of(rows, brokers)
        o = np.argsort(k, kind="stable")
        k, d = k[o], remap[np.asarray(dirs, dtype=np.int64)[o]]
        uniq = np.ones(len(k), dtype=bool)
        uniq[1:] = k[1:] != k[:-1]
        return k[uniq], d[uniq], o[uniq]

    key, d, o = placed(replica_rows, replica_broker, replica_dir)
    size = np.asarray(replica_size, dtype=np.int64)[o]
    if future_rows is not None and len(future_rows):
        fk, fd, _ = placed(future_rows, future_broker, future_dir)
    else:
        fk, fd = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return ReplicaDirs(dir_broker=b_sorted[first], dir_path=tuple(str(p) for p in p_sorted[first]),
                       capacity=keep_cap, key=key, dir=d, size=size, future_key=fk, future_dir=fd)


def replica_keys(state) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every replica of ``state``: (keys, rows, broker ids), in row-major order."""
    rows, cols = np.nonzero(state.replicas >= 0)
    ids = state.replicas[rows, cols].astype(np.int64)
    return keys_of(rows, ids), rows, ids


def dirs_for_state(state, placements) -> tuple[ReplicaDirs | None, int]:
    """The ``ReplicaDirs`` of ``state`` from a kafka-log-dirs output's ``Placements``: entries matched to the
    state's rows by (topic, partition) and kept where the assignment has that replica on that broker. Returns
    (dirs, entries not matched). None when the output names no directory."""
    if placements is None or not len(placements.dir_broker):
        return None, 0
    if not (np.unique(placements.dir_broker, return_counts=True)[1] > 1).any():
        return None, 0  # one directory per broker: nothing to choose, nothing kept (the usual case, at no cost)
    rows = rows_of(state, placements.topic, placements.partition)
    frows = rows_of(state, placements.future_topic, placements.future_partition)
    have = np.sort(replica_keys(state)[0])
    k = keys_of(np.maximum(rows, 0), placements.broker)
    ok = (rows >= 0) & (_find(have, have, k) >= 0)
    fk = keys_of(np.maximum(frows, 0), placements.dir_broker[placements.future_dir]) if len(frows) else frows
    fok = (frows >= 0) & (_find(have, have, fk) >= 0) if len(frows) else np.zeros(0, dtype=bool)
    given = state.brokers.dir_capacity  # broker id -> {path: bytes}, from a broker file
    capacity = np.array([given.get(int(b), {}).get(p, -1) for b, p in zip(placements.dir_broker.tolist(),
                                                                          placements.dir_path)], dtype=np.int64)
    out = build_dirs(placements.dir_broker, placements.dir_path, rows[ok], placements.broker[ok],
                     placements.dir[ok], placements.size[ok], frows[fok],
                     placements.dir_broker[placements.future_dir][fok], placements.future_dir[fok], capacity=capacity)
    return out, int((~ok).sum())


def unknown_capacities(state, dirs: ReplicaDirs | None) -> list[str]:
    """Log directories a broker file gives a capacity for that kafka-log-dirs does not list (``BROKER:PATH``)."""
    known = set() if dirs is None else set(zip(dirs.dir_broker.tolist(), dirs.dir_path))
    return [f"{b}:{p}" for b, d in sorted(state.brokers.dir_capacity.items()) for p in sorted(d)
            if (b, p) not in known]


def rows_of(state, topics: list[str], partitions: np.ndarray) -> np.ndarray:
    """The state row of each (topic name, partition) pair, -1 where the state has none."""
    if not len(topics):
        return np.zeros(0, dtype=np.int64)
    index = {t: i for i, t in enumerate(state.topics)}
    tid = np.fromiter((index.get(t, -1) for t in topics), dtype=np.int64, count=len(topics))
    part = np.asarray(partitions, dtype=np.int64)
    span = int(max(int(state.partition.max(initial=0)), int(part.max(initial=0)))) + 1
    state_key = state.topic.astype(np.int64) * span + state.partition.astype(np.int64)  # sorted: canonical rows
    query = np.where((tid >= 0) & (part >= 0), tid * span + part, -1)
    return _find(state_key, np.arange(len(state_key), dtype=np.int64), query)


def misplaced(state) -> np.ndarray:
    """Rows with a replica whose directory (when known) is not one of its broker's: a plan that fails this is a
    bug (``verify``)."""
    d = state.dirs
    if d is None:
        return np.zeros(0, dtype=np.int64)
    keys, rows, ids = replica_keys(state)
    at = d.lookup(rows, ids)
    known = at >= 0
    bad = known.copy()
    bad[known] = d.dir_broker[at[known]] != ids[known]
    return np.unique(rows[bad])


def overlay(base: ReplicaDirs | None, rows: np.ndarray, broker_ids: np.ndarray, paths: list[str],
            sizes: np.ndarray) -> ReplicaDirs:
    """``base`` (may be None) with the given replicas placed in the given paths (they win over ``base``'s), their
    directories added to the table: e.g. a plan file's ``log_dirs`` over the current directories."""
    rows = np.asarray(rows, dtype=np.int64)
    ids = np.asarray(broker_ids, dtype=np.int64)
    if base is None:
        base = build_dirs(np.zeros(0, np.int64), [], np.zeros(0, np.int64), np.zeros(0, np.int64),
                          np.zeros(0, np.int64), np.zeros(0, np.int64))
    new_pairs = list(zip(ids.tolist(), paths))
    dir_broker = np.concatenate([base.dir_broker, ids])
    dir_path = list(base.dir_path) + list(paths)
    capacity = np.concatenate([base.capacity, np.full(len(ids), -1, dtype=np.int64)])
    b_rows, b_ids = np.divmod(base.key, _ROW_SHIFT)
    given = keys_of(rows, ids)
    keep = _find(np.sort(given), np.sort(given), base.key) < 0  # base entries the overlay does not replace
    f_rows, f_ids = np.divmod(base.future_key, _ROW_SHIFT)
    return build_dirs(dir_broker, dir_path,
                      np.concatenate([rows, b_rows[keep]]), np.concatenate([ids, b_ids[keep]]),
                      np.concatenate([base.num_dirs + np.arange(len(new_pairs)), base.dir[keep]]),
                      np.concatenate([np.asarray(sizes, dtype=np.int64), base.size[keep]]),
                      f_rows, f_ids, base.future_dir, capacity=capacity)


def subset(dirs: ReplicaDirs | None, rows: np.ndarray) -> ReplicaDirs | None:
    """``dirs`` for a state of the given rows only (row ``rows[i]`` becomes row i)."""
    if dirs is None:
        return None
    rows = np.asarray(rows, dtype=np.int64)
    r, b = np.divmod(dirs.key, _ROW_SHIFT)
    order = np.argsort(rows, kind="stable")
    at = _find(rows[order], order, r)
    keep = at >= 0
    new_key = keys_of(at[keep], b[keep])
    o = np.argsort(new_key, kind="stable")
    fr, fb = np.divmod(dirs.future_key, _ROW_SHIFT)
    fat = _find(rows[order], order, fr)
    fk = fat >= 0
    fkey = keys_of(fat[fk], fb[fk])
    fo = np.argsort(fkey, kind="stable")
    return ReplicaDirs(dir_broker=dirs.dir_broker, dir_path=dirs.dir_path, capacity=dirs.capacity,
                       key=new_key[o], dir=dirs.dir[keep][o], size=dirs.size[keep][o],
                       future_key=fkey[fo], future_dir=dirs.future_dir[fk][fo])


def dirs_summary(state, emptied: np.ndarray | None = None) -> dict | None:
    """Per-directory bytes and the spread within each broker, as JSON-ready data (``check`` and ``report``); None
    when the cluster's log directories are not known (or each broker has one).

    ``spread_bytes`` of a broker is its fullest directory's bytes less its emptiest one's; ``max_over_mean`` its
    fullest over the mean of its directories; directories being emptied (``emptied``, bool per directory) are left
    out of both, since they leave the broker. Only replicas the assignment has count (a future copy of an
    intra-broker move in flight is counted in ``future_replicas``, not twice)."""
    d = state.dirs
    if d is None:
        return None
    where, size = d.placed(replica_keys(state)[0])  # only the replicas the state has (a plan read back keeps
    where, size = where[where >= 0], np.maximum(size[where >= 0], 0)  # departed ones)
    used = np.bincount(where, weights=size, minlength=d.num_dirs).astype(np.int64)
    counts = np.bincount(where, minlength=d.num_dirs)
    brokers = []
    for b in np.unique(d.dir_broker).tolist():
        mine = d.dirs_of(b)
        if emptied is not None and (~emptied[mine]).any():
            mine = mine[~emptied[mine]]
        u = used[mine]
        mean = float(u.mean()) if len(u) else 0.0
        brokers.append({"broker": int(b), "directories": int(len(mine)), "spread_bytes": int(u.max() - u.min()),
                        "max_over_mean": round(float(u.max()) / mean, 4) if mean > 0 else None})
    worst = max(brokers, key=lambda r: (r["spread_bytes"], -r["broker"]))
    dirs = [{"broker": int(b), "path": p, "bytes": int(x), "replicas": int(n),
             "capacity_bytes": int(c) if c >= 0 else None}
            for b, p, x, n, c in zip(d.dir_broker.tolist(), d.dir_path, used.tolist(), counts.tolist(),
                                     d.capacity.tolist())]
    return {"directories": len(dirs), "worst_spread_bytes": worst["spread_bytes"], "worst_broker": worst["broker"],
            "worst_max_over_mean": worst["max_over_mean"], "future_replicas": int(len(d.future_key)),
            "per_broker": brokers, "per_directory": dirs}


def dir_changed_rows(current, final) -> np.ndarray:
    """Rows of ``final`` where a replica that stays on its broker changes log directory: an intra-broker move.
    When ``current``'s directories are not known, every row whose ``final`` names a directory (the caller keeps
    those whose lists stay)."""
    if final.dirs is None:
        return np.zeros(0, dtype=np.int64)
    _, rows, ids = replica_keys(final)
    f = final.dirs.lookup(rows, ids)
    if current.dirs is None:
        return np.unique(rows[f >= 0])
    c = current.dirs.lookup(rows, ids)
    fpath = np.asarray(final.dirs.dir_path + ("",), dtype=object)[f]
    cpath = np.asarray(current.dirs.dir_path + ("",), dtype=object)[c]
    return np.unique(rows[(f >= 0) & (c >= 0) & (fpath != cpath)])


def current_first(current: ReplicaDirs | None, final: ReplicaDirs | None) -> ReplicaDirs | None:
    """``final``'s directories with every replica ``current`` places kept where it is: what a batch that moves
    replicas between brokers writes, so that moves within brokers wait for their own batches."""
    if final is None or current is None:
        return final
    rows, ids = np.divmod(current.key, _ROW_SHIFT)
    known = current.dir >= 0
    paths = [current.dir_path[d] for d in current.dir[known].tolist()]
    return overlay(final, rows[known], ids[known], paths, current.size[known])


def spread_floor(state) -> int:
    """A lower bound on the worst spread within a broker (fullest directory less emptiest) over every placement
    of ``state``'s replicas in their brokers' directories: a broker of k directories and T bytes whose largest
    replica is z has one directory of at least z, and the emptiest of the others at most (T - z) / (k - 1), so its
    spread is at least z - (T - z) / (k - 1) (rounded up; 0 when negative)."""
    d = state.dirs
    if d is None:
        return 0
    _, rows, ids = replica_keys(state)
    z = np.maximum(np.asarray(state.size)[rows], 0)
    at = d.lookup(rows, ids)
    rows_known = at >= 0  # replicas of brokers with known directories
    best = 0
    for b in np.unique(ids[rows_known]).tolist():
        k = len(d.dirs_of(b))
        if k < 2:
            continue
        mine = z[(ids == b) & rows_known]
        top, total = int(mine.max(initial=0)), int(mine.sum())
        best = max(best, top - (total - top) // (k - 1))
    return max(best, 0)
