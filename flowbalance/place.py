"""Placing new topics and added partitions (``flowbalance place``): the ``--replica-assignment`` Kafka's
``kafka-topics --create`` / ``--alter --partitions`` accepts, chosen so the cluster stays balanced.

Priority order, for each topic of the request in turn (each sees the ones before it):

1. hard: RF distinct brokers per partition, only brokers that may take a replica (live, not excluded), the rack
   rule (``racks.py``, the same as ``plan``'s, over the eligible brokers);
2. the topic's replicas as even as they can be over the eligible brokers (a new topic: ⌊PK/N⌋ or ⌈PK/N⌉ each, per
   rack share with racks); added partitions even out the whole topic (existing + new);
3. the cluster's replica counts as even as (2) allows: the extra replicas go to the least loaded brokers;
4. then, for all new partitions jointly (the planner's stages 2-4 on the new rows only, the existing partitions
   held): leaders within their intervals, per topic too (±1), extra leaders where the cluster has the fewest;
   the (leader, first follower) pairs for the most even single-broker failover (``stages.failover``: exact on
   small clusters, with a proven lower bound).

Which partitions form the sets (``place_sets``) is chosen for diversity (each broker's partitions meet many
brokers), not proven optimal for failover; the order within the sets is the failover stage's.

Kafka's default for the same request (``kafka_default``) is ``AdminUtils.assignReplicasToBrokers`` over the live
brokers by id (rack-aware when every broker has a rack): a new topic takes a random start index and replica shift,
drawn here for each new topic in request order, start then shift, by ``numpy.random.default_rng(seed)``; added
partitions start at the index of the first broker whose id is at least partition 0's leader, as Kafka's
``addPartitions`` does, at partition number E (the existing count), no randomness.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from .errors import InputError, PlanningError, RequestError
from .generate import _kafka_layout
from .metrics import StateMetrics, leader_counts, measure, rack_violations, replica_counts, spread, topic_spread
from .model import PAD, ClusterState
from .place_leaders import choose_leaders
from .place_sets import new_counts, partition_sets
from .stages.failover import balance_failover
from .stages.followers import balance_followers
from .summary import num
from .targets import intervals
from .verify import PlanVerificationError

TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME = 249  # Kafka's limit (Topic.MAX_NAME_LENGTH)
MAX_NEW_PARTITIONS = 100_000  # per topic: a typo guard, far above any real topic


@dataclass(frozen=True)
class NewTopic:
    """One item of a placement request: create ``topic`` with ``partitions`` partitions of RF ``rf``, or (``add``)
    append ``partitions`` partitions to the existing ``topic`` (its RF: partition 0's, as Kafka takes it)."""

    topic: str
    partitions: int
    rf: int | None = None
    add: bool = False

    @property
    def count_field(self) -> str:
        """The field that holds the partition count, as errors name it."""
        return "add_partitions" if self.add else "partitions"

    def validate(self) -> "NewTopic":
        """Each field on its own (no cluster): a legal Kafka topic name, counts of at least 1, no RF when adding."""
        check_topic_name(self.topic)
        if type(self.partitions) is not int or not 1 <= self.partitions <= MAX_NEW_PARTITIONS:
            raise RequestError(self.count_field, f"must be an integer from 1 to {MAX_NEW_PARTITIONS:,}",
                               self.partitions)
        if self.add and self.rf is not None:
            raise RequestError(("rf", "add_partitions"), "added partitions take the topic's replication factor; "
                               "give no rf", self.rf)
        if not self.add and (type(self.rf) is not int or self.rf < 1):
            raise RequestError("rf", "the replication factor must be an integer of at least 1", self.rf)
        return self


def check_topic_name(name: object) -> None:
    """Kafka's rules for a topic name (``Topic.validate``): 1 to 249 of [a-zA-Z0-9._-], not "." or ".."."""
    if not isinstance(name, str) or not name:
        raise RequestError("topic", "a topic name must not be empty", name)
    if name in (".", ".."):
        raise RequestError("topic", "Kafka does not accept \".\" or \"..\" as a topic name", name)
    if len(name) > MAX_TOPIC_NAME:
        raise RequestError("topic", f"Kafka accepts topic names of at most {MAX_TOPIC_NAME} characters "
                           f"(got {len(name)})", name[:40] + "...")
    if not TOPIC_NAME.fullmatch(name):
        raise RequestError("topic", "Kafka accepts only ASCII letters, digits, '.', '_' and '-' in a topic name",
                           name)


@dataclass(frozen=True)
class PlaceRequest:
    """What to place: ``topics`` (``NewTopic`` items, placed in this order), ``exclude_brokers`` (no new replica
    there), ``seed`` (Kafka's random start index and shift for the comparison; 0 or more)."""

    topics: tuple[NewTopic, ...]
    exclude_brokers: tuple[int, ...] = ()
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("topics", "exclude_brokers"):
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))

    def validate(self) -> "PlaceRequest":
        """Every field, and no topic named twice or two names Kafka would take as one ('.' and '_' collide in
        its metric names). Errors name the fields (``topic``, ``partitions``, ``rf``, ...)."""
        if not isinstance(self.topics, tuple) or not self.topics or \
                not all(isinstance(t, NewTopic) for t in self.topics):
            raise RequestError("topics", "expected at least one topic to place", self.topics)
        for t in self.topics:
            t.validate()
        seen: dict[str, str] = {}
        for t in self.topics:
            key = t.topic.replace(".", "_")
            if key in seen:
                raise RequestError("topic", "named twice in the request" if seen[key] == t.topic else
                                   f"collides with {seen[key]!r} ('.' and '_' collide in Kafka's metric names)",
                                   t.topic)
            seen[key] = t.topic
        if not isinstance(self.exclude_brokers, tuple) or \
                not all(type(b) is int and b >= 0 for b in self.exclude_brokers):
            raise RequestError("exclude_brokers", "expected broker ids (non-negative integers)", self.exclude_brokers)
        if type(self.seed) is not int or self.seed < 0:
            raise RequestError("seed", "must be a non-negative integer", self.seed)
        return self


