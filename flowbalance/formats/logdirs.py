"""Reader for ``kafka-log-dirs --describe`` output: partition sizes and each broker's log dirs.

Built for clusters with millions of replicas: the replica entries are gathered into flat lists, checked
with one pass per check and grouped with numpy. Only when a bulk check fails are the entries walked one by
one (``_raise_first_error``), to name the first bad one in document order.
"""
from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import repeat
from typing import NoReturn

import numpy as np

from ..errors import InputError
from .jsontext import parse_json


@dataclass
class Placements:
    """Where the output says each replica lives: its broker and log directory (JBOD), document order.

    Directories are (broker, path) pairs, in document order (``dir_broker``, ``dir_path``). ``topic`` /
    ``partition`` / ``broker`` / ``dir`` / ``size`` describe every current (non-future) replica. A future replica
    (``isFuture``: the copy of an intra-broker move in flight) is listed apart (``future_*``), so a replica is never
    counted twice."""

    dir_broker: np.ndarray  # int64 [D]
    dir_path: list[str]  # [D]
    topic: list[str]  # [E]
    partition: np.ndarray  # int64 [E]
    broker: np.ndarray  # int64 [E]
    dir: np.ndarray  # int64 [E], index into dir_*
    size: np.ndarray  # int64 [E]
    future_topic: list[str]
    future_partition: np.ndarray  # int64
    future_dir: np.ndarray  # int64, index into dir_*


@dataclass
class LogDirs:
    """Sizes keyed by (topic, partition) (largest replica), log dirs per broker, where each replica lives, and
    warnings."""

    source: str
    sizes: dict[tuple[str, int], int]
    dirs: dict[int, list[str]]
    replica_sizes: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    placements: Placements | None = None


def read_logdirs(text: str, source: str) -> LogDirs:
    """Find the JSON line (after the status lines) and read every non-future replica's size."""
    offset, lineno = _json_start(text, source)
    with gc_paused():  # a million new dicts, lists and tuples, none in a cycle: see gc_paused
        doc = parse_json(text[offset:], source, line_offset=lineno)
        if not isinstance(doc, dict) or "brokers" not in doc:
            raise InputError(source, "brokers", "missing field (expected {\"version\":1,\"brokers\":[...]})")
        brokers = doc["brokers"]
        if not isinstance(brokers, list):
            raise InputError(source, "brokers", "wrong type: expected a list", type(brokers).__name__)
        gathered = _gather(brokers)
        if gathered is None:
            _raise_first_error(brokers, source)
        dirs, names, sizes, where = gathered
        # "topic-N" splits at the last dash
        topics = [n.rpartition("-")[0] for n in names]
        nums = [n.rpartition("-")[2] for n in names]
        if "" in topics or not all(map(_ascii_digits, nums)):  # the topic is "" too when there is no dash
            _raise_first_error(brokers, source)
        numbers = list(map(int, nums))
        sizes_by_key, warnings, replica_sizes = _summarize(topics, numbers, sizes, source)
        placements = _placements(where, topics, numbers, sizes)
    dirs = {b: sorted(set(dirs[b])) for b in sorted(dirs)}
    return LogDirs(source=source, sizes=sizes_by_key, dirs=dirs, replica_sizes=replica_sizes, warnings=warnings,
                   placements=placements)


def _placements(where: tuple, topics: list[str], numbers: list[int], sizes: list[int]) -> Placements:
    """The ``Placements`` of the entries ``_gather`` collected (``where``: its directory table, each current
    entry's directory, and the future entries' names and directories)."""
    dir_broker, dir_path, entry_dir, future_names, future_dir = where
    fut = [n.rpartition("-") for n in future_names]
    ok = [bool(t) and bool(d) and _ascii_digits(p) for t, d, p in fut]  # a malformed future entry is ignored
    return Placements(
        dir_broker=np.asarray(dir_broker, dtype=np.int64), dir_path=list(dir_path), topic=topics,
        partition=_int_array(numbers), broker=np.asarray(dir_broker, dtype=np.int64)[entry_dir] if len(entry_dir)
        else np.zeros(0, dtype=np.int64), dir=entry_dir, size=_int_array(sizes),
        future_topic=[t for (t, _, _), k in zip(fut, ok) if k],
        future_partition=_int_array([int(p) for (_, _, p), k in zip(fut, ok) if k]),
        future_dir=np.asarray(future_dir, dtype=np.int64)[np.asarray(ok, dtype=bool)] if len(future_dir)
        else np.zeros(0, dtype=np.int64))


