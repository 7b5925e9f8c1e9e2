"""Partitions in flight, unhealthy, or placed by Confluent: check/report warn, plan refuses or leaves them in place.
Also the contradictory broker requests (each one line, exit 2)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from flowbalance.errors import InputError, PlanningError
from flowbalance.load import load_cluster
from flowbalance.planner import plan
from flowbalance.status import plan_input
from flowbalance_cli.app import main


def run(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def describe(lines: list[str], header: dict[str, str] | None = None) -> str:
    """A describe with TABs, a header per topic (PartitionCount from the lines), then the partition lines."""
    by_topic: dict[str, list[str]] = {}
    for ln in lines:
        by_topic.setdefault(ln.split("\t")[0].split(": ")[1], []).append(ln)
    out = []
    for t, ls in by_topic.items():
        cfg = (header or {}).get(t, "")
        out.append(f"Topic: {t}\tPartitionCount: {len(ls)}\tReplicationFactor: 2\tConfigs: {cfg}")
        out += ["\t" + ln for ln in ls]
    return "\n".join(out) + "\n"


# a-0 moving from [1, 2] to [1, 3]: Replicas shows the union while it runs
IN_FLIGHT = "Topic: a\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\tAdding Replicas: 3\tRemoving Replicas: 2"


def crowded(extra: dict[int, str] | None = None, topic: str = "a", n: int = 8) -> list[str]:
    """Topic ``topic`` with n partitions all on brokers 1,2 (so a plan over brokers 1-4 moves about half)."""
    extra = extra or {}
    return [f"Topic: {topic}\tPartition: {p}\tLeader: 1\tReplicas: 1,2\tIsr: 1,2{extra.get(p, '')}" for p in range(n)]


@pytest.fixture
def four_brokers(tmp_path):
    f = tmp_path / "brokers.csv"
    f.write_text("id\n1\n2\n3\n4\n")
    return f


def _plan_rows(path):
    return {(e["topic"], e["partition"]): e["replicas"] for e in json.loads(path.read_text())["partitions"]}


def test_in_flight_refused_then_planned_from_target(tmp_path, four_brokers, capsys):
    lines = crowded()
    lines[0] = IN_FLIGHT
    cur = tmp_path / "describe.txt"
    cur.write_text(describe(lines))
    out = tmp_path / "plan.json"
    code, _, err = run(["plan", cur, "--brokers", four_brokers, "-o", out], capsys)
    assert code == 2 and not out.exists()
    assert err.count("\n") == 1 and "being reassigned" in err and "a-0" in err and "--from-target" in err
    code, stdout, err = run(["plan", cur, "--brokers", four_brokers, "-o", out, "--from-target", "--json"], capsys)
    assert code == 0, err
    data = json.loads(stdout)
    assert any("in flight from the reassignment's target" in n for n in data["notes"])
    # the plan starts from [1, 3] for a-0: broker 2 is being removed from it and never comes back by accident
    loaded = load_cluster(cur, brokers=four_brokers)
    given = plan_input(loaded.state, loaded.status, "cur", from_target=True)
    assert given.state.partition_at(0).replicas == (1, 3)
    assert given.state.partition_at(1).replicas == (1, 2)


def test_check_warns_in_flight_and_unhealthy(tmp_path, capsys):
    lines = crowded({1: "", 2: ""})
    lines[0] = IN_FLIGHT
    lines[1] = "Topic: a\tPartition: 1\tLeader: none\tReplicas: 1,2\tIsr: \tOffline: 1,2"
    lines[2] = "Topic: a\tPartition: 2\tLeader: 1\tReplicas: 1,2\tIsr: 1"
    cur = tmp_path / "describe.txt"
    cur.write_text(describe(lines))
    code, stdout, err = run(["check", cur, "--json"], capsys)
    assert code in (0, 1)
    warns = json.loads(stdout)["warnings"]
    text = "\n".join(warns)
    assert "1 partition being reassigned" in text and "a-0" in text
    assert "without a leader" in text and "a-1" in text
    assert "under-replicated" in text and "a-2" in text
    # the in-flight partition's ISR is shorter than the union, but that is the move, not under-replication
    assert "a-0" not in [w for w in warns if "under-replicated" in w][0]
    assert err.count("flowbalance: warning:") == len(warns)


def test_unhealthy_partitions_stay_unless_asked(tmp_path, four_brokers, capsys):
    lines = crowded()
    lines[0] = "Topic: a\tPartition: 0\tLeader: none\tReplicas: 1,2\tIsr: \tOffline: 1,2"
    lines[1] = "Topic: a\tPartition: 1\tLeader: -1\tReplicas: 1,2\tIsr: 2"
    lines[2] = "Topic: a\tPartition: 2\tLeader: 1\tReplicas: 1,2\tIsr: 1"
    cur = tmp_path / "describe.txt"
    cur.write_text(describe(lines))
    loaded = load_cluster(cur, brokers=four_brokers)
    held = plan_input(loaded.state, loaded.status, "cur")
    assert held.pinned.tolist() == [True, True, True] + [False] * 5
    p = plan(held.state, pinned=held.pinned, notes=held.notes)
    assert np.array_equal(p.after.replicas[:3], loaded.state.replicas[:3])
    assert p.changes.moves > 0  # the healthy ones still balance
    assert any("left in place" in n for n in p.certificate.notes)
    free = plan_input(loaded.state, loaded.status, "cur", move_unhealthy=True)
    assert not free.pinned.any()
    p2 = plan(free.state, pinned=free.pinned, notes=free.notes)
    assert p2.changes.moves <= p.changes.moves  # more freedom never costs moves


def test_unhealthy_on_removed_broker_is_one_line(tmp_path, four_brokers, capsys):
    lines = crowded()
    lines[0] = "Topic: a\tPartition: 0\tLeader: none\tReplicas: 1,2\tIsr: \tOffline: 1,2"
    cur = tmp_path / "describe.txt"
    cur.write_text(describe(lines))
    out = tmp_path / "plan.json"
    code, _, err = run(["plan", cur, "--brokers", four_brokers, "--remove", "2", "-o", out], capsys)
    assert code == 2 and not out.exists()
    assert err.count("\n") == 1 and "a-0" in err and "removed broker" in err
    code, _, err = run(["plan", cur, "--brokers", four_brokers, "--remove", "2", "-o", out, "--move-unhealthy"], capsys)
    assert code == 0, err
    assert all(2 not in r for r in _plan_rows(out).values())


def test_placement_constraints_and_observers_never_move(tmp_path, capsys):
    brokers = tmp_path / "brokers.csv"
    brokers.write_text("id,rack\n1,west\n2,west\n3,east\n4,east\n5,west\n6,east\n")
    cons = 'min.insync.replicas=1,confluent.placement.constraints={"version":1,"replicas":[{"count":2,"constraints":{"rack":"west"}}],"observers":[]}'
    lines = [f"Topic: pinned\tPartition: {p}\tLeader: 1\tReplicas: 1,2\tIsr: 1,2" for p in range(6)]
    lines += [f"Topic: obs\tPartition: {p}\tLeader: 1\tReplicas: 1,3,2,4\tIsr: 1,3\tOffline: \tObservers: 2,4"
              for p in range(6)]
    lines += [f"Topic: free\tPartition: {p}\tLeader: 1\tReplicas: 1,3\tIsr: 1,3" for p in range(12)]
    cur = tmp_path / "describe.txt"
    cur.write_text(describe(lines, {"pinned": cons}))
    out = tmp_path / "plan.json"
    code, stdout, err = run(["plan", cur, "--brokers", brokers, "-o", out, "--json"], capsys)
    assert code == 0, err
    rows = _plan_rows(out)
    assert rows and all(t == "free" for t, _ in rows)
    notes = json.loads(stdout)["notes"]
    assert any("placement constraints" in n for n in notes)


@pytest.mark.parametrize("flags,needle", [
    (["--add", "3", "--remove", "3"], "--add/--remove"),
    (["--replace", "1:2"], "already holds replicas"),
    (["--add", "2"], "already exists"),
    (["--replace", "1:9", "--remove", "1"], "--replace/--remove"),
    (["--replace", "1:9", "--add", "9"], "--replace/--add"),
    (["--replace", "1:9,2:9"], "same broker"),
    (["--replace", "1:1"], "cannot replace itself"),
])
def test_contradictory_requests(tmp_path, flags, needle, capsys):
    cur = tmp_path / "a.json"
    cur.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": p, "replicas": [1 + p % 3, 1 + (p + 1) % 3]} for p in range(6)]}))
    out = tmp_path / "plan.json"
    code, _, err = run(["plan", cur, "-o", out, *flags], capsys)
    assert code == 2 and not out.exists()
    assert err.startswith("flowbalance: error: ") and err.count("\n") == 1 and needle in err, err


def test_add_of_an_empty_listed_broker_is_fine(tmp_path, capsys):
    """A new broker listed in the broker file (with its rack) holds nothing yet: --add names it, as the docs do."""
    cur = tmp_path / "a.json"
    cur.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": p, "replicas": [1 + p % 3, 1 + (p + 1) % 3]} for p in range(6)]}))
    brokers = tmp_path / "b.csv"
    brokers.write_text("id,rack\n1,x\n2,y\n3,z\n4,x\n")
    code, _, err = run(["plan", cur, "--brokers", brokers, "--add", "4", "-o", tmp_path / "p.json"], capsys)
    assert code == 0, err


def test_library_pinned_rows_are_untouched():
    from flowbalance.model import Brokers, ClusterState
    reps = np.array([[1, 2]] * 10, dtype=np.int32)
    st = ClusterState.build(Brokers.build([1, 2, 3, 4]), ["t"] * 10, np.arange(10), reps)
    pin = np.zeros(10, dtype=bool)
    pin[::2] = True
    p = plan(st, pinned=pin)
    assert np.array_equal(p.after.replicas[pin], st.replicas[pin])
    assert p.changes.moves > 0
    with pytest.raises(PlanningError):
        plan(st, pinned=pin, remove=[2])
    with pytest.raises(InputError):
        plan(st, add=[3], remove=[3])


def test_compare_holds_the_same_partitions(tmp_path, four_brokers, capsys):
    lines = crowded()
    lines[0] = IN_FLIGHT
    cur = tmp_path / "describe.txt"
    cur.write_text(describe(lines))
    code, _, err = run(["compare", cur, "--brokers", four_brokers], capsys)
    assert code == 2 and "--from-target" in err and err.count("\n") == 1
    code, _, err = run(["compare", cur, "--brokers", four_brokers, "--from-target"], capsys)
    assert code == 0, err


def _fleet_round_trip(files: dict[str, str], req: dict):
    """A cluster's files through the fleet's ingest and planning tasks (pandas only: the functions Spark runs)."""
    import pandas as pd
    pytest.importorskip("pyspark")
    from flowbalance.pipeline.fleetplan import plan_cluster
    from flowbalance.pipeline.ingest import LONG_COLUMNS, parse_cluster

    pdf = pd.DataFrame({"cluster": ["c1"] * len(files), "name": list(files),
                        "content": [t.encode() for t in files.values()]})
    long = parse_cluster(pdf, {"c1": req})
    for c in LONG_COLUMNS:
        if c not in long:
            long[c] = None
    if (long["kind"] == "error").any():
        return long[long["kind"] == "error"]["reason"].iloc[0], None
    return None, plan_cluster(long[LONG_COLUMNS]).iloc[0]


def test_fleet_applies_the_same_status_rules():
    lines = crowded()
    lines[0] = IN_FLIGHT
    lines[1] = "Topic: a\tPartition: 1\tLeader: none\tReplicas: 1,2\tIsr: \tOffline: 1,2"
    files = {"describe.txt": describe(lines), "brokers.csv": "id\n1\n2\n3\n4\n"}
    reason, _ = _fleet_round_trip(files, {})
    assert reason is not None and "being reassigned" in reason and "a-0" in reason
    reason, row = _fleet_round_trip(files, {"from_target": True})
    assert reason is None and row["ok"], row["reason"]
    planned = {(e["topic"], e["partition"]) for e in json.loads(row["plan_json"])["partitions"]}
    assert ("a", 1) not in planned and planned  # the offline partition stays, the others balance
    reason, _ = _fleet_round_trip(files, {"from_target": "yes"})
    assert "from_target" in reason and "true or false" in reason
