"""The failover stage in the plan chain: the worked example of docs/method.md ("Stage 4"), the certificate's
failover level (the same line in plan and report --plan), and the invariants the stage keeps."""
from __future__ import annotations

import json

import numpy as np
import pytest

from flowbalance import PlanRequest, plan
from flowbalance.chain.base import ChainInvariantError, check_stage
from flowbalance.chain.failover_step import Failover
from flowbalance.failover_level import failover_level
from flowbalance.generate import generate_cluster
from flowbalance.metrics import broker_failover
from flowbalance.model import Brokers, ClusterState
from flowbalance.stages.followers import balance_followers
from flowbalance.stages.leaders import balance_leaders

DOC_LISTS = [[2, 3, 4], [1, 3, 2], [3, 4, 1], [3, 1, 4], [4, 2, 1], [1, 3, 2]]


def doc_cluster() -> ClusterState:
    return ClusterState.build(Brokers.build([1, 2, 3, 4]), ["t"] * 6, range(6), np.array(DOC_LISTS))


def test_docs_worked_example():
    state = doc_cluster()
    movable = np.ones(6, dtype=bool)
    led = balance_leaders(state, state.replicas[:, 0].copy(), movable, per_topic=True)
    three = balance_followers(state.with_replicas(led), movable)
    assert three.tolist() == [[2, 4, 3], [1, 2, 3], [3, 4, 1], [3, 1, 4], [4, 2, 1], [1, 3, 2]]
    assert broker_failover(state.with_replicas(three)).worst[1] == 2
    p = plan(state, PlanRequest())
    assert p.changes.moves == 0 and p.changes.leader_changes == 2
    assert p.after.replicas.tolist() == [[2, 4, 3], [1, 2, 3], [3, 4, 1], [1, 4, 3], [4, 2, 1], [3, 2, 1]]
    fo = broker_failover(p.after)
    assert fo.worst[1] == 0 and fo.max.tolist() == [2, 2, 2, 2]
    assert p.certificate.failover.bound == 0 and p.certificate.failover.met


def _orders(row: list[int]):
    """Every (leader, first follower, rest) order of one replica list."""
    for a in row:
        for b in row:
            if a != b:
                yield [a, b] + [x for x in row if x not in (a, b)]


def _brute_best(state: ClusterState) -> float:
    """The least worst failover spread over every order of ``state``'s lists that keeps leaders within
    [floor, ceil] of the average (no weights, every broker live)."""
    import itertools

    P, n = state.num_partitions, len(state.brokers)
    lo, hi = P // n, -(-P // n)
    best = float("inf")
    for combo in itertools.product(*(list(_orders(r)) for r in state.replicas.tolist())):
        lead = np.bincount([state.brokers.ids.tolist().index(r[0]) for r in combo], minlength=n)
        if lead.min() < lo or lead.max() > hi:
            continue
        best = min(best, broker_failover(state.with_replicas(np.array(combo))).worst[1])
    return best


@pytest.mark.parametrize("seed", range(12))
def test_certificate_bound_is_below_every_order(seed):
    rng = np.random.default_rng(seed)
    n, P = 4 + seed % 2, 4 + seed % 3
    rows = np.array([rng.permutation(n)[:3] + 1 for _ in range(P)])
    state = ClusterState.build(Brokers.build(list(range(1, n + 1))), ["t"] * P, range(P), rows)
    p = plan(state, PlanRequest(stages=("leaders", "followers")))
    lvl = p.certificate.failover
    best = _brute_best(state)
    assert lvl.bound <= best + 1e-9, "the certificate's bound is above an order that exists"
    assert lvl.spread == broker_failover(p.after).worst[1] >= best - 1e-9
    assert lvl.met == (lvl.spread <= lvl.bound + 1e-9)
    assert failover_level(p.after, np.ones(P, dtype=bool)) == lvl  # a function of the plan alone


@pytest.mark.parametrize("mode", ["spread", "strict"])
def test_failover_keeps_broker_leader_balance_and_topics_only_when_strict(mode):
    state = generate_cluster(brokers=12, topics=30, partitions=(3, 24), rf=3, layout="kafka", seed=4)
    p = plan(state, PlanRequest(add=(12,), per_topic_mode=mode))
    from flowbalance.chain.precheck import leaders_balanced

    assert leaders_balanced(p.after, False)
    if mode == "strict":
        assert leaders_balanced(p.after, True)
    assert "failover" in p.stages_run


def test_a_stage_that_breaks_leader_balance_is_caught():
    state = doc_cluster()
    stage = Failover()
    from flowbalance.chain.base import Invariant
    from flowbalance.chain.precheck import leaders_balanced

    inv = {"leader balance": Invariant("leader balance", lambda s: leaders_balanced(s, False))}
    bad = state.with_replicas(np.array([[3, 4, 2], [1, 3, 2], [3, 4, 1], [3, 1, 4], [4, 2, 1], [1, 3, 2]]))
    with pytest.raises(ChainInvariantError, match="undid leader balance"):
        check_stage(stage, state, bad, inv, ("leader balance",))


def test_plan_and_report_print_the_same_failover_line(tmp_path, run_cli):
    g = tmp_path / "g"
    assert run_cli("generate", "--brokers", "12", "--topics", "30", "--partitions", "3-24", "--layout", "kafka",
                   "--seed", "2", "-o", str(g))[0] == 0
    inputs = [str(g / "assignment.json"), "--brokers", str(g / "brokers.csv")]
    out = tmp_path / "p.json"
    code, text, err = run_cli("plan", *inputs, "--remove", "11", "-o", str(out), "--json")
    assert code == 0, err
    planned = json.loads(text)["failover"]
    code, text, err = run_cli("report", *inputs, "--remove", "11", "--plan", str(out), "--json")
    assert code == 0, err
    assert json.loads(text)["moves"]["failover"] == planned
    code, text, _ = run_cli("plan", *inputs, "--remove", "11", "-o", str(tmp_path / "q.json"))
    assert f"Failover — {planned['text']}" in " ".join(text.split())


def test_method_md_bound_example_is_what_plan_certifies():
    """docs/method.md's bound example (benchmarks/failover.py's k40 cluster, one broker added): the row bound alone is 1, the certificate's
    (with the relaxation) 2, the line as the doc shows it, and no brute order is needed to trust it: the bound only
    grows over the row bound and never passes the plan's own spread."""
    from flowbalance.stages.failover_bound import in_leaders, row_bounds
    from flowbalance.stages.failover_problem import build_problem

    from .conftest import ROOT

    state = generate_cluster(brokers=40, topics=200, partitions=(6, 60), rf=3, layout="kafka", seed=1)
    p = plan(state, PlanRequest(add=(40,)))
    level = p.certificate.failover
    prob, start = build_problem(p.after, p.after, p.movable, False)
    assert in_leaders(prob, int(row_bounds(prob, start).max())) == 1 and level.bound == 2
    assert level.bound <= level.spread
    assert f"Failover — {level.text()}" in (ROOT / "docs" / "method.md").read_text()