@dataclass(frozen=True)
class _Spec:
    """One request item resolved against the cluster: its RF and the partitions it already has."""

    item: NewTopic
    rf: int
    existing: int  # partitions the topic has now (0 for a new topic)
    rows: np.ndarray  # their rows in the current state, in partition order


@dataclass(frozen=True)
class Placement:
    """The placed request: ``after`` (the cluster with the new partitions, in canonical row order), ``kafka``
    (the same partitions as Kafka's default places them; same rows), ``new`` (mask of the new rows), and the
    failover stage's evidence for the order of the new partitions (``failover_bound``: no order of these replica
    sets has a lower worst single-broker spread)."""

    request: PlaceRequest
    before: ClusterState
    after: ClusterState
    kafka: ClusterState
    new: np.ndarray
    specs: tuple[_Spec, ...]
    failover_bound: float
    failover_exact: bool
    extra: dict = field(default_factory=dict)


def place(state: ClusterState, request: PlaceRequest) -> Placement:
    """Place ``request`` on ``state`` (never mutated); see the module doc. Bad fields raise ``RequestError``, a
    request the cluster cannot meet (RF above the brokers that may take a replica) ``PlanningError``; a
    placement that breaks a hard rule raises ``PlanVerificationError`` (a bug)."""
    request = request.validate()
    eligible = _eligible(state, request.exclude_brokers)
    specs = tuple(_resolve(state, item, int(eligible.sum())) for item in request.topics)
    combined, item = _combined(state, specs, _our_sets(state, specs, eligible))
    ordered, fo = _order(state, combined, item, specs, eligible)
    _verify(combined, ordered, item >= 0, eligible)
    kafka, _ = _combined(state, specs, _kafka_sets(state, specs, request.seed))
    return Placement(request, state, ordered, kafka, item >= 0, specs, float(fo.bound), bool(fo.exact))


