"""``flowbalance.place``: every property the placement promises, checked by plain-Python oracles on random
clusters (hypothesis) and by brute force over every placement on tiny ones; the strings parsed back by a
re-implementation of Kafka's own parser (TopicCommand.parseReplicaAssignment)."""
from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowbalance as fb
from flowbalance.generate import generate_cluster
from flowbalance.place import NewTopic, PlaceRequest, place, place_summary, place_text

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- oracles ---------------------------------------------------------------------------------------------------

def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """Kafka's TopicCommand.parseReplicaAssignment: partitions split by ",", replicas by ":", each trimmed and an
    int; no broker twice in a partition; every partition as many replicas as partition 0."""
    out: dict[int, list[int]] = {}
    for i, part in enumerate(text.split(",")):
        brokers = [int(s.strip()) for s in part.split(":")]
        dup = [b for b, n in Counter(brokers).items() if n > 1]
        if dup:
            raise ValueError(f"Partition replica lists may not contain duplicate entries: {dup}")
        out[i] = brokers
        if len(out[i]) != len(out[0]):
            raise ValueError(f"Partition {i} has different replication factor: {brokers}")
    return out


def lists_of(state, topic: str) -> list[list[int]]:
    """The topic's replica lists in partition order, plainly."""
    rows = sorted((p.partition, list(p.replicas)) for p in state.partitions() if p.topic == topic)
    return [r for _, r in rows]


def rack_ok(reps: list[int], rack_of: dict[int, str], live_racks: Counter) -> bool:
    """The rack rule, plainly: with L the least level where Σ min(size, L) >= RF, each rack holds at most
    min(size, L) and at least max(min(size, L - 1), RF - Σ others' maxima)."""
    k = len(reps)
    level = next(L for L in range(k + 1) if sum(min(s, L) for s in live_racks.values()) >= k)
    hi = {r: min(s, level) for r, s in live_racks.items()}
    got = Counter(rack_of[b] for b in reps)
    for r, s in live_racks.items():
        lo = max(min(s, level - 1), k - (sum(hi.values()) - hi[r]))
        if not lo <= got.get(r, 0) <= hi[r]:
            return False
    return True


def spread_of(counts: dict[int, int], brokers) -> int:
    vals = [counts.get(b, 0) for b in brokers]
    return max(vals) - min(vals)


def failover_worst(all_lists: list[list[int]], brokers: list[int]) -> int:
    """Worst over failed brokers f of max - min of the survivors' leaders once f's go to their first followers."""
    worst = 0
    for f in brokers:
        lead = Counter(r[1] if r[0] == f and len(r) > 1 else r[0] for r in all_lists if r[0] != f or len(r) > 1)
        worst = max(worst, spread_of(lead, [b for b in brokers if b != f]))
    return worst


# ---- random clusters -----------------------------------------------------------------------------------------

@st.composite
def cases(draw):
    brokers = draw(st.integers(3, 8))
    racks = draw(st.sampled_from([0, 2, 3]))
    racks = min(racks, brokers)
    rf = draw(st.integers(1, min(3, brokers)))
    state = generate_cluster(brokers=brokers, racks=racks, topics=draw(st.integers(1, 4)), partitions=(1, 6),
                             rf=rf, layout=draw(st.sampled_from(["random", "kafka"])),
                             rack_aware=bool(racks) and rf <= racks, seed=draw(st.integers(0, 1000)))
    items = [NewTopic("new.a", draw(st.integers(1, 10)), draw(st.integers(1, brokers)))]
    if draw(st.booleans()):
        items.append(NewTopic(state.topics[0], draw(st.integers(1, 6)), add=True))
    if draw(st.booleans()):
        items.append(NewTopic("new_b", draw(st.integers(1, 7)), draw(st.integers(1, brokers))))
    exclude = (int(state.brokers.ids[-1]),) if draw(st.booleans()) and brokers > 3 and not racks else ()
    if max(i.rf or rf for i in items) > brokers - len(exclude):
        exclude = ()
    return state, PlaceRequest(tuple(items), exclude, draw(st.integers(0, 5)))


