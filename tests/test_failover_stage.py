"""The failover stage (``flowbalance.stages.failover``) against independent oracles (``tests/failover_oracle.py``).

On random tiny clusters every choice is enumerated; on small ones an independent CP-SAT model finds the optimum.
The stage's bound must never exceed the optimum, and when the stage says "exact" its worst spread must be the
optimum. The invariants (same replica sets, leader intervals, removed brokers never leading or failing over
where a live replica can, no worse than stages 2 + 3) are checked on every result, determinism across processes
once, and the chain stage runs inside the real chain (which checks the invariants it keeps).
"""
from __future__ import annotations

import hashlib
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

from flowbalance.chain.base import Context, run_chain
from flowbalance.chain.failover_step import Failover
from flowbalance.chain.steps import flow_chain
from flowbalance.generate import generate_cluster
from flowbalance.metrics import measure
from flowbalance.model import PAD, Brokers, ClusterState
from flowbalance.request import PlanRequest
from flowbalance.resolve import resolve
from flowbalance.stages import failover_lp
from flowbalance.stages.failover import balance_failover, proven_goal
from flowbalance.stages.failover_bound import bounds, in_leaders
from flowbalance.stages.failover_flow import with_leaders
from flowbalance.stages.failover_lp import lp_bound, proven_bound
from flowbalance.stages.failover_problem import build_problem, loads, values
from flowbalance.stages.followers import balance_followers
from flowbalance.stages.leaders import balance_leaders

from . import failover_oracle as oracle

TOL = 1e-3  # weighted spreads: the metric rounds them to 3 decimals (and the stage is within 2 / 2**20)


# ---- random clusters ---------------------------------------------------------------------------------------

def random_state(rng: np.random.Generator, brokers: int, partitions: int, rfs: tuple[int, ...], *, topics: int = 2,
                 weights: bool = False, removed: bool = False, held: bool = False):
    """A cluster of non-consecutive broker ids, random replica sets, and which rows may be reordered."""
    ids = np.sort(rng.choice(np.arange(1, 40), brokers, replace=False))
    w = rng.integers(1, 4, brokers) if weights else np.ones(brokers, dtype=np.int64)
    rem = np.zeros(brokers, dtype=bool)
    if removed:
        rem[rng.integers(brokers)] = True
    K = max(rfs)
    reps = np.full((partitions, K), PAD, dtype=np.int64)
    for p in range(partitions):
        rf = int(rng.choice(rfs))
        reps[p, :rf] = rng.choice(ids, rf, replace=False)
    b = Brokers.build(ids.tolist(), weights=w.astype(float).tolist(), removed=rem.tolist())
    names = [f"t{int(t)}" for t in rng.integers(0, topics, partitions)]
    state = ClusterState.build(b, names, np.arange(partitions), reps)
    live_rows = (state.replica_index >= 0) & b.live[np.maximum(state.replica_index, 0)]
    movable = live_rows.any(axis=1) & ((rng.random(partitions) > 0.2) if held else True)
    return state, movable


def stages_2_3(state: ClusterState, movable: np.ndarray, per_topic: bool) -> np.ndarray:
    lead = state.replicas[:, 0].copy()
    return balance_followers(state.with_replicas(balance_leaders(state, lead, movable, per_topic=per_topic)), movable)


def case_of(state: ClusterState, start: np.ndarray, movable: np.ndarray) -> oracle.Case:
    b = state.brokers
    return oracle.Case(ids=tuple(int(x) for x in b.ids), weight=tuple(int(x) for x in b.weight),
                       removed=tuple(bool(x) for x in b.removed), topic=tuple(int(t) for t in state.topic),
                       start=tuple(tuple(int(x) for x in row if x != PAD) for row in start),
                       movable=tuple(bool(m) for m in movable))


def orders(replicas: np.ndarray) -> list[tuple[int, ...]]:
    return [tuple(int(x) for x in row if x != PAD) for row in replicas]


