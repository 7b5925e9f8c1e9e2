"""Writers for Kafka's files: reassignment JSON (plan and rollback) and the leader-election JSON.

Output is deterministic (partitions sorted by topic then partition, one per line) and written atomically:
every file goes to a temporary name in the same folder first and is renamed only when all are complete.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from ..errors import InputError
from ..model import PAD, ClusterState
from .jsontext import dumps_str


def reassignment_json(state: ClusterState, rows: np.ndarray | None = None, *, log_dirs: bool | None = None) -> str:
    """Kafka reassignment JSON for the partitions in ``rows`` (all when None), in (topic, partition) order."""
    if rows is None:
        rows = np.arange(state.num_partitions)
    rows = np.sort(np.asarray(rows, dtype=np.int64))
    with_dirs = state.had_log_dirs if log_dirs is None else log_dirs
    names = [dumps_str(t) for t in state.topics]
    lines = []
    reps = state.replicas
    for i in rows.tolist():
        row = [int(b) for b in reps[i] if b != PAD]
        rep_text = ",".join(map(str, row))
        line = f'{{"topic":{names[state.topic[i]]},"partition":{int(state.partition[i])},"replicas":[{rep_text}]'
        if with_dirs:
            line += ',"log_dirs":[' + ",".join(['"any"'] * len(row)) + "]"
        lines.append(line + "}")
    return '{"version":1,"partitions":[\n' + ",\n".join(lines) + ("\n" if lines else "") + "]}\n"


def election_json(state: ClusterState, rows: np.ndarray) -> str:
    """``kafka-leader-election --path-to-json-file`` input for the partitions in ``rows``."""
    rows = np.sort(np.asarray(rows, dtype=np.int64))
    names = [dumps_str(t) for t in state.topics]
    lines = [f'{{"topic":{names[state.topic[i]]},"partition":{int(state.partition[i])}}}' for i in rows.tolist()]
    return '{"partitions":[\n' + ",\n".join(lines) + ("\n" if lines else "") + "]}\n"


def check_outputs(outputs: Sequence[str], inputs: Iterable[str]) -> None:
    """Refuse an output that is an input, a duplicate, or in a folder that does not exist."""
    seen: set[str] = set()
    ins = [Path(i) for i in inputs]
    for out in outputs:
        p = Path(out)
        key = str(p.resolve())
        if key in seen:
            raise InputError(out, "", "the same output file is named twice")
        seen.add(key)
        for i in ins:
            if p.resolve() == i.resolve() or (p.exists() and i.exists() and os.path.samefile(p, i)):
                raise InputError(out, "", f"refusing to overwrite an input file ({i})")
        parent = p.resolve().parent
        if not parent.is_dir():
            raise InputError(out, "", "the output folder does not exist", str(parent))
        if p.is_dir():
            raise InputError(out, "", "is a directory")


def write_atomic(files: dict[str, str | bytes], inputs: Iterable[str] = ()) -> None:
    """Write every (path -> text or bytes) or none: temporary files first, renamed once all are written."""
    check_outputs(list(files), inputs)
    temps: list[tuple[str, str]] = []
    try:
        for path, text in files.items():
            folder = str(Path(path).resolve().parent)
            fd, tmp = tempfile.mkstemp(prefix=".flowbalance-", suffix=".tmp", dir=folder)
            temps.append((tmp, path))
            data = text if isinstance(text, bytes) else text.encode("utf-8")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o644)
    except OSError as err:
        for tmp, _ in temps:
            _unlink(tmp)
        raise InputError(temps[-1][1] if temps else "output", "", f"cannot write: {err.strerror or err}") from None
    for tmp, path in temps:
        os.replace(tmp, path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
