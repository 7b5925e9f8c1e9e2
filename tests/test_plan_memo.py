"""Plans sharing a memo (the frontier's budget points) solve stage 1 and each budget slack once, and are the same
plans as without it."""
from __future__ import annotations

import numpy as np

import flowbalance.chain.budget as budget
import flowbalance.chain.steps as steps
from flowbalance import PlanRequest, frontier, plan
from flowbalance.generate import generate_cluster


def _counting(monkeypatch):
    calls = []
    real = steps.balance_replicas

    def counted(*args, **kwargs):
        calls.append(kwargs.get("topic_slack"))
        return real(*args, **kwargs)

    monkeypatch.setattr(steps, "balance_replicas", counted)
    monkeypatch.setattr(budget, "balance_replicas", counted)
    return calls


def test_budget_points_share_stage_1_and_slack_solves(monkeypatch):
    state = generate_cluster(brokers=12, topics=20, partitions=(3, 24), rf=3, layout="kafka", history=3, seed=5)
    req = PlanRequest(add=(12, 13))
    alone = {b: plan(state, req.with_changes(extra_moves=b)) for b in ("0", "5%", "10%")}
    calls = _counting(monkeypatch)
    memo: dict = {}
    shared = {b: plan(state, req.with_changes(extra_moves=b), memo=memo) for b in ("0", "5%", "10%")}
    for b in alone:
        assert np.array_equal(alone[b].after.replicas, shared[b].after.replicas)
        assert alone[b].certificate.notes == shared[b].certificate.notes
    assert calls.count(None) == 1  # stage 1 once for the three budgets
    slacks = [c for c in calls if c is not None]
    assert slacks and len(slacks) == len(set(slacks))  # each slack solved once


def test_the_frontier_solves_stage_1_once_per_mode(monkeypatch):
    state = generate_cluster(brokers=12, topics=20, partitions=(3, 24), rf=3, layout="kafka", seed=6)
    calls = _counting(monkeypatch)
    f = frontier(state, PlanRequest(add=(12,)), budgets="0,1%,5%")
    assert len(f.points) == 4
    assert calls.count(None) == 2  # the budget points' stage 1, and strict's
