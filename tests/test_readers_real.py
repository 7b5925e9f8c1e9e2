"""The assignment readers on what Kafka's tools really print (../shared/realworld), on the whitespace variants of a
describe, and on bad input: every real dump reads right, every bad one is refused in one line."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from flowbalance.errors import InputError
from flowbalance.formats.brokerfile import read_broker_file
from flowbalance.formats.describe import read_describe
from flowbalance.formats.dumps import describe_text, generate_text
from flowbalance.formats.raw import RawAssignment
from flowbalance.formats.reassignment import CURRENT_MARK, read_generate_output, read_reassignment_json
from flowbalance.formats.writers import reassignment_json
from flowbalance.generate import generate_cluster
from flowbalance.load import load_cluster, read_assignment, read_text
from flowbalance.model import PAD
from flowbalance.planfile import plan_from_text

from .conftest import ROOT

REAL = ROOT.parent / "shared" / "realworld"

# file: (partitions, {partition: replicas} for a few, copied by eye from the file)
EXPECTED = {
    # describe
    "ak-pr8332-describe-during-reassignment/describe.txt": (1, {"my-replicated-topic-0": [2, 1, 0]}),
    "akdocs-09-quickstart-leader-moved/describe.txt": (1, {"my-replicated-topic-0": [1, 2, 0]}),
    "akdocs-ops-describe-rf3/describe.txt": (1, {"foo-0": [5, 6, 7]}),
    "akdocs-quickstart-describe-spaces/describe.txt": (1, {"quickstart-events-0": [0]}),
    "confluent-mrc-docs-mixed-separators/describe.txt": (7, {"single-region-0": [2, 1],
                                                             "multi-region-sync-0": [1, 2, 3, 4],
                                                             "multi-region-async-op-under-min-isr-0": [2, 1, 3, 4]}),
    "confluent-mrc-offline-observers/describe.txt": (3, {"single-region-0": [2, 1], "multi-region-sync-0": [2, 1, 4, 3]}),
    "kafka08-list-topic-lowercase/list-topic.txt": (2, {"my-replicated-topic-0": [1, 2, 0], "test-0": [0]}),
    "kafka38-describe-elr-na-warn-line/describe.txt": (3, {"paytm-topic-0": [0], "paytm-topic-2": [0]}),
    "strimzi-2021-describe-spaces-remove34/describe.txt": (20, {"my-topic-two-0": [0, 4, 1], "my-topic-two-9": [3, 4, 1],
                                                               "my-topic-0": [2, 3, 0], "my-topic-9": [1, 3, 0]}),
    "strimzi-2024-describe-kafka36-remove3/describe.txt": (3, {"my-topic-0": [2, 3, 1], "my-topic-2": [1, 0, 2]}),
    "yunti2me-describe-mixed-rf/describe.txt": (3, {"test-0": [0, 2, 3, 1], "test-1": [2, 3, 0]}),
    # --execute output
    "ak-unittest-execute-output-format/execute.txt": (2, {"bar-0": [7, 8], "foo-1": [4, 5, 6]}),
    "akdocs-ops-execute-output/execute.txt": (1, {"foo-0": [5]}),
    "yunti2me-execute-transcript/execute.txt": (3, {"test-1": [0, 1, 2], "test-2": [0, 1, 2]}),
    # --generate output
    "ak-pr1868-generate-old-format/generate.txt": (1, {"t1-0": [0]}),
    "ak-pr20319-generate-real-logdirs/generate.txt": (1, {"test1-0": [4, 2]}),
    "akdocs-ops-generate-logdirs-mismatch/generate.txt": (6, {"foo1-0": [2, 1], "foo2-2": [1, 3]}),
    "seed-killerwhile-remove19/generate.txt": (10, {"x.y.z.t-0": [7, 18], "x.y.z.t-9": [6, 17]}),
    "strimzi-2021-generate-remove34/generate.txt": (10, {"my-topic-two-0": [0, 4, 1], "my-topic-two-9": [3, 4, 1]}),
    "strimzi-2022-generate-rf4-to-rf3/generate.txt": (3, {"my-topic-two-0": [3, 4, 2, 0], "my-topic-two-2": [1, 3, 0, 4]}),
    "yunti2me-generate-remove1/generate.txt": (3, {"test-1": [0, 1, 2], "test-0": [0, 1, 2]}),
    # reassignment JSON
    "ak-adminrackaware-expected-balanced/assignment.json": (7, {"t-0": [0, 3, 1], "t-6": [0, 4, 2]}),
    "ak-unittest-generate-fewer-brokers/assignment.json": (3, {"bar-0": [2, 3, 0], "foo-1": [1, 2, 3]}),
    "ak-unittest-inconsistent-racks/assignment.json": (3, {"bar-0": [2, 3, 0]}),
    "ak-unittest-inconsistent-racks-disabled/assignment.json": (3, {"foo-0": [0, 1, 2]}),
    "akdocs-ops-custom-reassignment-json/reassignment.json": (2, {"foo1-0": [5, 6], "foo2-1": [2, 3]}),
    "charmed-kafka-logdirs-dash-topic/assignment-derived.json": (5, {"NEW-TOPIC-2-0": [0], "NEW-TOPIC-2-4": [0]}),
    "cruisecontrol-dead-broker/assignment.json": (8, {"T1-0": [1, 2], "T2-3": [3, 0]}),
    "cruisecontrol-medium-cluster-rack-fix/assignment.json": (6, {"A-0": [1, 0], "D-0": [1, 2]}),
    "cruisecontrol-rack-unsatisfiable/assignment.json": (1, {"T1-0": [0, 1, 2]}),
    "cruisecontrol-small-cluster-rack-fix/assignment.json": (5, {"T1-0": [0, 2], "T2-2": [0, 1]}),
    "dimas-pr2-reassignment-json/reassignment.json": (3, {"mytopic1-3": [4, 5], "mytopic2-2": [6, 5]}),
    "kafkakit-nine-to-three-brokers/nine_brokers.json": (9, {"testTopic-1": [10000, 10001, 10002],
                                                            "testTopic-9": [10008, 10000, 10001]}),
    "kafkakit-nine-to-three-brokers/three_brokers.expected.json": (9, {"testTopic-2": [10001, 10002, 10000]}),
    "kafkakit-optimize-leader-follower/optimize_input.json": (256, {"test_topic-0": [1792, 1860],
                                                                   "test_topic-255": [1755, 1754]}),
    "kafkakit-optimize-leader-follower/optimize_output.expected.json": (256, {"test_topic-0": [1860, 1792]}),
    "linkedin-count-balance-empty-broker/assignment.json": (6, {"testTopic1-0": [2, 1], "testTopic3-0": [1, 2]}),
    "linkedin-count-balance-mixed-rf/assignment.json": (6, {"testTopic1-0": [1, 2], "testTopic3-0": [3, 2, 1]}),
    "linkedin-remove-broker/assignment.json": (4, {"testTopic2-0": [2, 1]}),
    "linkedin-remove-broker-exclude-topic/assignment.json": (4, {"testTopic1-1": [2, 1]}),
    "siftscience-cluster-expansion/assignment.json": (4, {"test-0": [10, 11], "test-3": [10, 12]}),
    "siftscience-decommission/assignment.json": (4, {"test-2": [12, 13], "test-3": [13, 10]}),
    "siftscience-rack-aware-expansion/assignment.json": (4, {"test-1": [11, 12]}),
    "siftscience-replacement/assignment.json": (4, {"test-2": [12, 10]}),
    "strimzi-2022-bare-array/reassignment.json": (3, {"my-topic-two-0": [0, 3, 1, 2], "my-topic-two-2": [2, 1, 3, 0]}),
    "yelp-default-assignment-rg-balance/assignment.json": (7, {"T1-0": [0, 1, 2, 3], "T2-0": [2]}),
    "yelp-leaders-case2a/assignment.json": (4, {"T0-0": [3, 2], "T1-0": [0]}),
    "yelp-leaders-case3-impossible/assignment.json": (3, {"T1-0": [1, 2], "T2-0": [0]}),
    "yelp-rg-partition-count-case5/assignment.json": (4, {"T2-0": [0, 5], "T3-0": [1, 5]}),
    "yunti2me-logdirs-4brokers/assignment-derived.json": (61, {"__consumer_offsets-0": [0], "tpch.supplier-0": [3]}),
    "yunti2me-logdirs-pretty/assignment-derived.json": (2, {"tpch.customer-0": [1], "tpch.partsupp-0": [3]}),
}

ASSIGNMENT_FILES = ("describe.txt", "list-topic.txt", "execute.txt", "generate.txt", ".json")


def real(name: str) -> Path:
    path = REAL / name
    if not REAL.is_dir():
        pytest.skip("../shared/realworld is not here")
    if not path.exists():
        pytest.skip(f"{name} is not in ../shared/realworld")
    return path


def lists(raw: RawAssignment) -> dict[str, list[int]]:
    """``topic-partition`` -> replica list."""
    return {f"{t}-{p}": [b for b in row if b != PAD]
            for t, p, row in zip(raw.topic_names, raw.partition.tolist(), raw.replicas.tolist())}


def read(text: str, source: str = "in.txt", fmt: str | None = None) -> RawAssignment:
    return read_assignment(text, source, fmt)


def refused(text: str, *needles: str, fmt: str | None = None, reader=None) -> str:
    """The one-line error the text gets; it holds every needle."""
    with pytest.raises(InputError) as info:
        (reader or read)(text, "in.txt", *([fmt] if fmt and reader is None else []))
    line = str(info.value)
    assert "\n" not in line and line.startswith("in.txt: ")
    for n in needles:
        assert n in line, (n, line)
    return line


# ---------------------------------------------------------------- every real dump


def test_every_real_assignment_file_is_listed():
    """A dump added to ../shared/realworld gets its expected values here (the truncated paste aside)."""
    if not REAL.is_dir():
        pytest.skip("../shared/realworld is not here")
    found = {str(p.relative_to(REAL)) for p in REAL.glob("*/*") if p.name.endswith(ASSIGNMENT_FILES)}
    assert found - set(EXPECTED) == {"mryueq-issue22-describe-spaces-leader-minus1/describe.txt"}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_dump_reads(name):
    count, some = EXPECTED[name]
    raw = read(read_text(real(name)), name)
    assert len(raw.partition) == count
    got = lists(raw)
    for key, replicas in some.items():
        assert got[key] == replicas, key
    assert (raw.status is not None) == name.endswith(("describe.txt", "list-topic.txt"))


def test_real_describe_in_flight_status():
    raw = read(read_text(real("ak-pr8332-describe-during-reassignment/describe.txt")))
    s = raw.status
    assert s.removing.tolist() == [[0]] and (s.adding == PAD).all()
    assert not s.leaderless.any() and not s.offline.any() and not s.under_replicated.any()


def test_real_describe_offline_and_observers():
    raw = read(read_text(real("confluent-mrc-offline-observers/describe.txt")))
    s = raw.status
    assert raw.topic_names == ["single-region", "multi-region-async", "multi-region-sync"]
    assert s.leaderless.tolist() == [True, True, False]  # "Leader: none" twice, then "Leader: 4"
    assert s.offline.tolist() == [True, True, True]  # "Offline: 2,1" on every line
    assert s.under_replicated.tolist() == [True, True, True]
    assert [[b for b in row if b != PAD] for row in s.observers.tolist()] == [[], [3, 4], []]  # LiveObservers
    assert s.constrained_topics == {"single-region", "multi-region-async", "multi-region-sync"}
    assert s.declared == {"single-region": 1, "multi-region-async": 1, "multi-region-sync": 1}


def test_real_describe_observers_are_not_under_replicated():
    """Confluent's async observers are in Replicas but not in the ISR by design: "Replicas: 2,1,3,4  Isr: 2,1
    Observers: 3,4" is a healthy partition. An empty "Offline:" is an empty list."""
    raw = read(read_text(real("confluent-mrc-docs-mixed-separators/describe.txt")))
    s = raw.status
    obs = [[b for b in row if b != PAD] for row in s.observers.tolist()]
    assert obs == [[], [], [3, 4], [3, 4], [3, 4], [3, 4], [3, 4]]
    assert not s.under_replicated.any() and not s.offline.any() and not s.leaderless.any()
    assert len(s.constrained_topics) == 7


