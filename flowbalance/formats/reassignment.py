"""Reader for Kafka's reassignment JSON, and for the text printed by ``kafka-reassign-partitions --generate``
(and ``--execute``, which prints the current assignment the same way before it starts a reassignment)."""
from __future__ import annotations

import json

import numpy as np
import orjson

from ..errors import InputError
from .jsontext import parse_json
from .raw import RawAssignment, first_negative, replicas_matrix, validate_raw

CURRENT_MARK = "Current partition replica assignment"
PROPOSED_MARK = "Proposed partition reassignment configuration"
_MAX_ID = 2**31 - 1


def read_reassignment_json(text: str, source: str, *, line_offset: int = 0) -> RawAssignment:
    """Parse ``{"version":1,"partitions":[{"topic","partition","replicas","log_dirs"?}]}``.

    A bare list of partition objects (as some guides show a reassignment file) reads as its ``partitions``.
    """
    return reassignment_from_doc(parse_json(text, source, line_offset=line_offset), source)


def reassignment_from_doc(doc: object, source: str, *, any_log_dirs_length: bool = False) -> RawAssignment:
    """The assignment in an already parsed reassignment document.

    ``any_log_dirs_length``: accept a ``log_dirs`` list of another length than ``replicas`` when every entry is
    ``"any"`` (no preference, so nothing is lost). Kafka's own docs print such a current assignment.
    """
    if isinstance(doc, list):
        parts, prefix, origin = doc, "", "array"
    else:
        if not isinstance(doc, dict):
            raise InputError(source, "top level", "expected a JSON object with a \"partitions\" list",
                             type(doc).__name__)
        if "version" in doc and (type(doc["version"]) is not int or doc["version"] != 1):
            raise InputError(source, "version", "unsupported version (only 1 is known)", doc["version"])
        if "partitions" not in doc:
            raise InputError(source, "partitions", "missing field")
        parts, prefix, origin = doc["partitions"], "partitions", "json"
        if not isinstance(parts, list):
            raise InputError(source, "partitions", "wrong type: expected a list", type(parts).__name__)
    n = len(parts)
    topics: list[str] = [""] * n
    pnum = np.empty(n, dtype=np.int64)
    lengths = np.empty(n, dtype=np.int64)
    flat: list = []
    had_log_dirs = False
    named: dict[int, list[str]] = {}  # rows whose log_dirs name a directory (not all "any")
    for i, e in enumerate(parts):
        at = f"{prefix}[{i}]"
        if type(e) is not dict:
            raise InputError(source, at, "wrong type: expected an object", type(e).__name__)
        try:
            t = e["topic"]
            p = e["partition"]
            reps = e["replicas"]
        except KeyError as missing:
            raise InputError(source, f"{at}.{missing.args[0]}", "missing field") from None
        if type(t) is not str:
            raise InputError(source, f"{at}.topic", "wrong type: expected a string", t, has_value=True)
        if not t:
            raise InputError(source, f"{at}.topic", "empty topic name", t)
        if type(p) is not int and not _huge(p):
            raise InputError(source, f"{at}.partition", "wrong type: expected an integer", p, has_value=True)
        if _huge(p) or not -(2**63) <= p < 2**63:
            raise InputError(source, f"{at}.partition", "partition number out of range (0 .. 2147483647)", p)
        if type(reps) is not list:
            raise InputError(source, f"{at}.replicas", "wrong type: expected a list of broker ids", reps,
                             has_value=True)
        topics[i] = t
        pnum[i] = p
        lengths[i] = len(reps)
        flat.extend(reps)
        dirs = e.get("log_dirs")
        if dirs is not None:
            had_log_dirs = True
            if type(dirs) is not list or not all(type(d) is str for d in dirs):
                raise InputError(source, f"{at}.log_dirs", "wrong type: expected a list of strings", dirs,
                                 has_value=True)
            if len(dirs) != len(reps) and not (any_log_dirs_length and all(d == "any" for d in dirs)):
                raise InputError(source, f"{at}.log_dirs", f"has {len(dirs)} entries but replicas has {len(reps)}",
                                 dirs)
            if any(d != "any" for d in dirs):
                bad = next((d for d in dirs if d != "any" and not d.startswith("/")), None)
                if bad is not None:
                    raise InputError(source, f"{at}.log_dirs", "expected \"any\" or an absolute path", bad)
                named[i] = dirs
    ids = _int_array(flat)
    if ids is None or (len(ids) and (int(ids.min()) < 0 or int(ids.max()) > _MAX_ID)):
        _raise_bad_id(parts, prefix, source)
    raw = RawAssignment(
        source=source,
        topic_names=topics,
        partition=pnum,
        replicas=replicas_matrix(lengths, ids),
        had_log_dirs=had_log_dirs,
        origin=origin,
        origin_pos=np.arange(n, dtype=np.int64),
        log_dir_names=named or None,
    )
    validate_raw(raw)
    return raw