def _eligible(state: ClusterState, exclude: tuple[int, ...]) -> np.ndarray:
    """Brokers that may take a new replica: live, not closed (broker file state), not in ``exclude``."""
    b = state.brokers
    for broker in exclude:
        if not b.contains(broker):
            raise RequestError("exclude_brokers", "unknown broker (not in the broker file or the assignment)", broker)
    ok = b.live & ~b.no_new
    if exclude:
        ok[b.index_of(np.asarray(exclude, dtype=np.int64))] = False
    return ok


def _resolve(state: ClusterState, item: NewTopic, eligible: int) -> _Spec:
    """The item against the cluster: a create must name a new topic (not colliding with one), an add an existing
    one with partitions 0 .. E-1; the RF must fit the eligible brokers."""
    rows = _topic_rows(state, item.topic)
    if item.add:
        if not len(rows):
            raise RequestError("topic", "unknown topic (partitions can be added to an existing topic only)",
                               item.topic)
        parts = state.partition[rows]
        if not np.array_equal(parts, np.arange(len(rows))):
            raise RequestError("topic", f"the assignment holds partitions {_few(parts)} of this topic, not 0 .. "
                               f"{len(rows) - 1}: a complete dump is needed to append partitions", item.topic)
        rf = int(state.rf[rows[0]])
    else:
        if len(rows):
            raise RequestError("topic", "the topic already exists", item.topic, remedy=("add_partitions", None))
        _check_collision(state, item.topic)
        rf = int(item.rf)
    if rf > eligible:
        raise PlanningError(f"rf: the replication factor {rf} of topic {item.topic!r} is above the {eligible} "
                            "brokers that may take a new replica")
    return _Spec(item, rf, len(rows), rows)


def _topic_rows(state: ClusterState, topic: str) -> np.ndarray:
    try:
        t = state.topics.index(topic)
    except ValueError:
        return np.zeros(0, dtype=np.int64)
    lo, hi = np.searchsorted(state.topic, [t, t + 1])
    return np.arange(lo, hi, dtype=np.int64)


def _check_collision(state: ClusterState, topic: str) -> None:
    """Kafka refuses a topic whose name equals an existing one with '.' and '_' taken as one."""
    key = topic.replace(".", "_")
    for other in state.topics:
        if other.replace(".", "_") == key:
            raise RequestError("topic", f"collides with the existing topic {other!r} ('.' and '_' collide in "
                               "Kafka's metric names; Kafka refuses it)", topic)


def _few(values: np.ndarray) -> str:
    shown = ", ".join(map(str, values[:5].tolist()))
    return shown + (", ..." if len(values) > 5 else "")


def _rack_codes(state: ClusterState) -> np.ndarray:
    """Each broker's rack index, or -1 for all when the brokers have no racks (or not all of them have one)."""
    b = state.brokers
    return b.rack.astype(np.int64) if b.has_racks else np.full(len(b), -1, dtype=np.int64)


def _our_sets(state: ClusterState, specs: tuple[_Spec, ...], eligible: np.ndarray) -> list[np.ndarray]:
    """[P, K] broker indices per item, in request order, each seeing the replicas of the items before it."""
    b = state.brokers
    rack = _rack_codes(state)
    load = replica_counts(state)
    leaders = leader_counts(state)
    out = []
    for spec in specs:
        p = spec.item.partitions
        idx = state.replica_index[spec.rows]
        topic_now = np.bincount(idx[idx >= 0], minlength=len(b)).astype(np.int64)
        counts = new_counts(p, spec.rf, topic_now, load, leaders, b.weight, eligible, b.live, rack)
        out.append(partition_sets(counts, p, spec.rf, rack, eligible))
        load = load + counts
    return out