def check_invariants(case: oracle.Case, res, topic_leaders: bool) -> None:
    """The result is one of the oracle's allowed choices, and its figures are the oracle's metric."""
    got = orders(res.replicas)
    live = set(case.live)
    for p, (old, new) in enumerate(zip(case.start, got)):
        assert sorted(old) == sorted(new), "a replica set changed"
        n_live = sum(x in live for x in old)
        if not case.movable[p] or n_live < 2:
            assert new == old, "a row with nothing to choose was reordered"
        else:
            assert new[0] in live and new[1] in live, "a removed broker leads or fails over where a live one can"
    assert oracle.keeps_intervals(case, oracle.space(case, topic_leaders), got), "a leader interval was broken"
    w, at = oracle.worst(case, got)
    assert res.worst == pytest.approx(w, abs=1e-3) and res.at_worst == at
    if all(s[0] in live and s[1] in live for p, s in enumerate(case.start) if p in set(oracle.space(case, False).free)):
        base_w, base_at = oracle.worst(case, list(case.start))  # stages 2 + 3 left removed brokers out too
        assert w < base_w - 1e-9 or (w <= base_w + 1e-9 and at <= base_at), "worse than stages 2 + 3"


def run_case(state, movable, topic_leaders: bool, exact: bool | None):
    start = stages_2_3(state, movable, topic_leaders)
    res = balance_failover(state.with_replicas(start), movable, baseline=start, topic_leaders=topic_leaders,
                           exact=exact, deterministic_time=5.0)
    return case_of(state, start, movable), res


# ---- (a) against the oracles -------------------------------------------------------------------------------

TINY = [  # (seed, brokers, partitions, RFs, weights, removed, held, topic leaders)
    (s, 3 + s % 4, 3 + s % 3, ((3,), (2, 3), (2,), (3, 4))[s % 4], s % 3 == 1, s % 5 == 2, s % 4 == 3, s % 6 == 5)
    for s in range(36)
]


@pytest.mark.parametrize("seed,brokers,partitions,rfs,weights,removed,held,topics", TINY)
def test_tiny_clusters_match_brute_force(seed, brokers, partitions, rfs, weights, removed, held, topics):
    rng = np.random.default_rng(seed)
    state, movable = random_state(rng, brokers, partitions, tuple(r for r in rfs if r <= brokers) or (2,),
                                  weights=weights, removed=removed, held=held)
    start = stages_2_3(state, movable, topics)
    case = case_of(state, start, movable)
    if oracle.combinations(case, topics) > 60_000:
        pytest.skip("too many combinations for the brute force")
    best = oracle.brute_force(case, topics)
    for exact in (False, None):  # the fast methods alone, then with CP-SAT
        res = balance_failover(state.with_replicas(start), movable, baseline=start, topic_leaders=topics,
                               exact=exact, deterministic_time=5.0)
        check_invariants(case, res, topics)
        assert res.bound <= best.worst + 1e-9, "the bound exceeds the optimum"
        assert res.worst >= best.worst - TOL
        if res.exact:
            assert res.worst == pytest.approx(best.worst, abs=TOL)
        if res.at_worst_proven:
            assert res.at_worst == best.at_worst
    assert res.exact, "CP-SAT proves tiny clusters optimal"


SMALL = [(s, 5 + s % 4, 12 + 2 * (s % 5), s % 3 == 2) for s in range(10)]  # seed, brokers, partitions, topics


@pytest.mark.parametrize("seed,brokers,partitions,topics", SMALL)
def test_small_clusters_match_cpsat_oracle(seed, brokers, partitions, topics):
    rng = np.random.default_rng(100 + seed)
    state, movable = random_state(rng, brokers, partitions, (3,), topics=3, removed=seed % 4 == 1,
                                  held=seed % 4 == 2)
    case, fast = run_case(state, movable, topics, exact=False)
    _, full = run_case(state, movable, topics, exact=None)
    best = oracle.cpsat_optimum(case, topics, seconds=10.0)
    for res in (fast, full):
        check_invariants(case, res, topics)
        assert res.bound <= best.worst + 1e-9 and res.worst >= best.lower - 1e-9
        if res.exact and best.proven:
            assert res.worst == best.worst
    assert full.worst <= fast.worst
    if best.proven and best.worst <= full.bound:
        assert full.exact


# ---- (a2) the bounds and their proofs, each on its own ------------------------------------------------------

def problem_of(state: ClusterState, movable: np.ndarray, topics: bool):
    start = stages_2_3(state, movable, topics)
    return build_problem(state.with_replicas(start), state.with_replicas(start), movable, topics), start


