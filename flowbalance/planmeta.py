"""The sidecar of a written plan (``plan.json`` → ``plan.meta.json``): what the plan was made from and for.

It records, beside the plan, every partition's replica list as it was read when the plan was made (the input
fingerprint: the lists themselves, in canonical (topic, partition) order, with their SHA-256), the request, the
tool version, the time, and a SHA-256 of the plan's own targets (so a sidecar is never read beside another plan).
``flowbalance.tracking`` compares a later dump with it: which planned partitions are done, in flight, not started
or changed by someone else, and whether the plan is stale.

The sidecar is written in the plan's own folder (its name is the plan's with ``.json`` replaced by ``.meta.json``,
or ``.meta.json`` appended), atomically with the plan when given to the same ``write_atomic``. Reading it checks
every field: a malformed, truncated, foreign or damaged sidecar is one ``InputError`` naming it, the field and the
value. Everything but ``created`` is deterministic.
"""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError, RequestError
from .formats.jsontext import parse_json
from .formats.raw import RawAssignment, topic_name_problem
from .model import PAD, ClusterState
from .request import PlanRequest

KIND = "flowbalance plan meta"
VERSION = 1
_MAX_ID = 2**31 - 1


def sidecar_path(plan_path: str | os.PathLike) -> str:
    """``plan.json`` → ``plan.meta.json`` (``plan`` → ``plan.meta.json``), in the plan's folder."""
    p = Path(plan_path)
    name = p.name[: -len(".json")] if p.name.endswith(".json") and len(p.name) > len(".json") else p.name
    return str(p.with_name(name + ".meta.json"))


@dataclass(frozen=True, eq=False)
class PlanMeta:
    """A sidecar as read: the assignment the plan was made from (canonical order) and what it was made for."""

    source: str  # the sidecar's path
    tool_version: str
    created: str
    plan: str  # the plan file's name when written
    plan_sha256: str
    current: str  # the CURRENT file the plan was made from, as named then
    request: PlanRequest
    topics: tuple[str, ...]  # sorted
    topic: np.ndarray  # int32 [P], index into topics
    partition: np.ndarray  # int32 [P]
    replicas: np.ndarray  # int32 [P, W], PAD padded
    assignment_sha256: str


# ---- fingerprints ----------------------------------------------------------------------------------------


def assignment_sha256(topics: tuple[str, ...] | list[str], topic: np.ndarray, partition: np.ndarray,
                      replicas: np.ndarray) -> str:
    """SHA-256 of the topic names, each partition's (topic, partition) and its replica list in order (trailing
    padding ignored): the same for the same assignment, whatever it was read from."""
    reps = np.asarray(replicas, dtype="<i8")
    rf = (reps != PAD).sum(axis=1).astype("<i8") if reps.size else np.zeros(len(topic), dtype="<i8")
    digest = hashlib.sha256()
    digest.update("\n".join(topics).encode("utf-8") + b"\0")
    digest.update(np.asarray(topic, dtype="<i8").tobytes())
    digest.update(np.asarray(partition, dtype="<i8").tobytes())
    digest.update(rf.tobytes())
    digest.update(reps[reps != PAD].astype("<i8").tobytes())
    return digest.hexdigest()


def canonical(topic_names: list[str] | tuple[str, ...], partition: np.ndarray, replicas: np.ndarray):
    """(sorted topics, topic index, partition, replicas) of per-row data, sorted by (topic name, partition)."""
    topics, tidx, order = ClusterState.canonical_order(list(topic_names), partition)
    return (tuple(str(t) for t in topics), np.asarray(tidx)[order].astype(np.int32),
            np.asarray(partition, dtype=np.int64)[order].astype(np.int32), np.asarray(replicas)[order])