def test_real_describe_truncated_paste_is_refused_and_its_lines_read():
    """The issue pasted 2 of the 40 partitions its header announces: refused as truncated. Its partition lines
    read on their own (runs of spaces, "Leader: -1")."""
    text = read_text(real("mryueq-issue22-describe-spaces-leader-minus1/describe.txt"))
    refused(text, "topic ops-crm-prod", "header says PartitionCount: 40 but 2 partition lines follow (truncated?)")
    raw = read(text.split("\n", 1)[1])
    assert lists(raw) == {"ops-crm-prod-0": [1, 4, 5], "ops-crm-prod-1": [4, 5, 0]}
    assert raw.status.leaderless.tolist() == [False, True]
    assert raw.status.under_replicated.tolist() == [True, True]  # "Isr: 4,1" and "Isr: 5"
    assert raw.status.declared == {}


def test_real_transcript_with_two_describes_of_one_partition_is_refused():
    text = read_text(real("ak-pr8332-describe-during-reassignment/transcript.txt"))
    refused(text, "line 6", "duplicate partition (also at line 3)", "my-replicated-topic-0")


def test_real_describe_with_log_line_and_elr():
    raw = read(read_text(real("kafka38-describe-elr-na-warn-line/describe.txt")))
    assert raw.origin_pos.tolist() == [3, 4, 5]  # the WARN line is line 1, the header line 2
    assert raw.status.declared == {"paytm-topic": 3}