@SETTINGS
@given(cases())
def test_placements_keep_every_promise(case):
    state, req = case
    pl = place(state, req)
    ids = [int(b) for b in state.brokers.ids]
    eligible = [b for b in ids if b not in req.exclude_brokers]
    rack_of = {b.id: b.rack for b in state.brokers}
    live_racks = Counter(rack_of[b] for b in eligible) if state.brokers.has_racks else None
    before = {(p.topic, p.partition): p.replicas for p in state.partitions()}
    load = Counter(b for r in before.values() for b in r)
    summary = place_summary(pl)
    for item, entry in zip(req.topics, summary["topics"]):
        lists = lists_of(pl.after, item.topic)
        old = [list(before[(item.topic, p)]) for p in range(len(lists)) if (item.topic, p) in before]
        assert lists[:len(old)] == old  # existing partitions unchanged, in order
        new = lists[len(old):]
        k = item.rf if not item.add else len(old[0])
        assert len(new) == item.partitions and all(len(r) == k == len(set(r)) for r in new)
        assert all(b in eligible for r in new for b in r)
        if live_racks is not None:
            assert all(rack_ok(r, rack_of, live_racks) for r in new)
        assert parse_replica_assignment(entry["replica_assignment"]) == dict(enumerate(lists))
        counts = Counter(b for r in new for b in r)
        if live_racks is None and not item.add:
            # the topic ±1 over the eligible brokers, and the ±1 given to the least loaded (no swap evens more)
            assert spread_of(counts, eligible) <= 1
            for a, b in itertools.permutations(eligible, 2):
                if counts[a] > counts[b]:
                    assert load[a] + counts[a] <= load[b] + counts[b] + 1, (a, b)
            leaders = Counter(r[0] for r in new)
            assert spread_of(leaders, eligible) <= 1
        load.update(counts)
    assert place_text(place(state, req)) == place_text(pl)  # deterministic, byte for byte
    # the existing partitions are the same in Kafka's default; its new ones parse too
    for entry in summary["topics"]:
        parse_replica_assignment(entry["kafka_default"]["replica_assignment"])


def test_kafka_default_is_adminutils_for_a_new_topic_and_for_added_partitions():
    """Without racks: new topic with seed-drawn start and shift as ``kafka_assignment``; added partitions start
    at partition 0's leader, partition ids continuing from the existing count (Kafka's addPartitions)."""
    from flowbalance.generate import kafka_assignment

    state = generate_cluster(brokers=5, topics=1, partitions=7, rf=3, layout="balanced", seed=2)
    req = PlaceRequest((NewTopic("fresh", 12, 3), NewTopic(state.topics[0], 4, add=True)), seed=7)
    pl = place(state, req)
    rng = np.random.default_rng(7)
    start, shift = int(rng.integers(0, 5)), int(rng.integers(0, 5))
    assert lists_of(pl.kafka, "fresh") == kafka_assignment(12, 3, start, shift, brokers=5).tolist()
    # Kafka's loop for ids 7..10 on 5 brokers, start = shift = index of partition 0's leader, written out plainly
    lead0 = lists_of(state, state.topics[0])[0][0]
    s = next(i for i, b in enumerate(range(5)) if b >= lead0)
    expect, shift_now = [], s
    for pid in range(7, 11):
        if pid > 0 and pid % 5 == 0:
            shift_now += 1
        first = (pid + s) % 5
        expect.append([first] + [(first + 1 + (shift_now + j) % 4) % 5 for j in range(2)])
    assert lists_of(pl.kafka, state.topics[0])[7:] == expect


# ---- brute force on tiny clusters ------------------------------------------------------------------------------

