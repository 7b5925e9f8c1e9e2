"""Storage-aware planning: --objective bytes against a brute-force oracle, the disk stage against the exact solver
and its lower bound, capacities as hard limits, the CLI, and byte-identical output across hash seeds."""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowbalance.errors import InputError, PlanningError
from flowbalance.generate import generate_cluster
from flowbalance.metrics import byte_counts, rack_violations, replica_counts
from flowbalance.model import Brokers
from flowbalance.planner import plan
from flowbalance.stages.disk import disk_problem, improve
from flowbalance.stages.disk_exact import solve_exact
from flowbalance.stages.disk_problem import bytes_lower_bound, disk_use, score, violations
from flowbalance.targets import intervals, within

from . import plan_oracle as oracle
from .test_plan import _oracle_parts, build, tiny_cluster

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def sized(state, sizes):
    return replace(state, size=np.asarray(sizes, dtype=np.int64))


# ---- --objective bytes -----------------------------------------------------------------------------

@SETTINGS
@given(tiny_cluster(), st.booleans(), st.data())
def test_objective_bytes_equals_brute_force(cluster, per_topic, data):
    """Same moves as the fewest-moves plan, and the fewest bytes among plans with those moves (brute force)."""
    ids, rack, rows = cluster
    state = build(ids, rack, rows)
    sizes = data.draw(st.lists(st.sampled_from([0, 1, 7, 100, 2**40, 3 * 2**40 + 5]), min_size=len(rows),
                               max_size=len(rows)))
    state = sized(state, sizes)
    remove = [data.draw(st.sampled_from(ids))] if len(ids) > 2 and data.draw(st.booleans()) else []
    live = [b for b in ids if b not in remove]
    parts = _oracle_parts(state)
    target = [len(r) for _, r in parts]
    if max(target) > len(live):
        return
    mode = data.draw(st.sampled_from(["strict", "spread"]))
    best = oracle.min_moves_then_bytes(live, parts, target, rack, per_topic and mode == "strict", list(state.size))
    p_moves = plan(state, remove=remove, per_topic=per_topic, per_topic_mode=mode)
    p = plan(state, remove=remove, per_topic=per_topic, per_topic_mode=mode, objective="bytes")
    assert not len(rack_violations(p.after)) or not rack
    if best is None:
        return
    c = replica_counts(p.after)
    assert within(c, *intervals(int(sum(target)), p.after.brokers.weight, p.after.brokers.live), p.after.brokers.live)
    assert p.changes.moves == p_moves.changes.moves == best[0]
    assert p.changes.bytes_moved == best[1], (p.changes.bytes_moved, best)
    assert p.changes.bytes_moved <= p_moves.changes.bytes_moved
    cert = p.certificate.bytes_objective
    if cert is not None:
        assert cert.lower_bound <= best[1] <= cert.bytes_moved


def test_objective_bytes_moves_less_on_heavy_tails():
    st0 = generate_cluster(brokers=12, topics=40, partitions=(12, 48), rf=3, skew=0.5, sizes=True, seed=1)
    a = plan(st0)
    b = plan(st0, objective="bytes")
    assert b.changes.moves == a.changes.moves
    assert b.changes.bytes_moved < 0.6 * a.changes.bytes_moved
    assert b.certificate.bytes_objective.exact
    assert b.certificate.bytes_objective.lower_bound == b.changes.bytes_moved


# ---- the disk stage ----------------------------------------------------------------------------------

