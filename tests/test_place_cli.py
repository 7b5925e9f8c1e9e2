"""``flowbalance place`` on the command line (the commands it prints, -o, --json, the topics file, bad input in
one line with exit 2) and in a fleet (``place`` in fleet.json writes the same text as ``place -o``)."""
from __future__ import annotations

import json

import pytest

import flowbalance as fb
from flowbalance.formats.dumps import brokers_csv, describe_text
from flowbalance.generate import generate_cluster
from flowbalance.place import NewTopic, PlaceRequest, place, place_text

from .test_bad_input import assert_one_line
from .test_place import parse_replica_assignment
from .test_status import _fleet_round_trip


@pytest.fixture
def cluster(tmp_path):
    state = generate_cluster(brokers=6, racks=2, topics=4, partitions=(3, 9), rf=2, layout="kafka", seed=3,
                             rack_aware=True)
    (tmp_path / "d.txt").write_text(describe_text(state))
    (tmp_path / "b.csv").write_text(brokers_csv(state.brokers))
    return tmp_path


def test_create_prints_the_command_and_writes_the_json(run_cli, cluster):
    out = cluster / "place.json"
    args = [cluster / "d.txt", "--brokers", cluster / "b.csv", "--topic", "orders", "--partitions", "9", "--rf", "2"]
    code, stdout, err = run_cli("place", *args, "-o", out)
    assert code == 0, err
    line = next(x for x in stdout.splitlines() if x.startswith("kafka-topics "))
    words = line.split()
    assert words[:6] == ["kafka-topics", "--bootstrap-server", "$BOOTSTRAP", "--create", "--topic", "orders"]
    assert words[6] == "--replica-assignment" and len(parse_replica_assignment(words[7])) == 9
    assert "Kafka default" in stdout
    first = out.read_bytes()
    code, again, _ = run_cli("place", *args, "--json")
    assert code == 0 and json.loads(again) == json.loads(first)
    run_cli("place", *args, "-o", cluster / "again.json")
    assert (cluster / "again.json").read_bytes() == first  # deterministic, byte for byte


def test_add_partitions_lists_the_existing_ones_unchanged_first(run_cli, cluster):
    state = fb.load_cluster(cluster / "d.txt", brokers=cluster / "b.csv").state
    old = [list(p.replicas) for p in state.partitions() if p.topic == "topic-0000"]
    code, stdout, err = run_cli("place", cluster / "d.txt", "--brokers", cluster / "b.csv", "--topic", "topic-0000",
                                "--add-partitions", "4", "--json")
    assert code == 0, err
    t = json.loads(stdout)["topics"][0]
    parsed = parse_replica_assignment(t["replica_assignment"])
    assert [parsed[i] for i in range(len(old))] == old and len(parsed) == len(old) + 4
    assert f"--alter --topic topic-0000 --partitions {len(old) + 4} --replica-assignment " in t["command"]


def test_topics_file_places_several_topics(run_cli, cluster):
    (cluster / "t.csv").write_text("topic,partitions,rf\n# new ones\norders,5,2\n\ntopic-0001,+3,\n")
    code, stdout, err = run_cli("place", cluster / "d.txt", "--brokers", cluster / "b.csv", "--topics-file",
                                cluster / "t.csv", "--json")
    assert code == 0, err
    assert [(t["topic"], t["action"], t["new_partitions"]) for t in json.loads(stdout)["topics"]] == \
        [("orders", "create", 5), ("topic-0001", "add", 3)]