@pytest.mark.parametrize("seed,brokers,partitions,rfs,weights,removed,held,topics", TINY[::3])
def test_each_bound_is_below_the_brute_force_optimum(seed, brokers, partitions, rfs, weights, removed, held, topics):
    """The counting bounds (rows, blocks) and the relaxation's proof, each alone, never exceed the optimum."""
    rng = np.random.default_rng(seed)
    state, movable = random_state(rng, brokers, partitions, tuple(r for r in rfs if r <= brokers) or (2,),
                                  weights=weights, removed=removed, held=held)
    built, start = problem_of(state, movable, topics)
    case = case_of(state, start, movable)
    if built is None or oracle.combinations(case, topics) > 60_000:
        pytest.skip("nothing to reorder, or too many combinations for the brute force")
    prob, choice = built
    optimum = oracle.brute_force(case, topics)
    best = optimum.worst
    row_lb, bound = bounds(prob, choice, blocks=True)
    assert in_leaders(prob, bound) <= best + 1e-9
    worst, count = proven_goal(row_lb, bound)  # where the convex rounds stop: no order is below it
    idle = int((~prob.valid.any(axis=1)).sum()) if worst == 0 else 0  # rows without survivors: spread 0 here
    assert in_leaders(prob, worst) < best - TOL or count <= optimum.at_worst + idle
    assert in_leaders(prob, lp_bound(prob, choice).bound) <= best + 1e-9
    assert in_leaders(prob, proven_bound(prob, choice)) <= best + 1e-9


def test_a_relaxation_at_zero_settles_after_one_chunk(monkeypatch):
    """PDLP at the worst spread's floor (W = 0, nearly feasible) proves nothing more in later chunks: the solve
    ends after the first, with the bound the full run of chunks proves (0)."""
    state = generate_cluster(brokers=8, topics=8, partitions=(10, 30), rf=3, seed=0)
    (prob, choice), _ = problem_of(state, np.ones(state.num_partitions, dtype=bool), False)
    assert failover_lp.lp_fits(prob)
    early = lp_bound(prob, choice)
    assert early.value == 0.0 and early.iterations == failover_lp.LP_CHUNK
    # without the floor rule: chunks until two prove nothing more, and no more proven
    real = failover_lp._settled
    monkeypatch.setattr(failover_lp, "_settled", lambda res, best, D: real(res, best, D) and best > 0)
    full = lp_bound(prob, choice)
    assert full.iterations > early.iterations and full.bound == early.bound == 0


def block_heavy_state(rng: np.random.Generator, brokers: int, partitions: int):
    """RF-3 replica sets, most of them on two fixed triples of brokers: the blocks the block bound looks for."""
    ids = np.arange(brokers)
    triples = [rng.choice(ids, 3, replace=False) for _ in range(2)]
    reps = np.array([triples[p % 2] if rng.random() < 0.7 else rng.choice(ids, 3, replace=False)
                     for p in range(partitions)])
    b = Brokers.build(ids.tolist())
    return ClusterState.build(b, ["t"] * partitions, np.arange(partitions), reps), np.ones(partitions, dtype=bool)


@pytest.mark.parametrize("seed", range(4))
def test_bounds_on_dense_blocks_are_below_the_cpsat_optimum(seed):
    state, movable = block_heavy_state(np.random.default_rng(300 + seed), 6 + seed, 24 + 4 * seed)
    (prob, choice), start = problem_of(state, movable, False)
    best = oracle.cpsat_optimum(case_of(state, start, movable), False, seconds=10.0)
    assert best.proven
    rows, both = bounds(prob, choice, blocks=True)
    assert int(rows.max()) <= both <= best.worst
    assert lp_bound(prob, choice).bound <= best.worst
    res = balance_failover(state.with_replicas(start), movable, baseline=start)
    assert res.bound <= best.worst and (not res.exact or res.worst == best.worst)


@pytest.mark.parametrize("seed", range(6))
def test_the_proof_flow_is_the_minimum_over_every_choice(seed):
    """The relaxation's proof rests on one min-cost flow giving the least sum of w[f, b] x V[f, b] over every
    choice (leaders within their intervals): compared with every choice of a tiny cluster, for random integer
    multipliers."""
    rng = np.random.default_rng(500 + seed)
    state, movable = random_state(rng, 4 + seed % 3, 5, ((3,), (2, 3))[seed % 2], weights=seed % 3 == 2)
    (prob, choice), _ = problem_of(state, movable, False)
    relax = failover_lp._Relaxation(prob)
    w = np.where(prob.valid, rng.integers(-5, 6, (prob.N, prob.N)), 0)
    spans = [range(prob.opt_start[i], prob.opt_start[i + 1]) for i in range(prob.F)]
    sums = [int((w * np.where(prob.valid, values(prob, L, M), 0)).sum())
            for c in itertools.product(*spans) for L, M in [loads(prob, np.array(c))]
            if np.all((L >= prob.lo) & (L <= prob.hi))]
    assert relax.inner.smallest(w) == min(sums)


