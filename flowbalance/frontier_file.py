"""A saved frontier (what ``flowbalance frontier --json`` printed), read back for ``flowbalance report --frontier``.

``read_frontier(path, state)`` parses the file, checks every field the page draws (type and range, so a hand-edited
or truncated file ends in one line naming the file, the field and the value, never in a traceback or a broken
page), and checks that the frontier was planned for ``state``: its ``cluster`` fingerprint
(``frontier.cluster_fingerprint``) must equal the one of the cluster the report reads. Nothing is re-planned.
"""
from __future__ import annotations

import math
import os
from typing import Any, Callable

from .errors import InputError
from .formats.jsontext import parse_json
from .frontier import KIND, STRICT, VERSION, cluster_fingerprint
from .model import ClusterState

LIMIT = 10 ** 15  # far above any count of replicas, moves or bytes a cluster has; keeps the chart's arithmetic finite

Check = Callable[[Any], str | None]  # None when the value fits, else what was expected


def _count(v: Any) -> str | None:
    ok = isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= LIMIT
    return None if ok else "a whole number from 0"


def _amount(v: Any) -> str | None:
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= LIMIT
    return None if ok else "a number from 0"


def _text(v: Any) -> str | None:
    return None if isinstance(v, str) else "text"


def _flag(v: Any) -> str | None:
    return None if isinstance(v, bool) else "true or false"


def _plain(v: Any) -> str | None:
    """A request value: text, a number, true/false or null, or a list of them (nested once: replace's pairs)."""
    def scalar(x: Any) -> bool:
        return x is None or isinstance(x, (str, bool, int)) or (isinstance(x, float) and math.isfinite(x))
    ok = scalar(v) or isinstance(v, list) and all(scalar(x) or isinstance(x, list) and all(map(scalar, x)) for x in v)
    return None if ok else "text, a number or a list of them"


def _maybe(check: Check) -> Check:
    return lambda v: None if v is None else (None if check(v) is None else f"null or {check(v)}")


CURRENT = {"brokers": _count, "partitions": _count, "replicas": _count, "topic_spread": _amount,
           "failover_worst_spread": _amount, "rack_failover_worst_spread": _maybe(_amount),
           "replica_spread": _amount, "leader_spread": _amount}
ANY_POINT = {"label": _text, "usable": _flag, "budget_moves": _maybe(_count), "reason": _maybe(_text)}
PLANNED = {"moves": _count, "extra_moves_spent": _maybe(_count), "proven_optimal": _flag,
           "bytes_to_move": _maybe(_count), "topic_spread": _amount, "failover_worst_spread": _amount,
           "rack_failover_worst_spread": _maybe(_amount), "replica_spread": _amount, "leader_spread": _amount,
           "seconds": _amount, "verdict": _text, "budget_note": _maybe(_text)}
PER_TOPIC = {"text": _text, "worst_topic": _maybe(_text)}
CLUSTER = {"partitions": _count, "replicas": _count, "topics": _count,
           "brokers": lambda v: None if isinstance(v, list) and all(_count(b) is None for b in v) else
           "a list of broker ids", "assignment_sha256": _text}


def read_frontier(path: str | os.PathLike, state: ClusterState, *, current_source: str = "CURRENT") -> dict:
    """The frontier saved at ``path``, checked field by field and against ``state`` (the cluster it is drawn
    beside, read from ``current_source``). One-line ``InputError`` naming ``path``, the field and the value."""
    from .load import read_text

    source = str(path)
    data = parse_json(read_text(source), source)
    check_frontier(data, source)
    check_cluster(data["cluster"], cluster_fingerprint(state), source, current_source)
    return data


