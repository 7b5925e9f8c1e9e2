"""A planning request (remove, add, replace, RF changes, topic filters) from command-line text or a fleet file,
as the keyword arguments of ``flowbalance.plan.plan``. One parser for the CLI and the fleet pipeline."""
from __future__ import annotations

from typing import Any, Mapping

from .errors import InputError
from .load import parse_broker_ids

FLEET_KEYS = ("remove", "add", "replace", "replication_factor", "topic_rf", "topics", "exclude_topics", "per_topic",
              "strategy", "objective", "balance", "disk_tolerance")
# how a cluster's files are read (used at ingest, not passed to plan())
INPUT_KEYS = ("current", "brokers", "sizes", "format", "disable_rack_aware", "from_target", "move_unhealthy")


def parse_replace(text: str | None, flag: str = "--replace") -> dict[int, int]:
    """``7:31,8:32`` -> {7: 31, 8: 32}."""
    out: dict[int, int] = {}
    if not text:
        return out
    for pair in text.split(","):
        old, sep, new = pair.strip().partition(":")
        if not sep or not old.strip().isdigit() or not new.strip().isdigit():
            raise InputError(flag, "", "expected OLD:NEW[,OLD:NEW...] with broker ids", text)
        if int(old) in out:
            raise InputError(flag, "", "a broker is replaced twice", text)
        out[int(old)] = int(new)
    if len(set(out.values())) != len(out):
        raise InputError(flag, "", "two brokers are replaced by the same broker", text)
    return out


def parse_topic_rf(items: list[str], flag: str = "--topic-rf") -> dict[str, int]:
    """``["orders=3", "clicks=2"]`` -> {"orders": 3, "clicks": 2}."""
    out: dict[str, int] = {}
    for it in items:
        topic, sep, k = it.rpartition("=")
        if not sep or not topic or not k.strip().isdigit():
            raise InputError(flag, "", "expected TOPIC=N", it)
        out[topic] = int(k)
    return out


def plan_request(remove=None, add=None, replace=None, replication_factor=None, topic_rf=None, topics=None,
                 exclude_topics=None, no_per_topic=False) -> dict:
    """The keyword arguments of ``plan()`` from the command-line options (strings as typed)."""
    if replication_factor is not None and topic_rf:
        raise InputError("--replication-factor", "", "use either --replication-factor or --topic-rf, not both")
    rf = replication_factor if replication_factor is not None else (parse_topic_rf(topic_rf) if topic_rf else None)
    if isinstance(rf, int) and rf < 1:
        raise InputError("--replication-factor", "", "must be at least 1", rf)
    return dict(
        remove=parse_broker_ids(remove, "--remove") if remove else (),
        add=parse_broker_ids(add, "--add") if add else (),
        replace=parse_replace(replace),
        replication_factor=rf,
        topics=topics,
        exclude_topics=exclude_topics,
        per_topic=not no_per_topic,
    )


def _ids(value: Any, key: str, source: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(type(x) is int and x >= 0 for x in value):
        return ",".join(map(str, value))
    raise InputError(source, key, "expected a list of broker ids or a text like \"3,4\"", value)


def fleet_request(req: Mapping[str, Any], source: str) -> dict:
    """``plan()`` keyword arguments from one cluster's entry in a fleet file (JSON values), with ``strategy``.

    ``remove``/``add``: [ids] or "3,4"; ``replace``: {"7": 31} or "7:31"; ``replication_factor``: int;
    ``topic_rf``: {"topic": n}; ``topics``/``exclude_topics``: regex; ``per_topic``: bool; ``strategy``;
    ``objective`` / ``balance`` / ``disk_tolerance`` as the plan flags (sizes from the dump or --sizes-from-metrics)."""
    unknown = sorted(set(req) - set(FLEET_KEYS) - set(INPUT_KEYS))
    if unknown:
        raise InputError(source, unknown[0], f"unknown key (choose from {', '.join(FLEET_KEYS + INPUT_KEYS)})")
    for key in ("from_target", "move_unhealthy", "disable_rack_aware"):
        if type(req.get(key, False)) is not bool:
            raise InputError(source, key, "expected true or false", req[key])
    rep = req.get("replace")
    if isinstance(rep, dict):
        try:
            rep = ",".join(f"{int(k)}:{int(v)}" for k, v in rep.items())
        except (TypeError, ValueError):
            raise InputError(source, "replace", "expected {\"old\": new} with broker ids", rep) from None
    trf = req.get("topic_rf")
    if trf is not None:
        if not isinstance(trf, dict):
            raise InputError(source, "topic_rf", "expected {\"topic\": n}", trf)
        trf = [f"{k}={v}" for k, v in trf.items()]
    rf = req.get("replication_factor")
    if rf is not None and type(rf) is not int:
        raise InputError(source, "replication_factor", "expected an integer", rf)
    per_topic = req.get("per_topic", True)
    if type(per_topic) is not bool:
        raise InputError(source, "per_topic", "expected true or false", per_topic)
    out = plan_request(_ids(req.get("remove"), "remove", source), _ids(req.get("add"), "add", source), rep, rf, trf,
                       req.get("topics"), req.get("exclude_topics"), not per_topic)
    out["strategy"] = req.get("strategy", "flow")
    for key, default in (("objective", "moves"), ("balance", "count")):
        v = req.get(key, default)
        if not isinstance(v, str):
            raise InputError(source, key, "expected a text", v)
        out[key] = v
    tol = req.get("disk_tolerance", 1.05)
    if isinstance(tol, bool) or not isinstance(tol, (int, float)):
        raise InputError(source, "disk_tolerance", "expected a number", tol)
    out["disk_tolerance"] = float(tol)
    return out