def _raise_bad_id(parts: list, prefix: str, source: str) -> None:
    """Name the first broker id that is not an integer from 0 to 2^31 - 1 (run once a bulk check failed).

    A negative id is refused here, before the lists are packed: -1 is the padding of the replica matrix and
    would otherwise vanish from the list without a word."""
    for i, e in enumerate(parts):
        for v in e["replicas"]:
            if _huge(v):
                raise InputError(source, f"{prefix}[{i}].replicas", "broker id out of range", v)
            if type(v) is not int:
                raise InputError(source, f"{prefix}[{i}].replicas", "broker id must be an integer", v,
                                 has_value=True)
            if v < 0:
                raise InputError(source, f"{prefix}[{i}].replicas", "broker id must not be negative", v)
            if v > _MAX_ID:
                raise InputError(source, f"{prefix}[{i}].replicas", "broker id out of range", v)
    raise AssertionError(f"{source}: a bulk broker id check failed but no id is bad")  # the checks disagree: a bug


def _huge(v: object) -> bool:
    """A whole number beyond 64 bits: orjson reads one as a float (``1e+30`` for thirty 9s)."""
    return type(v) is float and v.is_integer() and abs(v) >= 2**63


def _int_array(values: list) -> np.ndarray | None:
    """Values as int64 if every one is a plain int (not bool, float or string), else None."""
    if not values:
        return np.empty(0, dtype=np.int64)
    try:
        arr = np.array(values)
    except (ValueError, OverflowError, TypeError):
        return None
    if arr.dtype.kind != "i" or arr.ndim != 1:
        return None  # floats, strings, objects (huge ints), nested lists, or bools (kind 'b')
    if any(type(v) is bool for v in values):
        return None
    return arr.astype(np.int64)


def read_generate_output(text: str, source: str) -> RawAssignment:
    """The current assignment in ``kafka-reassign-partitions --generate`` or ``--execute`` output.

    That is the first JSON value after the "Current partition replica assignment" line; what follows it (the
    proposed configuration, "Save this to use as the --reassignment-json-file option during rollback",
    "Successfully started partition reassignment(s) for ...") is ignored.
    """
    at = text.find(CURRENT_MARK)
    if at < 0:
        raise InputError(source, "", f"no \"{CURRENT_MARK}\" line found")
    start = text.find("{", at)
    if start < 0 or PROPOSED_MARK in text[at:start]:  # not the proposed configuration instead
        raise InputError(source, "", f"no JSON after \"{CURRENT_MARK}\"")
    doc = _first_json_value(text, start, source)
    return reassignment_from_doc(doc, source, any_log_dirs_length=True)


def _first_json_value(text: str, start: int, source: str) -> object:
    """The JSON value that starts at ``text[start]``, ignoring whatever text follows it.

    orjson reads the usual case (the value up to the next known line, or up to where orjson says unexpected
    content begins); the standard library's ``raw_decode`` settles the rest and places errors by line and column
    of the whole text."""
    end = text.find(PROPOSED_MARK, start)
    body = text[start:end] if end >= 0 else text[start:]
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as err:
        cut = err.pos if isinstance(err.pos, int) and 0 < err.pos < len(body) else None
    if cut is not None:
        try:
            return orjson.loads(body[:cut])
        except orjson.JSONDecodeError:
            pass
    try:
        return json.JSONDecoder().raw_decode(text, start)[0]
    except json.JSONDecodeError as err:
        line = text.count("\n", 0, err.pos) + 1
        column = err.pos - (text.rfind("\n", 0, err.pos) + 1) + 1
        raise InputError(source, f"line {line} column {column}", f"malformed JSON: {err.msg}") from None
    except RecursionError:
        raise InputError(source, "", "malformed JSON: nested too deeply") from None
    except ValueError:  # not a JSONDecodeError: an integer of more than 4300 digits
        raise InputError(source, "", "malformed JSON: a number is too long") from None
