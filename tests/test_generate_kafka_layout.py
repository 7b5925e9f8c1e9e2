"""``layout="kafka"`` and ``history``: Kafka's own replica assignment, and clusters grown in waves.

The oracle is a line-by-line Python transcription of Kafka's ``AdminUtils.assignReplicasToBrokers`` (rack-unaware and
rack-aware, with ``getRackAlternatedBrokerList``), written with loops and sets on broker ids and rack names, as in
Kafka's source; the numpy version must give the same assignment for any start index and replica shift, racks of any
sizes and names. Then properties of generated clusters: racks distinct, leaders even, history waves, determinism,
and the command line writing files that ``flowbalance check`` reads."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

from flowbalance.errors import InputError
from flowbalance.formats.writers import reassignment_json
from flowbalance.generate import generate_cluster, kafka_assignment
from flowbalance.model import ClusterState


# ---- the oracle: Kafka's algorithm, transcribed ------------------------------------------------------------------


def _replica_index(first: int, second_shift: int, j: int, n: int) -> int:
    shift = 1 + (second_shift + j) % (n - 1)
    return (first + shift) % n


def _rack_alternated(rack_of: dict[int, str]) -> list[int]:
    by_rack: dict[str, list[int]] = {}
    for broker, rack in rack_of.items():
        by_rack.setdefault(rack, []).append(broker)
    iters = {rack: iter(sorted(ids)) for rack, ids in by_rack.items()}
    names = sorted(iters)
    result: list[int] = []
    i = 0
    while len(result) < len(rack_of):
        nxt = next(iters[names[i]], None)
        if nxt is not None:
            result.append(nxt)
        i = (i + 1) % len(names)
    return result


def kafka_oracle(ids: list[int], rack_of: dict[int, str] | None, partitions: int, rf: int, start: int,
                 shift: int) -> list[list[int]]:
    """Kafka's assignment of a new topic (partition ids from 0) with a fixed start index and replica shift."""
    out = []
    if rack_of is None:
        brokers = sorted(ids)
        n = len(brokers)
        for p in range(partitions):
            if p > 0 and p % n == 0:
                shift += 1
            first = (p + start) % n
            out.append([brokers[first]] + [brokers[_replica_index(first, shift, j, n)] for j in range(rf - 1)])
        return out
    arranged = _rack_alternated(rack_of)
    n, num_racks = len(arranged), len(set(rack_of.values()))
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        leader = arranged[first]
        replicas, racks_used, brokers_used = [leader], {rack_of[leader]}, {leader}
        k = 0
        for _ in range(rf - 1):
            while True:
                broker = arranged[_replica_index(first, shift * num_racks, k, n)]
                rack = rack_of[broker]
                k += 1
                if (rack not in racks_used or len(racks_used) == num_racks) and \
                        (broker not in brokers_used or len(brokers_used) == n):
                    replicas.append(broker)
                    racks_used.add(rack)
                    brokers_used.add(broker)
                    break
        out.append(replicas)
    return out


def _rack_indices(rack_of: dict[int, str], ids: list[int]) -> np.ndarray:
    """Rack of each broker (ids ascending) as the index of its name in sorted order (how Brokers stores racks)."""
    names = sorted(set(rack_of.values()))
    return np.array([names.index(rack_of[b]) for b in sorted(ids)])


# ---- numpy equals the transcription ------------------------------------------------------------------------------


