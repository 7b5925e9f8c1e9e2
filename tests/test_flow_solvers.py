"""The solvers against networkx on the same networks: OR-Tools max flow and min-cost flow, scipy's Dinic."""
from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowbalance.flow.maxflow import Shape, solve_max_flow, solve_max_flow_dinic
from flowbalance.flow.mincost import solve_min_cost
from flowbalance.flow.network import Network, convex_arcs


@st.composite
def graphs(draw):
    n = draw(st.integers(3, 9))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), min_size=1, max_size=30, unique=True))
    pairs = [(u, v) for u, v in pairs if u != v]
    caps = [draw(st.integers(0, 5)) for _ in pairs]
    costs = [draw(st.integers(-3, 6)) for _ in pairs]
    return n, pairs, caps, costs


def _assert_flow_of_value(n, t, h, c, flows, value):
    """Within every capacity, conserved at every node but the source 0 and the sink n - 1, of ``value``."""
    assert (flows >= 0).all() and (flows <= c).all()
    net = np.zeros(n, dtype=np.int64)
    np.add.at(net, t, -flows)
    np.add.at(net, h, flows)
    assert net[0] == -value and net[n - 1] == value and not net[1:-1].any()


@settings(max_examples=200, deadline=None)
@given(graphs())
def test_max_flow_equals_networkx(g):
    n, pairs, caps, _ = g
    if not pairs:
        return
    t = np.array([u for u, _ in pairs])
    h = np.array([v for _, v in pairs])
    c = np.array(caps)
    flows, value = solve_max_flow(n, t, h, c, 0, n - 1)
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    for (u, v), cap in zip(pairs, caps):
        G.add_edge(u, v, capacity=cap)
    assert value == nx.maximum_flow_value(G, 0, n - 1)
    _assert_flow_of_value(n, t, h, c, flows, value)


@st.composite
def multigraphs(draw):
    """Arcs in any order with repeats: parallel arcs, opposite arcs, self-loops."""
    n = draw(st.integers(2, 8))
    arcs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.integers(0, 4)), max_size=30))
    return n, arcs


def _dinic(n, t, h, c):
    return solve_max_flow_dinic(n, t, h, c, 0, n - 1)


def _compiled(n, t, h, c):
    """``Shape`` with no room back along any arc."""
    value, left, _ = Shape(n, t, h).solve(c, np.zeros(len(c), dtype=np.int64), 0, n - 1)
    return c - left, value


@pytest.mark.parametrize("solve", [_dinic, _compiled], ids=["dinic", "compiled"])
@settings(max_examples=300, deadline=None)
@given(g=multigraphs())
def test_flow_per_arc_is_a_maximum_flow(solve, g):
    """Dinic's and the compiled max flow's value equals networkx's (parallel arcs merged there), and the flow per
    arc (Dinic's split back over the arcs) keeps every capacity and conserves at every node but the source and
    the sink."""
    n, arcs = g
    t = np.array([a[0] for a in arcs], dtype=np.int64)
    h = np.array([a[1] for a in arcs], dtype=np.int64)
    c = np.array([a[2] for a in arcs], dtype=np.int64)
    flows, value = solve(n, t, h, c)
    G = nx.DiGraph()
    G.add_nodes_from(range(n))
    for u, v, cap in arcs:
        if u != v:
            G.add_edge(u, v, capacity=G.edges[u, v]["capacity"] + cap if G.has_edge(u, v) else cap)
    assert value == nx.maximum_flow_value(G, 0, n - 1)
    _assert_flow_of_value(n, t, h, c, flows, value)


