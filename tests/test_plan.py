"""The planner against independent oracles: brute-force optimal moves, leader feasibility, idempotence, order."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowbalance.formats.writers import reassignment_json
from flowbalance.load import load_cluster
from flowbalance.metrics import leader_counts, measure, rack_violations, replica_counts
from flowbalance.model import Brokers, ClusterState
from flowbalance.planner import plan
from flowbalance.targets import intervals, within

from . import plan_oracle as oracle
from .conftest import TESTDATA

SEED = TESTDATA / "seed"


@st.composite
def tiny_cluster(draw, max_brokers=4, max_parts=4, racks=None):
    n = draw(st.integers(2, max_brokers))
    ids = list(range(n))
    use_racks = draw(st.booleans()) if racks is None else racks
    rack = {b: "ab"[b % 2] for b in ids} if use_racks else None
    nparts = draw(st.integers(1, max_parts))
    parts = []
    for i in range(nparts):
        k = draw(st.integers(1, min(2, n)))
        reps = draw(st.permutations(ids))[:k]
        topic = draw(st.sampled_from(["t0", "t1"]))
        parts.append((topic, list(reps)))
    # unique (topic, partition) numbers
    counter = {}
    rows = []
    for topic, reps in parts:
        counter[topic] = counter.get(topic, -1) + 1
        rows.append((topic, counter[topic], reps))
    return ids, rack, rows


def build(ids, rack, rows) -> ClusterState:
    br = Brokers.build(ids, [rack[b] for b in ids] if rack else None)
    width = max(len(r) for _, _, r in rows)
    mat = np.full((len(rows), width), -1)
    for i, (_, _, r) in enumerate(rows):
        mat[i, : len(r)] = r
    return ClusterState.build(br, [t for t, _, _ in rows], [p for _, p, _ in rows], mat)


def apply(p) -> ClusterState:
    return p.before.with_replicas(p.after.replicas)


def _oracle_parts(state: ClusterState):
    return [(state.topics[state.topic[i]], [int(x) for x in state.replicas[i] if x >= 0]) for i in range(state.num_partitions)]


SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(tiny_cluster(), st.booleans(), st.data())
def test_moves_equal_brute_force_optimum(cluster, per_topic, data):
    ids, rack, rows = cluster
    state = build(ids, rack, rows)
    remove = []
    if len(ids) > 2 and data.draw(st.booleans()):
        remove = [data.draw(st.sampled_from(ids))]
    add = [len(ids)] if not rack and len(ids) < 4 and data.draw(st.booleans()) else []
    live = [b for b in ids if b not in remove] + add
    parts = _oracle_parts(state)
    rf_change = data.draw(st.sampled_from([None, 1, 2]))
    target = [len(r) if rf_change is None else rf_change for _, r in parts]
    if max(target) > len(live):
        return
    # strict: per-topic targets rank above the moves; spread (the default): the fewest moves for counts alone
    mode = data.draw(st.sampled_from(["strict", "spread"]))
    best = oracle.min_moves(live, parts, target, rack, per_topic and mode == "strict")
    p = plan(state, remove=remove, add=add, replication_factor=rf_change, per_topic=per_topic, per_topic_mode=mode)
    after = p.after
    # hard rules always hold
    assert (after.rf == np.array(target)).all()
    assert not len(rack_violations(after)) or not rack
    if best is None:
        return  # no assignment meets every interval; the planner returns its closest plan
    c = replica_counts(after)
    assert within(c, *intervals(int(sum(target)), after.brokers.weight, after.brokers.live), after.brokers.live)
    assert p.changes.moves == best, (p.changes.moves, best)
    assert p.certificate.lower_bound <= best
    if p.certificate.proven_optimal:
        assert p.changes.moves == best


@SETTINGS
@given(tiny_cluster(max_brokers=5, max_parts=5), st.booleans())
def test_leaders_balanced_whenever_brute_force_says_feasible(cluster, per_topic):
    ids, rack, rows = cluster
    state = build(ids, rack, rows)
    p = plan(state, per_topic=per_topic)
    sets = [[int(x) for x in p.after.replicas[i] if x >= 0] for i in range(p.after.num_partitions)]
    feasible = oracle.leaders_balanceable(ids, sets)
    L = leader_counts(p.after)
    ok = within(L, *intervals(p.after.num_partitions, p.after.brokers.weight, p.after.brokers.live), p.after.brokers.live)
    assert ok == feasible
    # stage 2 only reorders: the replica sets are those of stage 1
    s1 = plan(state, per_topic=per_topic, stages=("replicas",))
    for i in range(state.num_partitions):
        assert set(sets[i]) == {int(x) for x in s1.after.replicas[i] if x >= 0}


@SETTINGS
@given(tiny_cluster(max_brokers=6, max_parts=8), st.booleans())
def test_idempotent_and_order_independent(cluster, per_topic):
    ids, rack, rows = cluster
    state = build(ids, rack, rows)
    p = plan(state, per_topic=per_topic)
    again = plan(apply(p), per_topic=per_topic)
    assert again.is_empty, (again.changes.moves, again.changes.leader_changes)
    shuffled = rows[:]
    random.Random(len(rows)).shuffle(shuffled)
    ids2 = ids[::-1]
    q = plan(build(ids2, rack, shuffled), per_topic=per_topic)
    assert reassignment_json(q.after, q.changes.changed_rows) == reassignment_json(p.after, p.changes.changed_rows)


def test_seed_remove_19_is_one_move_keeping_racks():
    ld = load_cluster(SEED / "assignment.json", brokers=SEED / "brokers.csv")
    p = plan(ld.state, remove=[19])
    assert p.changes.moves == 1 and p.certificate.min_moves == 1 and p.certificate.proven_optimal
    sets_changed = [r for r in p.changes.changed_rows.tolist()
                    if sorted(p.before.replicas[r].tolist()) != sorted(p.after.replicas[r].tolist())]
    (row,) = sets_changed  # the other changed rows are reorderings (the failover stage)
    new = [int(x) for x in p.after.replicas[row] if x >= 0]
    assert 19 not in new and 8 in new
    racks = {b.id: b.rack for b in p.after.brokers}
    assert len({racks[x] for x in new}) == 2
    assert len(rack_violations(p.after)) == 0


def _count_solves(monkeypatch) -> list:
    """Count every min-cost flow solver the planner creates (all stages build them through flow.mincost)."""
    import types

    import flowbalance.flow.mincost as mc

    calls: list = []
    real = mc.min_cost_flow

    def counting():
        calls.append(1)
        return real.SimpleMinCostFlow()

    monkeypatch.setattr(mc, "min_cost_flow", types.SimpleNamespace(SimpleMinCostFlow=counting))
    return calls


def test_balanced_cluster_gets_empty_plan_without_networks(monkeypatch):
    calls = _count_solves(monkeypatch)
    ld = load_cluster(SEED / "assignment.json", brokers=SEED / "brokers.csv")
    p = plan(ld.state)
    assert p.skipped and p.prechecked and p.is_empty and not calls
    from flowbalance.summary import plan_summary

    assert plan_summary(p)["skipped_by_precheck"] is True
    # a plan's applied result meets every target: planning it again changes nothing
    from flowbalance.generate import generate_cluster

    state = generate_cluster(brokers=7, topics=5, partitions=(3, 11), rf=3, skew=0.5, seed=4)
    first = plan(state)
    assert not first.is_empty and calls  # the counter sees the solves of a real plan
    calls.clear()
    again = plan(apply(first))
    assert again.is_empty
    if again.skipped:
        assert not calls


def test_impossible_rf_is_a_planning_error():
    from flowbalance.errors import PlanningError

    ld = load_cluster(SEED / "assignment.json", brokers=SEED / "brokers.csv")
    with pytest.raises(PlanningError, match="above the number of live brokers"):
        plan(ld.state, replication_factor=21)


def test_add_broker_to_balanced_cluster_hits_m_star():
    from flowbalance.generate import generate_cluster

    state = generate_cluster(brokers=12, topics=50, partitions=(4, 12), rf=3, layout="balanced", seed=3)
    p = plan(state, add=[12])
    assert p.changes.moves == p.certificate.lower_bound
    assert p.certificate.proven_optimal
    m = measure(apply(p))
    assert m.replica_spread <= 1 and m.topic.spread <= 1 and m.leader_spread <= 1


@SETTINGS
@given(st.integers(2, 7), st.integers(1, 12), st.integers(0, 10_000))
def test_pure_rebalance_reaches_m_star_and_matches_the_keep_network(n, nparts, seed):
    """Pure rebalance without per-topic: the plan (split network) moves exactly M* replicas, the same count as the
    min-cost keep network (a second solver)."""
    rng = random.Random(seed)
    ids = list(range(n))
    rows = [("t", i, rng.sample(ids[: max(2, rng.randint(1, n))], rng.randint(1, min(2, n)))) for i in range(nparts)]
    state = build(ids, None, rows)
    p = plan(state, per_topic=False, stages=("replicas",))
    assert p.changes.moves == p.certificate.min_moves
    from flowbalance.stages.replicas import balance_keep

    mc = balance_keep(state, state.rf.astype(np.int64), np.ones(state.num_partitions, bool), per_topic=False)
    from flowbalance.metrics import compare

    assert compare(state, state.with_replicas(mc.replicas)).moves == p.changes.moves