TINY = [  # (brokers, existing lists of topic "old", new partitions, RF)
    (3, [[0, 1], [0, 2], [1, 0]], 2, 2),
    (4, [[0, 1], [0, 2], [0, 3], [1, 2]], 3, 2),
    (4, [[3, 2], [3, 1]], 2, 2),
    (3, [[0, 1, 2], [1, 0, 2]], 2, 2),
    (4, [[0, 1], [1, 0], [2, 3]], 3, 1),
]


@pytest.mark.parametrize("n, old, p, k", TINY)
def test_tiny_placements_are_optimal_in_the_stated_order(n, old, p, k):
    """Every placement of p partitions of RF k on n brokers, ranked by (the new topic's replica spread, the
    cluster's replica spread, the topic's leader spread, the cluster's leader spread): ours is first; and its
    failover is the best of any order of its own replica sets."""
    brokers = list(range(n))
    text = "".join(f"Topic: old\tPartition: {i}\tLeader: {r[0]}\tReplicas: {','.join(map(str, r))}\tIsr: "
                   f"{','.join(map(str, r))}\n" for i, r in enumerate(old))
    state = fb.load_texts(("d.txt", text), brokers=("b.csv", "id\n" + "".join(f"{b}\n" for b in brokers))).state
    ours = lists_of(place(state, PlaceRequest((NewTopic("new", p, k),))).after, "new")

    def key(new):
        reps = Counter(b for r in old + new for b in r)
        return (spread_of(Counter(b for r in new for b in r), brokers), spread_of(reps, brokers),
                spread_of(Counter(r[0] for r in new), brokers), spread_of(Counter(r[0] for r in old + new), brokers))

    options = list(itertools.permutations(brokers, k))
    best = min(key([list(x) for x in combo]) for combo in itertools.product(options, repeat=p))
    assert key(ours) == best
    orders = itertools.product(*[itertools.permutations(r) for r in ours])
    fewest = min(failover_worst(old + [list(x) for x in o], brokers) for o in orders if key([list(x) for x in o]) == best)
    assert failover_worst(old + ours, brokers) == fewest


# ---- errors ----------------------------------------------------------------------------------------------------

def _small():
    return generate_cluster(brokers=4, topics=2, partitions=3, rf=2, layout="balanced", seed=1)


@pytest.mark.parametrize("item, field, words", [
    (NewTopic("topic-0000", 3, 2), "topic", "already exists"),
    (NewTopic("nope", 3, add=True), "topic", "unknown topic"),
    (NewTopic("x", 0, 2), "partitions", "from 1 to"),
    (NewTopic("x", 2, add=True, rf=2), "rf/add_partitions", "give no rf"),
    (NewTopic("a b", 2, 2), "topic", "only ASCII letters"),
    (NewTopic("..", 2, 2), "topic", "\"..\""),
    (NewTopic("x" * 250, 2, 2), "topic", "at most 249"),
    (NewTopic("x", 2, 0), "rf", "at least 1"),
])
def test_bad_items_name_the_field(item, field, words):
    with pytest.raises(fb.RequestError) as err:
        place(_small(), PlaceRequest((item,)))
    assert err.value.place == field and words in str(err.value), str(err.value)
    assert "--" not in str(err.value)


def test_collisions_and_rf_above_the_brokers():
    state = generate_cluster(brokers=4, topics=1, partitions=3, rf=2, seed=1)  # topic-0000
    dotted = PlaceRequest((NewTopic("a.b", 1, 1), NewTopic("a_b", 1, 1)))
    with pytest.raises(fb.RequestError, match="collides with 'a.b'"):
        place(state, dotted)
    with pytest.raises(fb.PlanningError, match="replication factor 4 .* above the 3 brokers"):
        place(state, PlaceRequest((NewTopic("t", 2, 4),), exclude_brokers=(3,)))
    with pytest.raises(fb.RequestError, match="exclude_brokers: unknown broker"):
        place(state, PlaceRequest((NewTopic("t", 2, 2),), exclude_brokers=(9,)))
