"""``check`` and ``plan`` agree on a cluster whose replica counts are at their targets: check's reordering hint
(leader and worst failover spread after stages 2 and 3 on the current sets) is what plan proposes, and plan
proposes nothing there unless it lowers a spread it names."""
from __future__ import annotations

import json

import pytest

from flowbalance import PlanRequest, plan
from flowbalance.generate import generate_cluster
from flowbalance.reorder import reorder_gain


@pytest.mark.parametrize("seed", range(6))
def test_plan_moves_nothing_and_reaches_checks_hint(seed):
    state = generate_cluster(brokers=6 + seed, racks=3 if seed % 2 else 0, rack_aware=bool(seed % 2), topics=5,
                             partitions=(6, 18), rf=3 - (seed % 3 == 2), layout="balanced", seed=seed)
    gain = reorder_gain(state)
    p = plan(state, PlanRequest())
    if p.changes.moves:  # the layout is not at its count targets (uneven racks): not this test's case
        assert p.metrics_before.min_moves > 0 or len(p.metrics_before.rack_violations)
        return
    if p.is_empty:
        assert not gain.improves or p.skipped
        return
    mb, ma = p.metrics_before, p.metrics_after
    assert (ma.leader_spread, ma.failover.worst[1]) == (gain.leader_spread[1], gain.failover_worst[1])
    assert ma.leader_spread < mb.leader_spread or ma.failover.worst[1] < mb.failover.worst[1]
    assert any("proposed only because reordering lowers" in n for n in p.certificate.notes)


def test_check_prints_the_hint_and_plan_the_same_numbers(tmp_path, run_cli):
    g = tmp_path / "g"
    code, _, err = run_cli("generate", "--brokers", "12", "--topics", "20", "--partitions", "12-48", "--rf", "3",
                           "--layout", "balanced", "--seed", "12", "-o", str(g))
    assert code == 0, err
    inputs = [str(g / "assignment.json"), "--brokers", str(g / "brokers.csv")]
    code, text, _ = run_cli("check", *inputs, "--json")
    assert code == 0  # balanced by check's thresholds
    hint = json.loads(text)["reorder_only"]
    assert hint["improves"] and hint["failover_worst_spread"][1] < hint["failover_worst_spread"][0]
    code, text, err = run_cli("plan", *inputs, "-o", str(tmp_path / "p.json"), "--json")
    assert code == 0, err
    d = json.loads(text)
    assert d["moves"] == 0 and d["failover_worst_spread"] == hint["failover_worst_spread"]
    code, text, _ = run_cli("check", *inputs)
    assert "reordering only (no data moves) would lower worst failover spread" in text


def test_a_cluster_reordering_cannot_improve_gets_nothing():
    # one partition per broker pair in both orders: leaders and pairs already even
    from flowbalance.model import Brokers, ClusterState
    import numpy as np

    reps = np.array([[0, 1], [1, 0], [1, 2], [2, 1], [2, 0], [0, 2]])
    state = ClusterState.build(Brokers.build([0, 1, 2]), ["t"] * 6, range(6), reps)
    assert not reorder_gain(state).improves
    p = plan(state, PlanRequest())
    assert p.is_empty