def test_real_generate_with_one_log_dir_per_partition():
    """Kafka's docs print "log_dirs":["any"] for two replicas: in a current assignment "any" of any length reads
    (it says nothing), but a plan file that Kafka would refuse is refused."""
    text = read_text(real("akdocs-ops-generate-logdirs-mismatch/generate.txt"))
    assert read(text).had_log_dirs
    body = text[text.index("{"): text.index("Proposed")]
    refused(body, "partitions[0].log_dirs", "has 1 entries but replicas has 2", reader=read_reassignment_json)


def test_real_execute_output_loads_as_current(tmp_path):
    loaded = load_cluster(real("ak-unittest-execute-output-format/execute.txt"))
    assert loaded.state.num_partitions == 2 and loaded.state.had_log_dirs and loaded.status is None


# ---------------------------------------------------------------- whitespace variants of one describe


@pytest.fixture(scope="module")
def tab_describe() -> str:
    state = generate_cluster(brokers=7, racks=0, topics=4, partitions=(1, 9), rf=3, seed=5)
    return describe_text(state)


def same(a: RawAssignment, b: RawAssignment) -> None:
    assert a.topic_names == b.topic_names
    np.testing.assert_array_equal(a.partition, b.partition)
    np.testing.assert_array_equal(a.replicas, b.replicas)
    np.testing.assert_array_equal(a.origin_pos, b.origin_pos)
    for name in ("leaderless", "offline", "under_replicated", "adding", "removing", "observers"):
        np.testing.assert_array_equal(getattr(a.status, name), getattr(b.status, name))
    assert a.status.declared == b.status.declared and a.status.constrained_topics == b.status.constrained_topics


