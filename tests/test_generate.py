"""Synthetic clusters (flowbalance.generate) and the text writers of formats.dumps, round-tripped through the readers."""
from __future__ import annotations

import numpy as np
import pytest

from flowbalance.errors import InputError
from flowbalance.formats.brokerfile import read_broker_file
from flowbalance.formats.describe import read_describe
from flowbalance.formats.dumps import brokers_csv, brokers_json, describe_text, generate_text, logdirs_text
from flowbalance.formats.logdirs import read_logdirs
from flowbalance.formats.reassignment import read_generate_output, read_reassignment_json
from flowbalance.formats.writers import reassignment_json
from flowbalance.generate import generate_cluster
from flowbalance.load import load_cluster
from flowbalance.model import PAD, Brokers, ClusterState


# ---- helpers (counts computed here, independently of flowbalance.metrics) ------------------------


def dense(state: ClusterState) -> np.ndarray:
    return np.searchsorted(state.brokers.ids, state.replicas)


def replica_counts(state: ClusterState) -> np.ndarray:
    return np.bincount(dense(state).ravel(), minlength=len(state.brokers))


def leader_counts(state: ClusterState) -> np.ndarray:
    return np.bincount(dense(state)[:, 0], minlength=len(state.brokers))


def spread(counts: np.ndarray) -> int:
    return int(counts.max() - counts.min())


def topic_spreads(state: ClusterState, column: int | None = None) -> list[int]:
    d = dense(state)
    out = []
    for t in range(len(state.topics)):
        rows = d[state.topic == t]
        vals = rows.ravel() if column is None else rows[:, column]
        out.append(spread(np.bincount(vals, minlength=len(state.brokers))))
    return out


def rows_distinct(values: np.ndarray) -> bool:
    s = np.sort(values, axis=1)
    return not bool((s[:, 1:] == s[:, :-1]).any())


def racks_of(state: ClusterState) -> np.ndarray:
    return state.brokers.rack[dense(state)]


def same_assignment(state: ClusterState, raw) -> None:
    back = ClusterState.build(Brokers.build(state.brokers.ids), raw.topic_names, raw.partition, raw.replicas)
    assert back.topics == state.topics
    np.testing.assert_array_equal(back.topic, state.topic)
    np.testing.assert_array_equal(back.partition, state.partition)
    np.testing.assert_array_equal(back.replicas, state.replicas)


# ---- shape, names, determinism -----------------------------------------------------------------


def test_shape_names_and_ids():
    s = generate_cluster(brokers=7, racks=3, topics=12, partitions=(2, 9), rf=2, first_broker_id=100, seed=3)
    assert s.brokers.ids.tolist() == list(range(100, 107))
    assert [b.rack for b in s.brokers] == ["r0", "r1", "r2", "r0", "r1", "r2", "r0"]
    assert s.topics == tuple(f"topic-{t:04d}" for t in range(12))
    per_topic = np.bincount(s.topic, minlength=12)
    assert per_topic.min() >= 2 and per_topic.max() <= 9
    for t in range(12):
        assert s.partition[s.topic == t].tolist() == list(range(per_topic[t]))
    assert s.replicas.dtype == np.int32 and s.replicas.shape == (s.num_partitions, 2)
    assert np.isin(s.replicas, s.brokers.ids).all()
    assert (s.size == -1).all() and not s.has_sizes
    # canonical order, exactly as ClusterState.build would sort it
    built = ClusterState.build(s.brokers, [s.topics[t] for t in s.topic], s.partition, s.replicas)
    np.testing.assert_array_equal(built.replicas, s.replicas)


def test_many_topics_names_stay_sorted():
    s = generate_cluster(brokers=3, topics=12345, partitions=1, rf=1)
    assert s.topics[0] == "topic-00000" and s.topics[-1] == "topic-12344"
    assert list(s.topics) == sorted(s.topics)


@pytest.mark.parametrize("kw", [
    dict(layout="random"),
    dict(layout="random", skew=0.8, sizes=True),
    dict(layout="random", racks=4, rack_aware=True, skew=1.5),
    dict(layout="balanced", racks=3, rack_aware=True, sizes=True),
    dict(layout="kafka", racks=4, rack_aware=True, sizes=True),
    dict(layout="random", skew=0.5, history=3),
])
def test_deterministic_by_seed(kw):
    args = dict(brokers=30, topics=20, partitions=(1, 40), rf=3, **kw)
    a = generate_cluster(seed=11, **args)
    b = generate_cluster(seed=11, **args)
    c = generate_cluster(seed=12, **args)
    assert reassignment_json(a) == reassignment_json(b)
    assert describe_text(a) == describe_text(b)
    np.testing.assert_array_equal(a.size, b.size)
    assert reassignment_json(a) != reassignment_json(c)