@settings(max_examples=300, deadline=None)
@given(multigraphs(), st.data(), st.booleans())
def test_shape_solves_with_room_both_ways(g, data, narrow):
    """One ``Shape`` solved with other rooms each time: room b against arc (u, v) is an arc (v, u) of capacity b
    to OR-Tools; the value is the same, what is left stays within the rooms, and the net flow is conserved;
    with int32 slots (``narrow``, whenever they fit) or int64 ones."""
    import flowbalance.flow.maxflow as mf

    n, arcs = g
    t = np.array([a[0] for a in arcs], dtype=np.int64)
    h = np.array([a[1] for a in arcs], dtype=np.int64)
    saved, mf.SLOT_INT32_MAX = mf.SLOT_INT32_MAX, mf.SLOT_INT32_MAX if narrow else 0
    try:
        shape = Shape(n, t, h)
    finally:
        mf.SLOT_INT32_MAX = saved
    assert shape.head.dtype == (np.int32 if narrow else np.int64)
    for _ in range(2):
        fwd = np.array(data.draw(st.lists(st.integers(0, 4), min_size=len(arcs), max_size=len(arcs))), np.int64)
        bwd = np.array(data.draw(st.lists(st.integers(0, 2), min_size=len(arcs), max_size=len(arcs))), np.int64)
        sink = data.draw(st.integers(1, n - 1))
        value, left, back = shape.solve(fwd, bwd, 0, sink)
        assert value == solve_max_flow(n, np.r_[t, h], np.r_[h, t], np.r_[fwd, bwd], 0, sink)[1]
        cut = data.draw(st.integers(0, len(arcs)))  # the same rooms in blocks: arrays, or a count of zeros
        blocks = [fwd[:cut], fwd[cut:]], ([cut, bwd[cut:]] if not bwd[:cut].any() else [bwd[:cut], bwd[cut:]])
        v2, left2, back2 = shape.solve(*blocks, 0, sink)
        assert (v2, left2.tolist(), back2.tolist()) == (value, left.tolist(), back.tolist())
        part = slice(data.draw(st.integers(0, len(arcs))), None, data.draw(st.integers(1, 3)))
        assert [x.tolist() for x in shape.solve(fwd, bwd, 0, sink, read=part)[1:]] == [left[part].tolist(),
                                                                                        back[part].tolist()]
        assert (left >= 0).all() and (back >= 0).all() and np.array_equal(left + back, fwd + bwd)
        net = np.zeros(n, dtype=np.int64)
        np.add.at(net, t, -(fwd - left))
        np.add.at(net, h, fwd - left)
        assert net[0] == -value and net[sink] == value and not np.delete(net, [0, sink]).any()


def test_shape_refuses_what_it_cannot_solve():
    """Node ids outside the network, rooms of another length or negative, a source that is the sink."""
    with pytest.raises(ValueError, match="tails, heads"):
        Shape(2, np.array([0]), np.array([2]))
    shape = Shape(3, np.array([0, 1]), np.array([1, 2]))
    one = np.ones(2, dtype=np.int64)
    with pytest.raises(ValueError, match="one room per arc"):
        shape.solve(np.ones(3, dtype=np.int64), np.ones(3, dtype=np.int64), 0, 2)
    with pytest.raises(ValueError, match="non-negative"):
        shape.solve(-one, one, 0, 2)
    with pytest.raises(ValueError, match="got 1"):
        shape.solve([one[:1]], one, 0, 2)
    with pytest.raises(ValueError, match="one room per arc"):
        shape.solve(one, [1, one], 0, 2)
    with pytest.raises(ValueError, match="non-negative, got -1"):
        shape.solve(one, [-1, one, one], 0, 2)
    with pytest.raises(ValueError, match="source, sink"):
        shape.solve(one, one, 1, 1)
    assert shape.solve(one, 0 * one, 0, 2)[0] == 1


def test_dinic_rejects_capacities_beyond_int32():
    """scipy sums parallel arcs in int32: two arcs that fit alone but not together are refused, as is one too
    large or a negative one."""
    for caps in ([2 ** 31], [2 ** 30, 2 ** 30], [-1]):
        with pytest.raises(ValueError, match="caps"):
            solve_max_flow_dinic(2, np.zeros(len(caps), int), np.ones(len(caps), int), np.array(caps), 0, 1)


