"""Reader for ``kafka-log-dirs --describe`` output: partition sizes and each broker's log dirs."""
from __future__ import annotations

from dataclasses import dataclass, field

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
    doc = parse_json(text[offset:], source, line_offset=lineno)
    if not isinstance(doc, dict) or "brokers" not in doc:
        raise InputError(source, "brokers", "missing field (expected {\"version\":1,\"brokers\":[...]})")
    brokers = doc["brokers"]
    if not isinstance(brokers, list):
        raise InputError(source, "brokers", "wrong type: expected a list", type(brokers).__name__)
    per_replica: dict[tuple[str, int], list[int]] = {}
    dirs: dict[int, list[str]] = {}
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
        dirs.setdefault(bid, [])
        for di, d in enumerate(logdirs):
            dwhere = f"{where}.logDirs[{di}]"
            if not isinstance(d, dict):
                raise InputError(source, dwhere, "wrong type: expected an object", type(d).__name__)
            path = d.get("logDir")
            if type(path) is not str:
                raise InputError(source, f"{dwhere}.logDir", "wrong type: expected a string", path)
            dirs[bid].append(path)
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
                per_replica.setdefault((topic, int(num)), []).append(size)
    sizes: dict[tuple[str, int], int] = {}
    warnings: list[str] = []
    for key in sorted(per_replica):
        vals = per_replica[key]
        hi, lo = max(vals), min(vals)
        sizes[key] = hi
        if len(vals) > 1 and hi > 2 * max(lo, 1) and hi - lo > 1024 * 1024:
            warnings.append(f"{source}: {key[0]}-{key[1]}: replica sizes differ more than 2x ({lo} .. {hi} bytes); using the largest")
    for b in dirs:
        dirs[b] = sorted(set(dirs[b]))
    return LogDirs(source=source, sizes=sizes, dirs=dict(sorted(dirs.items())), replica_sizes=per_replica, warnings=warnings)


def sizes_for(state_topics: tuple[str, ...], topic: np.ndarray, partition: np.ndarray, logdirs: LogDirs) -> np.ndarray:
    """Sizes aligned to a state's partitions (-1 where the log-dirs output has none)."""
    out = np.full(len(partition), -1, dtype=np.int64)
    lookup = logdirs.sizes
    for i in range(len(partition)):
        v = lookup.get((state_topics[topic[i]], int(partition[i])))
        if v is not None:
            out[i] = v
    return out