@pytest.mark.parametrize("rf", [1, 2, 3, 5])
@pytest.mark.parametrize("skew", [0.0, 2.0])
def test_random_replicas_distinct_and_rf(rf, skew):
    s = generate_cluster(brokers=9, topics=30, partitions=(1, 50), rf=rf, skew=skew, seed=rf)
    assert (s.rf == rf).all()
    assert (s.replicas != PAD).all()
    assert rows_distinct(s.replicas)


def test_random_rf_equals_brokers_with_heavy_skew():
    # most draws collide: exercises the masked fallback after the rejection rounds
    s = generate_cluster(brokers=4, topics=50, partitions=40, rf=4, skew=3.0, seed=5)
    assert rows_distinct(s.replicas)
    assert (np.sort(s.replicas, axis=1) == np.arange(4)).all()


@pytest.mark.parametrize("skew", [0.0, 0.5, 3.0])
@pytest.mark.parametrize("brokers,racks,rf", [(12, 3, 3), (10, 4, 3), (7, 3, 2), (6, 6, 6)])
def test_random_rack_aware_distinct_racks(brokers, racks, rf, skew):
    s = generate_cluster(brokers=brokers, racks=racks, topics=25, partitions=(1, 60), rf=rf, skew=skew,
                         rack_aware=True, seed=brokers + racks)
    assert (s.rf == rf).all()
    assert rows_distinct(s.replicas)
    assert rows_distinct(racks_of(s))


def test_skew_widens_the_spread():
    args = dict(brokers=40, topics=100, partitions=100, rf=3, seed=1)
    flat = spread(replica_counts(generate_cluster(**args)))
    skewed = spread(replica_counts(generate_cluster(skew=0.3, **args)))
    assert skewed > 3 * flat
    assert skewed > 1000


# ---- balanced layout ---------------------------------------------------------------------------


@pytest.mark.parametrize("brokers,rf,partitions", [
    (10, 3, 7), (12, 3, (1, 30)), (12, 4, (1, 30)), (10, 2, (3, 17)), (6, 6, (1, 9)),
    (5, 1, 3), (1, 1, 4), (40, 3, (1, 100)), (8, 4, 1), (9, 3, (2, 5)),
])
def test_balanced_spreads_within_one(brokers, rf, partitions):
    s = generate_cluster(brokers=brokers, topics=23, partitions=partitions, rf=rf, layout="balanced", seed=brokers)
    assert (s.rf == rf).all()
    assert rows_distinct(s.replicas)
    assert spread(replica_counts(s)) <= 1
    assert spread(leader_counts(s)) <= 1
    assert max(topic_spreads(s)) <= 1
    assert max(topic_spreads(s, column=0)) <= 1  # per-topic leaders too


@pytest.mark.parametrize("brokers,racks,rf", [(12, 3, 3), (12, 4, 2), (20, 4, 4), (6, 2, 2)])
def test_balanced_rack_aware_even_racks(brokers, racks, rf):
    s = generate_cluster(brokers=brokers, racks=racks, topics=17, partitions=(1, 25), rf=rf, layout="balanced",
                         rack_aware=True, seed=racks)
    assert rows_distinct(racks_of(s))
    assert spread(replica_counts(s)) <= 1
    assert spread(leader_counts(s)) <= 1
    assert max(topic_spreads(s)) <= 1


@pytest.mark.parametrize("brokers,racks,rf", [(7, 3, 3), (10, 3, 2), (11, 4, 3)])
def test_balanced_rack_aware_uneven_racks(brokers, racks, rf):
    # a perfectly balanced layout does not exist here; racks stay distinct and each rack is balanced inside
    s = generate_cluster(brokers=brokers, racks=racks, topics=17, partitions=(1, 25), rf=rf, layout="balanced",
                         rack_aware=True, seed=racks)
    assert rows_distinct(racks_of(s))
    reps, leads = replica_counts(s), leader_counts(s)
    rack_reps = np.bincount(racks_of(s).ravel(), minlength=racks)
    rack_leads = np.bincount(racks_of(s)[:, 0], minlength=racks)
    assert spread(rack_reps) <= 1 and spread(rack_leads) <= 1
    for r in range(racks):
        members = s.brokers.rack == r
        assert spread(reps[members]) <= 1
        assert spread(leads[members]) <= 1


