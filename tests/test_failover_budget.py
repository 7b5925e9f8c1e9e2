"""The move budget's failover part (``chain/failover_budget.py``, ``stages/failover_moves.py``) against independent
oracles (``tests/oracles.py``: plain Python, no flowbalance code).

* The swaps alone, on random small clusters (racks or not, RF 2 and 3, weights, partitions held in place): broker
  counts, leaders, RF, the rack rule, held partitions and per-topic excess kept, moves added counted and within the
  limit, and the failover spread of the order measured by the oracle (never higher).
* The rack floor against every placement and order of tiny rack-aware clusters (the bound is met there).
* The stage in the chain on Kafka-placed clusters: the budget never exceeded, counts as without the stage, per-topic
  excess and racks no worse, failover no worse and the note's figures the ones the chain ends with; on an RF-3
  cluster the stage lowers the worst spread; deterministic.
"""
from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from flowbalance.certificate import count_targets
from flowbalance.chain.base import Context, run_chain
from flowbalance.chain.failover_budget import FailoverBudget
from flowbalance.chain.steps import flow_chain
from flowbalance.generate import generate_cluster
from flowbalance.metrics import measure
from flowbalance.model import Brokers, ClusterState
from flowbalance.request import PlanRequest
from flowbalance.resolve import resolve
from flowbalance.stages.failover_moves import rack_failover_floor, spread_by_swaps, topic_cells

from . import oracles as o

# ---- plain views of a state --------------------------------------------------------------------------------------


def spec_of(state: ClusterState) -> o.Spec:
    b = state.brokers
    brokers = {int(i): o.BrokerSpec(b.rack_names[r] if r >= 0 else None, float(w), bool(rem))
               for i, r, w, rem in zip(b.ids, b.rack, b.weight, b.removed)}
    parts = tuple(o.PartSpec(state.topics[t], int(p), tuple(int(x) for x in row if x >= 0))
                  for t, p, row in zip(state.topic, state.partition, state.replicas))
    return o.Spec(brokers, parts)


def leader_spread(spec: o.Spec) -> int:
    """Most minus fewest leaderships over the live brokers (unweighted)."""
    counts = o.leader_counts(spec)
    return max(counts[b] for b in spec.live) - min(counts[b] for b in spec.live)


def worst_failover(spec: o.Spec) -> Fraction:
    return max((v[2] for v in o.broker_failover(spec).values()), default=Fraction(0))


def topic_broker_counts(spec: o.Spec, rows) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for i in rows:
        p = spec.partitions[i]
        for x in p.replicas:
            out[p.topic, x] = out.get((p.topic, x), 0) + 1
    return out


def topic_excess(spec: o.Spec, movable) -> int:
    """Largest distance of a (topic, live broker) count of the movable rows outside [floor, ceil] of its share."""
    rows = [i for i, m in enumerate(movable) if m]
    counts = topic_broker_counts(spec, rows)
    out = 0
    for t in sorted({spec.partitions[i].topic for i in rows}):
        total = sum(len(spec.partitions[i].replicas) for i in rows if spec.partitions[i].topic == t)
        for x, (lo, hi) in o.exact_intervals(total, spec).items():
            c = counts.get((t, x), 0)
            out = max(out, lo - c, c - hi)
    return out


# ---- the swaps alone -----------------------------------------------------------------------------------------------


