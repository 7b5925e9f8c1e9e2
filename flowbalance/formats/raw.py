"""The common result of every assignment reader, before brokers and sizes are joined in."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..model import PAD


@dataclass
class RawAssignment:
    """Partitions in input order: topic per partition, partition numbers, padded replica-id matrix."""

    source: str
    topic_names: list[str]
    partition: np.ndarray  # int64 [P]
    replicas: np.ndarray  # int64 [P, K], padded with -1
    had_log_dirs: bool
    origin: str  # "json" (place = partitions[i]) or "line" (place = line n)
    origin_pos: np.ndarray  # int64 [P]: index in the JSON list, or 1-based line number

    def place(self, i: int) -> str:
        pos = int(self.origin_pos[i])
        return f"partitions[{pos}]" if self.origin == "json" else f"line {pos}"


def replicas_matrix(lengths: list[int] | np.ndarray, flat: list[int] | np.ndarray) -> np.ndarray:
    """Pack ragged replica lists (given by lengths and the concatenation) into a -1 padded matrix."""
    lengths = np.asarray(lengths, dtype=np.int64)
    n = len(lengths)
    width = int(lengths.max()) if n else 1
    out = np.full((n, max(width, 1)), PAD, dtype=np.int64)
    if n:
        rows = np.repeat(np.arange(n), lengths)
        starts = np.cumsum(lengths) - lengths
        cols = np.arange(len(rows)) - np.repeat(starts, lengths)
        out[rows, cols] = np.asarray(flat, dtype=np.int64)
    return out


def validate_raw(raw: RawAssignment) -> None:
    """Checks every reader shares: negative partition, empty list, duplicate broker in a list, duplicate partition."""
    src = raw.source
    n = len(raw.partition)
    if n == 0:
        raise InputError(src, "partitions", "no partitions in the assignment")
    neg = np.flatnonzero(raw.partition < 0)
    if len(neg):
        i = int(neg[0])
        raise InputError(src, raw.place(i) + ".partition", "partition number must not be negative", int(raw.partition[i]))
    big = np.flatnonzero(raw.partition > np.iinfo(np.int32).max)
    if len(big):
        i = int(big[0])
        raise InputError(src, raw.place(i) + ".partition", "partition number out of range (0 .. 2147483647)",
                         int(raw.partition[i]))
    reps = raw.replicas
    rf = (reps != PAD).sum(axis=1)
    empty = np.flatnonzero(rf == 0)
    if len(empty):
        i = int(empty[0])
        raise InputError(src, raw.place(i) + ".replicas", "empty replica list", [])
    negb = np.argwhere((reps < 0) & (reps != PAD))
    if len(negb):
        i = int(negb[0][0])
        raise InputError(src, raw.place(i) + ".replicas", "broker id must not be negative", int(reps[negb[0][0], negb[0][1]]))
    big = np.argwhere(reps > np.iinfo(np.int32).max)
    if len(big):
        i = int(big[0][0])
        raise InputError(src, raw.place(i) + ".replicas", "broker id out of range", int(reps[big[0][0], big[0][1]]))
    srt = np.sort(np.where(reps == PAD, np.iinfo(np.int64).max, reps), axis=1)
    dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] != np.iinfo(np.int64).max)
    bad = np.flatnonzero(dup.any(axis=1))
    if len(bad):
        i = int(bad[0])
        b = int(srt[i, 1:][dup[i]][0])
        raise InputError(src, raw.place(i) + ".replicas", f"broker {b} appears twice in one replica list",
                         [int(x) for x in reps[i] if x != PAD])
    # duplicate (topic, partition)
    names = np.asarray(raw.topic_names, dtype=object)
    _, tidx = np.unique(names.astype(str), return_inverse=True)
    order = np.lexsort((raw.partition, tidx))
    same = (tidx[order][1:] == tidx[order][:-1]) & (raw.partition[order][1:] == raw.partition[order][:-1])
    d = np.flatnonzero(same)
    if len(d):
        a, b = sorted((int(order[d[0]]), int(order[d[0] + 1])))
        raise InputError(src, raw.place(b), f"duplicate partition (also at {raw.place(a)})",
                         f"{raw.topic_names[b]}-{int(raw.partition[b])}")