# ---- sizes -------------------------------------------------------------------------------------


def test_sizes_heavy_tailed():
    s = generate_cluster(brokers=10, topics=100, partitions=100, rf=2, sizes=True, size_mean_bytes=1 << 20,
                         size_alpha=3.0)
    assert s.size.dtype == np.int64 and s.has_sizes
    mean = s.size.mean()
    assert 0.8 * (1 << 20) < mean < 1.2 * (1 << 20)
    assert s.size.min() >= (1 << 20) * 2 / 3 - 1  # Pareto minimum x_m = mean * (alpha-1)/alpha
    heavy = generate_cluster(brokers=10, topics=100, partitions=100, rf=2, sizes=True)
    assert heavy.size.max() > 20 * np.median(heavy.size)


def test_sizes_do_not_depend_on_the_layout():
    a = generate_cluster(brokers=10, topics=5, partitions=5, rf=2, sizes=True, seed=4)
    b = generate_cluster(brokers=10, topics=5, partitions=5, rf=2, sizes=True, seed=4, layout="balanced")
    np.testing.assert_array_equal(a.size, b.size)


# ---- round trips through the readers -----------------------------------------------------------


@pytest.fixture(scope="module")
def cluster() -> ClusterState:
    return generate_cluster(brokers=9, racks=3, topics=6, partitions=(1, 12), rf=3, rack_aware=True, sizes=True,
                            first_broker_id=3, seed=8)


def test_roundtrip_reassignment_json(cluster):
    same_assignment(cluster, read_reassignment_json(reassignment_json(cluster), "a.json"))


def test_roundtrip_describe(cluster):
    text = describe_text(cluster)
    same_assignment(cluster, read_describe(text, "d.txt"))
    first = text.splitlines()[0]
    assert first.startswith("Topic: topic-0000\tTopicId: ") and "\tPartitionCount: " in first
    assert first.endswith("\tReplicationFactor: 3\tConfigs: ")
    line = text.splitlines()[1]
    r = ",".join(map(str, cluster.replicas[0]))
    assert line == f"\tTopic: topic-0000\tPartition: 0\tLeader: {cluster.replicas[0, 0]}\tReplicas: {r}\tIsr: {r}"
    assert describe_text(cluster) == text


def test_roundtrip_generate_output(cluster):
    text = generate_text(cluster)
    assert text.startswith("Current partition replica assignment\n{")
    assert "\nProposed partition reassignment configuration\n{" in text
    raw = read_generate_output(text, "g.txt")
    same_assignment(cluster, raw)
    assert not raw.had_log_dirs
    assert read_generate_output(generate_text(cluster, log_dirs=True), "g.txt").had_log_dirs


def test_roundtrip_logdirs(cluster):
    text = logdirs_text(cluster, log_dir="/data/kafka")
    lines = text.splitlines()
    assert lines[0] == "Querying brokers for log directories information"
    assert lines[1] == "Received log directory information from brokers " + ",".join(map(str, cluster.brokers.ids))
    assert len(lines) == 3
    ld = read_logdirs(text, "l.txt")
    assert ld.dirs == {int(b): ["/data/kafka"] for b in cluster.brokers.ids}
    assert ld.sizes == {(cluster.topics[t], int(p)): int(z)
                        for t, p, z in zip(cluster.topic, cluster.partition, cluster.size)}
    assert all(len(v) == 3 for v in ld.replica_sizes.values())
    assert not ld.warnings


def test_logdirs_needs_sizes():
    with pytest.raises(ValueError):
        logdirs_text(generate_cluster(brokers=3, topics=1, partitions=1, rf=1))


@pytest.mark.parametrize("writer", [brokers_csv, brokers_json])
def test_roundtrip_broker_files(cluster, writer):
    text = writer(cluster.brokers)
    back = read_broker_file(text, "b")
    np.testing.assert_array_equal(back.ids, cluster.brokers.ids)
    assert [b.rack for b in back] == [b.rack for b in cluster.brokers]
    np.testing.assert_array_equal(back.weight, cluster.brokers.weight)
    np.testing.assert_array_equal(back.capacity, cluster.brokers.capacity)


