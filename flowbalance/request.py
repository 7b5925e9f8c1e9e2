"""``PlanRequest``: everything a plan is asked for, as one frozen value with a ``validate()``.

The command line builds it from its flags, ``fleet.json`` from JSON values (``from_json``), library users directly.
Errors name the request's fields (``RequestError``); the command line shows them under its flags (``FLAGS``) and
the fleet under ``fleet.json: clusters.NAME``. What a request means for one cluster (the broker changes applied,
the partitions that may move, the target RF) is ``flowbalance.resolve``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace as _replace
from typing import Any, Mapping

from .errors import InputError, RequestError

STAGES = ("replicas", "leaders", "followers")
STRATEGIES = ("flow", "template")
OBJECTIVES = ("moves", "bytes")
BALANCES = ("count", "count+bytes", "bytes")
PER_TOPIC_MODES = ("strict", "spread")

# the command-line flag of each field (the CLI relabels RequestError with these)
FLAGS = {
    "remove": "--remove", "add": "--add", "replace": "--replace", "replication_factor": "--replication-factor",
    "topic_rf": "--topic-rf", "topics": "--topics", "exclude_topics": "--exclude-topics",
    "per_topic": "--no-per-topic", "per_topic_mode": "--per-topic", "strategy": "--strategy", "objective": "--objective", "balance": "--balance",
    "disk_tolerance": "--disk-tolerance", "stages": "--stages", "extra_moves": "--extra-moves",
    "exclude_brokers": "--exclude-brokers", "pin": "--pin", "demote": "--demote",
    "balance_dirs": "--balance-dirs", "dir_tolerance": "--dir-tolerance", "remove_log_dirs": "--remove-log-dir",
}
# fleet.json keys that say how a cluster's files are read (used at ingest, not part of the request)
INPUT_KEYS = ("current", "brokers", "sizes", "format", "disable_rack_aware", "from_target", "move_unhealthy")
# fleet.json keys of other requests beside the plan's (``place``: new topics, read by ``place.items_from_json``)
OTHER_KEYS = ("place",)


@dataclass(frozen=True)
class PlanRequest:
    """What to plan. Broker ids are ints; ``replace`` maps old → new broker; ``topic_rf`` maps topic → RF;
    ``topics`` / ``exclude_topics`` are regular expressions matched against whole topic names.

    ``per_topic``: balance every topic's replicas over the brokers too; ``per_topic_mode`` ``strict``: every topic
    within its share before the fewest moves (moves = Σ per-topic M*), ``spread``: the fewest moves for count
    balance first, then the most even topics among those plans (a move costs more than any per-topic gain).
    ``strategy``: ``flow`` (the stage chain)
    or ``template`` (rotation-order templates placed by matching). ``objective``: ``moves`` or ``bytes`` (the
    fewest bytes among the fewest-move plans). ``balance``: ``count``, ``count+bytes`` or ``bytes`` (disk use
    within ``disk_tolerance`` × each broker's share). ``stages``: which flow stages run (always in the chain's
    order: replicas, leaders, followers). ``extra_moves``: a move budget beyond the fewest moves, spent where it
    most lowers the per-topic spread: a number of moves (``500``) or a percentage of the replicas in scope
    (``"2%"``); 0 spends nothing.

    Operator controls (``flowbalance.controls``): ``exclude_brokers``: brokers closed to new replicas (they keep
    or lose replicas, never gain one; as the broker file's state ``no-new-replicas``). ``pin``: partitions held
    exactly as they are (neither moved nor reordered, still counted in every broker's load): each pattern a topic
    regex (whole name) or a ``topic:partition`` list (``"orders:0,orders:3"``). ``demote``: brokers to take every
    preferred leadership off, by reordering only (no replica moves; not with broker or RF changes).

    Log directories (JBOD, ``flowbalance.dir_balance``; they need the brokers' directories, from kafka-log-dirs):
    ``balance_dirs``: move replicas between a broker's directories (no network copy) until each is within
    ``dir_tolerance`` × its share of the broker's bytes. ``remove_log_dirs``: directories to empty,
    ``"BROKER:PATH"`` each (their replicas go to the broker's other directories)."""

    remove: tuple[int, ...] = ()
    add: tuple[int, ...] = ()
    replace: tuple[tuple[int, int], ...] = ()
    replication_factor: int | None = None
    topic_rf: tuple[tuple[str, int], ...] = ()
    topics: str | None = None
    exclude_topics: str | None = None
    per_topic: bool = True
    per_topic_mode: str = "spread"
    strategy: str = "flow"
    objective: str = "moves"
    balance: str = "count"
    disk_tolerance: float = 1.05
    stages: tuple[str, ...] = STAGES
    extra_moves: int | str = 0
    exclude_brokers: tuple[int, ...] = ()
    pin: tuple[str, ...] = ()
    demote: tuple[int, ...] = ()
    balance_dirs: bool = False
    dir_tolerance: float = 1.1
    remove_log_dirs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # accept lists, sets and mappings; store tuples, so the request is hashable and compares by value
        if isinstance(self.pin, str):
            object.__setattr__(self, "pin", (self.pin,))
        if isinstance(self.remove_log_dirs, str):
            object.__setattr__(self, "remove_log_dirs", (self.remove_log_dirs,))
        if isinstance(self.remove_log_dirs, list):
            object.__setattr__(self, "remove_log_dirs", tuple(self.remove_log_dirs))
        for name in ("remove", "add", "stages", "exclude_brokers", "pin", "demote"):
            value = getattr(self, name)
            if isinstance(value, (list, set, frozenset)):
                object.__setattr__(self, name, tuple(sorted(value) if isinstance(value, (set, frozenset)) else value))
        for name in ("replace", "topic_rf"):
            value = getattr(self, name)
            if isinstance(value, Mapping):
                object.__setattr__(self, name, tuple(value.items()))
            elif isinstance(value, list):
                object.__setattr__(self, name, tuple(tuple(x) if isinstance(x, list) else x for x in value))

    @property
    def replacements(self) -> dict[int, int]:
        return dict(self.replace)

    @property
    def topic_rfs(self) -> dict[str, int]:
        return dict(self.topic_rf)

    @property
    def balances_counts(self) -> bool:
        """Whether the plan moves replicas toward the count targets: not a demotion (reordering only), and the
        replicas stage runs."""
        return not self.demote and "replicas" in self.stages

    @property
    def strict_per_topic(self) -> bool:
        """Per-topic targets rank above the number of moves (they are targets of the moves verdict)."""
        return self.per_topic and self.per_topic_mode == "strict"

    @property
    def topics_after_moves(self) -> bool:
        """Per-topic balance only chooses among the plans with the fewest moves."""
        return self.per_topic and self.per_topic_mode == "spread"

    @property
    def disk_balance(self) -> bool:
        return self.balance != "count"

    def extra_moves_for(self, replicas: int) -> int:
        """The move budget in moves, for a plan whose scope holds ``replicas`` replicas (a percentage rounds down)."""
        count, percent = parse_extra_moves(self.extra_moves)
        return count if percent is None else int(math.floor(replicas * percent / 100.0 + 1e-9))

    def with_changes(self, **changes: Any) -> "PlanRequest":
        return _replace(self, **changes)

    def validate(self) -> "PlanRequest":
        """Check every field on its own and against the others (not against a cluster: that is ``resolve``).
        Returns self, so ``PlanRequest(...).validate()`` reads as one step."""
        _check_ids(self.remove, "remove")
        _check_ids(self.add, "add")
        _check_ids(self.exclude_brokers, "exclude_brokers")
        _check_ids(self.demote, "demote")
        _check_pins(self.pin)
        _check_replace(self.replace)
        _check_rf(self.replication_factor, self.topic_rf)
        for name in ("topics", "exclude_topics"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise RequestError(name, "expected a regular expression (text)", value)
        if type(self.per_topic) is not bool:
            raise RequestError("per_topic", "expected true or false", self.per_topic)
        _check_choice(self.per_topic_mode, PER_TOPIC_MODES, "per_topic_mode")
        _check_choice(self.strategy, STRATEGIES, "strategy")
        _check_choice(self.objective, OBJECTIVES, "objective")
        _check_choice(self.balance, BALANCES, "balance")
        tol = self.disk_tolerance
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) \
                or not 1.0 <= float(tol) <= 10.0:
            raise RequestError("disk_tolerance", "must be a number from 1.0 to 10.0 (max/mean disk use)", tol)
        _check_stages(self.stages)
        if type(self.balance_dirs) is not bool:
            raise RequestError("balance_dirs", "expected true or false", self.balance_dirs)
        tol = self.dir_tolerance
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) \
                or not 1.0 <= float(tol) <= 10.0:
            raise RequestError("dir_tolerance", "must be a number from 1.0 to 10.0 (max/mean within a broker)", tol)
        for item in self.remove_log_dirs:
            parse_log_dir(item)
        parse_extra_moves(self.extra_moves)
        _check_combinations(self)
        return self

    @classmethod
    def from_json(cls, entry: Mapping[str, Any], source: str) -> "PlanRequest":
        """The request of one cluster's entry in a fleet file (JSON values), validated; errors under ``source``.

        ``remove``/``add``: [ids] or "3,4"; ``replace``: {"7": 31} or "7:31"; ``replication_factor``: int;
        ``topic_rf``: {"topic": n}; ``topics``/``exclude_topics``: regex; ``per_topic``: bool;
        ``per_topic_mode``: "strict" or "spread"; ``strategy``,
        ``objective``, ``balance``: text; ``disk_tolerance``: number; ``exclude_brokers``/``demote``: as
        ``remove``; ``pin``: a pattern or a list of them. Keys of ``INPUT_KEYS`` are ignored here.
        Errors name the key's path: ``fleet.json: clusters.NAME.remove: ...``."""
        known = {f.name for f in fields(cls)} - {"stages"}
        unknown = sorted(set(entry) - known - set(INPUT_KEYS) - set(OTHER_KEYS))
        if unknown:
            choices = sorted(known) + list(INPUT_KEYS) + list(OTHER_KEYS)
            raise InputError(f"{source}.{unknown[0]}", "", f"unknown key (choose from {', '.join(choices)})")
        for key in ("from_target", "move_unhealthy", "disable_rack_aware"):
            if type(entry.get(key, False)) is not bool:
                raise InputError(f"{source}.{key}", "", "expected true or false", entry[key])
        try:
            values = {k: _from_json_value(k, v) for k, v in entry.items() if k in known and v is not None}
            return cls(**values).validate()
        except RequestError as err:
            raise err.under(source) from None


def _from_json_value(key: str, value: Any) -> Any:
    """A fleet.json value as the field's type; text forms of ids and replacements are parsed as on the command line."""
    if key == "pin":
        if isinstance(value, str) or (isinstance(value, list) and all(isinstance(x, str) for x in value)):
            return value
        raise RequestError(key, "expected a pattern or a list of patterns (topic regex or topic:partition list)",
                           value)
    if key in ("remove", "add", "exclude_brokers", "demote"):
        if isinstance(value, str):
            return tuple(parse_broker_ids(value, key))
        if isinstance(value, list):
            return tuple(value)
        raise RequestError(key, "expected a list of broker ids or a text like \"3,4\"", value)
    if key == "replace":
        if isinstance(value, str):
            return parse_replace(value)
        if isinstance(value, dict):
            try:
                return {int(k): v for k, v in value.items()}
            except (TypeError, ValueError):
                raise RequestError("replace", "expected {\"old\": new} with broker ids", value) from None
        raise RequestError("replace", "expected {\"old\": new} with broker ids", value)
    if key == "topic_rf" and not isinstance(value, dict):
        raise RequestError("topic_rf", "expected {\"topic\": n}", value)
    if key in ("strategy", "objective", "balance", "per_topic_mode") and not isinstance(value, str):
        raise RequestError(key, "expected a text", value)
    if key == "extra_moves" and (isinstance(value, bool) or not isinstance(value, (int, str))):
        raise RequestError(key, "expected a number of moves or a text like \"2%\"", value)
    if key in ("disk_tolerance", "dir_tolerance") and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise RequestError(key, "expected a number", value)
    if key == "remove_log_dirs":
        if isinstance(value, str) or (isinstance(value, list) and all(isinstance(x, str) for x in value)):
            return value
        raise RequestError(key, "expected \"BROKER:PATH\" or a list of them", value)
    return value


# ---- field checks --------------------------------------------------------------------------------

def parse_extra_moves(value: Any) -> tuple[int, float | None]:
    """``extra_moves`` as (moves, None) or (0, percent): an integer >= 0, its text, or "P%" with 0 <= P <= 100."""
    if type(value) is int and value >= 0:
        return value, None
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit() and len(text) <= 12:
            return int(text), None
        if text.endswith("%"):
            try:
                p = float(text[:-1])
            except ValueError:
                p = math.nan
            if math.isfinite(p) and 0.0 <= p <= 100.0:
                return 0, p
    raise RequestError("extra_moves", "expected a number of moves (0 or more) or a percentage of the replicas "
                                      "from 0% to 100%", value)


def parse_log_dir(item: Any) -> tuple[int, str]:
    """``"BROKER:PATH"`` (an absolute path) as (broker id, path); anything else a RequestError on
    ``remove_log_dirs``."""
    if isinstance(item, str):
        broker, sep, path = item.partition(":")
        if sep and broker.isascii() and broker.isdigit() and len(broker) <= 10 and path.startswith("/"):
            return int(broker), path
    raise RequestError("remove_log_dirs", "expected BROKER:PATH with an absolute path (3:/var/lib/kafka/data-1)",
                       item)


def _check_ids(ids: Any, name: str) -> None:
    if not isinstance(ids, tuple) or not all(type(x) is int and x >= 0 for x in ids):
        raise RequestError(name, "expected broker ids (non-negative integers)", ids)
    if len(set(ids)) != len(ids):
        raise RequestError(name, "a broker id is listed twice", ",".join(map(str, ids)))


def _check_pins(pins: Any) -> None:
    if not isinstance(pins, tuple) or not all(isinstance(x, str) for x in pins):
        raise RequestError("pin", "expected patterns (a topic regex or a topic:partition list)", pins)
    for x in pins:
        if not x.strip():
            raise RequestError("pin", "empty pattern", x)


def _check_replace(pairs: Any) -> None:
    ok = isinstance(pairs, tuple) and all(isinstance(p, tuple) and len(p) == 2 for p in pairs)
    if not ok or not all(type(x) is int and x >= 0 for p in pairs for x in p):
        raise RequestError("replace", "expected old → new pairs of broker ids", pairs)
    old = [o for o, _ in pairs]
    new = [n for _, n in pairs]
    text = ",".join(f"{o}:{n}" for o, n in pairs)
    if len(set(old)) != len(old):
        raise RequestError("replace", "a broker is replaced twice", text)
    if len(set(new)) != len(new):
        raise RequestError("replace", "two brokers are replaced by the same broker", text)
    for o, n in pairs:
        if o == n:
            raise RequestError("replace", "a broker cannot replace itself", f"{o}:{n}")


def _check_rf(rf: Any, topic_rf: Any) -> None:
    if rf is not None and topic_rf:
        raise RequestError(("replication_factor", "topic_rf"), "one RF for every partition or one per topic, not both")
    if rf is not None and (type(rf) is not int or rf < 1):
        raise RequestError("replication_factor", "must be an integer of at least 1", rf)
    if not isinstance(topic_rf, tuple) or not all(isinstance(p, tuple) and len(p) == 2 for p in topic_rf):
        raise RequestError("topic_rf", "expected topic → replication factor", topic_rf)
    for topic, k in topic_rf:
        if not isinstance(topic, str) or type(k) is not int or k < 1:
            raise RequestError("topic_rf", "replication factor must be an integer >= 1", f"{topic}={k}")


def _check_choice(value: Any, choices: tuple[str, ...], name: str) -> None:
    if value not in choices:
        raise RequestError(name, f"unknown {name} (choose from {', '.join(choices)})", value)


def _check_stages(stages: Any) -> None:
    if not isinstance(stages, tuple) or not stages:
        raise RequestError("stages", "no stage given", stages)
    for s in stages:
        if s not in STAGES:
            raise RequestError("stages", f"unknown stage (choose from {', '.join(STAGES)})", s)


def _check_combinations(r: PlanRequest) -> None:
    """Fields that contradict each other, with no cluster needed."""
    removing, adding = set(r.remove), set(r.add)
    both = sorted(removing & adding)
    if both:
        raise RequestError(("add", "remove"), "a broker is both added and removed", both[0])
    for old, new in r.replace:
        for name, named in (("remove", removing), ("add", adding)):
            if old in named:
                raise RequestError(("replace", name), f"broker {old} is replaced and also named in {name}",
                                   f"{old}:{new}")
        olds = {o for o, _ in r.replace}
        for name, named in (("remove", removing), ("add", adding), ("replace", olds)):
            if new in named:
                raise RequestError(("replace", name), f"the new broker {new} is also named in {name}",
                                   f"{old}:{new}")
    _check_controls(r)
    if r.extra_moves_for(1_000_000) > 0:
        for name, value, ok in (("strategy", r.strategy, "flow"), ("objective", r.objective, "moves"),
                                ("balance", r.balance, "count")):
            if value != ok:
                raise RequestError(("extra_moves", name), "a move budget is spent on per-topic balance and failover "
                                   f"with {name} {ok} only (got {name} {value})", r.extra_moves)
    if r.strategy == "template" and r.stages != STAGES:
        raise RequestError("stages", "the template strategy places and orders replicas together; stages applies to "
                           "the flow strategy", ",".join(r.stages))
    if r.strategy == "template" and (r.objective == "bytes" or r.balance != "count"):
        name = "objective" if r.objective == "bytes" else "balance"
        raise RequestError(name, "applies to the flow strategy (templates place by counts)", getattr(r, name))


def _check_controls(r: PlanRequest) -> None:
    """Operator controls that contradict the other fields: a broker both excluded and added, removed or replaced;
    demotion (reordering only) with anything that moves replicas."""
    olds, news = {o for o, _ in r.replace}, {n for _, n in r.replace}
    for name, named in (("add", set(r.add)), ("remove", set(r.remove)), ("replace", olds | news)):
        both = sorted(set(r.exclude_brokers) & named)
        if both:
            raise RequestError(("exclude_brokers", name), f"broker {both[0]} is excluded from new replicas and also "
                               f"named in {name}", both[0])
    if not r.demote:
        return
    moving = [(name, getattr(r, name)) for name in ("remove", "add", "replace", "topic_rf") if getattr(r, name)]
    if r.replication_factor is not None:
        moving.append(("replication_factor", r.replication_factor))
    if r.extra_moves_for(1_000_000) > 0:
        moving.append(("extra_moves", r.extra_moves))
    for name, value, ok in (("strategy", r.strategy, "flow"), ("balance", r.balance, "count")):
        if value != ok:
            moving.append((name, value))
    if moving:
        name, value = moving[0]
        value = ",".join(map(str, value)) if name in ("remove", "add") else value
        raise RequestError(("demote", name), "demote only reorders replica lists (no replica moves); plan the "
                           f"demotion and {name} separately", value)
    if not ("leaders" in r.stages):
        raise RequestError(("demote", "stages"), "demote needs the leaders stage", ",".join(r.stages))


# ---- text forms (the command line, and fleet.json's text values) --------------------------------

def parse_broker_ids(text: str, name: str) -> list[int]:
    """``19`` or ``3,4,5`` → broker ids; errors name the field ``name``."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or not part.isascii():
            raise RequestError(name, "broker ids must be non-negative integers separated by commas", text)
        out.append(int(part))
    if not out:
        raise RequestError(name, "no broker ids given", text)
    if len(set(out)) != len(out):
        raise RequestError(name, "a broker id is listed twice", text)
    return out


def parse_replace(text: str | None) -> dict[int, int]:
    """``7:31,8:32`` → {7: 31, 8: 32}."""
    out: dict[int, int] = {}
    if not text:
        return out
    for pair in text.split(","):
        old, sep, new = pair.strip().partition(":")
        old, new = old.strip(), new.strip()
        if not sep or not (old.isdigit() and old.isascii()) or not (new.isdigit() and new.isascii()):
            raise RequestError("replace", "expected OLD:NEW[,OLD:NEW...] with broker ids", text)
        if int(old) in out:
            raise RequestError("replace", "a broker is replaced twice", text)
        out[int(old)] = int(new)
    if len(set(out.values())) != len(out):
        raise RequestError("replace", "two brokers are replaced by the same broker", text)
    return out


def parse_topic_rf(items: list[str]) -> dict[str, int]:
    """``["orders=3", "clicks=2"]`` → {"orders": 3, "clicks": 2}."""
    out: dict[str, int] = {}
    for it in items:
        topic, sep, k = it.rpartition("=")
        if not sep or not topic or not (k.strip().isdigit() and k.strip().isascii()):
            raise RequestError("topic_rf", "expected TOPIC=N", it)
        out[topic] = int(k)
    return out
