"""Reader for Kafka's reassignment JSON, and for the text printed by ``kafka-reassign-partitions --generate``."""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from .jsontext import parse_json
from .raw import RawAssignment, replicas_matrix, validate_raw

CURRENT_MARK = "Current partition replica assignment"
PROPOSED_MARK = "Proposed partition reassignment configuration"


def read_reassignment_json(text: str, source: str, *, line_offset: int = 0) -> RawAssignment:
    """Parse ``{"version":1,"partitions":[{"topic","partition","replicas","log_dirs"?}]}``."""
    doc = parse_json(text, source, line_offset=line_offset)
    if not isinstance(doc, dict):
        raise InputError(source, "top level", "expected a JSON object with a \"partitions\" list", type(doc).__name__)
    if "version" in doc and (type(doc["version"]) is not int or doc["version"] != 1):
        raise InputError(source, "version", "unsupported version (only 1 is known)", doc["version"])
    if "partitions" not in doc:
        raise InputError(source, "partitions", "missing field")
    parts = doc["partitions"]
    if not isinstance(parts, list):
        raise InputError(source, "partitions", "wrong type: expected a list", type(parts).__name__)
    n = len(parts)
    topics: list[str] = [""] * n
    pnum = np.empty(n, dtype=np.int64)
    lengths = np.empty(n, dtype=np.int64)
    flat: list = []
    had_log_dirs = False
    for i, e in enumerate(parts):
        if type(e) is not dict:
            raise InputError(source, f"partitions[{i}]", "wrong type: expected an object", type(e).__name__)
        try:
            t = e["topic"]
            p = e["partition"]
            reps = e["replicas"]
        except KeyError as missing:
            raise InputError(source, f"partitions[{i}].{missing.args[0]}", "missing field") from None
        if type(t) is not str:
            raise InputError(source, f"partitions[{i}].topic", "wrong type: expected a string", t)
        if not t:
            raise InputError(source, f"partitions[{i}].topic", "empty topic name", t)
        if type(p) is not int:
            raise InputError(source, f"partitions[{i}].partition", "wrong type: expected an integer", p)
        if type(reps) is not list:
            raise InputError(source, f"partitions[{i}].replicas", "wrong type: expected a list of broker ids", reps)
        topics[i] = t
        pnum[i] = p
        lengths[i] = len(reps)
        flat.extend(reps)
        dirs = e.get("log_dirs")
        if dirs is not None:
            had_log_dirs = True
            if type(dirs) is not list or not all(type(d) is str for d in dirs):
                raise InputError(source, f"partitions[{i}].log_dirs", "wrong type: expected a list of strings", dirs)
            if len(dirs) != len(reps):
                raise InputError(
                    source, f"partitions[{i}].log_dirs",
                    f"has {len(dirs)} entries but replicas has {len(reps)}", dirs,
                )
    ids = _int_array(flat)
    if ids is None:
        # find the first offending broker id for a precise message
        for i, e in enumerate(parts):
            for v in e["replicas"]:
                if type(v) is not int:
                    raise InputError(source, f"partitions[{i}].replicas", "broker id must be an integer", v)
                if not -(2**31) <= v < 2**31:
                    raise InputError(source, f"partitions[{i}].replicas", "broker id out of range", v)
    raw = RawAssignment(
        source=source,
        topic_names=topics,
        partition=pnum,
        replicas=replicas_matrix(lengths, ids),
        had_log_dirs=had_log_dirs,
        origin="json",
        origin_pos=np.arange(n, dtype=np.int64),
    )
    validate_raw(raw)
    return raw


def _int_array(values: list) -> np.ndarray | None:
    """Values as int64 if every one is a plain int (not bool, float or string), else None."""
    if not values:
        return np.empty(0, dtype=np.int64)
    try:
        arr = np.array(values)
    except (ValueError, OverflowError):
        return None
    if arr.dtype.kind != "i":
        return None  # floats, strings, objects (huge ints), or bools (kind 'b')
    if any(type(v) is bool for v in values):
        return None
    return arr.astype(np.int64)


def read_generate_output(text: str, source: str) -> RawAssignment:
    """Parse the JSON that follows "Current partition replica assignment" in ``--generate`` output."""
    at = text.find(CURRENT_MARK)
    if at < 0:
        raise InputError(source, "", f"no \"{CURRENT_MARK}\" line found")
    start = text.find("{", at)
    if start < 0:
        raise InputError(source, "", f"no JSON after \"{CURRENT_MARK}\"")
    end = text.find(PROPOSED_MARK, start)
    body = text[start:end] if end >= 0 else text[start:]
    line_offset = text.count("\n", 0, start)
    return read_reassignment_json(body, source, line_offset=line_offset)
