"""Normalized fleet tables ⇄ one cluster's ClusterState, with pandas (no pyspark here: runs inside Spark tasks).

Tables (the same columns in Spark, Parquet and CSV):

* ``brokers(cluster, broker, rack, weight, capacity_bytes, state)``: ``state`` is ``live`` or ``removed``;
* ``replicas(cluster, topic, partition, position, broker)``: ``position`` 0 is the preferred leader;
* ``sizes(cluster, topic, partition, bytes)``;
* ``dirs(cluster, topic, partition, broker, log_dir, bytes)``: each replica's log directory and size, for clusters
  whose brokers have several (JBOD; from a dump's kafka-log-dirs output);
* ``clusters(cluster, had_log_dirs, request)``: whether the dump carried ``log_dirs`` (the plan then writes
  ``"log_dirs": ["any", ...]``, as ``flowbalance plan`` does) and the request as JSON text.

``state_rows`` and ``rows_state`` are exact inverses (tested), so a plan made from the tables is byte-identical
to ``flowbalance plan`` on the dumps.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..model import PAD, Brokers, ClusterState

BROKERS = "cluster string, broker int, rack string, weight double, capacity_bytes long, state string"
REPLICAS = "cluster string, topic string, partition int, position int, broker int"
SIZES = "cluster string, topic string, partition int, bytes long"
DIRS = "cluster string, topic string, partition int, broker int, log_dir string, bytes long"
CLUSTERS = "cluster string, had_log_dirs boolean, request string"
METRICS = "cluster string, topic string, partition int, timestamp timestamp, bytes_in double, bytes_out double"
ERRORS = "cluster string, stage string, reason string"


def state_rows(cluster: str, state: ClusterState) -> dict[str, pd.DataFrame]:
    """The broker, replica and size rows of one cluster."""
    b = state.brokers
    rack = [b.rack_names[r] if r >= 0 else None for r in b.rack]
    brokers = pd.DataFrame({
        "cluster": cluster, "broker": b.ids.astype(np.int32), "rack": pd.Series(rack, dtype=object),
        "weight": b.weight.astype(np.float64),
        "capacity_bytes": pd.array(np.where(b.capacity >= 0, b.capacity, 0), dtype="Int64"),
        "state": np.where(b.removed, "removed", "live"),
    })
    brokers.loc[b.capacity < 0, "capacity_bytes"] = pd.NA
    reps = state.replicas
    r, c = np.nonzero(reps != PAD)
    names = np.asarray(state.topics, dtype=object)
    replicas = pd.DataFrame({
        "cluster": cluster, "topic": names[state.topic[r]] if len(r) else np.array([], dtype=object),
        "partition": state.partition[r].astype(np.int32), "position": c.astype(np.int32),
        "broker": reps[r, c].astype(np.int32),
    })
    known = np.flatnonzero(state.size >= 0)
    sizes = pd.DataFrame({
        "cluster": cluster, "topic": names[state.topic[known]] if len(known) else np.array([], dtype=object),
        "partition": state.partition[known].astype(np.int32), "bytes": state.size[known].astype(np.int64),
    })
    return {"brokers": brokers, "replicas": replicas, "sizes": sizes}


def dir_rows(cluster: str, state: ClusterState) -> pd.DataFrame:
    """The ``dirs`` rows of one cluster: every replica whose log directory is known (none without JBOD)."""
    from ..dirs import replica_keys

    cols = [c.strip().split(" ")[0] for c in DIRS.split(",")]
    d = state.dirs
    if d is None:
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in cols})
    keys, r, ids = replica_keys(state)
    where, size = d.placed(keys)
    hit = where >= 0
    r, ids, where, size = r[hit], ids[hit], where[hit], size[hit]
    names = np.asarray(state.topics, dtype=object)
    paths = np.asarray(d.dir_path, dtype=object)
    return pd.DataFrame({"cluster": cluster, "topic": names[state.topic[r]] if len(r) else np.array([], dtype=object),
                         "partition": state.partition[r].astype(np.int32), "broker": ids.astype(np.int32),
                         "log_dir": paths[where] if len(r) else np.array([], dtype=object),
                         "bytes": size.astype(np.int64)})


def rows_state(brokers: pd.DataFrame, replicas: pd.DataFrame, sizes: pd.DataFrame | None = None,
               *, had_log_dirs: bool = False, dirs: pd.DataFrame | None = None) -> ClusterState:
    """One cluster's state from its rows (any row order). Raises ValueError with a readable reason on bad rows."""
    table = broker_table(brokers)
    if len(replicas) == 0:
        raise ValueError("no replicas")
    rep = replicas.sort_values(["topic", "partition", "position"], kind="stable")
    key = rep[["topic", "partition"]]
    first = ~key.duplicated()
    part_id = np.cumsum(first.to_numpy()) - 1
    n = int(first.sum())
    pos = rep["position"].to_numpy(dtype=np.int64)
    # positions must be 0..k-1 within each partition
    start = np.flatnonzero(first.to_numpy())
    expected = np.arange(len(rep)) - np.repeat(start, np.diff(np.append(start, len(rep))))
    if not np.array_equal(pos, expected):
        bad = int(np.flatnonzero(pos != expected)[0])
        raise ValueError(f"replica positions of {rep['topic'].iloc[bad]}-{int(rep['partition'].iloc[bad])} "
                         "are not 0, 1, 2, ...")
    width = int(expected.max()) + 1
    mat = np.full((n, width), PAD, dtype=np.int64)
    mat[part_id, expected] = rep["broker"].to_numpy(dtype=np.int64)
    topics = rep["topic"][first].astype(str).to_numpy()
    parts = rep["partition"][first].to_numpy(dtype=np.int64)
    _check_replicas(table, topics, parts, mat)
    size = np.full(n, -1, dtype=np.int64)
    if sizes is not None and len(sizes):
        idx = pd.MultiIndex.from_arrays([topics, parts])
        s = sizes.groupby(["topic", "partition"])["bytes"].max()
        got = s.reindex(idx)
        ok = got.notna().to_numpy()
        size[ok] = got.to_numpy()[ok].astype(np.int64)
    state = ClusterState.build(table, topics.tolist(), parts, mat, size, had_log_dirs=had_log_dirs)
    return _with_dirs(state, dirs)