def _combined(state: ClusterState, specs: tuple[_Spec, ...], sets: list[np.ndarray]
              ) -> tuple[ClusterState, np.ndarray]:
    """The current partitions and the new ones (``sets``: broker indices per item) as one state in canonical
    order, and each row's request item (-1 for the current partitions)."""
    ids = state.brokers.ids
    names = [state.topics[t] for t in state.topic.tolist()]
    parts = [state.partition]
    width = max([state.replicas.shape[1]] + [s.shape[1] for s in sets])
    blocks = [_pad(state.replicas, width)]
    item = [np.full(state.num_partitions, -1, dtype=np.int64)]
    for i, (spec, s) in enumerate(zip(specs, sets)):
        names += [spec.item.topic] * len(s)
        parts.append(np.arange(spec.existing, spec.existing + len(s), dtype=np.int32))
        blocks.append(_pad(ids[s].astype(np.int32), width))
        item.append(np.full(len(s), i, dtype=np.int64))
    item_of = np.concatenate(item)
    size = np.r_[state.size, np.full(len(item_of) - state.num_partitions, -1, dtype=np.int64)]
    partition = np.concatenate(parts)
    combined = ClusterState.build(state.brokers, names, partition, np.vstack(blocks), size)
    _, _, order = ClusterState.canonical_order(names, partition)
    return combined, item_of[order]


def _pad(reps: np.ndarray, width: int) -> np.ndarray:
    return np.pad(reps, ((0, 0), (0, width - reps.shape[1])), constant_values=PAD)


def _order(state: ClusterState, combined: ClusterState, item: np.ndarray, specs: tuple[_Spec, ...],
           eligible: np.ndarray):
    """The new rows ordered: leaders by ``place_leaders`` (per topic ±1, then the cluster), first followers by
    stage 3, then (leader, first follower) jointly by stage 4 (failover), keeping the topics' leader intervals;
    every other row held. Returns (the state, the failover stage's result)."""
    new = item >= 0
    rows = np.flatnonzero(new)
    b = state.brokers
    idx = combined.replica_index[rows]
    lo, hi = _topic_leader_intervals(state, specs, eligible)
    lead = choose_leaders(idx, item[rows], lo, hi, leader_counts(state), b.weight, b.live)
    led = combined.with_replicas(_leader_first(combined.replicas, rows, b.ids[lead]))
    ordered = balance_followers(led, new)
    res = balance_failover(led, new, baseline=ordered, topic_leaders=True, per_topic=True)
    return combined.with_replicas(res.replicas), res


def _topic_leader_intervals(state: ClusterState, specs: tuple[_Spec, ...], eligible: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray]:
    """[items, N]: each item's new leaders per broker within [⌊q⌋, ⌈q⌉] of the topic's weighted share over the
    eligible brokers, less the leaders the topic has there now."""
    b = state.brokers
    lo = np.zeros((len(specs), len(b)), dtype=np.int64)
    hi = np.zeros_like(lo)
    for i, spec in enumerate(specs):
        lead = state.replica_index[spec.rows, 0] if len(spec.rows) else np.zeros(0, dtype=np.int64)
        now = np.bincount(lead[lead >= 0], minlength=len(b))
        q_lo, q_hi = intervals(spec.existing + spec.item.partitions, b.weight, eligible)
        lo[i], hi[i] = q_lo - now, q_hi - now
    return lo, hi


def _leader_first(replicas: np.ndarray, rows: np.ndarray, leader_ids: np.ndarray) -> np.ndarray:
    """``replicas`` with the leader of each of ``rows`` moved to the front, its other replicas in their order."""
    out = replicas.copy()
    for r, leader in zip(rows.tolist(), leader_ids.tolist()):
        lst = [x for x in out[r].tolist() if x != PAD]
        rest = [x for x in lst if x != leader]
        out[r, :len(lst)] = [leader] + rest
    return out