def rows_sha256(state: ClusterState, rows: np.ndarray | None = None) -> str:
    """:func:`plan_sha256` of the plan file ``formats.writers.reassignment_json(state, rows)`` writes, from the
    arrays instead of parsing the text back (the same digest: the same topics, partitions and lists)."""
    rows = np.arange(state.num_partitions) if rows is None else np.asarray(rows, dtype=np.int64)
    if not len(rows):
        return assignment_sha256((), np.zeros(0), np.zeros(0), np.zeros((0, 1)))
    tidx = state.topic[rows]
    names = np.asarray(state.topics, dtype=object)[tidx].tolist()
    return assignment_sha256(*canonical(names, state.partition[rows], state.replicas[rows]))


def plan_sha256(raw: RawAssignment) -> str:
    """SHA-256 of a plan's targets (topic, partition, replica list of every partition it lists): the same for the
    same plan whatever its formatting, order of lines or ``log_dirs``."""
    return assignment_sha256(*canonical(raw.topic_names, raw.partition, raw.replicas))


# ---- the request -----------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, (tuple, list)) else value


def _tupled(value: Any) -> Any:
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


def request_json(request: PlanRequest) -> dict[str, Any]:
    """Every field of ``request`` as plain JSON (tuples as lists), in field order."""
    return {f.name: _plain(getattr(request, f.name)) for f in fields(PlanRequest)}


def request_from_json(doc: Any, source: str) -> PlanRequest:
    """The ``request`` object of a sidecar as a validated ``PlanRequest`` (errors under ``source: request.FIELD``)."""
    if not isinstance(doc, dict):
        raise InputError(source, "request", "wrong type: expected an object", type(doc).__name__)
    known = {f.name for f in fields(PlanRequest)}
    unknown = sorted(set(doc) - known)
    if unknown:
        raise InputError(source, f"request.{unknown[0]}", "unknown request field (a sidecar of another version?)")
    try:
        return PlanRequest(**{k: _tupled(v) for k, v in doc.items()}).validate()
    except RequestError as err:
        raise InputError(source, f"request.{err.place}", err.message, err.value, has_value=err.has_value) from None
    except (TypeError, ValueError) as err:  # a value of a type the request cannot even hold
        raise InputError(source, "request", f"malformed request ({err})") from None


# ---- writing ---------------------------------------------------------------------------------------------


def sidecar_text(plan_path: str | os.PathLike, state: ClusterState, request: PlanRequest, plan_text: str, *,
                 current: str = "CURRENT", created: str | None = None, plan_sha: str | None = None) -> str:
    """The sidecar's JSON text for the plan ``plan_text`` (what is written at ``plan_path``) made from ``state``
    (the assignment planned from, e.g. ``Plan.before``) for ``request``. ``created``: an ISO time (UTC, now by
    default). ``plan_sha``: the plan's :func:`plan_sha256` when the caller has it from the arrays
    (:func:`rows_sha256`); otherwise the text is parsed for it."""
    import orjson

    from . import __version__

    targets = plan_sha if plan_sha is not None else plan_text_sha256(plan_text, str(plan_path))
    reps = np.asarray(state.replicas)
    rf = (reps != PAD).sum(axis=1)
    doc = {
        "kind": KIND,
        "version": VERSION,
        "tool_version": __version__,
        "created": created or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "plan": Path(plan_path).name,
        "plan_sha256": targets,
        "current": str(current),
        "request": request_json(request),
        "assignment": {
            "partitions": int(state.num_partitions),
            "replica_count": int(rf.sum()),
            "sha256": assignment_sha256(state.topics, state.topic, state.partition, reps),
            "topics": list(state.topics),
            "topic": state.topic.astype(np.int64).tolist(),
            "partition": state.partition.astype(np.int64).tolist(),
            "rf": rf.astype(np.int64).tolist(),
            "replicas": reps[reps != PAD].astype(np.int64).tolist(),
        },
    }
    head = {k: v for k, v in doc.items() if k != "assignment"}
    a = doc["assignment"]
    # one field per line: readable, and diffable, without one huge line per list
    lines = [orjson.dumps(head).decode()[:-1] + ',"assignment":{']
    keys = list(a)
    for i, k in enumerate(keys):
        lines.append(f"{orjson.dumps(k).decode()}:{orjson.dumps(a[k]).decode()}" + ("," if i < len(keys) - 1 else ""))
    return "\n".join(lines) + "\n}}\n"


