"""A plan file (reassignment JSON) read onto the current assignment: the final state over the same partitions.

Used by ``batches`` (which needs each partition's position in the file for ``--order as-is``) and ``report``.
Partitions the plan does not name keep their lists; brokers the plan names that CURRENT does not know are added.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from .errors import InputError
from .formats.raw import RawAssignment
from .formats.reassignment import read_reassignment_json
from .model import PAD, ClusterState


@dataclass
class PlanFile:
    """A plan read onto the current assignment: the final state, and where each partition was in the file."""

    source: str
    final: ClusterState  # the current partitions, with the plan's lists for the partitions it names
    rank: np.ndarray  # int64 [P]: position in the plan file, or P + row for partitions the plan does not list
    listed: int  # partitions in the plan file
    no_ops: int  # listed partitions whose planned list is the current one
    new_brokers: tuple[int, ...]  # brokers in the plan that are not in CURRENT


def read_plan(path: str | os.PathLike, current: ClusterState, *, current_source: str = "CURRENT") -> PlanFile:
    """Read the reassignment JSON at ``path`` onto ``current`` (one-line InputError naming the file on bad input)."""
    from .load import read_text

    source = str(path)
    return plan_from_text(read_text(source), source, current, current_source=current_source)


def plan_from_text(text: str, source: str, current: ClusterState, *, current_source: str = "CURRENT") -> PlanFile:
    """Like :func:`read_plan`, from the file's text. An empty ``partitions`` list is an empty plan."""
    try:
        raw = read_reassignment_json(text, source)
    except InputError as err:
        if err.place == "partitions" and err.message.startswith("no partitions"):
            return PlanFile(source, replace(current, had_log_dirs=current.had_log_dirs), _rank_default(current), 0, 0, ())
        raise
    return plan_onto(raw, current, current_source=current_source)


def plan_onto(raw: RawAssignment, current: ClusterState, *, current_source: str = "CURRENT") -> PlanFile:
    """The final state: ``current`` with the lists ``raw`` gives (partitions it does not name keep theirs)."""
    n = len(raw.partition)
    tindex = {t: i for i, t in enumerate(current.topics)}
    tid = np.fromiter((tindex.get(t, -1) for t in raw.topic_names), dtype=np.int64, count=n)
    rows = np.full(n, -1, dtype=np.int64)
    known = tid >= 0
    if current.num_partitions and known.any():
        ckey = (current.topic.astype(np.int64) << 32) | current.partition.astype(np.int64)
        pkey = (tid[known] << 32) | raw.partition[known]
        pos = np.minimum(np.searchsorted(ckey, pkey), len(ckey) - 1)
        rows[known] = np.where(ckey[pos] == pkey, pos, -1)
    missing = np.flatnonzero(rows < 0)
    if len(missing):
        # the first one in file order
        i = int(missing[np.argmin(raw.origin_pos[missing])])
        raise InputError(raw.source, raw.place(i), f"partition not in the current assignment ({current_source})",
                         f"{raw.topic_names[i]}-{int(raw.partition[i])}")
    width = max(current.replicas.shape[1], raw.replicas.shape[1])
    reps = pad_to(current.replicas, width)
    planned = pad_to(raw.replicas.astype(np.int32), width)
    no_ops = int((reps[rows] == planned).all(axis=1).sum())
    reps[rows] = planned
    used = np.unique(planned[planned != PAD])
    new = used[~np.isin(used, current.brokers.ids)] if len(used) else used
    brokers = current.brokers.with_added(new.tolist()) if len(new) else current.brokers
    final = replace(current.with_replicas(reps), brokers=brokers, had_log_dirs=raw.had_log_dirs,
                    dirs=_planned_dirs(raw, rows, current))
    rank = _rank_default(current)
    rank[rows] = raw.origin_pos
    return PlanFile(raw.source, final, rank, n, no_ops, tuple(int(b) for b in new))


def _rank_default(state: ClusterState) -> np.ndarray:
    return state.num_partitions + np.arange(state.num_partitions, dtype=np.int64)


def pad_to(mat: np.ndarray, width: int) -> np.ndarray:
    """``mat`` widened to ``width`` columns with PAD (int32 copy)."""
    out = np.full((mat.shape[0], width), PAD, dtype=np.int32)
    out[:, : mat.shape[1]] = mat
    return out


def _planned_dirs(raw: RawAssignment, rows: np.ndarray, current: ClusterState):
    """The directories after the plan: the plan's ``log_dirs`` where they name one, over the current ones."""
    if not raw.log_dir_names:
        return current.dirs
    from .dirs import overlay

    r, b, paths = [], [], []
    for i, names in raw.log_dir_names.items():
        ids = raw.replicas[i][raw.replicas[i] != PAD].tolist()
        for broker, path in zip(ids, names):
            if path != "any":
                r.append(int(rows[i]))
                b.append(int(broker))
                paths.append(path)
    rows_arr = np.asarray(r, dtype=np.int64)
    return overlay(current.dirs, rows_arr, np.asarray(b, dtype=np.int64), paths, current.size[rows_arr])