@pytest.mark.parametrize("variant", [
    lambda t: t.replace("\t", " "),
    lambda t: t.replace("\t", "    "),
    lambda t: t.replace("\n", "\r\n"),
    lambda t: "\n".join("   " + ln for ln in t.split("\n")),
    lambda t: t.replace(": ", ":"),  # Topic:foo, Kafka 0.9
    lambda t: "".join(ch if ch != "\t" else (" " if k % 2 else "\t \t") for k, ch in enumerate(t)),
    lambda t: t.replace("\n\tTopic", "\nTopic").replace("\t", "  ").replace("\n", "\r\n"),
    lambda t: t.replace("Topic:", "topic:").replace("Partition:", "partition:").replace("Leader:", "leader:")
               .replace("Replicas:", "replicas:").replace("Isr:", "isr:"),
], ids=["spaces", "four-spaces", "crlf", "indented", "no-space-after-colon", "mixed", "spaces-crlf", "lowercase"])
def test_describe_variants_read_like_the_tab_original(tab_describe, variant):
    text = variant(tab_describe)
    assert text != tab_describe
    same(read_describe(tab_describe, "d"), read_describe(text, "d"))


@pytest.mark.parametrize("extra", ["\tOffline: ", "\tElr: N/A\tLastKnownElr: N/A", "\tElr: \tLastKnownElr: ",
                                   "\tOffline: \tLiveObservers: ", "\tAdding Replicas: \tRemoving Replicas: ",
                                   "\tClusterLinkId: x\tMirrorState: y"])