@pytest.mark.parametrize("seed", range(6))
def test_with_leaders_reaches_any_reachable_counts(seed):
    """``with_leaders`` hands back a choice with exactly the counts asked for whenever some choice has them
    (every choice of a tiny cluster enumerated), and None otherwise."""
    rng = np.random.default_rng(700 + seed)
    state, movable = random_state(rng, 4 + seed % 2, 6, (2, 3))
    (prob, choice), _ = problem_of(state, movable, False)
    spans = [range(prob.opt_start[i], prob.opt_start[i + 1]) for i in range(prob.F)]
    reachable = {tuple(loads(prob, np.array(c))[0]) for c in itertools.product(*spans)}
    for target in sorted(reachable)[:: max(len(reachable) // 6, 1)] + [tuple(prob.fixed_L + prob.F + 1)]:
        got = with_leaders(prob, choice, np.array(target))
        if target in reachable:
            assert got is not None and tuple(loads(prob, got)[0]) == target
            assert np.all(prob.opt_row[got] == np.arange(prob.F)), "each row takes one of its own options"
        else:
            assert got is None


# ---- (b) invariants and (d) weights on larger clusters --------------------------------------------------------

@pytest.mark.parametrize("brokers,racks,rf,weights,topics", [(30, 3, 3, False, True), (24, 0, 3, True, False),
                                                              (20, 0, 2, False, False), (40, 4, 3, True, True)])
def test_invariants_on_kafka_clusters(brokers, racks, rf, weights, topics):
    state = generate_cluster(brokers=brokers, racks=racks, rack_aware=bool(racks), topics=40, partitions=(3, 30),
                             rf=rf, layout="kafka", seed=brokers)
    b = state.brokers
    if weights:
        w = 1.0 + (np.arange(len(b)) % 3)  # integers: the oracle works with integer weights
        b = Brokers.build(b.ids, [b.rack_names[r] if r >= 0 else None for r in b.rack], w.tolist())
        state = ClusterState.build(b, [state.topics[t] for t in state.topic], state.partition, state.replicas)
    movable = np.random.default_rng(1).random(state.num_partitions) > 0.1
    case, res = run_case(state, movable, topics, exact=False)
    check_invariants(case, res, topics)
    assert res.bound <= res.worst + 1e-9 and res.worst <= res.baseline_worst
    if weights:
        assert res.worst == measure(state.with_replicas(res.replicas)).failover.worst[1]


def test_removed_brokers_are_left_out():
    """A removed broker in a replica set never takes the lead or the first-follower slot from a live one, even
    when stages 2 + 3 gave it the first-follower slot."""
    rng = np.random.default_rng(5)
    state, movable = random_state(rng, 6, 30, (3,), removed=True)
    gone = state.brokers.ids[state.brokers.removed][0]
    start = stages_2_3(state, movable, False)
    rows = np.flatnonzero((start == gone).any(axis=1) & movable)
    start[rows, 1:3] = np.where(start[rows, 2:3] == gone, start[rows, 1:3][:, ::-1], start[rows, 1:3])
    res = balance_failover(state.with_replicas(start), movable, baseline=start, exact=False)
    check_invariants(case_of(state, start, movable), res, False)


# ---- (c) determinism ---------------------------------------------------------------------------------------------

_SCRIPT = """
import hashlib, numpy as np
from flowbalance.generate import generate_cluster
from flowbalance.stages.failover import balance_failover, proven_goal
for brokers, seed, topics in ((9, 3, True), (16, 5, False)):
    s = generate_cluster(brokers=brokers, racks=0, topics=12 if topics else 30, partitions=(3, 12 if topics else 24),
                         rf=3, layout="kafka", seed=seed)
    r = balance_failover(s, np.ones(s.num_partitions, bool), topic_leaders=topics, deterministic_time=0.5)
    print(hashlib.sha256(r.replicas.tobytes()).hexdigest(), r.worst, r.bound, r.method)
"""


def test_same_input_same_output_across_processes():
    """Twice in fresh processes and once here, byte for byte: CP-SAT with topic intervals, and (the second
    cluster) PDLP's relaxation, its proof and the leader search."""
    runs = [subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    here = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONHASHSEED": "7"}).stdout
    assert runs[0] == runs[1] == here
    assert "LP leaders" in here.splitlines()[1], "the second cluster goes through the relaxation's counts"


# ---- (e) the target: within one leader of the bound -------------------------------------------------------

@pytest.mark.parametrize("seed", [5, 11, 28, 40])
def test_kafka_rf3_clusters_end_within_one_leader_of_the_bound(seed):
    """Kafka-placed RF-3 clusters of 8-40 brokers (racks, growth waves), planned by stages 1-3 as the chain
    does: the worst spread is at most the stage's proven bound + 1 (the bound holds for every order: the
    oracle tests above)."""
    rng = np.random.default_rng(1000 + seed)
    brokers, racks, history = int(rng.integers(8, 41)), int(rng.choice([0, 0, 3, 4])), int(rng.choice([0, 0, 2, 3]))
    state = generate_cluster(brokers=brokers, racks=racks, rack_aware=bool(racks), topics=int(rng.integers(10, 80)),
                             partitions=(3, 40), rf=3, layout="kafka", seed=seed,
                             history=history if brokers // max(history, 1) >= 3 else 0)
    r = resolve(state, PlanRequest())
    ctx = Context(r, measure(r.before), 0)
    run_chain(ctx, tuple(s for s in flow_chain() if not s.name.startswith("failover")),
              lambda *a: None, 1, 8)
    res = balance_failover(ctx.current, r.movable, baseline=ctx.current.replicas)
    assert res.worst <= res.bound + 1 + 1e-9, (res.worst, res.bound, res.method)
    assert res.worst == measure(ctx.current.with_replicas(res.replicas)).failover.worst[1]


# ---- the chain stage -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("racks,request_fields", [(3, {"remove": (3,)}), (0, {"add": (12, 13)}),
                                                  (3, {"per_topic": False})])
def test_chain_stage_keeps_what_the_chain_checks(racks, request_fields):
    """Run in the real chain after stages 1-3: ``run_chain`` raises when a kept invariant breaks."""
    state = generate_cluster(brokers=12, racks=racks, rack_aware=bool(racks), topics=20, partitions=(3, 16), rf=3,
                             layout="kafka", seed=11)
    r = resolve(state, PlanRequest(**request_fields))
    ctx = Context(r, measure(r.before), 0)
    chain = tuple(s for s in flow_chain() if s.name != "failover") + (Failover(deterministic_time=0.5),)
    run_chain(ctx, chain, lambda *a: None, 1, 8)
    assert ctx.ran[-2:] == ["followers", "failover"]
    ev = ctx.evidence["failover"]
    assert ev.worst <= ev.baseline_worst and ev.bound <= ev.worst
    assert ev.worst == measure(ctx.current).failover.worst[1]
    assert ctx.notes[-1] == ev.note and ev.note.startswith("failover (stage 4): worst single-broker spread")


@pytest.mark.parametrize("seed", range(40))
def test_options_are_every_live_ordered_pair_in_order(seed):
    """The (row, leader, follower) options, built without a sort, against a plain enumeration: every ordered
    pair of distinct live replicas of each row (padding and removed brokers left out), sorted."""
    from flowbalance.stages.failover_problem import _options

    rng = np.random.default_rng(seed)
    n, rows, width = int(rng.integers(5, 9)), int(rng.integers(1, 30)), int(rng.integers(2, 5))
    sub = np.full((rows, width), PAD, dtype=np.int64)
    for r in range(rows):
        k = int(rng.integers(1, width + 1))
        sub[r, rng.permutation(width)[:k]] = rng.choice(n, size=k, replace=False)
    is_live = np.append(rng.random(n) < 0.8, False)
    want = sorted((r, int(sub[r, i]), int(sub[r, j]), i, j) for r in range(rows) for i in range(width)
                  for j in range(width) if i != j and sub[r, i] != PAD and sub[r, j] != PAD
                  and is_live[sub[r, i]] and is_live[sub[r, j]])
    r, lead, follow, ci, cj, start = _options(sub, is_live)
    assert list(zip(r.tolist(), lead.tolist(), follow.tolist(), ci.tolist(), cj.tolist())) == want
    assert start.tolist() == [sum(1 for w in want if w[0] < k) for k in range(rows + 1)]
