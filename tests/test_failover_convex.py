"""The failover stage's convex rounds, with their network built once per leader counts, must give what they gave
when every round built its own: OR-Tools returns one min-cost flow among the optima, chosen by the arcs' order and
the supplies, so the same arcs in the same order are what keeps every plan byte for byte. The reference below is
``convex_rounds`` and ``_convex_step`` as they were before (issue 17), kept verbatim; random clusters, with and
without topic intervals, broker weights and removed brokers, compare the rounds' choices and weights, and the
networks' arcs."""
from __future__ import annotations

import numpy as np
import pytest

from flowbalance.flow import mincost
from flowbalance.flow.mincost import solve_min_cost
from flowbalance.flow.network import Network
from flowbalance.stages import failover_flow as ff
from flowbalance.stages.failover_problem import (build_problem, choice_from_terms, fewest_changes, loads, spreads,
                                                 terms)

from .test_failover_stage import random_state, stages_2_3


# ---- the rounds as they were ------------------------------------------------------------------------------------

def _ref_rounds(prob, choice, iterations, weight):
    lay, t = ff.Layout.of(prob), terms(prob)
    best, best_key = choice, ff.sort_key(prob, choice)
    new = choice
    for _ in range(iterations):
        new = fewest_changes(prob, _ref_step(prob, lay, t, new, weight))
        key = ff.sort_key(prob, new)
        if key < best_key:
            best, best_key = new, key
        sp = spreads(prob, new)
        weight = np.minimum(np.where(sp == sp.max(), weight * ff.ROW_WEIGHT_STEP, weight), ff.ROW_WEIGHT_MAX)
    return best, weight


def _ref_step(prob, lay, t, choice, weight):
    N, Q, C = prob.N, lay.Q, lay.C
    G = len(t.size)
    L = loads(prob, choice)[0]
    net = Network()
    gnode, qnode, cnode, lnode = net.nodes(G), net.nodes(Q), net.nodes(C), net.nodes(N)
    supply = np.zeros(net.num_nodes, dtype=np.int64)
    supply[gnode] = t.size
    supply[lnode] = -(L - prob.fixed_L)
    net.set_supply(supply)
    parts = [(np.flatnonzero(cap), cost, cap) for cost, cap in enumerate(ff._change_caps(prob, t))]
    arcs = [net.add(gnode[t.g[k]], qnode[lay.opt_q[t.opt[k]]], cap[k], cost) for k, cost, cap in parts]
    units = np.bincount(lay.opt_q[t.opt], weights=t.size[t.g], minlength=Q).astype(np.int64)
    q = np.repeat(np.arange(Q), units)
    j = np.arange(len(q)) - np.repeat(np.cumsum(units) - units, units) + 1
    q, cost, cap = ff._merge_units(q, ff._unit_costs(prob, lay, choice, weight, q, j))
    head = cnode[lay.q_cell[q]] if C else lnode[lay.pair_l[lay.q_pair[q]]]
    net.add(qnode[q], head, cap, cost)
    if C:
        tlo, thi = prob.tlo[lay.cell_t, lay.cell_l], prob.thi[lay.cell_t, lay.cell_l]
        lo = np.maximum(tlo, 0)
        net.force(cnode[lo > 0], lnode[lay.cell_l[lo > 0]], lo[lo > 0])
        net.add(cnode, lnode[lay.cell_l], thi - lo, 0)
    flows = solve_min_cost(net)[0]
    val = np.zeros(len(t.g), dtype=np.int64)
    for a, (k, _, _) in zip(arcs, parts):
        val[k] += flows[a]
    return choice_from_terms(prob, t, val)


# ---- random problems ---------------------------------------------------------------------------------------------

def _problem(seed: int, topics: bool):
    """A random cluster's problem (topic intervals when ``topics``) and its start; None when nothing to reorder."""
    rng = np.random.default_rng(seed)
    state, movable = random_state(rng, int(rng.integers(4, 10)), int(rng.integers(20, 160)),
                                  ((2, 3), (3,), (3, 4))[seed % 3], topics=int(rng.integers(1, 5)),
                                  weights=seed % 5 == 4, removed=seed % 4 == 1, held=seed % 3 == 2)
    start = state.with_replicas(stages_2_3(state, movable, True))
    return build_problem(state, start, movable, topic_leaders=topics)