def test_describe_optional_fields_do_not_change_the_read(tab_describe, extra):
    """Empty or ignored fields after Isr, Kafka's or Confluent's, read like the plain line (some lines go by the
    reader's usual-line path, others by the key-by-key path: both give the same)."""
    text = "\n".join(ln + extra if "Partition:" in ln else ln for ln in tab_describe.split("\n"))
    same(read_describe(tab_describe, "d"), read_describe(text, "d"))


def test_describe_tolerates_unknown_keys_and_surrounding_lines(tab_describe):
    lines = tab_describe.split("\n")
    noisy = ["[2024-08-13 00:12:27,203] WARN [AdminClient clientId=adminclient-1] a partition: warning", "",
             "==> Describe topic topic-0000", ""]
    for ln in lines:
        noisy.append(ln + ("\tClusterLinkId: abc\tElr: N/A\tLastKnownElr: " if "Partition:" in ln else ""))
    raw = read_describe("\n".join(noisy), "d")
    base = read_describe(tab_describe, "d")
    assert lists(raw) == lists(base)
    np.testing.assert_array_equal(raw.origin_pos, base.origin_pos + 4)


# ---------------------------------------------------------------- status fields of a describe

HEAD = "Topic: a\tPartitionCount: {n}\tReplicationFactor: 3\tConfigs: {cfg}\n"


def describe(*lines: str, cfg: str = "", header: bool = True) -> str:
    return (HEAD.format(n=len(lines), cfg=cfg) if header else "") + "".join(f"\tTopic: a\t{ln}\n" for ln in lines)


