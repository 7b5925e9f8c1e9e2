"""Reader for ``kafka-topics --describe`` text: one line per partition; per-topic header lines are skipped."""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from .raw import RawAssignment, replicas_matrix, validate_raw


def read_describe(text: str, source: str) -> RawAssignment:
    """Parse lines ``Topic: t<TAB>Partition: 0<TAB>Leader: 1<TAB>Replicas: 1,2,3<TAB>Isr: 1,2,3[...]``."""
    topics: list[str] = []
    pnums: list[int] = []
    lengths: list[int] = []
    flat: list[int] = []
    lines: list[int] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if "Partition:" not in line or "Replicas:" not in line:
            continue  # topic header ("PartitionCount: ...") or unrelated line
        fields = {}
        for chunk in line.strip().split("\t"):
            key, sep, value = chunk.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        if "Topic" not in fields:
            raise InputError(source, f"line {lineno}", "missing field Topic", line.strip())
        topic = fields["Topic"]
        if not topic:
            raise InputError(source, f"line {lineno}: Topic", "empty topic name", topic)
        praw = fields.get("Partition", "")
        try:
            p = int(praw)
        except ValueError:
            raise InputError(source, f"line {lineno}: Partition", "expected an integer", praw) from None
        rraw = fields.get("Replicas", "")
        if rraw == "":
            reps = []
        else:
            try:
                reps = [int(x) for x in rraw.split(",")]
            except ValueError:
                raise InputError(source, f"line {lineno}: Replicas", "broker ids must be integers", rraw) from None
        topics.append(topic)
        pnums.append(p)
        lengths.append(len(reps))
        flat.extend(reps)
        lines.append(lineno)
    if not topics:
        raise InputError(source, "", "no partition lines (\"Topic: ... Partition: ... Replicas: ...\") found")
    raw = RawAssignment(
        source=source,
        topic_names=topics,
        partition=np.asarray(pnums, dtype=np.int64),
        replicas=replicas_matrix(lengths, flat),
        had_log_dirs=False,
        origin="line",
        origin_pos=np.asarray(lines, dtype=np.int64),
    )
    validate_raw(raw)
    return raw