def test_oracle_reproduces_kafkas_documented_example():
    # AdminUtils' doc comment: racks 0->rack1, 1->rack3, 2->rack3, 3->rack2, 4->rack2, 5->rack1 give the list
    # 0, 3, 1, 5, 4, 2; 6 partitions at RF 3 from start 0 go 0,3,1 / 3,1,5 / 1,5,4 / 5,4,2 / 4,2,0 / 2,0,3
    rack_of = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert _rack_alternated(rack_of) == [0, 3, 1, 5, 4, 2]
    assert kafka_oracle(list(rack_of), rack_of, 6, 3, 0, 0) == \
        [[0, 3, 1], [3, 1, 5], [1, 5, 4], [5, 4, 2], [4, 2, 0], [2, 0, 3]]
    ours = kafka_assignment(6, 3, 0, 0, rack=_rack_indices(rack_of, list(rack_of)))
    assert ours.tolist() == [[0, 3, 1], [3, 1, 5], [1, 5, 4], [5, 4, 2], [4, 2, 0], [2, 0, 3]]


def test_rack_unaware_equals_the_transcription():
    rnd = random.Random(16)
    for _ in range(400):
        n = rnd.randint(1, 25)
        rf = rnd.randint(1, n)
        parts = rnd.randint(1, 4 * n + 3)
        start, shift = rnd.randrange(n), rnd.randrange(n)
        ids = list(range(n))
        want = kafka_oracle(ids, None, parts, rf, start, shift)
        assert kafka_assignment(parts, rf, start, shift, brokers=n).tolist() == want, (n, rf, parts, start, shift)