def sidecar_files(plan_path: str | os.PathLike, state: ClusterState, request: PlanRequest, plan_text: str, *,
                  current: str = "CURRENT", created: str | None = None, plan_sha: str | None = None
                  ) -> dict[str, str]:
    """``{sidecar path: text}``, to write together with the plan (``write_atomic({plan: text, **this})``)."""
    return {sidecar_path(plan_path): sidecar_text(plan_path, state, request, plan_text, current=current,
                                                  created=created, plan_sha=plan_sha)}


def write_sidecar(plan_path: str | os.PathLike, state: ClusterState, request: PlanRequest, plan_text: str, *,
                  current: str = "CURRENT", inputs: tuple[str, ...] = (), created: str | None = None) -> str:
    """Write the sidecar of the plan at ``plan_path`` atomically (never over an input); return its path."""
    from .formats.writers import write_atomic

    files = sidecar_files(plan_path, state, request, plan_text, current=current, created=created)
    write_atomic(files, inputs)
    return next(iter(files))


# ---- reading ---------------------------------------------------------------------------------------------


def find_sidecar(plan_path: str | os.PathLike) -> str | None:
    """The sidecar's path when one exists beside the plan, else None."""
    path = sidecar_path(plan_path)
    return path if os.path.lexists(path) else None


def read_sidecar(path: str | os.PathLike, plan_sha: str | None = None, plan_source: str = "the plan") -> PlanMeta:
    """Read and check the sidecar at ``path``; with ``plan_sha`` (:func:`plan_sha256` of the plan file read from
    ``plan_source``) also that it belongs to that plan. Every problem is one ``InputError`` naming the file, the
    field and the value."""
    from .load import read_text

    source = str(path)
    return sidecar_from_text(read_text(source), source, plan_sha, plan_source)


def _want(cond: bool, source: str, place: str, message: str, value: Any = None, *, has_value: bool | None = None):
    if not cond:
        raise InputError(source, place, message, value, has_value=has_value)


def _int_list(doc: dict, key: str, source: str, lo: int, hi: int) -> np.ndarray:
    v = doc.get(key)
    place = f"assignment.{key}"
    _want(isinstance(v, list), source, place, "wrong type: expected a list of integers", type(v).__name__)
    bad = next((i for i, x in enumerate(v) if type(x) is not int or not lo <= x <= hi), None)
    if bad is not None:
        raise InputError(source, f"{place}[{bad}]", f"expected an integer from {lo} to {hi}", v[bad])
    return np.asarray(v, dtype=np.int64).reshape(len(v))