def test_status_fields():
    text = describe(
        "Partition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\tAdding Replicas: 3\tRemoving Replicas: 2",
        "Partition: 1\tLeader: none\tReplicas: 1,2\tIsr: \tOffline: 1,2",
        "Partition: 2\tLeader: -1\tReplicas: 2,3\tIsr: 3",
        "Partition: 3\tLeader: 2\tReplicas: 2,3,4\tIsr: 2,3\tObservers: 4\tLiveObservers: 4,1",
        "Partition: 4\tLeader: 2\tReplicas: 2,3\tIsr: 2,3\tAdding Replicas: \tRemoving Replicas: \tOffline:",
        "Partition: 5\tLeader: 3\tReplicas: 3,1",
        cfg='confluent.placement.constraints={"version":1,"replicas":[{"count":2,"constraints":{"rack":"a"}}]}',
    )
    s = read(text).status
    assert s.leaderless.tolist() == [False, True, True, False, False, False]
    assert s.offline.tolist() == [False, True, False, False, False, False]
    assert s.under_replicated.tolist() == [True, True, True, False, False, False]  # no Isr printed: False
    assert s.adding.tolist() == [[3], [-1], [-1], [-1], [-1], [-1]]
    assert s.removing.tolist() == [[2], [-1], [-1], [-1], [-1], [-1]]
    assert s.observers.tolist() == [[-1, -1], [-1, -1], [-1, -1], [4, 1], [-1, -1], [-1, -1]]
    assert s.constrained_topics == {"a"} and s.declared == {"a": 6}
    assert s.adding.dtype == s.removing.dtype == s.observers.dtype == np.int64


@pytest.mark.parametrize("line,needles", [
    ("Partition: 0\tLeader: x\tReplicas: 1,2\tIsr: 1,2", ["line 2: Leader", "'x'"]),
    ("Partition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,-2", ["line 2: Isr", "must not be negative", "-2"]),
    ("Partition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,x", ["line 2: Isr", "integers", "'1,x'"]),
    ("Partition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\tOffline: 2,y", ["line 2: Offline", "'2,y'"]),
    ("Partition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\tObservers: -3", ["line 2: Observers", "-3"]),
    ("Partition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\tAdding Replicas: 1,,2", ["line 2: Adding Replicas"]),
    ("Partition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1\tRemoving Replicas: 3", ["line 2: Removing Replicas",
                                                                              "broker 3 is not in Replicas"]),
    ("Partition: 0\tLeader: 1\tReplicas: 1,x\tIsr: 1", ["line 2: Replicas", "broker ids must be integers", "'1,x'"]),
    ("Partition: 0\tLeader: 1\tReplicas: -1,4,5\tIsr: 4", ["line 2: Replicas", "broker id must not be negative", "-1"]),
    ("Partition: 0\tLeader: 1\tReplicas: 1,2147483648\tIsr: 1", ["line 2: Replicas", "out of range"]),
    ("Partition: 0\tLeader: 1\tReplicas: \tIsr: 1", ["line 2: Replicas", "empty replica list"]),
    ("Partition: -3\tLeader: 1\tReplicas: 1\tIsr: 1", ["line 2: Partition", "must not be negative", "-3"]),
    ("Partition: ²\tLeader: 1\tReplicas: 1\tIsr: 1", ["line 2: Partition", "expected an integer"]),
    ("Partition: 0\tLeader: 1\tIsr: 1", ["line 2", "without a Replicas: field"]),
    ("Partition: 0\tLeader: 1\tReplicas: 1\tReplicas: 2\tIsr: 1", ["line 2: Replicas", "appears twice"]),
])
def test_bad_describe_value_is_one_line_naming_line_and_field(line, needles):
    refused(describe(line), *needles, fmt="describe")


def test_describe_bad_headers():
    refused("Topic: a\tPartitionCount: x\tConfigs: \n\tTopic: a\tPartition: 0\tReplicas: 1\n",
            "line 1: PartitionCount", "'x'")
    refused("\tPartitionCount: 1\tConfigs: \n\tTopic: a\tPartition: 0\tReplicas: 1\n", "line 1", "without a topic")
    refused("Topic: a\tPartitionCount: 1\nTopic: a\tPartitionCount: 2\n\tTopic: a\tPartition: 0\tReplicas: 1\n",
            "line 2: PartitionCount", "another header (line 1)")
    refused("Topic: a b\tPartitionCount: 1\n\tTopic: a\tPartition: 0\tReplicas: 1\n", "line 1: Topic", "invalid topic")