@pytest.mark.parametrize("sizes", ["random", "even", "one-big"])
def test_rack_aware_equals_the_transcription(sizes):
    rnd = random.Random({"random": 1, "even": 2, "one-big": 3}[sizes])
    for _ in range(250):
        n = rnd.randint(1, 24)
        racks = rnd.randint(1, n)
        names = [rnd.choice("abcxyz") + str(rnd.randint(0, 30)) for _ in range(racks)]  # sorted as strings
        names = list(dict.fromkeys(names))
        if sizes == "random":
            labels = [rnd.choice(names) for _ in range(n)]
        elif sizes == "even":
            labels = [names[i % len(names)] for i in range(n)]
        else:
            labels = [names[0] if i < n // 2 else rnd.choice(names) for i in range(n)]
        ids = rnd.sample(range(1000), n)  # ids unrelated to racks and to their order
        rack_of = dict(zip(ids, labels))
        rf = rnd.randint(1, n)
        parts = rnd.randint(1, 3 * n + 5)
        start, shift = rnd.randrange(n), rnd.randrange(n)
        want = kafka_oracle(ids, rack_of, parts, rf, start, shift)
        got = kafka_assignment(parts, rf, start, shift, rack=_rack_indices(rack_of, ids))
        by_index = sorted(ids)
        assert [[by_index[i] for i in row] for row in got.tolist()] == want, (rack_of, rf, parts, start, shift)


def _matches_some_kafka_draw(state: ClusterState, t: int, n: int, rack_aware: bool) -> bool:
    """Topic t is Kafka's assignment on the first n brokers for some (start, shift): start is where its partition 0
    leads; every shift is tried."""
    ids = [int(b) for b in state.brokers.ids[:n]]
    rack_of = {b: state.brokers.rack_names[r] for b, r in zip(ids, state.brokers.rack[:n])} if rack_aware else None
    rows = state.replicas[state.topic == t]
    order = _rack_alternated(rack_of) if rack_aware else sorted(ids)
    start = order.index(int(rows[0, 0]))
    want = rows.tolist()
    return any(kafka_oracle(ids, rack_of, len(rows), rows.shape[1], start, s) == want for s in range(n))


@pytest.mark.parametrize("brokers, racks, rf, history", [
    (9, 0, 3, 0), (13, 4, 3, 0), (14, 12, 3, 0), (10, 3, 4, 0), (12, 3, 2, 3), (16, 0, 3, 4), (23, 11, 3, 2),
])
def test_generated_topics_are_kafka_assignments(brokers, racks, rf, history):
    # 11 and 12 racks: names r10, r11 sort before r2, as Kafka sorts them; RF 4 on 3 racks is allowed, as in Kafka
    rack_aware = racks > 0
    s = generate_cluster(brokers=brokers, racks=racks, topics=12, partitions=(1, 30), rf=rf, layout="kafka",
                         rack_aware=rack_aware, history=history, seed=brokers)
    n_of = [brokers * (t * max(history, 1) // 12 + 1) // max(history, 1) for t in range(12)]
    for t in range(12):
        assert _matches_some_kafka_draw(s, t, n_of[t], rack_aware), t


# ---- properties of generated clusters ----------------------------------------------------------------------------


def _dense(state: ClusterState) -> np.ndarray:
    return np.searchsorted(state.brokers.ids, state.replicas)


@pytest.mark.parametrize("brokers, racks, rf", [(12, 3, 3), (13, 4, 3), (20, 6, 4), (7, 3, 3), (30, 11, 5)])
def test_rack_aware_puts_replicas_in_distinct_racks(brokers, racks, rf):
    s = generate_cluster(brokers=brokers, racks=racks, topics=30, partitions=(1, 50), rf=rf, layout="kafka",
                         rack_aware=True, seed=rf)
    r = np.sort(s.brokers.rack[_dense(s)], axis=1)
    assert not (r[:, 1:] == r[:, :-1]).any()


@pytest.mark.parametrize("brokers, racks, rf", [(12, 3, 4), (10, 2, 3), (9, 4, 6)])
def test_rf_above_racks_gives_every_rack_a_replica(brokers, racks, rf):
    s = generate_cluster(brokers=brokers, racks=racks, topics=20, partitions=(1, 40), rf=rf, layout="kafka",
                         rack_aware=True, seed=racks)
    d = np.sort(_dense(s), axis=1)
    assert not (d[:, 1:] == d[:, :-1]).any()
    racks_hit = s.brokers.rack[d]
    for row in racks_hit:
        assert len(set(row.tolist())) == racks


@pytest.mark.parametrize("racks, rack_aware", [(0, False), (3, True), (4, True), (5, False)])
def test_leaders_even_when_partitions_are_a_multiple_of_brokers(racks, rack_aware):
    brokers = 12
    s = generate_cluster(brokers=brokers, racks=racks, topics=15, partitions=3 * brokers, rf=3, layout="kafka",
                         rack_aware=rack_aware, seed=racks)
    d = _dense(s)
    for t in range(15):
        assert (np.bincount(d[s.topic == t, 0], minlength=brokers) == 3).all()


def test_fewer_partitions_than_brokers_leave_followers_together():
    # the real shape: rack-unaware, P < N: partition p+1's leader is p's first follower (shift stays put)
    s = generate_cluster(brokers=40, topics=30, partitions=(2, 20), rf=3, layout="kafka", seed=3)
    d = _dense(s)
    for t in range(30):
        rows = d[s.topic == t]
        assert (rows[1:, 0] == (rows[:-1, 0] + 1) % 40).all()
        assert ((rows[:, 1] - rows[:, 0]) % 40 == (rows[0, 1] - rows[0, 0]) % 40).all()


@pytest.mark.parametrize("layout, racks, rack_aware", [
    ("kafka", 0, False), ("kafka", 3, True), ("random", 3, True), ("balanced", 0, False), ("balanced", 4, True),
])
def test_history_keeps_later_brokers_out_of_earlier_topics(layout, racks, rack_aware):
    brokers, topics, waves = 24, 40, 4
    s = generate_cluster(brokers=brokers, racks=racks, topics=topics, partitions=(6, 30), rf=3, layout=layout,
                         rack_aware=rack_aware, history=waves, seed=5)
    d = _dense(s)
    top = np.zeros(brokers, dtype=int)  # latest wave of a topic on each broker
    for t in range(topics):
        wave = t * waves // topics
        existing = brokers * (wave + 1) // waves
        rows = d[s.topic == t]
        assert rows.max() < existing, (t, wave)
        np.maximum.at(top, rows.ravel(), wave)
    first_of_wave = [brokers * w // waves for w in range(waves)]
    for w in range(1, waves):  # a broker that joined in wave w holds only topics of wave w or later
        joined = np.arange(first_of_wave[w], brokers)
        assert (top[joined] >= w).all()
    assert d[s.topic >= topics - topics // waves].max() == brokers - 1  # the newest topics reach the newest brokers
    counts = np.bincount(d.ravel(), minlength=brokers)
    assert counts[: brokers // waves].mean() > 2 * counts[-(brokers // waves):].mean()  # old brokers carry more


@pytest.mark.parametrize("kw", [dict(), dict(racks=3, rack_aware=True), dict(racks=4, rack_aware=True, history=3)])
def test_deterministic_by_seed(kw):
    args = dict(brokers=20, topics=25, partitions=(1, 40), rf=3, layout="kafka", **kw)
    a, b, c = (generate_cluster(seed=s, **args) for s in (7, 7, 8))
    assert reassignment_json(a) == reassignment_json(b)
    assert reassignment_json(a) != reassignment_json(c)


def test_history_off_is_the_same_cluster():
    args = dict(brokers=20, racks=3, topics=25, partitions=(1, 40), rf=3, seed=2)
    for layout in ("random", "balanced", "kafka"):
        base = generate_cluster(layout=layout, **args)
        for h in (0, 1):
            np.testing.assert_array_equal(generate_cluster(layout=layout, history=h, **args).replicas, base.replicas)


# ---- bad values, and the command line ----------------------------------------------------------------------------


@pytest.mark.parametrize("kw, place", [
    (dict(history=-1), "history"),
    (dict(history=1.5), "history"),
    (dict(history=5), "history"),  # 12 // 5 = 2 brokers in the first wave, below RF 3
    (dict(layout="kafka", rack_aware=True), "rack_aware"),
    (dict(layout="random", racks=2, rack_aware=True), "rack_aware"),
])
def test_bad_values_name_the_parameter(kw, place):
    with pytest.raises(InputError) as err:
        generate_cluster(brokers=12, topics=4, partitions=5, rf=3, **kw)
    assert (err.value.source, err.value.place) == ("generate_cluster", place)
    assert "--" not in str(err.value)


def test_kafka_assignment_refuses_rf_above_brokers():
    with pytest.raises(InputError):
        kafka_assignment(4, 4, 0, 0, brokers=3)


def test_cli_history_error_names_the_flag(run_cli, tmp_path):
    code, out, err = run_cli("generate", "--brokers", "4", "--history", "3", "--rf", "2", "-o", tmp_path / "g")
    assert code == 2
    assert err.strip().splitlines()[-1].startswith("flowbalance: error: --history: the first of 3 waves")
    assert not (tmp_path / "g").exists()


def test_cli_writes_a_kafka_cluster_that_check_reads(run_cli, tmp_path):
    out = tmp_path / "k"
    code, stdout, err = run_cli("generate", "--layout", "kafka", "--racks", "3", "--rack-aware", "--brokers", "12",
                                "--topics", "8", "--partitions", "3-20", "--history", "2", "--seed", "4",
                                "--formats", "json,brokers,describe", "-o", out)
    assert code == 0, err
    assert {p.name for p in out.iterdir()} == {"assignment.json", "brokers.csv", "describe.txt"}
    expect = generate_cluster(brokers=12, racks=3, rack_aware=True, topics=8, partitions=(3, 20), rf=3,
                              layout="kafka", history=2, seed=4)
    assert (out / "assignment.json").read_text() == reassignment_json(expect)
    code, stdout, err = run_cli("check", out / "assignment.json", "--brokers", out / "brokers.csv", "--json")
    assert code in (0, 1), err  # balanced or not, but read without error
    data = json.loads(stdout)
    assert data["cluster"]["brokers"] == 12 and data["cluster"]["replicas"] == expect.num_replicas
    assert data["cluster"]["racks"] == ["r0", "r1", "r2"] and data["checks"]["racks"]