def sidecar_from_text(text: str, source: str, plan_sha: str | None = None, plan_source: str = "the plan") -> PlanMeta:
    """Like :func:`read_sidecar`, from the file's text."""
    doc = parse_json(text, source)
    _want(isinstance(doc, dict), source, "top level", "expected a JSON object (a plan sidecar)", type(doc).__name__)
    _want(doc.get("kind") == KIND, source, "kind", f"not a flowbalance plan sidecar (expected {KIND!r})",
          doc.get("kind"), has_value=True)
    _want(type(doc.get("version")) is int and doc["version"] == VERSION, source, "version",
          f"unsupported version (only {VERSION} is known)", doc.get("version"), has_value=True)
    for key in ("tool_version", "created", "plan", "plan_sha256", "current"):
        _want(isinstance(doc.get(key), str), source, key, "missing or not a text", doc.get(key), has_value=True)
    request = request_from_json(doc.get("request"), source)
    a = doc.get("assignment")
    _want(isinstance(a, dict), source, "assignment", "missing or not an object", type(a).__name__)
    topics = a.get("topics")
    _want(isinstance(topics, list) and all(isinstance(t, str) for t in topics), source, "assignment.topics",
          "expected a list of topic names", None if isinstance(topics, list) else topics,
          has_value=not isinstance(topics, list))
    for i, t in enumerate(topics):
        problem = topic_name_problem(t)
        _want(problem is None, source, f"assignment.topics[{i}]", problem or "", t)
        _want(i == 0 or topics[i - 1] < t, source, f"assignment.topics[{i}]", "topics not sorted or listed twice", t)
    topic = _int_list(a, "topic", source, 0, max(len(topics) - 1, 0))
    partition = _int_list(a, "partition", source, 0, _MAX_ID)
    rf = _int_list(a, "rf", source, 1, 10_000)
    flat = _int_list(a, "replicas", source, 0, _MAX_ID)
    n = len(topic)
    _want(len(partition) == n and len(rf) == n, source, "assignment",
          "topic, partition and rf must be equally long", [n, len(partition), len(rf)])
    _want(n > 0 or not topics, source, "assignment.topic", "no partitions but topics are listed")
    _want(int(rf.sum()) == len(flat), source, "assignment.replicas", "not as long as the rf values add up to",
          [len(flat), int(rf.sum())])
    _want(a.get("partitions") == n and a.get("replica_count") == len(flat), source, "assignment.partitions",
          "the counts do not match the lists", [a.get("partitions"), a.get("replica_count")])
    key = (topic << 32) | partition
    if n > 1:
        step = np.flatnonzero(key[1:] <= key[:-1])
        if len(step):
            i = int(step[0]) + 1
            raise InputError(source, f"assignment.partition[{i}]", "partitions not in (topic, partition) order "
                             "or listed twice", f"{topics[int(topic[i])]}-{int(partition[i])}")
    from .formats.raw import replicas_matrix

    reps = replicas_matrix(rf, flat)
    srt = np.sort(reps, axis=1)
    dup = np.flatnonzero(((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] != PAD)).any(axis=1)) if n else []
    if len(dup):
        i = int(dup[0])
        raise InputError(source, f"assignment (partition {topics[int(topic[i])]}-{int(partition[i])})",
                         "a broker appears twice in one replica list", [int(b) for b in reps[i] if b != PAD])
    topics_t = tuple(topics)
    digest = assignment_sha256(topics_t, topic, partition, reps)
    _want(a.get("sha256") == digest, source, "assignment.sha256",
          "does not match the assignment (the sidecar was edited or damaged)", a.get("sha256"), has_value=True)
    meta = PlanMeta(source=source, tool_version=doc["tool_version"], created=doc["created"], plan=doc["plan"],
                    plan_sha256=doc["plan_sha256"], current=doc["current"], request=request, topics=topics_t,
                    topic=topic.astype(np.int32), partition=partition.astype(np.int32),
                    replicas=reps.astype(np.int32), assignment_sha256=digest)
    if plan_sha is not None and plan_sha != meta.plan_sha256:
        raise InputError(source, "plan_sha256", f"belongs to another plan than {plan_source} (the plan was edited "
                         "or replaced after it was written): remove the sidecar to use the plan without the "
                         "staleness check")
    return meta


def read_plan_raw(text: str, source: str) -> RawAssignment | None:
    """A plan file's partitions as listed (None for an empty ``partitions`` list)."""
    from .formats.reassignment import read_reassignment_json

    try:
        return read_reassignment_json(text, source)
    except InputError as err:
        if err.place == "partitions" and err.message.startswith("no partitions"):
            return None
        raise


def plan_text_sha256(text: str, source: str) -> str:
    """:func:`plan_sha256` of a plan file's text (an empty plan has one too)."""
    raw = read_plan_raw(text, source)
    if raw is None:
        return assignment_sha256((), np.zeros(0), np.zeros(0), np.zeros((0, 1)))
    return plan_sha256(raw)
