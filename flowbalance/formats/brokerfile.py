"""Reader for broker files: JSON (a list of objects, or {"id": "rack"}) or CSV
``id,rack[,weight][,capacity_bytes][,state][,log_dirs]``.

``state``: ``live`` (default), ``removed`` (to empty and take out) or ``no-new-replicas`` (keeps its replicas,
receives none: fenced, cordoned, drained slowly or full). ``log_dirs``: the capacities of the broker's log
directories (JBOD), in JSON ``{"/data/d1": 1000000000000, ...}``, in CSV ``/data/d1=1000000000000;/data/d2=...``.
"""
from __future__ import annotations

import math
from dataclasses import replace

from ..errors import InputError
from ..model import Brokers
from .csvrows import csv_rows
from .jsontext import parse_json

# state → (removed, closed to new replicas)
_STATES = {"live": (False, False), "removed": (True, False), "remove": (True, False),
           "no-new-replicas": (False, True)}
_STATE_TEXT = 'state must be "live", "removed" or "no-new-replicas"'


def _state(value: object, source: str, place: str) -> tuple[bool, bool]:
    if value is None or value == "":
        return _STATES["live"]
    if type(value) is not str or value.strip() not in _STATES:
        raise InputError(source, place, _STATE_TEXT, value)
    return _STATES[value.strip()]


def read_broker_file(text: str, source: str, fmt: str | None = None) -> Brokers:
    stripped = text.lstrip()
    if fmt == "json" or (fmt is None and stripped[:1] in ("[", "{")):
        return _from_json(parse_json(text, source), source)
    return _from_csv(text, source)


def _int_text(value: str) -> int | None:
    """A decimal integer written with ASCII digits and an optional "-" (not "²", "1_000" or "--1"), else None."""
    text = value.strip()
    digits = text[1:] if text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 30:
        return None
    return int(text)


def _broker_id(value: object, source: str, place: str) -> int:
    bid = value if type(value) is int else _int_text(value) if isinstance(value, str) else None
    if bid is None:
        raise InputError(source, place, "broker id must be an integer", value)
    if bid < 0:
        raise InputError(source, place, "broker id must not be negative", bid)
    if bid >= 2**31:
        raise InputError(source, place, "broker id out of range (0 .. 2147483647)", bid)
    return bid


def _weight(value: object, source: str, place: str) -> float:
    try:
        w = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError, OverflowError):
        raise InputError(source, place, "weight must be a number", value) from None
    if not math.isfinite(w) or w <= 0:
        raise InputError(source, place, "weight must be a positive number", value)
    return w


def _capacity(value: object, source: str, place: str) -> int | None:
    if value is None or value == "":
        return None
    if type(value) is int:
        cap = value
    elif isinstance(value, str):
        cap = _int_text(value)
    elif isinstance(value, float) and value.is_integer():
        cap = int(value)
    else:
        cap = None
    if cap is None:
        raise InputError(source, place, "capacity_bytes must be an integer", value)
    if cap <= 0:
        raise InputError(source, place, "capacity_bytes must be positive", value)
    if cap >= 2**63:
        raise InputError(source, place, "capacity_bytes out of range (above 2^63 - 1)", value)
    return cap