def test_truncated_describe():
    full = describe("Partition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2", "Partition: 1\tLeader: 2\tReplicas: 2,1\tIsr: 2,1")
    assert len(read(full).partition) == 2
    cut = full[: full.rindex("\tTopic")]
    refused(cut, "topic a: header says PartitionCount: 2 but 1 partition line follow (truncated?)")
    refused(full[: full.index("\tTopic")] + "\n\tTopic: b\tPartition: 0\tReplicas: 1\n",
            "topic a", "PartitionCount: 2 but 0 partition lines")
    refused(full + "\tTopic: a\tPartition: 2\tLeader: 1\tReplicas: 1\n", "PartitionCount: 2 but 3 partition lines")
    refused(full[: full.rindex("Replicas")], "line 3", "without a Replicas: field")
    # ReplicationFactor is not checked: a partition in flight prints the union of old and new replicas
    grown = describe("Partition: 0\tLeader: 1\tReplicas: 1,2,3,4\tIsr: 1,2,3,4\tAdding Replicas: 4")
    assert read(grown).replicas.tolist() == [[1, 2, 3, 4]]


def test_describe_error_line_numbers_with_crlf_and_log_lines():
    text = "[2024-08-13 00:12:27,203] WARN x\r\n" + describe("Partition: 0\tLeader: 1\tReplicas: 1,q").replace("\n", "\r\n")
    refused(text, "line 3: Replicas", "'1,q'")


# ---------------------------------------------------------------- negative broker ids in every reader


