"""The lexicographic min-cost flow (``flow/lexicographic.py``) against OR-Tools on one cost ``W·first + second``
with W above any difference in ``second`` (the bytes objective's old formulation), on random networks; and the
claim it rests on, checked arc by arc: an arc it fixes carries the same flow in every flow of least first cost."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flowbalance.flow.lexicographic as lex
import flowbalance.flow.primal_dual as pd
from flowbalance.flow.lexicographic import solve_lexicographic
from flowbalance.flow.mincost import try_min_cost_arrays
from flowbalance.flow.primal_dual import primal_dual


@st.composite
def networks(draw):
    """Small networks with parallel and opposite arcs, first costs 0-2 (many ties: large choice left for the
    second cost) and second costs 0-9."""
    n = draw(st.integers(2, 9))
    m = draw(st.integers(1, 30))
    tails = np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)))
    heads = np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)))
    keep = tails != heads
    tails, heads = tails[keep], heads[keep]
    k = len(tails)
    caps = np.array(draw(st.lists(st.integers(0, 4), min_size=k, max_size=k)), dtype=np.int64)
    first = np.array(draw(st.lists(st.integers(0, 2), min_size=k, max_size=k)), dtype=np.int64)
    second = np.array(draw(st.lists(st.integers(0, 9), min_size=k, max_size=k)), dtype=np.int64)
    supply = np.array(draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n)), dtype=np.int64)
    supply[-1] -= supply.sum()
    return n, tails, heads, caps, first, second, supply


@contextlib.contextmanager
def _second_by(from_nodes: int, max_phases: int, compiled: bool = False):
    """The second solve by primal-dual from ``from_nodes`` nodes, at most ``max_phases`` phases, its phases
    compiled when ``compiled``, meanwhile (hypothesis tests cannot take monkeypatch)."""
    saved = lex.PRIMAL_DUAL_FROM_NODES, lex.MAX_PHASES, pd.KERNEL_FROM_NODES
    lex.PRIMAL_DUAL_FROM_NODES, lex.MAX_PHASES = from_nodes, max_phases
    pd.KERNEL_FROM_NODES = 0 if compiled else saved[2]
    try:
        yield
    finally:
        lex.PRIMAL_DUAL_FROM_NODES, lex.MAX_PHASES, pd.KERNEL_FROM_NODES = saved


def _check_flow(n, tails, heads, caps, supply, flow):
    assert (flow >= 0).all() and (flow <= caps).all()
    left = supply - np.bincount(tails, flow, minlength=n) + np.bincount(heads, flow, minlength=n)
    assert not left.any()


@settings(max_examples=300, deadline=None)
@given(networks(), st.sampled_from([(10**9, 150), (0, 150), (0, 1), (0, 150, True)]))
def test_lexicographic_equals_one_flow_with_weighted_costs(g, second_by):
    """Same feasibility, the least first cost, and the least second cost among those: OR-Tools on W·first +
    second, W = 1 + the largest second cost any flow could have. The second solve by OR-Tools, by primal-dual
    (numpy and compiled phases), and by primal-dual stopped after one phase (OR-Tools takes over)."""
    n, tails, heads, caps, first, second, supply = g
    W = 1 + int((caps * second).sum())
    want = try_min_cost_arrays(n, tails, heads, caps, W * first + second, supply)
    with _second_by(*second_by):
        got = solve_lexicographic(n, tails, heads, caps, first, second, supply)
    assert (got is None) == (want is None)
    if got is None:
        return
    flow, first_cost, second_cost = got
    _check_flow(n, tails, heads, caps, supply, flow)
    assert first_cost == int((flow * first).sum()) and second_cost == int((flow * second).sum())
    assert (first_cost, second_cost) == divmod(want[1], W)


@settings(max_examples=150, deadline=None)
@given(networks())
def test_fixed_arcs_carry_the_same_flow_in_every_optimum(g):
    """Step 2 of the module doc, by an independent oracle: for each arc the method fixes, no flow of least first
    cost gives it one unit less, or one unit more (OR-Tools' least first cost with that arc's capacity cut
    below its flow, or with one more unit forced through it, is higher or infeasible)."""
    n, tails, heads, caps, first, second, supply = g
    res = primal_dual(n, tails, heads, caps, first, supply)
    if res is None:
        return
    flow, best, pot = res
    free = lex._free_arcs(n, tails, heads, caps, first, flow, pot)
    for a in np.flatnonzero(~free).tolist():
        if flow[a] > 0:  # one unit less: capacity flow - 1
            cut = caps.copy()
            cut[a] = flow[a] - 1
            other = try_min_cost_arrays(n, tails, heads, cut, first, supply)
            assert other is None or other[1] > best, a
        if flow[a] < caps[a]:  # one unit more: flow + 1 forced (supplies moved), the rest of the arc free
            forced = supply.copy()
            forced[tails[a]] -= flow[a] + 1
            forced[heads[a]] += flow[a] + 1
            rest = caps.copy()
            rest[a] = caps[a] - flow[a] - 1
            other = try_min_cost_arrays(n, tails, heads, rest, first, forced)
            assert other is None or other[1] + (flow[a] + 1) * first[a] > best, a


def test_infeasible_and_empty():
    assert solve_lexicographic(2, [0], [1], [1], [0], [0], [2, -2]) is None
    flow, c1, c2 = solve_lexicographic(2, np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), [0, 0])
    assert len(flow) == 0 and c1 == c2 == 0


def test_refuses_arrays_that_do_not_match():
    with pytest.raises(ValueError, match="one entry per arc"):
        solve_lexicographic(2, [0], [1], [1], [0, 1], [0], [1, -1])
    with pytest.raises(ValueError, match="num_nodes 3"):
        solve_lexicographic(3, [0], [1], [1], [0], [0], [1, -1])


def test_pooled_bytes_network_shape_against_weighted_costs():
    """Larger networks of the bytes objective's shape: partitions (supply 1 per replica) keep (first 0) or move
    through a pool (first 1, second its size) to brokers with tight capacities; the second solve by compiled
    primal-dual (compiled phases) and by OR-Tools give the same costs as the weighted one-flow solve."""
    rng = np.random.default_rng(11)
    for trial in range(12):
        P, B = int(rng.integers(30, 200)), int(rng.integers(4, 20))
        held = rng.integers(0, B, size=P)
        size = rng.integers(0, 50, size=P)
        pool, sink = P + B, P + B + 1
        tails = np.concatenate([np.arange(P), np.arange(P), np.full(B, pool), P + np.arange(B)])
        heads = np.concatenate([P + held, np.full(P, pool), P + np.arange(B), np.full(B, sink)])
        room = -(-P // B) + int(rng.integers(0, 2))
        caps = np.concatenate([np.ones(2 * P, np.int64), np.full(B, P), np.full(B, room)])
        first = np.concatenate([np.zeros(P, np.int64), np.ones(P, np.int64), np.zeros(2 * B, np.int64)])
        second = np.concatenate([np.zeros(P, np.int64), size, np.zeros(2 * B, np.int64)])
        supply = np.zeros(P + B + 2, dtype=np.int64)
        supply[:P], supply[sink] = 1, -P
        W = 1 + int(size.sum())
        want = try_min_cost_arrays(P + B + 2, tails, heads, caps, W * first + second, supply)
        for second_by in ((0, 150, True), (10**9, 150)):
            with _second_by(*second_by):
                flow, c1, c2 = solve_lexicographic(P + B + 2, tails, heads, caps, first, second, supply)
            assert (c1, c2) == divmod(want[1], W), trial
            _check_flow(P + B + 2, tails, heads, caps, supply, flow)
