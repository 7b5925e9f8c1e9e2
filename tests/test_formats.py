"""Readers: every input format of the same cluster gives the same state; detection; sizes and log dirs."""
from __future__ import annotations

import numpy as np
import pytest

from flowbalance.errors import InputError
from flowbalance.formats.brokerfile import read_broker_file
from flowbalance.formats.writers import election_json, reassignment_json
from flowbalance.load import load_cluster, read_assignment, read_text
from flowbalance.model import Brokers, ClusterState

from .conftest import TESTDATA

K = TESTDATA / "kafka"


def _same(a: ClusterState, b: ClusterState) -> bool:
    return (a.topics == b.topics and np.array_equal(a.topic, b.topic) and np.array_equal(a.partition, b.partition)
            and np.array_equal(a.replicas, b.replicas))


def test_every_assignment_format_reads_the_same_cluster():
    base = load_cluster(K / "assignment.json", brokers=K / "brokers.json").state
    for name in ("generate.txt", "describe.txt"):
        other = load_cluster(K / name, brokers=K / "brokers.json").state
        assert _same(base, other), name
    assert base.had_log_dirs
    assert base.num_partitions == 21
    assert set(base.topics) == {"orders", "payments.v2", "audit-log", "clicks"}


def test_format_detection_and_forcing():
    text = read_text(K / "describe.txt")
    assert read_assignment(text, "d", None).origin == "line"
    with pytest.raises(InputError, match="no partition lines"):
        read_assignment(read_text(K / "assignment.json"), "a", "describe")
    with pytest.raises(InputError, match="unknown format"):
        read_assignment("hello world\n", "x.txt", None)


def test_describe_with_and_without_elr_fields():
    old = "Topic: t\tPartitionCount: 1\tReplicationFactor: 2\tConfigs: \n\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2\n"
    new = old.replace("Isr: 1,2\n", "Isr: 1,2\tElr: \tLastKnownElr: \n")
    a, b = read_assignment(old, "o", None), read_assignment(new, "n", None)
    assert a.replicas.tolist() == b.replicas.tolist() == [[1, 2]]


def test_input_order_does_not_matter():
    a = read_assignment('{"partitions":[{"topic":"b","partition":1,"replicas":[1,2]},{"topic":"a","partition":0,"replicas":[2,3]},'
                        '{"topic":"b","partition":0,"replicas":[3,1]}]}', "x", None)
    b = read_assignment('{"partitions":[{"topic":"b","partition":0,"replicas":[3,1]},{"topic":"b","partition":1,"replicas":[1,2]},'
                        '{"topic":"a","partition":0,"replicas":[2,3]}]}', "y", None)
    br = Brokers.build([1, 2, 3])
    sa = ClusterState.build(br, a.topic_names, a.partition, a.replicas)
    sb = ClusterState.build(br, b.topic_names, b.partition, b.replicas)
    assert _same(sa, sb)
    assert reassignment_json(sa) == reassignment_json(sb)
    assert sa.partition_at(0).topic == "a"


def test_broker_files_json_list_map_and_csv_agree():
    a = read_broker_file(read_text(K / "brokers.json"), "j")
    b = read_broker_file(read_text(K / "racks.json"), "m")
    c = read_broker_file(read_text(K / "brokers.csv"), "c")
    for x in (b, c):
        assert a.ids.tolist() == x.ids.tolist()
        assert a.rack_names == x.rack_names and a.rack.tolist() == x.rack.tolist()
    assert c.capacity.tolist() == [4 * 1024**4] * 6
    assert list(a)[0].rack == "us-east-1a"
    csv_noheader = read_broker_file("0,a\n1,b,2\n2,,1,100\n", "c2")
    assert csv_noheader.weight.tolist() == [1.0, 2.0, 1.0]
    assert csv_noheader.rack.tolist() == [0, 1, -1]


def test_logdirs_sizes_take_the_largest_replica_and_keep_dirs():
    ld = load_cluster(K / "assignment.json", brokers=K / "brokers.json", sizes=K / "logdirs.txt")
    st = ld.state
    assert st.has_sizes and (st.size > 0).all()
    assert st.log_dirs[1] == ["/var/lib/kafka/data"]
    from flowbalance.formats.logdirs import read_logdirs

    raw = read_logdirs(read_text(K / "logdirs.txt"), "l")
    for key, vals in raw.replica_sizes.items():
        assert raw.sizes[key] == max(vals)


def test_logdirs_ignores_future_copies_and_splits_on_last_dash():
    from flowbalance.formats.logdirs import read_logdirs

    text = ('status\nstatus\n{"version":1,"brokers":[{"broker":0,"logDirs":[{"logDir":"/d","error":null,"partitions":['
            '{"partition":"my-topic-12","size":10,"offsetLag":0,"isFuture":false},'
            '{"partition":"my-topic-12","size":999999999,"offsetLag":0,"isFuture":true}]}]},'
            '{"broker":1,"logDirs":[{"logDir":"/e","error":null,"partitions":[{"partition":"my-topic-12","size":900000000,"offsetLag":0,"isFuture":false}]}]}]}\n')
    ld = read_logdirs(text, "l")
    assert ld.sizes == {("my-topic", 12): 900000000}
    assert len(ld.warnings) == 1 and "2x" in ld.warnings[0]


def test_election_json_shape():
    st = load_cluster(K / "assignment.json").state
    text = election_json(st, np.array([3, 0]))
    import json

    doc = json.loads(text)
    assert doc == {"partitions": [{"topic": st.topics[st.topic[0]], "partition": int(st.partition[0])},
                                  {"topic": st.topics[st.topic[3]], "partition": int(st.partition[3])}]}


def test_reassignment_json_round_trips_and_keeps_log_dirs():
    st = load_cluster(K / "assignment.json").state
    text = reassignment_json(st)
    again = read_assignment(text, "again", None)
    st2 = ClusterState.build(st.brokers, again.topic_names, again.partition, again.replicas, had_log_dirs=again.had_log_dirs)
    assert _same(st, st2) and st2.had_log_dirs
    assert reassignment_json(st2) == text
    plain = load_cluster(TESTDATA / "seed" / "assignment.json").state
    assert "log_dirs" not in reassignment_json(plain)