def _json_start(text: str, source: str) -> tuple[int, int]:
    """Offset and line number of the first line that starts with "{" (after blanks): the JSON line.

    Usually that is the line of the first "{", found without splitting the whole (large) text into lines.
    """
    first = text.find("{")
    if first >= 0:
        head = text[: first + 1].splitlines(keepends=True)
        if head[-1].lstrip().startswith("{"):
            return first + 1 - len(head[-1]), len(head) - 1
    offset = 0
    for lineno, line in enumerate(text.splitlines(keepends=True)):
        if line.lstrip().startswith("{"):
            return offset, lineno
        offset += len(line)
    raise InputError(source, "", "no JSON line found (expected kafka-log-dirs --describe output)")


def _gather(brokers: list) -> tuple[dict[int, list[str]], list[str], list[int], tuple] | None:
    """Log dirs per broker, the name and size of every non-future replica in document order, and where they are
    (the directory table and each entry's directory; the future entries' names and directories).

    None when anything is malformed; ``_raise_first_error`` then says what (the partition name's
    "topic-N" form is checked by the caller).
    """
    dirs: dict[int, list[str]] = {}
    entries: list = []
    dir_broker: list[int] = []
    dir_path: list[str] = []
    counts: list[int] = []
    for b in brokers:
        if not isinstance(b, dict) or type(b.get("broker")) is not int:
            return None
        logdirs = b.get("logDirs", [])
        if not isinstance(logdirs, list):
            return None
        paths = dirs.setdefault(b["broker"], [])
        for d in logdirs:
            if not isinstance(d, dict) or type(d.get("logDir")) is not str:
                return None
            parts = d.get("partitions", [])
            if not isinstance(parts, list):
                return None
            paths.append(d["logDir"])
            entries.extend(parts)
            dir_broker.append(b["broker"])
            dir_path.append(d["logDir"])
            counts.append(len(parts))
    if not all(issubclass(t, dict) for t in set(map(type, entries))):
        return None
    entry_dir = np.repeat(np.arange(len(counts), dtype=np.int64), counts)
    future = list(map(dict.get, entries, repeat("isFuture")))
    future_names: list = []
    future_dir = np.zeros(0, dtype=np.int64)
    if True in future:  # `in` compares with ==, so filter with the exact `is True` test
        is_future = np.fromiter((f is True for f in future), dtype=bool, count=len(future))
        future_names = [p.get("partition") for p, f in zip(entries, is_future.tolist()) if f]
        keep = [i for i, f in enumerate(future_names) if type(f) is str]
        future_names, future_dir = [future_names[i] for i in keep], entry_dir[is_future][keep]
        entries = [p for p, f in zip(entries, future) if f is not True]
        entry_dir = entry_dir[~is_future]
    names = list(map(dict.get, entries, repeat("partition")))
    sizes = list(map(dict.get, entries, repeat("size")))
    if not set(map(type, names)) <= {str} or not set(map(type, sizes)) <= {int} or \
            (sizes and (min(sizes) < 0 or max(sizes) > _MAX_SIZE)):
        return None
    return dirs, names, sizes, (dir_broker, dir_path, entry_dir, future_names, future_dir)


