"""Loads a cluster from files: reads the assignment, joins the broker file and sizes, checks them together."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import InputError, RequestError
from .formats.brokerfile import read_broker_file
from .formats.describe import read_describe
from .formats.detect import ASSIGNMENT_FORMATS, detect_assignment_format
from .dirs import dirs_for_state, unknown_capacities
from .formats.logdirs import LogDirs, sizes_for
from .formats.raw import RawAssignment
from .formats.reassignment import read_generate_output, read_reassignment_json
from .formats.sizes import read_sizes
from .model import PAD, Brokers, ClusterState
from .status import ClusterStatus, status_warnings


@dataclass
class Loaded:
    """A loaded cluster plus the warnings found while reading it."""

    state: ClusterState
    warnings: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    status: ClusterStatus | None = None  # from a describe: partitions in flight, unhealthy, placed by Confluent


def read_text(path: str | os.PathLike) -> str:
    """A file's text; an unreadable or non-UTF-8 file is an InputError naming it."""
    p = str(path)
    try:
        data = Path(p).read_bytes()
    except IsADirectoryError:
        raise InputError(p, "", "cannot read: is a directory") from None
    except OSError as err:
        raise InputError(p, "", f"cannot read: {err.strerror or err}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InputError(p, f"line {line}", "not UTF-8 text") from None


def read_assignment(text: str, source: str, fmt: str | None = None) -> RawAssignment:
    if fmt is not None and fmt not in ASSIGNMENT_FORMATS:
        raise RequestError("fmt", f"unknown format (choose from {', '.join(ASSIGNMENT_FORMATS)})", fmt,
                           source="load_cluster")
    kind = fmt or detect_assignment_format(text, source)
    if kind == "json":
        return read_reassignment_json(text, source)
    if kind == "generate":
        return read_generate_output(text, source)
    return read_describe(text, source)


def load_cluster(
    current: str | os.PathLike,
    *,
    brokers: str | os.PathLike | None = None,
    sizes: str | os.PathLike | None = None,
    fmt: str | None = None,
    disable_rack_aware: bool = False,
) -> Loaded:
    """Read CURRENT (any assignment format), and optionally a broker file and kafka-log-dirs sizes."""
    def named(path):
        return None if path is None else (str(path), read_text(path))

    return load_texts(named(current), brokers=named(brokers), sizes=named(sizes), fmt=fmt,
                      disable_rack_aware=disable_rack_aware)


def load_texts(
    current: tuple[str, str],
    *,
    brokers: tuple[str, str] | None = None,
    sizes: tuple[str, str] | None = None,
    fmt: str | None = None,
    disable_rack_aware: bool = False,
) -> Loaded:
    """``load_cluster`` from (name, text) pairs already read (the fleet pipeline reads files through Spark)."""
    current_src, current_text = current
    raw = read_assignment(current_text, current_src, fmt)
    warnings: list[str] = []
    inputs = [current_src]
    if brokers is not None:
        bsrc, btext = brokers
        inputs.append(bsrc)
        table = read_broker_file(btext, bsrc)
        _check_known_brokers(raw, table, bsrc)
    else:
        ids = np.unique(raw.replicas[raw.replicas != PAD])
        table = Brokers.build(ids)
        bsrc = None
    table = _check_racks(table, bsrc, disable_rack_aware)
    state = ClusterState.build(
        table, raw.topic_names, raw.partition, raw.replicas, had_log_dirs=raw.had_log_dirs
    )
    status = None
    if raw.status is not None:
        _, _, order = ClusterState.canonical_order(raw.topic_names, raw.partition)
        status = ClusterStatus.from_raw(raw.status, raw.topic_names, order)
        warnings.extend(status_warnings(state, status, current_src))
    if sizes is not None:
        ssrc, stext = sizes
        inputs.append(ssrc)
        ld = read_sizes(stext, ssrc)  # kafka-log-dirs output or a topic,partition,bytes table (CSV or JSON)
        state = _with_sizes(state, ld, warnings)
    return Loaded(state=state, warnings=warnings, inputs=inputs, status=status)


def _check_known_brokers(raw: RawAssignment, table: Brokers, bsrc: str) -> None:
    used = raw.replicas != PAD
    ids = raw.replicas[used]
    pos = np.searchsorted(table.ids, ids)
    pos = np.minimum(pos, len(table.ids) - 1)
    unknown = table.ids[pos] != ids
    if np.any(unknown):
        rows, _ = np.nonzero(used)
        k = int(np.flatnonzero(unknown)[0])
        i = int(rows[k])
        raise InputError(raw.source, raw.field_place(i, "replicas", "Replicas"),
                         f"broker {int(ids[k])} is not listed in {bsrc}", [int(x) for x in raw.replicas[i] if x != PAD])


def _check_racks(table: Brokers, bsrc: str | None, disable_rack_aware: bool) -> Brokers:
    if disable_rack_aware:
        return Brokers(ids=table.ids, rack=np.full(len(table), -1, dtype=np.int32), rack_names=(),
                       weight=table.weight, capacity=table.capacity, removed=table.removed, closed=table.closed)
    has = table.rack >= 0
    if has.any() and not has.all():
        missing = int(table.ids[~has][0])
        raise InputError(
            bsrc or "brokers", f"broker {missing}",
            "has no rack while other brokers have one (as Kafka does, this needs racks ignored)",
            remedy=("disable_rack_aware", True),
        )
    return table


def _with_sizes(state: ClusterState, ld: LogDirs, warnings: list[str]) -> ClusterState:
    from dataclasses import replace

    size = sizes_for(state.topics, state.topic, state.partition, ld)
    warnings.extend(ld.warnings)
    missing = int((size < 0).sum())
    if missing:
        warnings.append(f"{ld.source}: no size for {missing} of {len(size)} partitions (taken as unknown)")
    extra = len(ld.sizes) - int((size >= 0).sum())
    if extra > 0:
        warnings.append(f"{ld.source}: {extra} partitions are not in the assignment (ignored)")
    dirs, stray = dirs_for_state(state, ld.placements)
    if dirs is not None and stray:
        warnings.append(f"{ld.source}: {stray} replicas are not in the assignment on that broker (their log "
                        "directories ignored)")
    missing_dirs = unknown_capacities(state, dirs)
    if missing_dirs:
        warnings.append(f"{ld.source}: the broker file gives capacities of log directories it does not list "
                        f"({', '.join(missing_dirs[:5])}{', ...' if len(missing_dirs) > 5 else ''}; ignored)")
    return replace(state, size=size, log_dirs=ld.dirs, dirs=dirs)


def parse_broker_ids(text: str, name: str) -> list[int]:
    """Parse a list like ``19`` or ``3,4,5`` into broker ids; errors are under ``name``, the caller's name for the
    list (the command line passes its flag, the library a parameter or field)."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit():
            raise InputError(name, "", "broker ids must be non-negative integers separated by commas", text)
        out.append(int(part))
    if not out:
        raise InputError(name, "", "no broker ids given", text)
    if len(set(out)) != len(out):
        raise InputError(name, "", "a broker id is listed twice", text)
    return out


def mark_removed(state: ClusterState, ids: list[int], name: str = "remove") -> ClusterState:
    """The state with ``ids`` marked as to be removed; unknown ids are an InputError under ``name`` (the caller's
    name for the list: a flag, a field)."""
    for b in ids:
        if not state.brokers.contains(b):
            raise InputError(name, "", "unknown broker (not in the broker file or the assignment)", b)
    brokers = state.brokers.with_removed(ids)
    if not brokers.live.any():
        raise InputError(name, "", "this would remove every broker", ",".join(map(str, ids)))
    return state.with_brokers(brokers)

