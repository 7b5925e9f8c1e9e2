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
class LogDirs:
    """Sizes keyed by (topic, partition) (largest replica), log dirs per broker, and warnings."""

    source: str
    sizes: dict[tuple[str, int], int]
    dirs: dict[int, list[str]]
    replica_sizes: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def read_logdirs(text: str, source: str) -> LogDirs:
    """Find the JSON line (after the status lines) and read every non-future replica's size."""
    offset, lineno = 0, 0
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("{"):
            break
        offset += len(line)
        lineno += 1
    else:
        raise InputError(source, "", "no JSON line found (expected kafka-log-dirs --describe output)")
    with _gc_paused():
        doc = parse_json(text[offset:], source, line_offset=lineno)
        if not isinstance(doc, dict) or "brokers" not in doc:
            raise InputError(source, "brokers", "missing field (expected {\"version\":1,\"brokers\":[...]})")
        brokers = doc["brokers"]
        if not isinstance(brokers, list):
            raise InputError(source, "brokers", "wrong type: expected a list", type(brokers).__name__)
        gathered = _gather(brokers)
        if gathered is None:
            _raise_first_error(brokers, source)
        dirs, names, sizes = gathered
        split = [n.rpartition("-") for n in names]
        topics = [t for t, _, _ in split]
        nums = [n for _, _, n in split]
        if "" in topics or not all(map(str.isdigit, nums)):  # "" also when there is no dash
            _raise_first_error(brokers, source)
        sizes_, warnings, replica_sizes = _summarize(topics, list(map(int, nums)), sizes, source)
    dirs = {b: sorted(set(dirs[b])) for b in sorted(dirs)}
    return LogDirs(source=source, sizes=sizes_, dirs=dirs, replica_sizes=replica_sizes, warnings=warnings)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: a large document is ~1M dicts (no cycles) that every
    collection triggered while reading would scan again, which costs more than the reading itself."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _gather(brokers: list) -> tuple[dict[int, list[str]], list[str], list[int]] | None:
    """Log dirs per broker, and the name and size of every non-future replica in document order.

    None when anything is malformed; ``_raise_first_error`` then says what (the partition name's
    "topic-N" form is checked by the caller).
    """
    dirs: dict[int, list[str]] = {}
    entries: list = []
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
    if not all(issubclass(t, dict) for t in set(map(type, entries))):
        return None
    future = list(map(dict.get, entries, repeat("isFuture")))
    if True in future:  # `in` compares with ==, so filter with the exact `is True` test
        entries = [p for p, f in zip(entries, future) if f is not True]
    names = list(map(dict.get, entries, repeat("partition")))
    sizes = list(map(dict.get, entries, repeat("size")))
    if not set(map(type, names)) <= {str} or not set(map(type, sizes)) <= {int} or (sizes and min(sizes) < 0):
        return None
    return dirs, names, sizes


def _raise_first_error(brokers: list, source: str) -> NoReturn:
    """Walk the document entry by entry and raise for the first bad value (only run after a bulk check failed)."""
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
                if not dash or not topic or not num.isdigit():
                    raise InputError(source, f"{pwhere}.partition", "expected \"topic-N\"", name)
                size = p.get("size")
                if type(size) is not int:
                    raise InputError(source, f"{pwhere}.size", "wrong type: expected an integer", size)
                if size < 0:
                    raise InputError(source, f"{pwhere}.size", "size must not be negative", size)
                int(num)  # as the reader does next: a digit that int() rejects (such as "²") fails here
    raise AssertionError(f"{source}: a bulk check failed but no entry is bad")  # the checks disagree: a bug


def _summarize(topics: list[str], nums: list[int], sizes: list[int], source: str):
    """Group replicas by (topic, partition): the largest size (sorted by key), a warning where replicas
    differ a lot, and every replica's size (keys in first-seen order, sizes in document order)."""
    if not topics:
        return {}, [], {}
    names = sorted(set(topics))
    rank = dict(zip(names, range(len(names))))
    key = _pair_key(np.fromiter(map(rank.__getitem__, topics), dtype=np.int64, count=len(topics)), _int_array(nums))
    order = np.argsort(key, kind="stable")  # stable: each group keeps its replicas in document order
    ks = key[order]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    ends = np.r_[starts[1:], len(ks)]
    first = order[starts]  # each partition's first replica in the document
    size = _int_array(sizes)[order]
    hi, lo = np.maximum.reduceat(size, starts), np.minimum.reduceat(size, starts)
    keys = [(topics[i], nums[i]) for i in first.tolist()]
    sizes_by_key = dict(zip(keys, hi.tolist()))
    floor = np.maximum(lo, 1)
    # hi > 2 * max(lo, 1), written so it cannot overflow int64
    differ = (ends - starts > 1) & (hi - floor > floor) & (hi - lo > 1024 * 1024)
    warnings = [
        f"{source}: {keys[g][0]}-{keys[g][1]}: replica sizes differ more than 2x ({int(lo[g])} .. {int(hi[g])} bytes); using the largest"
        for g in np.flatnonzero(differ).tolist()
    ]
    flat = size.tolist()
    seen = np.argsort(first)
    replica_sizes = {keys[g]: flat[s:e] for g, s, e in zip(seen.tolist(), starts[seen].tolist(), ends[seen].tolist())}
    return sizes_by_key, warnings, replica_sizes


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
