"""The common result of every assignment reader, before brokers and sizes are joined in."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from ..model import PAD

MAX_TOPIC_LENGTH = 249  # Kafka's limit (topic names also name directories: "<topic>-<partition>")
_TOPIC_CHARS = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
TOPIC_RULE = "Kafka allows only letters, digits, '.', '_' and '-' (at most 249)"


@dataclass
class PartitionStatus:
    """What a describe says beyond the replica lists, per partition in input (line) order."""

    leaderless: np.ndarray  # bool [P]: "Leader: none" or "Leader: -1"
    offline: np.ndarray  # bool [P]: a non-empty "Offline:" list
    under_replicated: np.ndarray  # bool [P]: an Isr field shorter than Replicas (False when no Isr printed)
    adding: np.ndarray  # int64 [P, W], -1 padded: "Adding Replicas:"
    removing: np.ndarray  # int64 [P, W], -1 padded: "Removing Replicas:"
    observers: np.ndarray  # int64 [P, W], -1 padded: union of "Observers:" and "LiveObservers:"
    constrained_topics: frozenset[str]  # topics whose header Configs contain "confluent.placement.constraints"
    declared: dict[str, int]  # topic -> PartitionCount from its header line (topics with a header only)


@dataclass
class RawAssignment:
    """Partitions in input order: topic per partition, partition numbers, padded replica-id matrix."""

    source: str
    topic_names: list[str]
    partition: np.ndarray  # int64 [P]
    replicas: np.ndarray  # int64 [P, K], padded with -1
    had_log_dirs: bool
    origin: str  # "json" (place = partitions[i]), "array" (a bare JSON list: place = [i]) or "line" (line n)
    origin_pos: np.ndarray  # int64 [P]: index in the JSON list, or 1-based line number
    status: PartitionStatus | None = None  # a describe's per-partition status (None for JSON inputs)
    log_dir_names: dict[int, list[str]] | None = None  # input row -> its log_dirs, where one names a directory

    def place(self, i: int) -> str:
        pos = int(self.origin_pos[i])
        if self.origin == "line":
            return f"line {pos}"
        return f"[{pos}]" if self.origin == "array" else f"partitions[{pos}]"

    def field_place(self, i: int, json_name: str, line_name: str) -> str:
        """``partitions[i].topic`` for JSON, ``line n: Topic`` for a describe."""
        return f"{self.place(i)}: {line_name}" if self.origin == "line" else f"{self.place(i)}.{json_name}"


def replicas_matrix(lengths: list[int] | np.ndarray, flat: list[int] | np.ndarray) -> np.ndarray:
    """Pack ragged replica lists (given by lengths and the concatenation) into a -1 padded matrix.

    The ids must be non-negative (check with ``first_negative`` first): a -1 would read as padding.
    """
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


def first_negative(lengths: np.ndarray, flat: np.ndarray) -> tuple[int, int] | None:
    """(list index, id) of the first negative id in ragged lists, or None.

    Readers call it before ``replicas_matrix``, where a -1 would become padding and vanish silently."""
    flat = np.asarray(flat)
    neg = np.flatnonzero(flat < 0)
    if not len(neg):
        return None
    k = int(neg[0])
    row = int(np.searchsorted(np.cumsum(lengths), k, side="right"))
    return row, int(flat[k])


def topic_name_problem(name: str) -> str | None:
    """Why Kafka would refuse ``name`` as a topic name, or None when it is a valid one."""
    if not name:
        return "empty topic name"
    if len(name) > MAX_TOPIC_LENGTH or name in (".", "..") or not name.isascii() or \
            name.encode("ascii").translate(None, _TOPIC_CHARS):
        return f"invalid topic name: {TOPIC_RULE}"
    return None


def _bad_topic_names(unique: list[str]) -> bool:
    """True when one of the (distinct) names is not a valid Kafka topic name: one pass over all of them."""
    joined = "/".join(unique)  # "/" is not allowed in a name: a name holding one adds to the count of "/"
    return (not joined.isascii() or bool(joined.encode("ascii").translate(None, _TOPIC_CHARS + b"/"))
            or joined.count("/") != len(unique) - 1
            or "" in unique or "." in unique or ".." in unique or max(map(len, unique)) > MAX_TOPIC_LENGTH)


def validate_raw(raw: RawAssignment) -> None:
    """Checks every reader shares: topic names, negative partition, empty list, broker ids, duplicate broker in a
    list, duplicate partition."""
    src = raw.source
    n = len(raw.partition)
    if n == 0:
        raise InputError(src, "partitions", "no partitions in the assignment")
    # distinct names by a dict (a numpy string array would drop a trailing NUL and merge two names)
    rank = {t: k for k, t in enumerate(dict.fromkeys(raw.topic_names))}
    if _bad_topic_names(list(rank)):
        i = next(k for k, t in enumerate(raw.topic_names) if topic_name_problem(t) is not None)
        name = raw.topic_names[i]
        raise InputError(src, raw.field_place(i, "topic", "Topic"), topic_name_problem(name), name)
    tidx = np.fromiter(map(rank.__getitem__, raw.topic_names), dtype=np.int64, count=n)
    _check_partition_numbers(raw)
    _check_replica_lists(raw)
    # duplicate (topic, partition)
    order = np.lexsort((raw.partition, tidx))
    same = (tidx[order][1:] == tidx[order][:-1]) & (raw.partition[order][1:] == raw.partition[order][:-1])
    d = np.flatnonzero(same)
    if len(d):
        a, b = sorted((int(order[d[0]]), int(order[d[0] + 1])))
        raise InputError(src, raw.place(b), f"duplicate partition (also at {raw.place(a)})",
                         f"{raw.topic_names[b]}-{int(raw.partition[b])}")


def _check_partition_numbers(raw: RawAssignment) -> None:
    """Partition numbers from 0 to 2^31 - 1."""
    def at(i: int) -> str:
        return raw.field_place(i, "partition", "Partition")

    neg = np.flatnonzero(raw.partition < 0)
    if len(neg):
        i = int(neg[0])
        raise InputError(raw.source, at(i), "partition number must not be negative", int(raw.partition[i]))
    big = np.flatnonzero(raw.partition > np.iinfo(np.int32).max)
    if len(big):
        i = int(big[0])
        raise InputError(raw.source, at(i), "partition number out of range (0 .. 2147483647)", int(raw.partition[i]))


def _check_replica_lists(raw: RawAssignment) -> None:
    """Every list non-empty, of broker ids from 0 to 2^31 - 1, each at most once."""
    def at(i: int) -> str:
        return raw.field_place(i, "replicas", "Replicas")

    reps = raw.replicas
    empty = np.flatnonzero(reps[:, 0] == PAD)
    if len(empty):
        raise InputError(raw.source, at(int(empty[0])), "empty replica list", [])
    bad = np.argwhere(((reps < 0) & (reps != PAD)) | (reps > np.iinfo(np.int32).max))
    if len(bad):
        i, k = int(bad[0][0]), int(bad[0][1])
        what = "broker id must not be negative" if reps[i, k] < 0 else "broker id out of range"
        raise InputError(raw.source, at(i), what, int(reps[i, k]))
    top = np.iinfo(np.int64).max
    srt = np.sort(np.where(reps == PAD, top, reps), axis=1)
    dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] != top)
    rows = np.flatnonzero(dup.any(axis=1))
    if len(rows):
        i = int(rows[0])
        b = int(srt[i, 1:][dup[i]][0])
        raise InputError(raw.source, at(i), f"broker {b} appears twice in one replica list",
                         [int(x) for x in reps[i] if x != PAD])