@pytest.mark.parametrize("topics", [False, True])
@pytest.mark.parametrize("seed", range(30))
def test_rounds_are_the_old_ones(seed, topics):
    """The best choice and the weights after every round, from the start and from weights carried on."""
    built = _problem(seed, topics)
    if built is None:
        pytest.skip("nothing to reorder")
    prob, start = built
    rng = np.random.default_rng(seed + 1000)
    for iterations in (1, 4):
        for weight in (np.ones(prob.N, dtype=np.int64), rng.choice([1, 3, 9, 729], prob.N).astype(np.int64)):
            got, got_w = ff.convex_rounds(prob, start, iterations, weight)
            want, want_w = _ref_rounds(prob, start, iterations, weight)
            assert np.array_equal(got, want)
            assert np.array_equal(got_w, want_w)


@pytest.mark.parametrize("seed", range(20))
def test_solves_get_the_old_arcs(seed, monkeypatch):
    """Every solve gets the very arrays (arcs in order, supplies, node count) the old network gave OR-Tools,
    also when a round's leader counts differ from the net's (then it is built again)."""
    built = _problem(seed, seed % 2 == 0)
    if built is None:
        pytest.skip("nothing to reorder")
    prob, start = built
    seen = []
    real = mincost._solve

    def spy(*args):
        seen.append([np.array(a) if isinstance(a, np.ndarray) else a for a in args])
        return real(*args)

    monkeypatch.setattr(mincost, "_solve", spy)  # every OR-Tools solve, the convex net's too
    lay, t = ff.Layout.of(prob), terms(prob)
    weight = np.ones(prob.N, dtype=np.int64)
    other = ff.with_leaders(prob, start, _shifted_counts(prob, start))
    net = None
    for choice in (start, start, other) if other is not None else (start, start):
        net = ff._ConvexNet.for_choice(prob, lay, t, choice, net)
        net.step(choice, weight)
        _ref_step(prob, lay, t, choice, weight)
        new, old = seen[-2], seen[-1]
        assert len(new) == len(old) == 6
        for a, b in zip(new, old):
            if isinstance(b, np.ndarray):
                assert a.dtype == b.dtype and np.array_equal(a, b)
            else:
                assert a == b


def _shifted_counts(prob, choice):
    """Leader counts with one leadership moved between two brokers that may give and take one, or the same."""
    L = loads(prob, choice)[0].copy()
    down = np.flatnonzero(L > np.maximum(prob.lo, prob.fixed_L))
    up = np.flatnonzero(L < prob.hi)
    for d in down:
        for u in up:
            if u != d:
                L[d] -= 1
                L[u] += 1
                return L
    return L


def test_a_net_is_rebuilt_for_other_leader_counts():
    """``for_choice`` keeps a net only for the leader counts it was built with."""
    for seed in range(20):
        built = _problem(seed, False)
        if built is None:
            continue
        prob, start = built
        other = ff.with_leaders(prob, start, _shifted_counts(prob, start))
        if other is None or np.array_equal(loads(prob, other)[0], loads(prob, start)[0]):
            continue
        lay, t = ff.Layout.of(prob), terms(prob)
        net = ff._ConvexNet.for_choice(prob, lay, t, start, None)
        assert ff._ConvexNet.for_choice(prob, lay, t, start, net) is net
        assert ff._ConvexNet.for_choice(prob, lay, t, other, net) is not net
        return
    pytest.fail("no random problem with two leader counts")


@pytest.mark.parametrize("seed", range(30))
def test_rounds_stop_at_the_goal(seed, monkeypatch):
    """With a goal, the rounds are the old ones up to the first whose best (worst, rows at it) is at or below
    it, and no solve runs after that (none at all when the start is there already)."""
    built = _problem(seed, False)
    if built is None:
        pytest.skip("nothing to reorder")
    prob, start = built
    ones = np.ones(prob.N, dtype=np.int64)
    keys = [ff.sort_key(prob, _ref_rounds(prob, start, k, ones)[0])[:2] for k in range(5)]
    solves = []
    real = ff.try_min_cost_arrays
    monkeypatch.setattr(ff, "try_min_cost_arrays", lambda *a: solves.append(1) or real(*a))
    for goal in sorted(set(keys)):
        solves.clear()
        stop = next((k for k in range(5) if keys[k] <= goal), 4)
        got, got_w = ff.convex_rounds(prob, start, 4, ones, goal)
        want, want_w = _ref_rounds(prob, start, stop, ones)
        assert np.array_equal(got, want) and np.array_equal(got_w, want_w)
        assert len(solves) == stop