def parts_state(brokers: pd.DataFrame, topics: np.ndarray, partitions: np.ndarray, offsets: np.ndarray,
                members: np.ndarray, size: np.ndarray, *, had_log_dirs: bool = False,
                dirs: pd.DataFrame | None = None) -> ClusterState:
    """``rows_state`` from one row per partition (the fleet's planning input): partition i is ``topics[i]`` /
    ``partitions[i]``, its brokers in position order ``members[offsets[i]:offsets[i + 1]]``, its size ``size[i]``
    (-1 unknown). Each (topic, partition) once. The same state as ``rows_state`` on the same replicas, for the
    same checks (ValueError)."""
    table = broker_table(brokers)
    n = len(partitions)
    if n == 0:
        raise ValueError("no replicas")
    offsets = np.asarray(offsets, dtype=np.int64)
    count = np.diff(offsets)
    if int(count.min()) < 1:
        raise ValueError(f"partition {topics[int(np.argmin(count))]}-{int(partitions[int(np.argmin(count))])} "
                         "has no replica")
    width = int(count.max())
    row = np.repeat(np.arange(n), count)
    col = np.arange(len(row)) + offsets[0] - np.repeat(offsets[:-1], count)
    mat = np.full((n, width), PAD, dtype=np.int64)
    mat[row, col] = np.asarray(members, dtype=np.int64)[offsets[0]:offsets[-1]]
    topics = np.asarray(topics, dtype=object).astype(str)
    parts = np.asarray(partitions, dtype=np.int64)
    _check_replicas(table, topics, parts, mat)
    state = ClusterState.build(table, topics.tolist(), parts, mat, np.asarray(size, dtype=np.int64),
                               had_log_dirs=had_log_dirs)
    return _with_dirs(state, dirs)


