"""``flowbalance plan --strategy template`` and ``flowbalance compare``: files, JSON, refusals."""
from __future__ import annotations

import json

from flowbalance.load import load_cluster
from flowbalance.planner import plan

from .conftest import TESTDATA
from .test_bad_input import assert_one_line

K = TESTDATA / "kafka"


def test_template_plan_writes_a_verified_plan(tmp_path, run_cli):
    out = tmp_path / "plan.json"
    code, stdout, err = run_cli("plan", K / "assignment.json", "--brokers", K / "brokers.json", "--strategy", "template",
                                "-o", out, "--json")
    assert code == 0, err
    s = json.loads(stdout)
    assert s["strategy"] == "template" and s["stages"] == ["templates", "failover"]
    doc = json.loads(out.read_text())
    assert len(doc["partitions"]) == s["changed_partitions"]
    for p in doc["partitions"]:
        assert len(set(p["replicas"])) == len(p["replicas"])
    # the same command twice gives the same bytes
    out2 = tmp_path / "plan2.json"
    assert run_cli("plan", K / "assignment.json", "--brokers", K / "brokers.json", "--strategy", "template",
                   "-o", out2)[0] == 0
    assert out.read_bytes() == out2.read_bytes()


def test_compare_json_matches_the_library(run_cli):
    code, stdout, err = run_cli("compare", K / "assignment.json", "--brokers", K / "brokers.json", "--remove", "2",
                                "--json")
    assert code == 0, err
    d = json.loads(stdout)
    state = load_cluster(K / "assignment.json", brokers=K / "brokers.json").state
    for name in ("flow", "template"):
        p = plan(state, strategy=name, remove=[2])
        assert 2 not in p.after.replicas
        got = d["strategies"][name]
        assert got["moves"] == p.changes.moves
        assert got["failover_worst_spread"] == p.metrics_after.failover.worst[1]
        assert got["topic_spread"] == p.metrics_after.topic.spread
        # the certificate: the same bound and verdict as the library's, never a bound above the moves
        assert (got["lower_bound"], got["proven_optimal"]) == (p.certificate.lower_bound, p.certificate.proven_optimal)
        assert got["lower_bound"] <= got["moves"]


def test_compare_prints_a_table(run_cli):
    code, stdout, err = run_cli("compare", K / "assignment.json", "--brokers", K / "brokers.json", "--remove", "1")
    assert code == 0, err
    assert "flow" in stdout and "template" in stdout and "replica moves" in stdout and "failover" in stdout


def test_unknown_strategy_is_one_line(tmp_path, run_cli):
    out = tmp_path / "plan.json"
    code, stdout, err = run_cli("plan", K / "assignment.json", "--strategy", "greedy", "-o", out)
    assert_one_line(code, stdout, err, "--strategy", "greedy")
    assert not out.exists()


def test_template_with_stages_is_refused(tmp_path, run_cli):
    out = tmp_path / "plan.json"
    code, stdout, err = run_cli("plan", K / "assignment.json", "--strategy", "template", "--stages", "replicas",
                                "-o", out)
    assert_one_line(code, stdout, err, "--stages")
    assert not out.exists()


def test_compare_refuses_bad_input_in_one_line(tmp_path, run_cli):
    code, stdout, err = run_cli("compare", K / "assignment.json", "--remove", "999")
    assert_one_line(code, stdout, err, "--remove", "999")