def _raise_first_error(brokers: list, source: str) -> NoReturn:
    """Walk the document entry by entry and raise for the first bad value (run once a bulk check has failed)."""
    for bi, b in enumerate(brokers):
        where = f"brokers[{bi}]"
        if not isinstance(b, dict):
            raise InputError(source, where, "wrong type: expected an object", type(b).__name__)
        if "broker" not in b:
            raise InputError(source, f"{where}.broker", "missing field")
        bid = b["broker"]
        if type(bid) is not int:
            raise InputError(source, f"{where}.broker", "broker id must be an integer", bid)
        logdirs = b.get("logDirs", [])
        if not isinstance(logdirs, list):
            raise InputError(source, f"{where}.logDirs", "wrong type: expected a list", type(logdirs).__name__)
        for di, d in enumerate(logdirs):
            dwhere = f"{where}.logDirs[{di}]"
            if not isinstance(d, dict):
                raise InputError(source, dwhere, "wrong type: expected an object", type(d).__name__)
            path = d.get("logDir")
            if type(path) is not str:
                raise InputError(source, f"{dwhere}.logDir", "wrong type: expected a string", path)
            parts = d.get("partitions", [])
            if not isinstance(parts, list):
                raise InputError(source, f"{dwhere}.partitions", "wrong type: expected a list", type(parts).__name__)
            for pi, p in enumerate(parts):
                pwhere = f"{dwhere}.partitions[{pi}]"
                if not isinstance(p, dict):
                    raise InputError(source, pwhere, "wrong type: expected an object", type(p).__name__)
                if p.get("isFuture") is True:
                    continue
                name = p.get("partition")
                if type(name) is not str:
                    raise InputError(source, f"{pwhere}.partition", "wrong type: expected \"topic-N\"", name)
                topic, dash, num = name.rpartition("-")
                if not dash or not topic or not _ascii_digits(num):
                    raise InputError(source, f"{pwhere}.partition", "expected \"topic-N\"", name)
                size = p.get("size")
                if type(size) is float and size.is_integer() and abs(size) >= 2**63:
                    # a whole number beyond 64 bits: orjson reads it as a float
                    raise InputError(source, f"{pwhere}.size", "size out of range", int(size))
                if type(size) is not int:
                    raise InputError(source, f"{pwhere}.size", "wrong type: expected an integer", size)
                if size < 0:
                    raise InputError(source, f"{pwhere}.size", "size must not be negative", size)
                if size > _MAX_SIZE:
                    raise InputError(source, f"{pwhere}.size", "size out of range (above 2^63 - 1 bytes)", size)
                int(num)  # as the reader does next: a digit that int() rejects (such as "²") fails here
    raise AssertionError(f"{source}: a bulk check failed but no entry is bad")  # the checks disagree: a bug


def _summarize(
    topics: list[str], nums: list[int], sizes: list[int], source: str
) -> tuple[dict[tuple[str, int], int], list[str], dict[tuple[str, int], list[int]]]:
    """Group the replicas by (topic, partition number), as the entry-by-entry reader did.

    Returns the largest size per partition (keys sorted), a warning for each partition whose replica
    sizes differ a lot, and every replica's size (keys in first-seen order, sizes in document order).
    """
    if not topics:
        return {}, [], {}
    topic_names = sorted(set(topics))
    rank = dict(zip(topic_names, range(len(topic_names))))
    topic = np.fromiter(map(rank.__getitem__, topics), dtype=np.int64, count=len(topics))
    number = _int_array(nums)
    key = _pair_key(topic, number)
    order = np.argsort(key, kind="stable")  # stable: each partition's replicas stay in document order
    ks = key[order]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    count = np.diff(np.r_[starts, len(ks)])
    size = _int_array(sizes)[order]
    hi, lo = np.maximum.reduceat(size, starts), np.minimum.reduceat(size, starts)
    floor = np.maximum(lo, 1)
    # hi > 2 * floor, written so it cannot overflow int64 (bool dtype also when the sizes are Python ints)
    differ = np.asarray((count > 1) & (hi - floor > floor) & (hi - lo > 1024 * 1024), dtype=bool)
    first = order[starts]  # each partition's first replica
    wide = np.flatnonzero(differ)
    warnings = [
        f"{source}: {topic_names[t]}-{p}: replica sizes differ more than 2x ({int(lo[g])} .. {int(hi[g])} bytes);"
        " using the largest"
        for g, t, p in zip(wide.tolist(), topic[first[wide]].tolist(), number[first[wide]].tolist())
    ]
    # replica sizes with the partitions in first-seen order: regroup `size` so that each list is a slice
    seen = np.argsort(first)
    seen_count = count[seen]
    seen_end = np.cumsum(seen_count)
    take = np.repeat(starts[seen] - (seen_end - seen_count), seen_count) + np.arange(len(size))
    # keys and lists are built in memory order (shared tuples read back in another order cost cache misses)
    sizes_by_key = dict(zip(_keys(topic_names, topic[first], number[first]), hi.tolist()))
    flat = size[take].tolist()
    bounds = seen_end.tolist()
    lists = [flat[a:b] for a, b in zip([0] + bounds[:-1], bounds)]
    replica_sizes = dict(zip(_keys(topic_names, topic[first[seen]], number[first[seen]]), lists))
    return sizes_by_key, warnings, replica_sizes