def _dir_capacities(value: object, source: str, place: str) -> dict[str, int]:
    """``log_dirs``: {absolute path: capacity in bytes} from a JSON object or a ``PATH=BYTES;...`` text."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        pairs = []
        for item in (x.strip() for x in value.split(";") if x.strip()):
            path, sep, size = item.rpartition("=")
            if not sep:
                raise InputError(source, place, "expected PATH=BYTES[;PATH=BYTES...]", item)
            pairs.append((path.strip(), size.strip()))
    elif isinstance(value, dict):
        pairs = list(value.items())
    else:
        raise InputError(source, place, "expected an object of log directory path: capacity_bytes", value)
    out: dict[str, int] = {}
    for path, size in pairs:
        if not isinstance(path, str) or not path.startswith("/"):
            raise InputError(source, place, "a log directory must be an absolute path", path)
        if path in out:
            raise InputError(source, place, "a log directory is listed twice", path)
        out[path] = _capacity(size, source, f"{place} {path}")
    return out


def _rack(value: object, source: str, place: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(source, place, "rack must be a string", value)
    return value.strip() or None


def _assemble(rows: list[tuple[int, str | None, float, int | None, tuple[bool, bool], str]], source: str,
              dirs: dict[int, dict[str, int]] | None = None) -> Brokers:
    if not rows:
        raise InputError(source, "", "no brokers listed")
    seen: dict[int, str] = {}
    for bid, _, _, _, _, place in rows:
        if bid in seen:
            raise InputError(source, place, f"duplicate broker id (also at {seen[bid]})", bid)
        seen[bid] = place
    out = Brokers.build(
        [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [r[3] for r in rows],
        [r[4][0] for r in rows], [r[4][1] for r in rows]
    )
    dirs = {b: d for b, d in (dirs or {}).items() if d}
    return replace(out, dir_capacity=dirs) if dirs else out


def _from_json(doc: object, source: str) -> Brokers:
    rows = []
    if isinstance(doc, dict):
        # {"0": "a", "1": "b"}: broker id -> rack
        for key, rack in doc.items():
            place = f"key {key!r}"
            rows.append((_broker_id(key, source, place), _rack(rack, source, place), 1.0, None, _STATES["live"], place))
        return _assemble(rows, source)
    if not isinstance(doc, list):
        raise InputError(source, "top level", "expected a list of brokers or an object of id: rack", type(doc).__name__)
    dirs: dict[int, dict[str, int]] = {}
    for i, e in enumerate(doc):
        place = f"[{i}]"
        if not isinstance(e, dict):
            raise InputError(source, place, "wrong type: expected an object", type(e).__name__)
        if "id" not in e:
            raise InputError(source, f"{place}.id", "missing field")
        unknown = sorted(set(e) - {"id", "rack", "weight", "capacity_bytes", "state", "log_dirs"})
        if unknown:
            name = unknown[0] if unknown[0].isidentifier() else repr(unknown[0])
            raise InputError(source, f"{place}.{name}",
                             "unknown field (known: id, rack, weight, capacity_bytes, state, log_dirs)")
        bid = _broker_id(e["id"], source, f"{place}.id")
        if type(e["id"]) is not int:
            raise InputError(source, f"{place}.id", "broker id must be an integer", e["id"])
        if type(e.get("state", "live")) is not str:
            raise InputError(source, f"{place}.state", _STATE_TEXT, e["state"])
        rows.append((
            bid,
            _rack(e.get("rack"), source, f"{place}.rack"),
            _weight(e.get("weight", 1), source, f"{place}.weight"),
            _capacity(e.get("capacity_bytes"), source, f"{place}.capacity_bytes"),
            _state(e.get("state", "live"), source, f"{place}.state"),
            place,
        ))
        dirs[bid] = _dir_capacities(e.get("log_dirs"), source, f"{place}.log_dirs")
    return _assemble(rows, source, dirs)


def _from_csv(text: str, source: str) -> Brokers:
    rows = []
    dirs: dict[int, dict[str, int]] = {}
    first = True
    for line, rec in csv_rows(text, source):
        rec = [c.strip() for c in rec]
        if not rec or all(c == "" for c in rec) or rec[0].startswith("#"):
            continue
        if first:
            first = False
            if rec[0].lower() in ("id", "broker", "broker_id"):
                continue  # header
        place = f"line {line}"
        if len(rec) > 6:
            raise InputError(source, place, "too many columns (expected "
                             "id,rack[,weight][,capacity_bytes][,state][,log_dirs])", ",".join(rec))
        bid = _broker_id(rec[0], source, f"{place}: id")
        rack = rec[1] or None if len(rec) > 1 else None
        weight = _weight(rec[2], source, f"{place}: weight") if len(rec) > 2 and rec[2] != "" else 1.0
        cap = _capacity(rec[3], source, f"{place}: capacity_bytes") if len(rec) > 3 else None
        state = _state(rec[4], source, f"{place}: state") if len(rec) > 4 else _STATES["live"]
        rows.append((bid, rack, weight, cap, state, place))
        dirs[bid] = _dir_capacities(rec[5], source, f"{place}: log_dirs") if len(rec) > 5 else {}
    return _assemble(rows, source, dirs)