@st.composite
def small_problem(draw):
    n = draw(st.integers(3, 5))
    racks = draw(st.sampled_from([0, 2]))
    topics = draw(st.integers(1, 3))
    st0 = generate_cluster(brokers=n, racks=racks, rack_aware=racks > 0, topics=topics, partitions=(1, 3),
                           rf=min(2, n), skew=draw(st.sampled_from([0.0, 1.0])), sizes=True,
                           size_alpha=draw(st.sampled_from([1.2, 2.5])), seed=draw(st.integers(0, 10_000)))
    return st0, draw(st.sampled_from(["count+bytes", "bytes"])), draw(st.sampled_from([1.05, 1.3]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_problem())
def test_improvement_rounds_against_exact_solver(case):
    """The rounds give a feasible assignment, never better than the proven optimum, and the lower bound holds."""
    state, balance, tol = case
    p1 = plan(state, stages=("replicas",))
    prob, _ = disk_problem(p1.before, p1.after, p1.target_rf, p1.movable, tolerance=tol,
                           counts=balance != "bytes", per_topic=True)
    assign, _ = improve(prob)
    assert violations(prob, assign) == []
    s_heur = score(prob, assign)
    assert s_heur.key()[:2] <= score(prob, prob.start).key()[:2]  # never worse on the excess
    ex = solve_exact(prob)
    assert ex.assign is not None and violations(prob, ex.assign) == []
    assert ex.optimal and ex.score.key() <= s_heur.key()
    # the lower bound holds for both assignments (each against its own final limits)
    for a, sc in ((ex.assign, ex.score), (assign, s_heur)):
        d = disk_use(prob, a)
        limit = np.maximum(np.minimum(prob.upper, np.where(prob.capacity >= 0, prob.capacity, prob.upper)), d)
        assert bytes_lower_bound(prob, limit) <= sc.bytes_moved
    # the planner keeps the better of the two
    p = plan(state, balance=balance, disk_tolerance=tol)
    assert p.certificate.disk is None or p.certificate.disk.bytes_lower_bound <= p.changes.bytes_moved


@pytest.mark.parametrize("racks", [0, 3])
@pytest.mark.parametrize("balance", ["count+bytes", "bytes"])
def test_disk_balance_reaches_tolerance(racks, balance):
    st0 = generate_cluster(brokers=12, racks=racks, rack_aware=racks > 0, topics=40, partitions=(12, 48), rf=3,
                           skew=0.5, sizes=True, size_alpha=2.0, seed=1)
    base = plan(st0)
    p = plan(st0, balance=balance, disk_tolerance=1.03)  # tighter than the count-only plan leaves the disks
    d = p.certificate.disk
    assert d.within_tolerance and d.max_over_mean_after <= 1.03 < base.metrics_after.bytes_max_over_mean
    assert d.bytes_lower_bound <= p.changes.bytes_moved
    assert not len(rack_violations(p.after))
    if balance == "count+bytes":  # counts and per-topic balance as the count-only plan left them
        assert p.metrics_after.replica_spread <= base.metrics_after.replica_spread
        assert p.metrics_after.topic.unbalanced_topics <= base.metrics_after.topic.unbalanced_topics
    else:
        assert p.changes.bytes_moved < base.changes.bytes_moved


def test_small_cluster_is_solved_exactly():
    st0 = generate_cluster(brokers=4, topics=2, partitions=(3, 4), rf=2, skew=1.0, sizes=True, seed=5)
    p = plan(st0, balance="count+bytes", disk_tolerance=1.2)
    assert p.certificate.disk.exact
    assert p.certificate.disk.bytes_lower_bound == p.certificate.disk.bytes_moved or p.changes.moves == 0


def test_balanced_disk_proposes_nothing():
    st0 = generate_cluster(brokers=6, topics=10, partitions=(6, 12), rf=3, sizes=True, seed=2)
    first = plan(st0, balance="count+bytes", disk_tolerance=1.1)
    again = plan(first.before.with_replicas(first.after.replicas), balance="count+bytes", disk_tolerance=1.1)
    assert again.is_empty


# ---- capacities ---------------------------------------------------------------------------------------

def _with_capacity(state, caps):
    b = state.brokers
    return state.with_brokers(Brokers.build(b.ids, None, b.weight, caps, b.removed))


def test_capacity_is_a_hard_limit_even_for_count_balance():
    st0 = generate_cluster(brokers=8, topics=20, partitions=(8, 24), rf=3, skew=0.3, sizes=True, size_alpha=2.0,
                           seed=4)
    base = plan(st0)
    d = byte_counts(base.after)
    caps = [int(x) for x in d]
    worst = int(np.argmax(d))
    caps[worst] = int(d[worst] * 0.9)  # the count-only plan puts this broker above its disk
    for i in range(len(caps)):
        if i != worst:
            caps[i] = int(d.max() * 1.2)
    st1 = _with_capacity(st0, caps)
    for balance in ("count", "count+bytes", "bytes"):
        p = plan(st1, balance=balance)
        after = byte_counts(p.after)
        assert (after <= np.asarray(caps)).all(), balance
    assert "disk" in plan(st1).stages_run


def test_impossible_capacity_is_one_clear_error():
    st0 = generate_cluster(brokers=4, topics=4, partitions=4, rf=2, sizes=True, seed=1)
    total = int((st0.size * st0.rf).sum())
    st1 = _with_capacity(st0, [total // 5] * 4)
    with pytest.raises(PlanningError, match="disk capacity cannot be met"):
        plan(st1, balance="count+bytes")


def test_bytes_requests_need_sizes_and_the_flow_strategy():
    st0 = generate_cluster(brokers=4, topics=2, partitions=4, rf=2, seed=1)
    with pytest.raises(InputError, match="^request: objective: needs partition sizes"):
        plan(st0, objective="bytes")
    with pytest.raises(InputError, match="^request: balance: unknown balance"):
        plan(st0, balance="disk")
    st1 = generate_cluster(brokers=4, topics=2, partitions=4, rf=2, seed=1, sizes=True)
    with pytest.raises(InputError, match="^request: disk_tolerance: "):
        plan(st1, balance="bytes", disk_tolerance=0.9)
    with pytest.raises(InputError, match="flow strategy"):
        plan(st1, balance="bytes", strategy="template")


# ---- CLI and determinism -------------------------------------------------------------------------------

def _generate(tmp_path):
    out = tmp_path / "g"
    subprocess.run([sys.executable, "-m", "flowbalance_cli", "generate", "--brokers", "9", "--racks", "3",
                    "--rack-aware", "--topics", "25", "--partitions", "9-30", "--skew", "0.5", "--sizes", "--seed",
                    "7", "-o", str(out), "--formats", "json,brokers,logdirs"], check=True, capture_output=True)
    return out


def test_cli_plan_bytes_is_byte_identical_across_hash_seeds(tmp_path):
    g = _generate(tmp_path)
    outs = []
    for seed in ("1", "2"):
        o = tmp_path / f"plan-{seed}.json"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        r = subprocess.run([sys.executable, "-m", "flowbalance_cli", "plan", str(g / "assignment.json"), "--brokers",
                            str(g / "brokers.csv"), "--sizes", str(g / "logdirs.txt"), "-o", str(o), "--objective",
                            "bytes", "--balance", "count+bytes", "--json"], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outs.append(o.read_bytes())
        assert '"disk": {' in r.stdout and '"bytes_objective": {' in r.stdout
    assert outs[0] == outs[1] and len(outs[0]) > 100


def test_cli_balance_without_sizes_is_one_line(tmp_path):
    g = _generate(tmp_path)
    r = subprocess.run([sys.executable, "-m", "flowbalance_cli", "plan", str(g / "assignment.json"), "-o",
                        str(tmp_path / "x.json"), "--balance", "bytes"], capture_output=True, text=True)
    assert r.returncode != 0
    assert r.stderr.count("\n") == 1 and "--balance" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.json").exists()


def test_fleet_entries_take_the_bytes_options():
    from flowbalance.request import PlanRequest
    req = PlanRequest.from_json({"balance": "count+bytes", "objective": "bytes", "disk_tolerance": 1.1}, "fleet.json: c")
    assert (req.balance, req.objective, req.disk_tolerance) == ("count+bytes", "bytes", 1.1)
    with pytest.raises(InputError, match="^fleet.json: c.disk_tolerance: expected a number"):
        PlanRequest.from_json({"disk_tolerance": "high"}, "fleet.json: c")
    st0 = generate_cluster(brokers=6, topics=8, partitions=(6, 12), rf=3, skew=0.5, sizes=True, seed=3)
    p = plan(st0, req)
    assert p.certificate.disk is not None and p.certificate.bytes_objective is not None