def _keys(topic_names: list[str], topic: np.ndarray, number: np.ndarray):
    """(topic name, partition number) key tuples from topic ranks and numbers."""
    return zip(map(topic_names.__getitem__, topic.tolist()), number.tolist())


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many objects that hold no cycles.

    Hundreds of thousands of new lists and tuples would otherwise set off full collections, each
    scanning everything built so far; after the pause the survivors are scanned once or twice.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _int_array(values) -> np.ndarray:
    """``values`` as int64, or as Python ints (object array) when one does not fit (JSON allows any size)."""
    try:
        return np.array(values, dtype=np.int64)
    except OverflowError:
        return np.array(values, dtype=object)


def _pair_key(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """One int64 per (major, minor) pair that orders like the pairs; ``major`` holds small ids (>= 0).

    ``minor`` is shifted to start at 0, or replaced by its rank when the product would not fit in int64.
    """
    if len(minor) == 0:
        return major.astype(np.int64)
    lo = hi = 0
    if minor.dtype != object:
        lo, hi = int(minor.min()), int(minor.max())
    if minor.dtype == object or (int(major.max()) + 1) * (hi - lo + 1) >= 2**63:
        _, minor = np.unique(minor, return_inverse=True)
        lo, hi = 0, int(minor.max())
    return major.astype(np.int64) * (hi - lo + 1) + (minor.astype(np.int64) - lo)


def sizes_for(state_topics: tuple[str, ...], topic: np.ndarray, partition: np.ndarray, logdirs: LogDirs) -> np.ndarray:
    """Sizes aligned to a state's partitions (-1 where the log-dirs output has none).

    A sort join on (topic, partition) rather than one dict lookup per partition.
    """
    out = np.full(len(partition), -1, dtype=np.int64)
    if not logdirs.sizes or not len(partition):
        return out
    ids: dict[str, int] = {}  # topics match by name, as a name listed twice in state_topics would
    state_tid = np.array([ids.setdefault(t, len(ids)) for t in state_topics], dtype=np.int64)
    keys = logdirs.sizes.keys()
    ld_tid = np.fromiter((ids.get(t, -1) for t, _ in keys), dtype=np.int64, count=len(keys))
    known = ld_tid >= 0
    if not known.any():
        return out
    ld_part = _int_array([p for _, p in keys])[known]
    ld_size = _int_array(list(logdirs.sizes.values()))[known]
    part = _int_array(partition)
    key = _pair_key(np.concatenate([ld_tid[known], state_tid[topic]]), np.concatenate([ld_part, part]))
    ld_key, state_key = key[: len(ld_part)], key[len(ld_part):]
    order = np.argsort(ld_key)
    pos = np.minimum(np.searchsorted(ld_key, state_key, sorter=order), len(order) - 1)
    hit = ld_key[order[pos]] == state_key
    out[hit] = ld_size[order[pos[hit]]]
    return out


_MAX_SIZE = 2**63 - 1  # sizes are int64 in the cluster model


def _ascii_digits(s: str) -> bool:
    """True for a plain 0-9 partition number ("²" and other Unicode digits are not partition numbers)."""
    return s.isascii() and s.isdigit()
