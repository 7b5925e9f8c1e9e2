"""``flow.convex_choice`` (stage 3's per-leader choice, compiled) against OR-Tools' min-cost flow on the same
network, on random components and on stage 3's own problems of random clusters: its cost is the optimum and
every row takes one of its own options. (Without the cycle cancelling, its greedy start alone fails most of the
random components: the cancelling is what is tested.)"""
from __future__ import annotations

import numpy as np
import pytest

from flowbalance.flow.convex_choice import convex_choice
from flowbalance.flow.mincost import try_min_cost_arrays
from flowbalance.stages import followers

from .test_failover_stage import random_state


def random_components(rng: np.random.Generator, K: int):
    """K components: nodes with bases, rows with 1-4 distinct options each, option costs 0/1 (one 0 per row at
    most, like stage 3's current first follower), a scale above the component's change count."""
    row_start, node_start, opt_start = [0], [0], [0]
    opt_node, opt_cost, base, scale = [], [], [], []
    for _ in range(K):
        nv = int(rng.integers(1, 8))
        rows = int(rng.integers(0, 14))
        v0 = node_start[-1]
        base += rng.integers(0, 6, nv).tolist()
        for _ in range(rows):
            k = int(rng.integers(1, min(nv, 4) + 1))
            nodes = rng.choice(nv, k, replace=False) + v0
            cost = np.ones(k, dtype=np.int64)
            if rng.random() < 0.8:
                cost[int(rng.integers(k))] = 0
            opt_node += nodes.tolist()
            opt_cost += cost.tolist()
            opt_start.append(len(opt_node))
        row_start.append(row_start[-1] + rows)
        node_start.append(v0 + nv)
        scale.append(rows + 1)
    return tuple(np.array(a, dtype=np.int64) for a in (row_start, opt_start, opt_node, opt_cost, node_start, base,
                                                        scale))


def cost_of(choice, row_start, opt_start, opt_node, opt_cost, node_start, base, scale) -> int:
    m = np.bincount(opt_node[choice], minlength=len(base))
    comp = np.repeat(np.arange(len(scale)), np.diff(node_start))
    return int((scale[comp] * ((base + m) ** 2 - base ** 2)).sum() + opt_cost[choice].sum())


def optimum(row_start, opt_start, opt_node, opt_cost, node_start, base, scale) -> int:
    """OR-Tools on the network of the module doc: rows -> option nodes -> sink, unit arcs of convex cost."""
    R, V = len(opt_start) - 1, len(base)
    if R == 0:
        return 0
    comp = np.repeat(np.arange(len(scale)), np.diff(node_start))
    opt_row = np.repeat(np.arange(R), np.diff(opt_start))
    sink = R + V
    unit_node = np.repeat(np.arange(V), R)  # up to R units a node
    j = np.tile(np.arange(1, R + 1), V)
    tails = np.concatenate([opt_row, R + unit_node])
    heads = np.concatenate([R + opt_node, np.full(len(unit_node), sink)])
    caps = np.ones(len(tails), dtype=np.int64)
    costs = np.concatenate([opt_cost, scale[comp[unit_node]] * (2 * (base[unit_node] + j) - 1)])
    supply = np.zeros(sink + 1, dtype=np.int64)
    supply[:R] = 1
    supply[sink] = -R
    return int(try_min_cost_arrays(sink + 1, tails, heads, caps, costs, supply)[1])


@pytest.mark.parametrize("seed", range(200))
def test_the_cost_is_the_optimum(seed):
    rng = np.random.default_rng(seed)
    arrays = random_components(rng, int(rng.integers(1, 6)))
    row_start, opt_start, opt_node, opt_cost, node_start, base, scale = arrays
    choice = convex_choice(*arrays)
    row_of = np.repeat(np.arange(len(opt_start) - 1), np.diff(opt_start))
    assert np.array_equal(row_of[choice], np.arange(len(opt_start) - 1))  # each row one of its own options
    assert cost_of(choice, *arrays) == optimum(*arrays)


def stage_cost(pc, taken) -> int:
    """Stage 3's objective for the options ``taken``: C x the squares per leader, plus the changed lists."""
    m = np.bincount(pc.pair_of[taken], minlength=len(pc.uniq))
    return int((pc.C * ((pc.base + m) ** 2 - pc.base ** 2)).sum() + (pc.c[taken] != 1).sum())


@pytest.mark.parametrize("seed", range(40))
def test_stage_3_compiled_is_the_flow_optimum(seed, monkeypatch):
    """Stage 3 on random clusters (RF 3 and 4, removed brokers, rows held): the compiled choice costs what the
    flow's does, one option per row; and the stage through it keeps leaders and replica sets."""
    rng = np.random.default_rng(seed)
    rfs = ((3,), (3, 4), (2, 3))[seed % 3]
    state, movable = random_state(rng, int(rng.integers(4, 12)), int(rng.integers(10, 200)), rfs,
                                  removed=seed % 4 == 1, held=seed % 3 == 2)
    choose = movable & (state.rf >= 3)
    if not choose.any():
        pytest.skip("no row chooses a follower")
    pc = followers._Pairs.of(state.replica_index, choose, len(state.brokers))
    flow, compiled = followers._by_flow(pc), followers._compiled(pc)
    assert np.array_equal(np.sort(pc.r[compiled]), np.arange(int(choose.sum())))
    assert stage_cost(pc, compiled) == stage_cost(pc, flow)
    monkeypatch.setattr(followers, "COMPILED_FROM_ROWS", 0)
    out = followers.balance_followers(state, movable)
    assert np.array_equal(out[:, 0], state.replicas[:, 0])
    assert np.array_equal(np.sort(out, axis=1), np.sort(state.replicas, axis=1))


def test_bad_arrays_are_refused():
    """Validation at the edge: each malformed input names its parameter."""
    ok = [np.array(a) for a in ([0, 2], [0, 2, 3], [0, 1, 1], [0, 1, 0], [0, 2], [0, 0], [3])]
    assert convex_choice(*ok).tolist() in ([0, 2], [1, 2])
    cases = {"row_start": 0, "opt_node": 2, "opt_cost": 3, "opt_start": 1}
    for name, i in cases.items():
        bad = [a.copy() for a in ok]
        bad[i] = {0: np.array([0]), 2: np.array([0, 5, 1]), 3: np.array([0, -1, 0]), 1: np.array([0, 0, 3])}[i]
        with pytest.raises(ValueError, match=name):
            convex_choice(*bad)