def broker_table(brokers: pd.DataFrame) -> Brokers:
    """The broker rows of one cluster as a ``Brokers`` table (ValueError with a readable reason on bad rows)."""
    if len(brokers) == 0:
        raise ValueError("no brokers")
    ids = brokers["broker"].to_numpy(dtype=np.int64)
    if len(np.unique(ids)) != len(ids):
        raise ValueError("a broker is listed twice")
    rack_col = brokers["rack"] if "rack" in brokers else pd.Series([None] * len(brokers))
    racks = [None if (x is None or (isinstance(x, float) and np.isnan(x)) or x is pd.NA) else str(x)
             for x in rack_col.tolist()]
    if any(r is not None for r in racks) and any(r is None for r in racks):
        raise ValueError("some brokers have a rack and some do not")
    weight = pd.to_numeric(brokers["weight"]).fillna(1.0).to_numpy(dtype=np.float64) if "weight" in brokers else None
    if weight is not None and (~np.isfinite(weight) | (weight <= 0)).any():
        raise ValueError("a broker weight is not a positive number")
    caps = None
    if "capacity_bytes" in brokers:
        caps = [None if pd.isna(x) else int(x) for x in brokers["capacity_bytes"].tolist()]
    removed = (brokers["state"].fillna("live").astype(str) == "removed").to_numpy() if "state" in brokers else None
    if "state" in brokers:
        bad = ~brokers["state"].fillna("live").astype(str).isin(["live", "removed"])
        if bad.any():
            raise ValueError(f"broker state must be live or removed (got {brokers['state'][bad].iloc[0]!r})")
    return Brokers.build(ids, racks, weight, caps, removed)


def _check_replicas(table: Brokers, topics: np.ndarray, parts: np.ndarray, mat: np.ndarray) -> None:
    """No broker twice in a partition, every broker in the broker table, no negative partition number (the
    partitions' rows of ``mat``, PAD-padded)."""
    n, width = mat.shape
    srt = np.sort(np.where(mat == PAD, np.iinfo(np.int64).max, mat), axis=1)
    dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] != np.iinfo(np.int64).max) if width > 1 else np.zeros((n, 0), bool)
    if dup.any():
        i = int(np.flatnonzero(dup.any(axis=1))[0])
        raise ValueError(f"partition {topics[i]}-{int(parts[i])} lists a broker twice")
    unknown = ~np.isin(mat[mat != PAD], table.ids)
    if unknown.any():
        raise ValueError(f"replica on broker {int(mat[mat != PAD][unknown][0])}, which is not in the broker table")
    if (parts < 0).any():
        raise ValueError("a partition number is negative")


def _with_dirs(state: ClusterState, dirs: pd.DataFrame | None) -> ClusterState:
    """``state`` with its replicas' log directories from ``dirs`` rows (unchanged when there are none)."""
    if dirs is None or not len(dirs):
        return state
    from dataclasses import replace

    from ..dirs import build_dirs, rows_of

    rows_at = rows_of(state, dirs["topic"].astype(str).tolist(), dirs["partition"].to_numpy(dtype=np.int64))
    ok = rows_at >= 0
    broker = dirs["broker"].to_numpy(dtype=np.int64)[ok]
    paths = dirs["log_dir"].astype(str).to_numpy()[ok]
    table = sorted(set(zip(broker.tolist(), paths.tolist())))
    index = {k: i for i, k in enumerate(table)}
    where = np.array([index[k] for k in zip(broker.tolist(), paths.tolist())], dtype=np.int64)
    built = build_dirs(np.array([b for b, _ in table], dtype=np.int64), [p for _, p in table], rows_at[ok], broker,
                       where, dirs["bytes"].to_numpy(dtype=np.int64)[ok])
    return replace(state, dirs=built)
