"""``flowbalance plan``: files written, determinism, refusals (one line, exit 2, nothing written)."""
from __future__ import annotations

import json
import random

from .conftest import TESTDATA
from .test_bad_input import assert_one_line

SEED = TESTDATA / "seed"
K = TESTDATA / "kafka"


def test_seed_plan_writes_plan_rollback_and_election(tmp_path, run_cli):
    out, rb, el = tmp_path / "plan.json", tmp_path / "rollback.json", tmp_path / "election.json"
    code, stdout, err = run_cli("plan", SEED / "assignment.json", "--brokers", SEED / "brokers.csv", "--remove", "19",
                                "-o", out, "--rollback", rb, "--election", el, "--json")
    assert code == 0, err
    summary = json.loads(stdout)
    assert summary["moves"] == 1 and summary["min_moves"] == 1 and summary["proven_optimal"]
    plan = json.loads(out.read_text())
    # the move off broker 19, and one reordering by the failover stage (worst failover spread 2 -> 1 after it)
    assert summary["failover_worst_spread"][1] == 1 and summary["failover"]["bound_met"]
    moved = [p for p in plan["partitions"] if p["topic"] == "x.y.z.t" and p["partition"] == 1]
    assert len(moved) == 1 and 19 not in moved[0]["replicas"] and moved[0]["replicas"][0] == 8
    before = {(p["topic"], p["partition"]): p["replicas"]
              for p in json.loads((SEED / "assignment.json").read_text())["partitions"]}
    reordered = [p for p in plan["partitions"] if p is not moved[0]]
    assert len(reordered) == summary["reorder_only_partitions"] == 1
    assert sorted(reordered[0]["replicas"]) == sorted(before[reordered[0]["topic"], reordered[0]["partition"]])
    rollback = json.loads(rb.read_text())["partitions"]
    assert rollback == [{"topic": p["topic"], "partition": p["partition"], "replicas": before[p["topic"], p["partition"]]}
                        for p in plan["partitions"]]
    election = json.loads(el.read_text())["partitions"]
    assert election == [{"topic": p["topic"], "partition": p["partition"]} for p in reordered
                        if p["replicas"][0] != before[p["topic"], p["partition"]][0]]


def test_plan_is_byte_identical_for_shuffled_input(tmp_path, run_cli):
    doc = json.loads((K / "assignment.json").read_text())
    random.Random(3).shuffle(doc["partitions"])
    shuffled = tmp_path / "shuffled.json"
    shuffled.write_text(json.dumps(doc, indent=2))
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert run_cli("plan", K / "assignment.json", "--brokers", K / "brokers.json", "--add", "7", "-o", a)[0] in (0, 2)
    code, _, err = run_cli("plan", K / "assignment.json", "--brokers", K / "brokers.json", "-o", a)
    assert code == 0, err
    code, _, err = run_cli("plan", shuffled, "--brokers", K / "racks.json", "-o", b)
    assert code == 0, err
    assert a.read_bytes() == b.read_bytes()
    assert '"log_dirs":["any"' in a.read_text()


def test_plan_of_applied_plan_is_empty(tmp_path, run_cli):
    out = tmp_path / "all.json"
    code, _, err = run_cli("plan", K / "describe.txt", "--brokers", K / "brokers.csv", "-o", out, "--all")
    assert code == 0, err
    again = tmp_path / "again.json"
    code, stdout, err = run_cli("plan", out, "--brokers", K / "brokers.csv", "-o", again, "--json")
    assert code == 0, err
    assert json.loads(stdout)["empty"] is True
    assert json.loads(again.read_text())["partitions"] == []


def test_refusals_write_nothing(tmp_path, run_cli):
    out = tmp_path / "plan.json"
    cases = [
        (["--replication-factor", "21"], ["replication factor 21", "live brokers"]),
        (["--remove", "99"], ["--remove", "99"]),
        (["--replace", "7-31"], ["--replace", "'7-31'"]),
        (["--replace", "99:31"], ["--replace", "unknown broker"]),
        (["--topic-rf", "nope=3"], ["--topic-rf", "unknown topic", "'nope'"]),
        (["--topics", "["], ["--topics", "invalid regular expression"]),
        (["--topics", "zzz"], ["--topics", "matches no topic"]),
        (["--stages", "replicas,magic"], ["--stages", "'magic'"]),
        (["--add", "42"], ["--add", "rack", "42"]),
    ]
    for extra, needles in cases:
        code, o, err = run_cli("plan", SEED / "assignment.json", "--brokers", SEED / "brokers.csv", "-o", out, *extra)
        assert_one_line(code, o, err, *needles)
        assert not out.exists(), extra
    assert not list(tmp_path.iterdir())


def test_refuses_to_overwrite_an_input(tmp_path, run_cli):
    src = tmp_path / "current.json"
    src.write_text((SEED / "assignment.json").read_text())
    code, o, err = run_cli("plan", src, "-o", src)
    assert_one_line(code, o, err, "current.json", "refusing to overwrite an input")
    assert src.read_text() == (SEED / "assignment.json").read_text()


def test_replace_moves_replicas_to_the_new_broker(tmp_path, run_cli):
    out = tmp_path / "plan.json"
    code, stdout, err = run_cli("plan", SEED / "assignment.json", "--brokers", SEED / "brokers.csv",
                                "--replace", "7:31", "-o", out, "--json")
    assert code == 0, err
    plan = json.loads(out.read_text())["partitions"]
    assert plan == [{"topic": "x.y.z.t", "partition": 0, "replicas": [31, 18]}]


def test_same_bytes_under_different_hash_seeds(tmp_path):
    import os
    import subprocess
    import sys

    outs = []
    for seed in ("1", "12345"):
        out = tmp_path / f"p{seed}.json"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run([sys.executable, "-m", "flowbalance_cli", "plan", str(K / "describe.txt"), "--brokers",
                               str(K / "brokers.csv"), "--remove", "6", "-o", str(out)], env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and b'"partitions":[\n]' not in outs[0]


def test_nothing_to_do_says_whether_the_pre_check_or_the_stages_decided(tmp_path, run_cli):
    """A 40-broker Kafka-placed cluster, planned and planned again: the second plan runs the stages (failover 3 is
    above its bound 2, so the pre-check does not skip it) and proposes nothing. The line says the stages decided
    (not the pre-check, test_plan checks that case), and --json's skipped_by_precheck agrees."""
    g = tmp_path / "k40"
    code, _, err = run_cli("generate", "--brokers", "40", "--topics", "300", "--layout", "kafka", "--history", "3",
                           "--rf", "3", "--seed", "1", "-o", str(g))
    assert code == 0, err
    first = tmp_path / "all.json"
    code, _, err = run_cli("plan", g / "assignment.json", "--brokers", g / "brokers.csv", "-o", first, "--all")
    assert code == 0, err
    code, text, err = run_cli("plan", first, "--brokers", g / "brokers.csv", "-o", tmp_path / "again.json")
    assert code == 0, err
    d = json.loads(run_cli("plan", first, "--brokers", g / "brokers.csv", "-o", tmp_path / "a2.json", "--json")[1])
    assert d["empty"] and not d["skipped_by_precheck"] and not d["failover"]["bound_met"]
    assert "Nothing to do: no change improves the cluster (see the notes)." in text