def _json(*parts) -> str:
    return json.dumps({"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r} for t, p, r in parts]})


def test_negative_broker_id_in_every_reader(tmp_path):
    bad = _json(("t", 0, [1, 2]), ("t", 1, [-1, 4, 5]))
    refused(bad, "partitions[1].replicas", "broker id must not be negative", "-1")
    refused(f"{CURRENT_MARK}\n{bad}\nProposed partition reassignment configuration\n{bad}\n",
            "partitions[1].replicas", "must not be negative")
    refused(f"{CURRENT_MARK}\n\n{bad}\n\nSave this to use as the --reassignment-json-file option during rollback\n",
            "partitions[1].replicas", "must not be negative")
    refused(json.dumps([{"topic": "t", "partition": 0, "replicas": [3, -7]}]), "[0].replicas", "-7")
    refused("\tTopic: t\tPartition: 0\tLeader: 4\tReplicas: -1,4,5\tIsr: 4,5\n", "line 1: Replicas", "-1")
    refused("id,rack\n1,a\n-1,b\n", "line 3: id", "must not be negative", reader=read_broker_file)
    refused('[{"id": 1}, {"id": -2}]', "[1].id", "must not be negative", reader=read_broker_file)
    refused('{"1": "a", "-2": "b"}', "key '-2'", "must not be negative", reader=read_broker_file)
    current = load_cluster(_write(tmp_path, "c.json", _json(("t", 0, [1, 2]), ("t", 1, [4, 5])))).state
    with pytest.raises(InputError, match=r"plan\.json: partitions\[0\]\.replicas: broker id must not be negative"):
        plan_from_text(_json(("t", 1, [-1, 4, 5])), "plan.json", current)


def _write(tmp: Path, name: str, text: str) -> Path:
    (tmp / name).write_text(text)
    return tmp / name


# ---------------------------------------------------------------- topic names Kafka refuses


@pytest.mark.parametrize("name", ["a b", "a/b", "tópico", ".", "..", "x" * 250, "a:b", "t\x00"])
def test_forbidden_topic_names_in_every_reader(name):
    parts = [("ok", 0, [1]), ("ok", 1, [1]), ("ok", 2, [1]), (name, 0, [1])]
    line = refused(_json(*parts), "partitions[3].topic: invalid topic name: Kafka allows only letters, digits, '.', "
                                  "'_' and '-' (at most 249)")
    assert repr(name)[:20] in line
    refused(f"{CURRENT_MARK}\n{_json(*parts)}\n", "partitions[3].topic", "invalid topic name")
    if not any(c.isspace() or c == ":" for c in name):  # a describe cannot even write those
        refused(f"\tTopic: ok\tPartition: 0\tReplicas: 1\n\tTopic: {name}\tPartition: 0\tReplicas: 1\n",
                "line 2: Topic", "invalid topic name", fmt="describe")


def test_longest_allowed_topic_name_reads():
    name = "a-_." * 62 + "x"
    assert len(name) == 249
    assert read(_json((name, 0, [1]))).topic_names == [name]


# ---------------------------------------------------------------- --execute output, bare arrays, detection


def test_execute_output_reads_the_first_json_value_only():
    cur = _json(("t", 0, [1, 2]), ("u", 3, [2, 3]))
    text = (f"{CURRENT_MARK}\n\n{cur}\n\nSave this to use as the --reassignment-json-file option during rollback\n"
            "Successfully started partition reassignments for t-0,u-3\n{\"not\": \"read\"}\n")
    raw = read(text)
    assert lists(raw) == {"t-0": [1, 2], "u-3": [2, 3]}
    pretty = json.dumps(json.loads(cur), indent=2, ensure_ascii=False).replace('"t"', '"tópico-ok"')
    with pytest.raises(InputError, match="invalid topic name"):
        read(f"{CURRENT_MARK}\n{pretty}\nSave this\n")


def test_execute_output_errors_name_the_file_line():
    text = f"{CURRENT_MARK}\n\n{{\"version\":1,\n \"partitions\":[{{\"topic\":\"t\",,}}]}}\n\nSave this\n"
    refused(text, "line 4 column", "malformed JSON")
    refused(f"{CURRENT_MARK}\n\n{{\"version\":1,\n\"partitions\":[\n", "line 5", "malformed JSON")


def test_generate_output_without_current_json_is_refused():
    text = f"{CURRENT_MARK}\n\nProposed partition reassignment configuration\n{_json(('t', 0, [1]))}\n"
    refused(text, "no JSON after")


def test_generate_output_is_unchanged():
    state = generate_cluster(brokers=5, topics=3, partitions=(1, 4), rf=2, seed=3)
    a = read_generate_output(generate_text(state), "g")
    b = read_reassignment_json(reassignment_json(state), "j")
    assert lists(a) == lists(b)


def test_bare_array_reads_as_partitions():
    raw = read('[{"topic": "t", "partition": 0, "replicas": [1, 2]}]')
    assert raw.origin == "array" and raw.place(0) == "[0]"
    refused('[{"topic": "t", "partition": 0, "replicas": [1, 1]}]', "[0].replicas", "broker 1 appears twice")
    refused("[]", "no partitions")
    refused("[1, 2]", "[0]", "expected an object", fmt="json")


def test_detection_tells_a_log_line_from_a_json_list():
    text = "[2024-08-13 00:12:27,203] WARN something\nTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\n"
    assert read(text).origin == "line"
    assert read("  [\n {\"topic\": \"t\", \"partition\": 0, \"replicas\": [1]}]").origin == "array"


def test_cli_refuses_truncated_and_negative_in_one_line(tmp_path, run_cli):
    d = _write(tmp_path, "d.txt", describe("Partition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2") + HEAD.format(n=3, cfg="")
               .replace("Topic: a", "Topic: b"))
    code, out, err = run_cli("check", d)
    assert code == 2 and "Traceback" not in err and err.count("\n") == 1
    assert "topic b: header says PartitionCount: 3 but 0 partition lines follow (truncated?)" in err
    j = _write(tmp_path, "a.json", _json(("t", 0, [-1, 4, 5])))
    code, out, err = run_cli("check", j)
    assert code == 2 and err.count("\n") == 1 and "partitions[0].replicas: broker id must not be negative" in err