def check_frontier(data: Any, source: str) -> None:
    """Every field the frontier's page and table read, by type and range (see the module docstring)."""
    _object(data, source, "", "a JSON object (the frontier command's JSON output)")
    if data.get("kind") != KIND:
        raise InputError(source, "kind", f"not a frontier: expected {KIND!r} (the frontier command's JSON "
                                         "output)", data.get("kind"), has_value=True)
    if data.get("version") != VERSION:
        raise InputError(source, "version", f"unknown frontier version (this flowbalance reads {VERSION})",
                         data.get("version"), has_value=True)
    _fields(data, {"scope_replicas": _count, "seconds": _amount}, source, "")
    _fields(_object(data.get("cluster"), source, "cluster"), CLUSTER, source, "cluster.")
    request = _object(data.get("request"), source, "request")
    _fields(request, dict.fromkeys(request, _plain), source, "request.")
    _fields(_object(data.get("current"), source, "current"), CURRENT, source, "current.")
    points = data.get("points")
    if not isinstance(points, list) or not points:
        raise InputError(source, "points", "expected a non-empty list of points", points, has_value=True)
    for i, p in enumerate(points):
        _point(p, source, f"points[{i}]")
    labels = [p["label"] for p in points]
    for i, label in enumerate(labels):
        if label in labels[:i]:
            raise InputError(source, f"points[{i}].label", "a point is listed twice", label)
    if not any(p["usable"] for p in points):
        raise InputError(source, "points", "no point was planned: nothing to draw")


def _point(p: Any, source: str, place: str) -> None:
    """One point: its budget and whether it was planned; a planned one its numbers and verdict, an unplanned
    one its reason."""
    _fields(_object(p, source, place), ANY_POINT, source, f"{place}.")
    if not p["usable"]:
        if p["reason"] is None:
            raise InputError(source, f"{place}.reason", "a point not planned needs its reason", None, has_value=True)
        return
    _fields(p, PLANNED, source, f"{place}.")
    if p["label"] != STRICT and p["budget_moves"] is None:
        raise InputError(source, f"{place}.budget_moves", "a budget point needs its budget in moves", None,
                         has_value=True)
    if p.get("per_topic") is not None:
        _fields(_object(p["per_topic"], source, f"{place}.per_topic"), PER_TOPIC, source, f"{place}.per_topic.")
    elif "per_topic" not in p:
        raise InputError(source, f"{place}.per_topic", "missing field")


def _object(v: Any, source: str, place: str, what: str = "a JSON object") -> dict:
    if not isinstance(v, dict):
        raise InputError(source, place, f"expected {what}", v, has_value=True)
    return v


def _fields(obj: dict, checks: dict[str, Check], source: str, prefix: str) -> None:
    for key, check in checks.items():
        if key not in obj:
            raise InputError(source, prefix + key, "missing field")
        wrong = check(obj[key])
        if wrong is not None:
            raise InputError(source, prefix + key, f"expected {wrong}", obj[key], has_value=True)


def check_cluster(saved: dict, now: dict, source: str, current_source: str) -> None:
    """The saved fingerprint against the current cluster's: the first field that differs, with both values."""
    for key in ("partitions", "replicas", "topics"):
        if saved[key] != now[key]:
            raise InputError(source, f"cluster.{key}", f"the frontier was planned for another cluster: "
                                                       f"{current_source} has {now[key]:,}", saved[key])
    if saved["brokers"] != now["brokers"]:
        extra = sorted(set(saved["brokers"]) - set(now["brokers"]))
        missing = sorted(set(now["brokers"]) - set(saved["brokers"]))
        what = (f"broker {extra[0]} holds no replica in {current_source}" if extra else
                f"broker {missing[0]} of {current_source} is missing" if missing else "broker ids differ")
        raise InputError(source, "cluster.brokers", f"the frontier was planned for another cluster: {what}",
                         saved["brokers"])
    if saved["assignment_sha256"] != now["assignment_sha256"]:
        raise InputError(source, "cluster.assignment_sha256",
                         f"the frontier was planned for another assignment: {current_source}'s replica lists hash "
                         f"to {now['assignment_sha256'][:16]}…", saved["assignment_sha256"])