def _verify(combined: ClusterState, ordered: ClusterState, new: np.ndarray, eligible: np.ndarray) -> None:
    """The hard rules on the result: old rows unchanged, new rows the same sets, on eligible brokers, distinct,
    and the rack rule (a rule the eligible brokers cannot meet, for exclusions, is a planning error)."""
    if not np.array_equal(combined.replicas[~new], ordered.replicas[~new]):
        raise PlanVerificationError("placing changed an existing partition")
    a, b = np.sort(combined.replicas[new], axis=1), np.sort(ordered.replicas[new], axis=1)
    if not np.array_equal(a, b):
        raise PlanVerificationError("ordering changed a new partition's replica set")
    idx = ordered.replica_index[new]
    if not eligible[idx[idx >= 0]].all():
        raise PlanVerificationError("a new replica lands on a broker that may not take one")
    srt = np.sort(np.where(idx >= 0, idx, -1 - np.arange(idx.shape[1])[None, :]), axis=1)
    if (srt[:, 1:] == srt[:, :-1]).any():
        raise PlanVerificationError("a new partition holds a broker twice")
    bad = np.intersect1d(rack_violations(ordered), np.flatnonzero(new))
    if len(bad):
        if (ordered.brokers.live & ~eligible).any():
            raise PlanningError("the rack rule over the live brokers cannot be met by the brokers that may take a "
                                f"new replica (exclusions leave a rack short); first partition: "
                                f"{ordered.topics[ordered.topic[bad[0]]]}-{int(ordered.partition[bad[0]])}")
        raise PlanVerificationError("a new partition breaks the rack rule")


def _kafka_sets(state: ClusterState, specs: tuple[_Spec, ...], seed: int) -> list[np.ndarray]:
    """Kafka's default placement of each item (module doc), as [P, K] broker indices in Kafka's order."""
    b = state.brokers
    live = np.flatnonzero(b.live)
    n = len(live)
    rack = b.rack[live].astype(np.int64) if b.has_racks else None
    rng = np.random.default_rng(seed)
    out = []
    for spec in specs:
        p, first_id = spec.item.partitions, spec.existing
        if spec.item.add:
            leader0 = int(state.replicas[spec.rows[0], 0])
            start = shift = max(0, int(np.searchsorted(b.ids[live], leader0)) % n)
        else:
            start, shift = int(rng.integers(0, n)), int(rng.integers(0, n))
        pnum = np.arange(first_id, first_id + p, dtype=np.int64)
        # Kafka adds 1 to the shift at every partition id > 0 divisible by N from first_id on; _kafka_layout
        # counts them from 0, so the ones before first_id are taken off
        shift -= (first_id - 1) // n if first_id >= 1 else 0
        pos = _kafka_layout(None, rack, np.array([p]), pnum, np.array([n]), spec.rf, np.array([start]),
                            np.array([shift]))
        out.append(live[pos])
    return out


# ---- what the command prints and writes ---------------------------------------------------------------------

KIND = "flowbalance place"
VERSION = 1


def replica_assignment(lists) -> str:
    """Kafka's ``--replica-assignment`` text: partitions in order, separated by commas, each partition's brokers
    (leader first) separated by colons."""
    return ",".join(":".join(str(int(b)) for b in reps) for reps in lists)


def kafka_topics_command(topic: str, lists, *, add: bool, bootstrap: str = "$BOOTSTRAP") -> str:
    """The ``kafka-topics`` command line that applies ``lists`` (every partition of the topic, in order): a
    create, or an alter to ``len(lists)`` partitions (Kafka keeps the existing ones as they are)."""
    text = replica_assignment(lists)
    if add:
        return (f"kafka-topics --bootstrap-server {bootstrap} --alter --topic {topic} --partitions {len(lists)} "
                f"--replica-assignment {text}")
    return f"kafka-topics --bootstrap-server {bootstrap} --create --topic {topic} --replica-assignment {text}"


def place_summary(pl: Placement, *, bootstrap: str = "$BOOTSTRAP") -> dict:
    """Plain data: the request, each topic's assignment and command, and the cluster before, after and with
    Kafka's default placement instead (the same metrics as ``check`` and ``report``). No times: the same request
    gives the same data, byte for byte."""
    req = pl.request
    return {
        "kind": KIND, "version": VERSION,
        "request": {"topics": [_item_fields(t) for t in req.topics], "exclude_brokers": list(req.exclude_brokers),
                    "seed": req.seed},
        "topics": [_topic_fields(pl, spec, bootstrap) for spec in pl.specs],
        "cluster": {"before": _state_fields(measure(pl.before)), "after": _state_fields(measure(pl.after)),
                    "kafka_default": _state_fields(measure(pl.kafka))},
        "failover_bound": num(pl.failover_bound), "failover_bound_met": pl.failover_exact,
    }


