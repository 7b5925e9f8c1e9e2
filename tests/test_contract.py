"""``flow/contract.py``: the folded and merged network has the optimal cost of the original (less the folding's
constant), and every flow of it expands to a flow of the original that meets every capacity and supply, at
the cost OR-Tools finds for the original directly."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flowbalance.flow.contract import contract
from flowbalance.flow.mincost import try_min_cost_arrays


@st.composite
def networks(draw):
    """Supply nodes with arcs out only (each: 1-4 arcs into the inner nodes, parallel ones too) and a random
    inner network with arcs from a node to itself; costs may be negative."""
    inner = draw(st.integers(1, 6))
    outer = draw(st.integers(0, 6))
    n = inner + outer
    tails, heads = [], []
    for v in range(inner, n):
        for _ in range(draw(st.integers(1, 4))):
            tails.append(v)
            heads.append(draw(st.integers(0, inner - 1)))
    for _ in range(draw(st.integers(0, 12))):
        tails.append(draw(st.integers(0, inner - 1)))
        heads.append(draw(st.integers(0, inner - 1)))
    k = len(tails)
    caps = np.array(draw(st.lists(st.integers(0, 4), min_size=k, max_size=k)), dtype=np.int64)
    costs = np.array(draw(st.lists(st.integers(-3, 9), min_size=k, max_size=k)), dtype=np.int64)
    supply = np.zeros(n, dtype=np.int64)
    supply[inner:] = draw(st.lists(st.integers(0, 4), min_size=outer, max_size=outer))
    supply[:inner] = draw(st.lists(st.integers(-4, 2), min_size=inner, max_size=inner))
    supply[0] -= supply.sum()
    return n, np.array(tails, dtype=np.int64), np.array(heads, dtype=np.int64), caps, costs, supply


def _check_flow(n, tails, heads, caps, supply, flow):
    assert (flow >= 0).all() and (flow <= caps).all()
    left = supply - np.bincount(tails, flow, minlength=n) + np.bincount(heads, flow, minlength=n)
    assert not left.any()


@settings(max_examples=400, deadline=None)
@given(networks())
def test_contracted_optimum_expands_to_an_optimum(g):
    n, tails, heads, caps, costs, supply = g
    want = try_min_cost_arrays(n, tails, heads, caps, costs, supply)
    if supply.any() and not len(tails):
        return
    try:
        small = contract(n, tails, heads, caps, costs, supply)
    except ValueError:  # a node with supply and no arc: no flow either way
        assert want is None
        return
    got = try_min_cost_arrays(small.num_nodes, small.tails, small.heads, small.caps, small.costs, small.supply)
    assert (got is None) == (want is None)
    if got is None:
        return
    flow = small.expand(got[0])
    _check_flow(n, tails, heads, caps, supply, flow)
    assert int((flow * costs).sum()) == want[1]


def test_keep_or_move_choices_fold_to_the_other_nodes():
    """The bytes objective's shape: 500 partitions each keep (cost 0) or move through their pool (its size) to
    8 brokers and a sink. Folded, only the brokers, pools and sink are left, with equal-cost arcs merged; the
    expanded optimum costs what the whole network's does."""
    rng = np.random.default_rng(5)
    P, B = 500, 8
    pool, sink = P + B, P + B + 1
    held = rng.integers(0, B, size=P)
    size = rng.integers(0, 20, size=P)
    tails = np.concatenate([np.arange(P), np.arange(P), np.full(B, pool), P + np.arange(B)])
    heads = np.concatenate([P + held, np.full(P, pool), P + np.arange(B), np.full(B, sink)])
    caps = np.concatenate([np.ones(2 * P, np.int64), np.full(B, P), np.full(B, -(-P // B))])
    costs = np.concatenate([np.zeros(P, np.int64), size, np.zeros(2 * B, np.int64)])
    supply = np.zeros(P + B + 2, dtype=np.int64)
    supply[:P], supply[sink] = 1, -P
    small = contract(P + B + 2, tails, heads, caps, costs, supply)
    assert small.num_nodes == B + 2 and len(small.tails) <= B * 20 + 2 * B
    got = try_min_cost_arrays(small.num_nodes, small.tails, small.heads, small.caps, small.costs, small.supply)
    flow = small.expand(got[0])
    _check_flow(P + B + 2, tails, heads, caps, supply, flow)
    assert int((flow * costs).sum()) == try_min_cost_arrays(P + B + 2, tails, heads, caps, costs, supply)[1]