def random_case(seed: int):
    """(state in some order, original assignment, movable) of a small cluster; sometimes racks, weights, RF 2."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 10))
    ids = np.sort(rng.choice(np.arange(1, 30), n, replace=False))
    racks = [f"r{int(x)}" for x in rng.integers(0, 3, n)] if seed % 3 == 0 else None
    weights = rng.integers(1, 3, n).astype(float).tolist() if seed % 5 == 4 else None
    b = Brokers.build(ids.tolist(), racks=racks, weights=weights)
    rf = 2 if seed % 4 == 1 else 3
    rack_of = dict(zip(ids.tolist(), racks or [None] * n))
    P = int(rng.integers(12, 40))
    rows = []
    while len(rows) < P:
        row = rng.choice(ids, rf, replace=False)
        if racks and len({rack_of[int(x)] for x in row}) < min(rf, len(set(racks))):
            continue
        rows.append(row)
    topics = [f"t{int(x)}" for x in rng.integers(0, 3, P)]
    state = ClusterState.build(b, topics, np.arange(P), np.array(rows, dtype=np.int64))
    orig = state.replicas.copy()
    for i in rng.choice(P, P // 4, replace=False):  # an original that differs: some replicas were moved before
        j = int(rng.integers(rf))
        free = [x for x in ids if x not in orig[i]]
        orig[i, j] = free[int(rng.integers(len(free)))]
    movable = rng.random(P) > 0.15
    return state, state.with_replicas(orig), movable


@pytest.mark.parametrize("seed", range(40))
def test_swaps_keep_every_rule_and_never_raise_the_worst_spread(seed):
    state, before, movable = random_case(seed)
    limit = seed % 9
    targets = count_targets(state, state.rf.astype(np.int64), movable, True)
    cells = topic_cells(state, movable, targets.topic_lo, targets.topic_hi) if seed % 2 else None
    res = spread_by_swaps(state, before, movable, limit, cells)
    after = state.with_replicas(res.replicas)
    s0, s1, orig = spec_of(state), spec_of(after), spec_of(before)
    assert o.replica_counts(s1) == o.replica_counts(s0)
    assert [p.replicas[0] for p in s1.partitions] == [p.replicas[0] for p in s0.partitions]
    assert [len(p.replicas) for p in s1.partitions] == [len(p.replicas) for p in s0.partitions]
    assert all(len(set(p.replicas)) == len(p.replicas) for p in s1.partitions)
    assert set(o.rack_violations(s1)) <= set(o.rack_violations(s0))
    held = [i for i, m in enumerate(movable) if not m]
    assert [s1.partitions[i] for i in held] == [s0.partitions[i] for i in held]
    if cells is None:  # inside topics only: every (topic, broker) count unchanged
        assert topic_broker_counts(s1, range(len(movable))) == topic_broker_counts(s0, range(len(movable)))
    assert topic_excess(s1, movable) <= topic_excess(s0, movable)
    added = o.compare(orig, s1).moves - o.compare(orig, s0).moves
    assert added == res.moves <= limit
    w0, w1 = worst_failover(s0), worst_failover(s1)
    assert float(w0) == pytest.approx(res.worst_before, abs=1e-6)
    assert float(w1) == pytest.approx(res.worst_after, abs=1e-6)
    assert w1 <= w0
    if res.swaps == 0:
        assert s1 == s0
    else:  # swaps are kept only where they lowered the worst spread
        assert w1 < w0


def test_swaps_lower_a_row_that_no_order_can_spread():
    """Broker 1 leads four partitions, all with first follower 2 and second 3 (Kafka's consecutive followers):
    failing 1 hands 2 every leadership. Swaps with partitions holding 4 and 5 behind their first follower spread
    them; the oracle measures the order before and after."""
    ids = [1, 2, 3, 4, 5]
    rows = [[1, 2, 3]] * 4 + [[2, 3, 4], [3, 2, 5], [4, 5, 1], [5, 4, 3], [2, 4, 5], [3, 5, 4]]
    state = ClusterState.build(Brokers.build(ids), ["t"] * len(rows), np.arange(len(rows)), np.array(rows))
    res = spread_by_swaps(state, state, np.ones(len(rows), bool), 8)
    after = spec_of(state.with_replicas(res.replicas))
    assert res.swaps >= 1 and res.moves <= 8
    assert worst_failover(after) < worst_failover(spec_of(state))
    assert o.replica_counts(after) == o.replica_counts(spec_of(state))


def test_swaps_across_topics_only_where_no_topic_count_moves_farther_from_its_share():
    """Topic a's four partitions all hold 1, 2 and 3, so no partition of a can take 2's replica: only a swap with
    topic b spreads broker 1's leaderships, and it is allowed with the per-topic intervals (each touched count
    moves toward its share or stays inside it), refused without them."""
    ids = [1, 2, 3, 4, 5]
    rows = [[1, 2, 3]] * 4 + [[2, 4, 5], [3, 5, 4], [4, 2, 5], [5, 3, 4], [2, 4, 5], [4, 3, 5]]
    topics = ["a"] * 4 + ["b"] * 6
    state = ClusterState.build(Brokers.build(ids), topics, [0, 1, 2, 3, 0, 1, 2, 3, 4, 5], np.array(rows))
    movable = np.ones(len(rows), bool)
    assert spread_by_swaps(state, state, movable, 8).swaps == 0
    t = count_targets(state, state.rf.astype(np.int64), movable, True)
    res = spread_by_swaps(state, state, movable, 8, topic_cells(state, movable, t.topic_lo, t.topic_hi))
    s0, s1 = spec_of(state), spec_of(state.with_replicas(res.replicas))
    assert res.swaps >= 1 and res.same_topic < res.swaps
    assert worst_failover(s1) < worst_failover(s0)
    assert topic_excess(s1, movable) <= topic_excess(s0, movable)
    assert o.replica_counts(s1) == o.replica_counts(s0)


# ---- the rack floor ------------------------------------------------------------------------------------------------


def brute_rack_optimum(racks: tuple[str, ...], rf: int, P: int) -> int:
    """The least worst failover spread over every placement of P partitions of RF ``rf`` in distinct racks and
    every order whose leader counts are within [⌊P/N⌋, ⌈P/N⌉] (partitions are interchangeable: multisets)."""
    ids = list(range(1, len(racks) + 1))
    lists = [perm for combo in itertools.combinations(ids, rf) if len({racks[b - 1] for b in combo}) == rf
             for perm in itertools.permutations(combo)]
    N = len(ids)
    lo, hi = P // N, -(-P // N)
    best = None
    for multi in itertools.combinations_with_replacement(lists, P):
        L = {b: 0 for b in ids}
        for r in multi:
            L[r[0]] += 1
        if any(not lo <= L[b] <= hi for b in ids):
            continue
        worst = 0
        for f in ids:
            after = {b: L[b] for b in ids if b != f}
            for r in multi:
                if r[0] == f:
                    after[r[1]] += 1
            worst = max(worst, max(after.values()) - min(after.values()))
        best = worst if best is None else min(best, worst)
    return best


@pytest.mark.parametrize("racks, rf, P", [
    (("a", "a", "a", "b"), 2, 10), (("a", "a", "a", "b"), 2, 9), (("a", "a", "a", "b", "b"), 2, 9),
    (("a", "a", "b", "b"), 2, 6), (("a", "a", "b", "c"), 3, 8)])
def test_rack_floor_is_the_least_worst_spread_of_every_placement(racks, rf, P):
    ids = list(range(1, len(racks) + 1))
    first = next(c for c in itertools.permutations(ids, rf) if len({racks[x - 1] for x in c}) == rf)
    state = ClusterState.build(Brokers.build(ids, racks=list(racks)), ["t"] * P, np.arange(P), np.array([first] * P))
    floor = rack_failover_floor(state, np.full(P, rf), np.ones(P, bool))
    assert floor == brute_rack_optimum(racks, rf, P)
    assert floor >= 1


def test_rack_floor_applies_only_where_its_premise_holds():
    ids = [1, 2, 3, 4]
    rows = np.array([[1, 3], [2, 4], [3, 1], [4, 2]])
    racked = ClusterState.build(Brokers.build(ids, racks=["a", "a", "b", "b"]), ["t"] * 4, np.arange(4), rows)
    assert rack_failover_floor(racked, np.full(4, 2), np.ones(4, bool)) is not None
    assert rack_failover_floor(racked, np.full(4, 3), np.ones(4, bool)) is None  # RF above the racks
    plain = racked.with_brokers(Brokers.build(ids))
    assert rack_failover_floor(plain, np.full(4, 2), np.ones(4, bool)) is None  # no racks
    weighted = racked.with_brokers(Brokers.build(ids, racks=["a", "a", "b", "b"], weights=[1, 2, 1, 1]))
    assert rack_failover_floor(weighted, np.full(4, 2), np.ones(4, bool)) is None
    same_rack = racked.with_replicas(np.array([[1, 2], [2, 4], [3, 1], [4, 2]]))
    held = np.array([False, True, True, True])
    assert rack_failover_floor(same_rack, np.full(4, 2), held) is None  # a held partition in one rack


# ---- the stage in the chain ----------------------------------------------------------------------------------------


def chain(with_stage: bool, upto: str | None = None):
    """flow_chain() (the stage runs after the per-topic budget) or without the stage, optionally cut after ``upto``."""
    names = [s.name for s in flow_chain()]
    end = names.index(upto) + 1 if upto else len(names)
    return [s for s in flow_chain()[:end] if with_stage or s.name != FailoverBudget.name]


def planned(state: ClusterState, req: PlanRequest, stages) -> Context:
    r = resolve(state, req)
    mb = measure(r.before, target_rf=r.target_rf)
    ctx = Context(r, mb, mb.min_moves)
    return run_chain(ctx, stages, lambda *a: None, 1, len(stages))


KAFKA = [  # (generate_cluster keywords, request fields)
    (dict(brokers=12, topics=30, partitions=(3, 24), rf=3), dict(add=(12,))),
    (dict(brokers=9, racks=3, rack_aware=True, topics=20, partitions=(3, 12), rf=3), dict()),
    (dict(brokers=10, topics=25, partitions=(2, 20), rf=2), dict(remove=(3,))),
    (dict(brokers=10, topics=20, partitions=(3, 12), rf=3, history=2), dict()),
    (dict(brokers=8, racks=2, rack_aware=True, topics=20, partitions=(2, 16), rf=2), dict(add=(8,))),
]


@pytest.mark.parametrize("case", range(len(KAFKA)))
@pytest.mark.parametrize("extra", ["2%", 30])
def test_stage_in_the_chain_keeps_the_rules_and_never_worsens_failover(case, extra):
    gen, fields = KAFKA[case]
    state = generate_cluster(layout="kafka", seed=case + 3, **gen)
    if "add" in fields and state.brokers.has_racks:  # a new broker's rack, as the broker file would say
        state = state.with_brokers(state.brokers.with_added(fields["add"], rack=state.brokers.rack_names[0]))
    req = PlanRequest(**fields, extra_moves=extra)
    fewest = planned(state, PlanRequest(**fields), chain(False, upto="replicas"))
    without = planned(state, req, chain(False))
    got = planned(state, req, chain(True))
    r = got.resolved
    orig, s0, s1 = spec_of(r.before), spec_of(without.current), spec_of(got.current)
    budget = req.extra_moves_for(int(r.target_rf[r.movable].sum()))
    assert o.compare(orig, s1).moves <= o.compare(orig, spec_of(fewest.current)).moves + budget
    assert o.replica_counts(s1) == o.replica_counts(s0)
    assert not o.replicas_on_removed(s1)
    assert [len(p.replicas) for p in s1.partitions] == [len(p.replicas) for p in s0.partitions]
    assert set(o.rack_violations(s1)) <= set(o.rack_violations(s0))
    assert topic_excess(s1, r.movable) <= topic_excess(s0, r.movable)
    assert worst_failover(s1) <= worst_failover(s0)
    ev = got.evidence["failover_budget"]
    assert ev.worst_before == pytest.approx(float(worst_failover(s0)), abs=1e-6)
    assert ev.worst_after == pytest.approx(float(worst_failover(s1)), abs=1e-6)
    assert ev.spent == o.compare(orig, s1).moves - o.compare(orig, s0).moves >= 0
    assert ev.text() in got.notes
    # a kept swapped order goes straight to the failover stage; else stages 2 and 3 run on the new placement
    assert ("leaders" in got.ran) == ("followers" in got.ran) == (not ev.order_kept)
    assert leader_spread(s1) <= max(leader_spread(s0), 1)  # the kept order's leaders are as even as stage 2's


def test_stage_lowers_the_worst_spread_on_a_kafka_placed_rf3_cluster_and_says_so():
    state = generate_cluster(layout="kafka", seed=4, brokers=20, topics=80, partitions=(4, 40), rf=3)
    req = PlanRequest(add=(20,), extra_moves="2%")
    without = planned(state, req, chain(False))
    got = planned(state, req, chain(True))
    w0, w1 = worst_failover(spec_of(without.current)), worst_failover(spec_of(got.current))
    assert w1 < w0
    ev = got.evidence["failover_budget"]
    note = next(n for n in got.notes if "spent on failover" in n)
    assert note.startswith(f"move budget: {ev.spent:,} of the remaining {ev.remaining:,} moves spent on failover: "
                           f"worst spread {float(w0):g} → {float(w1):g} (bound ")
    again = planned(state, req, chain(True))
    assert np.array_equal(again.current.replicas, got.current.replicas)


@pytest.mark.parametrize("case", [0, 1, 3])
def test_later_stages_are_replayed_from_the_budgets_own_run_not_run_again(case, monkeypatch):
    """The stages after the budget were already run on the kept placement (its last check): the chain takes their
    outcomes instead of running them again, and the plan is the same as when it does run them."""
    import flowbalance.chain.base as base
    import flowbalance.chain.steps as steps

    gen, fields = KAFKA[case]
    state = generate_cluster(layout="kafka", seed=case + 3, **gen)
    req = PlanRequest(**fields, extra_moves="2%")
    calls = []
    real_leaders = steps.balance_leaders
    monkeypatch.setattr(steps, "balance_leaders", lambda *a, **k: calls.append(1) or real_leaders(*a, **k))
    replayed = planned(state, req, chain(True))
    n_replayed = len(calls)
    calls.clear()
    real_run = base._run
    monkeypatch.setattr(base, "_run", lambda stage, ctx: stage.run(ctx))  # no replay: every stage runs again
    again = planned(state, req, chain(True))
    monkeypatch.setattr(base, "_run", real_run)
    assert np.array_equal(replayed.current.replicas, again.current.replicas)
    assert replayed.notes == again.notes
    ran_leaders = "leaders" in replayed.ran
    assert n_replayed == len(calls) - ran_leaders