def place_text(pl: Placement, *, bootstrap: str = "$BOOTSTRAP") -> str:
    """``place_summary`` as the JSON text ``place -o`` and the fleet's ``CLUSTER/place.json`` hold."""
    import orjson

    return orjson.dumps(place_summary(pl, bootstrap=bootstrap),
                        option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"


def _item_fields(t: NewTopic) -> dict:
    return {"topic": t.topic, "add_partitions": t.partitions} if t.add else \
        {"topic": t.topic, "partitions": t.partitions, "rf": t.rf}


def _lists(state: ClusterState, topic: str) -> list[list[int]]:
    reps = state.replicas[_topic_rows(state, topic)]
    return [[int(b) for b in r[r >= 0]] for r in reps]


def _topic_fields(pl: Placement, spec: _Spec, bootstrap: str) -> dict:
    """One topic: its lists (existing unchanged, then new), the string and command, its own spreads."""
    name, add = spec.item.topic, spec.item.add
    lists, kafka_lists = _lists(pl.after, name), _lists(pl.kafka, name)
    return {
        "topic": name, "action": "add" if add else "create", "rf": spec.rf,
        "existing_partitions": spec.existing, "new_partitions": spec.item.partitions, "total_partitions": len(lists),
        "replica_assignment": replica_assignment(lists),
        "command": kafka_topics_command(name, lists, add=add, bootstrap=bootstrap),
        "partitions": [{"partition": spec.existing + i, "replicas": r} for i, r in enumerate(lists[spec.existing:])],
        "spread_before": _topic_spreads(pl.before, name) if add else None,
        "spread_after": _topic_spreads(pl.after, name),
        "kafka_default": {"replica_assignment": replica_assignment(kafka_lists),
                          **_topic_spreads(pl.kafka, name)},
    }


def _topic_spreads(state: ClusterState, topic: str) -> dict:
    """The topic's own replica spread (``metrics.topic_spread``) and leader spread over the live brokers."""
    rows = _topic_rows(state, topic)
    sub = ClusterState(state.brokers, state.topics, state.topic[rows], state.partition[rows],
                       state.replicas[rows], state.size[rows])
    b = state.brokers
    return {"replica_spread": num(topic_spread(sub).spread),
            "leader_spread": num(spread(leader_counts(sub), b.weight, b.live))}


def _state_fields(m: StateMetrics) -> dict:
    """The cluster-wide figures of one state, as ``check`` measures them."""
    rf = m.rack_failover
    return {"replica_spread": num(m.replica_spread), "topic_spread": num(m.topic.spread),
            "worst_topic": m.topic.worst_topic, "leader_spread": num(m.leader_spread),
            "failover_worst_spread": num(m.failover.worst[1]),
            "rack_failover_worst_spread": num(rf.worst[1]) if len(rf.failed) else None,
            "rack_violations": int(len(m.rack_violations))}


def items_from_json(value: object, source: str) -> tuple[NewTopic, ...]:
    """A fleet.json ``place`` value: [{"topic": T, "partitions": N, "rf": K} or {"topic": T, "add_partitions": N},
    ...], validated; errors under ``source`` (``fleet.json: clusters.NAME.place[0].rf: ...``)."""
    if not isinstance(value, list) or not value:
        raise InputError(source, "", "expected a list of {\"topic\", \"partitions\", \"rf\"} or "
                         "{\"topic\", \"add_partitions\"}", value)
    out = []
    for i, entry in enumerate(value):
        where = f"{source}[{i}]"
        keys = {"topic", "add_partitions"} if isinstance(entry, dict) and "add_partitions" in entry else \
            {"topic", "partitions", "rf"}
        if not isinstance(entry, dict) or set(entry) != keys:
            raise InputError(where, "", f"expected the keys {', '.join(sorted(keys))}", entry)
        add = "add_partitions" in entry
        item = NewTopic(entry["topic"], entry["add_partitions" if add else "partitions"], entry.get("rf"), add=add)
        try:
            out.append(item.validate())
        except RequestError as err:
            raise err.under(where) from None
    return tuple(out)