def test_broker_csv_columns():
    plain = Brokers.build([2, 1])
    assert brokers_csv(plain) == "id,rack\n1,\n2,\n"
    weighted = Brokers.build([1, 2], ["a", "b"], [1.0, 2.5])
    assert brokers_csv(weighted) == "id,rack,weight\n1,a,1\n2,b,2.5\n"
    full = Brokers.build([1, 2], ["a", None], [1.0, 1.0], [None, 1000], [False, True])
    assert brokers_csv(full) == "id,rack,weight,capacity_bytes\n1,a,1,\n2,,1,1000\n"
    for b in (plain, weighted, full):
        for writer in (brokers_csv, brokers_json):
            back = read_broker_file(writer(b), "b")
            assert [(x.id, x.rack, x.weight, x.capacity_bytes) for x in back] == \
                   [(x.id, x.rack, x.weight, x.capacity_bytes) for x in b]
    assert [x.removed for x in read_broker_file(brokers_json(full), "b")] == [False, True]


def test_load_cluster_from_every_format(cluster, tmp_path):
    files = {
        "assignment.json": reassignment_json(cluster),
        "describe.txt": describe_text(cluster),
        "generate.txt": generate_text(cluster),
        "brokers.csv": brokers_csv(cluster.brokers),
        "brokers.json": brokers_json(cluster.brokers),
        "logdirs.txt": logdirs_text(cluster),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    for current in ("assignment.json", "describe.txt", "generate.txt"):
        for brokers in ("brokers.csv", "brokers.json"):
            loaded = load_cluster(tmp_path / current, brokers=tmp_path / brokers, sizes=tmp_path / "logdirs.txt")
            s = loaded.state
            assert not loaded.warnings
            assert s.topics == cluster.topics
            np.testing.assert_array_equal(s.replicas, cluster.replicas)
            np.testing.assert_array_equal(s.size, cluster.size)
            np.testing.assert_array_equal(s.brokers.rack, cluster.brokers.rack)


def test_dump_json_escapes_topic_names():
    b = Brokers.build([1, 2])
    s = ClusterState.build(b, ['we"ird\\name', "ok-1"], [0, 3], np.array([[1, 2], [2, 1]]), np.array([5, 7]))
    assert read_logdirs(logdirs_text(s), "l").sizes == {('we"ird\\name', 0): 5, ("ok-1", 3): 7}
    text = generate_text(s)  # escaped as JSON; the assignment readers refuse the name as Kafka would
    assert 'we\\"ird\\\\name' in text
    with pytest.raises(InputError, match="invalid topic name"):
        read_generate_output(text, "g")


# ---- bad values --------------------------------------------------------------------------------

GOOD = dict(brokers=6, racks=0, topics=3, partitions=4, rf=3)


@pytest.mark.parametrize("change,param", [
    (dict(brokers=0), "brokers"),
    (dict(brokers=100_001), "brokers"),
    (dict(rf=7), "rf"),
    (dict(rf=0), "rf"),
    (dict(racks=-1), "racks"),
    (dict(racks=7), "racks"),
    (dict(rack_aware=True), "rack_aware"),
    (dict(racks=2, rack_aware=True), "rack_aware"),
    (dict(topics=0), "topics"),
    (dict(partitions=0), "partitions"),
    (dict(partitions=(5, 2)), "partitions"),
    (dict(partitions=(0, 2)), "partitions"),
    (dict(partitions="4"), "partitions"),
    (dict(skew=-0.5), "skew"),
    (dict(skew=float("nan")), "skew"),
    (dict(skew=0.5, layout="balanced"), "skew"),
    (dict(layout="zigzag"), "layout"),
    (dict(size_alpha=1.0), "size_alpha"),
    (dict(first_broker_id=-1), "first_broker_id"),
    (dict(first_broker_id=2**31 - 3), "first_broker_id"),
    (dict(seed=-1), "seed"),
    (dict(history=-2), "history"),
    (dict(history=3), "history"),  # 6 // 3 = 2 brokers in the first wave, below RF 3
    (dict(skew=0.5, layout="kafka"), "skew"),
])
def test_bad_values_raise_input_error_naming_the_parameter(change, param):
    with pytest.raises(InputError) as err:
        generate_cluster(**{**GOOD, **change})
    assert (err.value.source, err.value.place) == ("generate_cluster", param)
    assert str(err.value).startswith(f"generate_cluster: {param}: ")
    assert "--" not in str(err.value)  # the library names parameters, never the command line's flags