@pytest.mark.parametrize("args, needles", [
    (["--topic", "topic-0000", "--partitions", "3", "--rf", "2"], ["--topic: the topic already exists",
                                                                   "use --add-partitions", "'topic-0000'"]),
    (["--topic", "nope", "--add-partitions", "2"], ["--topic: unknown topic", "'nope'"]),
    (["--topic", "x", "--partitions", "0", "--rf", "2"], ["--partitions: must be an integer from 1", "(got 0)"]),
    (["--topic", "x", "--partitions", "3", "--rf", "7"], ["rf: the replication factor 7", "above the 6 brokers"]),
    (["--topic", "a/b", "--partitions", "3", "--rf", "2"], ["--topic: Kafka accepts only", "'a/b'"]),
    (["--topic", "..", "--partitions", "3", "--rf", "2"], ["--topic: Kafka does not accept"]),
    (["--topic", "x", "--partitions", "3"], ["--rf: a new topic needs --partitions and --rf"]),
    (["--topic", "x", "--add-partitions", "2", "--rf", "2"], ["--add-partitions: added partitions take"]),
    (["--topic", "x", "--partitions", "3", "--rf", "2", "--exclude-brokers", "99"],
     ["--exclude-brokers: unknown broker", "(got 99)"]),
    (["--topic", "x", "--partitions", "3", "--rf", "2", "--seed", "-1"], ["--seed: must be a non-negative"]),
])
def test_bad_requests_end_in_one_line(run_cli, cluster, args, needles):
    code, out, err = run_cli("place", cluster / "d.txt", "--brokers", cluster / "b.csv", *args, "-o",
                             cluster / "p.json")
    assert_one_line(code, out, err, *needles)
    assert not (cluster / "p.json").exists()


@pytest.mark.parametrize("text, needles", [
    ("name,partitions\nx,1\n", ["t.csv: line 1", "expected the header topic,partitions,rf"]),
    ("topic,partitions,rf\nx,three,2\n", ["t.csv: line 2: partitions", "positive integer", "'three'"]),
    ("topic,partitions,rf\nx,+2,3\n", ["t.csv: line 2: rf", "leave rf empty"]),
    ("topic,partitions,rf\nbad name,2,2\n", ["t.csv: line 2: topic", "'bad name'"]),
    ("topic,partitions,rf\nx,2,2\nx,3,2\n", ["t.csv: topic: named twice", "'x'"]),
    ("topic,partitions,rf\ntopic-0000,2,2\n", ["t.csv: topic: the topic already exists",
                                               "use +N in the partitions column"]),
])
def test_bad_topics_files_name_the_line_and_column(run_cli, cluster, text, needles):
    (cluster / "t.csv").write_text(text)
    code, out, err = run_cli("place", cluster / "d.txt", "--brokers", cluster / "b.csv", "--topics-file",
                             cluster / "t.csv")
    assert_one_line(code, out, err, *needles)


def test_fleet_place_writes_what_place_writes():
    state = generate_cluster(brokers=5, topics=3, partitions=(2, 6), rf=2, layout="kafka", seed=4)
    files = {"describe.txt": describe_text(state), "brokers.csv": brokers_csv(state.brokers)}
    entry = [{"topic": "orders", "partitions": 7, "rf": 2}, {"topic": "topic-0001", "add_partitions": 2}]
    reason, row = _fleet_round_trip(files, {"place": entry, "exclude_brokers": [4]})
    assert reason is None and row["ok"], row["reason"]
    loaded = fb.load_texts(("describe.txt", files["describe.txt"]), brokers=("brokers.csv", files["brokers.csv"]))
    items = (NewTopic("orders", 7, 2), NewTopic("topic-0001", 2, add=True))
    assert row["place_json"] == place_text(place(loaded.state, PlaceRequest(items, (4,))))
    reason, row = _fleet_round_trip(files, {"place": [{"topic": "orders", "partitions": 0, "rf": 2}]})
    assert row["reason"].startswith("fleet.json: clusters.c1.place[0].partitions: must be an integer from 1")
    reason, row = _fleet_round_trip(files, {"place": [{"topic": "topic-0000", "partitions": 1, "rf": 2}]})
    assert row["reason"].startswith("fleet.json: clusters.c1.place.topic: the topic already exists"), row["reason"]