@settings(max_examples=200, deadline=None)
@given(graphs(), st.integers(0, 6))
def test_ortools_min_cost_equals_networkx(g, amount):
    n, pairs, caps, costs = g
    # acyclic version (u < v) so negative costs cannot form negative cycles; a bypass arc keeps it feasible
    arcs = [(min(u, v), max(u, v), cap, cost) for (u, v), cap, cost in zip(pairs, caps, costs)]
    arcs.append((0, n - 1, amount, 100))
    net = Network()
    net.nodes(n)
    for u, v, cap, cost in arcs:
        net.add([u], [v], cap, cost)
    supply = np.zeros(n, dtype=np.int64)
    supply[0], supply[n - 1] = amount, -amount
    net.set_supply(supply)
    flows, cost = solve_min_cost(net)
    G = nx.MultiDiGraph()
    for i in range(n):
        G.add_node(i, demand=-int(supply[i]))
    for u, v, cap, c in arcs:
        G.add_edge(u, v, capacity=cap, weight=c)
    assert cost == nx.network_simplex(G)[0]
    assert cost == int(sum(f * a[3] for f, a in zip(flows, arcs)))


def test_convex_arcs_meet_an_interval_when_possible():
    net = Network()
    src, mid, sink = net.nodes(3)
    net.add([src], [mid], 10, 0)
    convex_arcs(net, np.array([mid]), sink, np.array([3]), np.array([5]), np.array([10]), 100)
    supply = np.zeros(3, dtype=np.int64)
    supply[src], supply[sink] = 4, -4
    net.set_supply(supply)
    flows, cost = solve_min_cost(net)
    assert cost == -300  # 3 rewarded units, 1 free


@settings(max_examples=40, deadline=None)
@given(st.lists(graphs(), min_size=1, max_size=6), st.integers(1, 4), st.booleans(), st.integers(-1, 6))
def test_split_solve_forked_equals_serial_and_networkx(parts, amount, shuffle, plain):
    """Independent components solved one by one (``solve_split_arrays``): in one process, or the second half in
    a forked child, the flows are identical; each component's cost is networkx's min cost (``amount`` from its
    node 0 to its last node; every component but number ``plain`` also has a costly arc between them, so that
    one may be infeasible, in either half), and an infeasible component is named the same way by both."""
    parts = [(n, pairs + [(0, n - 1)], cap + [amount], cost + [50]) if k != plain else (n, pairs, cap, cost)
             for k, (n, pairs, cap, cost) in enumerate(parts)]
    import pytest

    from flowbalance.flow.mincost import FlowError, solve_split_arrays

    tails, heads, caps, costs, supply, comp, base = [], [], [], [], [], [], 0
    for k, (n, pairs, cap, cost) in enumerate(parts):
        tails += [base + u for u, _ in pairs]
        heads += [base + v for _, v in pairs]
        caps += cap
        costs += cost
        sup = [0] * n
        sup[0], sup[n - 1] = amount, -amount
        supply += sup
        comp += [k] * n
        base += n
    order = np.random.default_rng(len(tails)).permutation(len(tails)) if shuffle else np.arange(len(tails))
    arrays = [np.asarray(a, dtype=np.int64)[order] for a in (tails, heads, caps, costs)]
    args = (*arrays, np.asarray(supply, dtype=np.int64), np.asarray(comp, dtype=np.int64))
    outcome = []
    for processes in (1, 2):
        try:
            outcome.append(solve_split_arrays(*args, processes=processes).tolist())
        except FlowError as err:
            outcome.append(str(err))
    assert outcome[0] == outcome[1]
    if isinstance(outcome[0], str):
        with pytest.raises(FlowError):
            solve_split_arrays(*args, processes=1)
        assert solve_split_arrays(*args, infeasible_ok=True, processes=2) is None
        return
    flows = np.asarray(outcome[0])
    t, h, c, w = arrays
    base = 0
    for k, (n, pairs, cap, cost) in enumerate(parts):
        G = nx.MultiDiGraph()  # the costly arc may parallel one of the component's
        G.add_nodes_from(range(n))
        G.nodes[0]["demand"], G.nodes[n - 1]["demand"] = -amount, amount
        for (u, v), cp, cs in zip(pairs, cap, cost):
            G.add_edge(u, v, capacity=cp, weight=cs)
        mine = (t >= base) & (t < base + n)
        assert int((flows[mine] * w[mine]).sum()) == nx.min_cost_flow_cost(G)
        base += n
