"""The primal-dual min-cost flow against OR-Tools' cost scaling (itself checked against networkx in
test_flow_solvers.py) on random networks: the same feasibility and the same optimal cost, and a flow that
meets every capacity and supply."""
from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from flowbalance.flow import phase_kernel as pk
from flowbalance.flow.mincost import _solve
from flowbalance.flow.primal_dual import primal_dual, solve_primal_dual


@st.composite
def networks(draw):
    n = draw(st.integers(2, 9))
    m = draw(st.integers(1, 30))
    tails = np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)))
    heads = np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)))
    keep = tails != heads
    tails, heads = tails[keep], heads[keep]  # parallel and opposite arcs stay: the leader network has both
    caps = np.array(draw(st.lists(st.integers(0, 5), min_size=len(tails), max_size=len(tails))), dtype=np.int64)
    costs = np.array(draw(st.lists(st.integers(-3, 6), min_size=len(tails), max_size=len(tails))), dtype=np.int64)
    supply = np.array(draw(st.lists(st.integers(-4, 4), min_size=n, max_size=n)), dtype=np.int64)
    supply[-1] -= supply.sum()
    return n, tails, heads, caps, costs, supply


def _check_flow(n, tails, heads, caps, supply, flow):
    assert (flow >= 0).all() and (flow <= caps).all()
    net = supply.copy()
    np.subtract.at(net, tails, flow)
    np.add.at(net, heads, flow)
    assert not net.any()


def _check_certificate(tails, heads, caps, costs, flow, pot):
    """The potentials certify the flow: no arc with room has a negative reduced cost, no arc with flow a
    positive one."""
    reduced = costs + pot[tails] - pot[heads]
    assert ((reduced >= 0) | (flow == caps)).all() and ((reduced <= 0) | (flow == 0)).all()


@contextlib.contextmanager
def _kernel_from(nodes: int):
    """``primal_dual.KERNEL_FROM_NODES`` set to ``nodes`` meanwhile (hypothesis tests cannot take monkeypatch)."""
    import flowbalance.flow.primal_dual as pd

    saved, pd.KERNEL_FROM_NODES = pd.KERNEL_FROM_NODES, nodes
    try:
        yield
    finally:
        pd.KERNEL_FROM_NODES = saved


@settings(max_examples=400, deadline=None)
@given(networks(), st.integers(0, 2))
def test_primal_dual_equals_ortools(g, check_after):
    n, tails, heads, caps, costs, supply = g
    want = _solve(tails, heads, caps, costs, supply, n)
    got = solve_primal_dual(n, tails, heads, caps, costs, supply, check_after=check_after)
    assert (got is None) == (want is None)
    if got is not None:
        flow, cost = got
        assert cost == want[1]
        assert cost == int((flow * costs).sum())
        _check_flow(n, tails, heads, caps, supply, flow)


def test_unit_leader_network_against_ortools():
    """Larger random networks of the leader stage's shape: partitions (supply 1) → 3 of many brokers (cost 0
    for the first, 1 otherwise) → sink, brokers with tight capacities: many phases, long chains."""
    rng = np.random.default_rng(7)
    for trial in range(30):
        P, B = int(rng.integers(20, 300)), int(rng.integers(3, 30))
        reps = np.array([rng.choice(B, size=min(3, B), replace=False) for _ in range(P)])
        rows = np.repeat(np.arange(P), reps.shape[1])
        tails = np.concatenate([rows, P + np.arange(B)])
        heads = np.concatenate([P + reps.ravel(), np.full(B, P + B)])
        room = -(-P // B) + int(rng.integers(0, 2))
        caps = np.concatenate([np.ones(len(rows), dtype=np.int64), np.full(B, room)])
        costs = np.concatenate([np.where(np.arange(len(rows)) % reps.shape[1] == 0, 0, 1), np.zeros(B, np.int64)])
        supply = np.zeros(P + B + 1, dtype=np.int64)
        supply[:P], supply[-1] = 1, -P
        want = _solve(tails, heads, caps, costs, supply, P + B + 1)
        got = solve_primal_dual(P + B + 1, tails, heads, caps, costs, supply)
        assert want is not None and got is not None
        assert got[1] == want[1], trial
        _check_flow(P + B + 1, tails, heads, caps, supply, got[0])


def test_scipy_keeps_explicit_zero_weights():
    """The phases rely on Dijkstra treating an explicit 0 in the sparse graph as an arc of length 0."""
    g = csr_matrix((np.zeros(2), np.array([1, 2]), np.array([0, 1, 2, 2])), shape=(3, 3))
    assert dijkstra(g, directed=True, indices=[0], min_only=True).tolist() == [0.0, 0.0, 0.0]


@settings(max_examples=200, deadline=None)
@given(networks())
def test_potentials_certify_the_flow(g):
    """The potentials returned are the optimality certificate the pruned solves rely on, checked arc by arc in
    plain Python: no arc with room has a negative reduced cost, no arc with flow a positive one."""
    n, tails, heads, caps, costs, supply = g
    res = primal_dual(n, tails, heads, caps, costs, supply)
    if res is None:
        return
    flow, _, p = res
    for t, h, c, w, f in zip(tails.tolist(), heads.tolist(), caps.tolist(), costs.tolist(), flow.tolist()):
        if f < c:
            assert w + p[t] - p[h] >= 0
        if f > 0:
            assert w + p[t] - p[h] <= 0


def test_distances_beyond_float_precision_are_refused_and_the_pruned_solve_falls_back():
    """A shortest distance of 2**52 or more cannot be summed exactly in float64: primal_dual says so instead of
    answering, and solve_pruned then solves the whole network with OR-Tools (the same optimum)."""
    from flowbalance.flow.network import Network
    from flowbalance.flow.primal_dual import CostRangeError
    from flowbalance.flow.pruned import solve_pruned

    big = 2 ** 52
    tails, heads = np.array([0, 1, 0]), np.array([1, 2, 2])
    caps, costs = np.array([1, 1, 1]), np.array([big, 1, big + 5])
    supply = np.array([1, 0, -1])
    try:
        primal_dual(3, tails, heads, caps, costs, supply)
        raise AssertionError("no CostRangeError")
    except CostRangeError:
        pass
    net = Network()
    net.nodes(3)
    net.add(tails, heads, caps, costs)
    net.set_supply(supply)
    flows, cost, rounds = solve_pruned(net, np.array([True, True, False]))
    assert (cost, rounds) == (big + 1, 0) and flows.tolist() == [1, 1, 0]


def _reference_primal_dual(n, tails, heads, caps, costs, supply):
    """The phases as first written (the residual network rebuilt from the flow in every phase): the oracle the
    incremental bookkeeping of ``primal_dual`` (rooms kept per slot, live slots only) must match exactly, flow
    for flow, since the plans depend on which optimum the max flows pick."""
    from flowbalance.flow.primal_dual import _max_flow

    E = len(tails)
    flow = np.where(costs < 0, caps, 0).astype(np.int64)
    excess = supply.astype(np.int64).copy()
    np.subtract.at(excess, tails, flow)
    np.add.at(excess, heads, flow)
    pot = np.zeros(n, dtype=np.int64)
    order = np.argsort(np.concatenate([tails, heads]), kind="stable")
    tail, head = np.concatenate([tails, heads])[order], np.concatenate([heads, tails])[order]
    cost = np.concatenate([costs, -costs])[order]
    while (excess > 0).any():
        room = np.concatenate([caps - flow, flow])[order]
        live = room > 0
        src, dst = np.flatnonzero(excess > 0), np.flatnonzero(excess < 0)
        reduced = (cost + pot[tail] - pot[head])[live].astype(np.float64)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(tail[live], minlength=n))])
        d = dijkstra(csr_matrix((reduced, head[live], indptr), shape=(n, n)), directed=True, indices=src,
                     min_only=True)
        reach = d[dst][np.isfinite(d[dst])]
        if not len(reach):
            return None
        D = int(np.rint(reach.min()))
        near = d <= D + 0.5
        pot += np.where(near, np.rint(d), D).astype(np.int64)
        adm = live & (cost + pot[tail] - pot[head] == 0) & near[tail] & near[head]
        k = int(adm.sum())
        f, _ = _max_flow(n, np.concatenate([tail[adm], np.full(len(src), n), dst]),
                         np.concatenate([head[adm], src, np.full(len(dst), n + 1)]),
                         np.concatenate([room[adm], excess[src], -excess[dst]]))
        slots = order[adm]
        fwd = slots < E
        flow[slots[fwd]] += f[:k][fwd]
        flow[slots[~fwd] - E] -= f[:k][~fwd]
        excess[src] -= f[k: k + len(src)]
        excess[dst] += f[k + len(src):]
    return flow, int((flow * costs).sum()), pot


@settings(max_examples=300, deadline=None)
@given(networks())
def test_same_flow_and_potentials_as_the_rebuilt_residual(g):
    """Exactly the flow and potentials of the phases rebuilt from scratch (not only the same cost)."""
    n, tails, heads, caps, costs, supply = g
    if int(supply.sum()) != 0:
        return
    want = _reference_primal_dual(n, tails, heads, caps, costs, supply)
    got = primal_dual(n, tails, heads, caps, costs, supply, check_after=-1)
    assert (got is None) == (want is None)
    if got is not None:
        assert got[0].tolist() == want[0].tolist() and got[1] == want[1] and got[2].tolist() == want[2].tolist()


def _leader_network(rng, max_cost: int):
    """A random network of the leader stage's shape: P partitions (supply 1) -> each of their 3 brokers (unit arcs,
    cost below ``max_cost``) -> the sink through tight broker capacities. (n, tails, heads, caps, costs, supply)."""
    P, B = int(rng.integers(50, 400)), int(rng.integers(3, 25))
    reps = np.array([rng.choice(B, size=min(3, B), replace=False) for _ in range(P)])
    rows = np.repeat(np.arange(P), reps.shape[1])
    tails = np.concatenate([rows, P + np.arange(B)])
    heads = np.concatenate([P + reps.ravel(), np.full(B, P + B)])
    caps = np.concatenate([np.ones(len(rows), dtype=np.int64), np.full(B, -(-P // B))])
    costs = np.concatenate([rng.integers(0, max_cost, len(rows)), np.zeros(B, np.int64)])
    supply = np.zeros(P + B + 1, dtype=np.int64)
    supply[:P], supply[-1] = 1, -P
    return P + B + 1, tails, heads, caps, costs, supply


def test_same_flow_as_the_rebuilt_residual_on_leader_shaped_networks():
    """The leader stage's shape (unit candidates, tight broker capacities, many phases) with flow that is sent
    back along arcs: exactly the reference's flow and potentials."""
    rng = np.random.default_rng(11)
    for trial in range(20):
        n, tails, heads, caps, costs, supply = _leader_network(rng, max_cost=3)
        want = _reference_primal_dual(n, tails, heads, caps, costs, supply)
        got = primal_dual(n, tails, heads, caps, costs, supply)
        assert want is not None and got is not None
        assert got[0].tolist() == want[0].tolist() and got[2].tolist() == want[2].tolist(), trial


def test_stable_order_is_a_stable_argsort():
    """The radix order of the residual's slots equals numpy's stable argsort for keys of one 16-bit digit, two,
    and beyond (ties in many long runs, as node ids are)."""
    from flowbalance.flow.primal_dual import _stable_order

    rng = np.random.default_rng(5)
    for n in (1, 2, 300, 1 << 16, (1 << 16) + 1, 400_000, 1 << 33):
        for m in (0, 1, 5000):
            key = rng.integers(0, n, m).astype(np.int64)
            assert _stable_order(key, n).tolist() == np.argsort(key, kind="stable").tolist(), (n, m)


@settings(max_examples=300, deadline=None)
@given(networks(), st.integers(0, 2))
def test_compiled_phases_equal_ortools_and_certify(g, check_after):
    """The compiled phases (forced on networks this small): the same feasibility and optimal cost as OR-Tools,
    a flow meeting every capacity and supply, and potentials that certify it."""
    n, tails, heads, caps, costs, supply = g
    with _kernel_from(0):
        got = primal_dual(n, tails, heads, caps, costs, supply, check_after=check_after)
    want = _solve(tails, heads, caps, costs, supply, n)
    assert (got is None) == (want is None)
    if got is None:
        return
    flow, cost, pot = got
    assert cost == want[1]
    _check_flow(n, tails, heads, caps, supply, flow)
    _check_certificate(tails, heads, caps, costs, flow, pot)


def test_compiled_phases_refuse_distances_beyond_the_limit(monkeypatch):
    """The compiled phases refuse a shortest distance of 2**52 or more as the numpy ones do (two arcs below the
    limit each), and answer just below it."""
    import flowbalance.flow.primal_dual as pd

    monkeypatch.setattr(pd, "KERNEL_FROM_NODES", 0)
    big = pd.COST_LIMIT - 1
    t, h, c, s = np.array([0, 1]), np.array([1, 2]), np.ones(2, np.int64), np.array([1, 0, -1])
    try:
        primal_dual(3, t, h, c, np.array([big, 1]), s)
        raise AssertionError("no CostRangeError")
    except pd.CostRangeError:
        pass
    assert primal_dual(3, t, h, c, np.array([big - 1, 0]), s)[1] == big - 1


@pytest.mark.parametrize("tree_below", [0, 5, 10**9])
def test_compiled_phases_on_leader_shaped_networks_against_ortools(monkeypatch, tree_below):
    """The compiled phases (forced on networks this small) on the leader stage's shape (unit candidates, tight
    broker capacities, many phases, flow sent back along arcs) with costs 0-3: OR-Tools' optimal cost, a flow
    meeting every capacity and supply, and potentials that certify it. With max flow phases only, with the
    single-path phases after a max flow that sent fewer than 5 units (the default), and after every max flow."""
    import flowbalance.flow.primal_dual as pd

    monkeypatch.setattr(pd, "KERNEL_FROM_NODES", 0)
    monkeypatch.setattr(pd, "TREE_BELOW", tree_below)
    rng = np.random.default_rng(11)
    for trial in range(30):
        n, tails, heads, caps, costs, supply = _leader_network(rng, max_cost=4)
        want = _solve(tails, heads, caps, costs, supply, n)
        got = primal_dual(n, tails, heads, caps, costs, supply)
        assert (want is None) == (got is None), trial
        if got is None:
            continue
        flow, cost, pot = got
        assert cost == want[1], trial
        _check_flow(n, tails, heads, caps, supply, flow)
        _check_certificate(tails, heads, caps, costs, flow, pot)


@settings(max_examples=200, deadline=None)
@given(networks())
def test_compiled_slot_build_equals_the_numpy_one(g):
    """The residual slots built by the compiled counting sort (large networks) are the numpy build's, array for
    array: the same order, rooms, costs, positions and opposite slots."""
    import flowbalance.flow.primal_dual as pd

    n, tails, heads, caps, costs, supply = g
    args = [np.asarray(x, dtype=np.int64) for x in (tails, heads, caps, costs, supply)]
    with _kernel_from(n + 1):
        small = pd._Residual(n, *args)
    with _kernel_from(0):
        large = pd._Residual(n, *args)
    assert small.kernel is None and large.kernel is not None
    for name in ("indptr", "head", "cost", "room", "where", "mate", "excess"):
        assert getattr(small, name).tolist() == getattr(large, name).tolist(), name
    import flowbalance.flow.phase_kernel  # noqa: F401  (numba loaded: the compiled sort for the numpy phases)

    saved, pd.SLOTS_COMPILED_FROM_ARCS = pd.SLOTS_COMPILED_FROM_ARCS, 0
    try:
        with _kernel_from(n + 1):
            sorted_compiled = pd._Residual(n, *args)
    finally:
        pd.SLOTS_COMPILED_FROM_ARCS = saved
    assert sorted_compiled.kernel is None
    for name in ("indptr", "tail", "head", "cost", "room", "where", "mate", "excess"):
        assert getattr(small, name).tolist() == getattr(sorted_compiled, name).tolist(), name


def _residual_slots(rng, n: int, m: int, max_w: int):
    """Random residual slots sorted by tail, in opposite pairs (``mate``), rooms 0-3 each way and costs 0..max_w
    forward (so -cost backward): (indptr, head, cost, room, mate, tail)."""
    tails, heads = rng.integers(0, n, m), rng.integers(0, n, m)
    slot_tail, slot_head = np.concatenate([tails, heads]), np.concatenate([heads, tails])
    w = rng.integers(0, max_w + 1, m)
    order = np.argsort(slot_tail, kind="stable")
    where = np.empty(2 * m, np.int64)
    where[order] = np.arange(2 * m)
    mate = np.concatenate([where[m:], where[:m]])[order]
    room = rng.integers(0, 4, 2 * m)[order]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(slot_tail, minlength=n))]).astype(np.int64)
    return (indptr, slot_head[order].astype(np.int64), np.concatenate([w, -w])[order].astype(np.int64),
            room.astype(np.int64), mate.astype(np.int64), slot_tail[order].astype(np.int64))


def _excess(rng, n: int) -> np.ndarray:
    """Random excesses and deficits (not summing to 0: the kernels do not need it)."""
    return (rng.integers(-3, 4, n) * (rng.random(n) < 0.3)).astype(np.int64)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 60), st.integers(0, 4), st.booleans())
def test_shortest_distances_equal_dijkstra(seed, n, max_w, first_only):
    """Over the slots with room and potentials that keep reduced costs non-negative, the compiled search gives
    the nearest deficit's distance D that scipy's Dijkstra gives, every node within D its distance, and reaches
    no node beyond D; NONE exactly when no deficit is reachable. Each reached node's parent slot ends a shortest
    path. Stopped at the first deficit (``first_only``) it reaches a subset of those, every one at its distance,
    and returns a deficit at D in ``queue[0]``; ``augment_path`` then sends along its parent slots."""
    rng = np.random.default_rng(seed)
    indptr, head, cost, room, mate, tail = _residual_slots(rng, n, int(rng.integers(0, 4 * n + 1)), max_w)
    pot = np.zeros(n, np.int64)
    live = room > 0
    room[live & (cost < 0)] = 0  # backward slots of negative cost stay empty, so potentials 0 are valid
    live = room > 0
    excess = _excess(rng, n)
    w = pk.workspace(n, len(head))
    D = pk.shortest_distances(n, indptr, head, cost, room, pot, excess, w.dist, w.reached, w.queue, w.following,
                              w.heap_keys, w.heap_nodes, w.parent, first_only)
    dist, reached = w.dist, w.reached
    src, dst = np.flatnonzero(excess > 0), np.flatnonzero(excess < 0)
    graph = csr_matrix((cost[live].astype(np.float64), head[live],
                        np.concatenate([[0], np.cumsum(np.bincount(tail[live], minlength=n))])), shape=(n, n))
    d = dijkstra(graph, directed=True, indices=src, min_only=True) if len(src) else np.full(n, np.inf)
    reach = d[dst][np.isfinite(d[dst])]
    if not len(reach):
        assert D == pk.NONE
        return
    assert D == int(reach.min())
    if first_only:
        assert not (reached & (d > D)).any() and (reached | (d >= D)).all()
        assert dist[reached].tolist() == d[reached].astype(np.int64).tolist()
    else:
        assert reached.tolist() == (d <= D).tolist()
        assert dist[reached].tolist() == d[d <= D].astype(np.int64).tolist()
    for v in np.flatnonzero(reached).tolist():
        e = int(w.parent[v])
        if excess[v] > 0:
            assert e == -1
        else:
            assert head[e] == v and room[e] > 0 and dist[tail[e]] + cost[e] == dist[v]
    if first_only:
        t = int(w.queue[0])
        assert excess[t] < 0 and reached[t] and dist[t] == D
        before_room, before_excess = room.copy(), excess.copy()
        sent = pk.augment_path(head, room, mate, excess, w.parent, t)
        assert sent > 0 and excess[t] == before_excess[t] + sent
        assert (room >= 0).all() and (room + room[mate] == before_room + before_room[mate]).all()
        assert int((before_room - room)[before_room > room].sum()) == sent * _hops(w.parent, mate, head, t)


def _hops(parent: np.ndarray, mate: np.ndarray, head: np.ndarray, t: int) -> int:
    """The number of slots on the parent path into ``t``."""
    hops, v = 0, t
    while parent[v] >= 0:
        hops, v = hops + 1, int(head[mate[parent[v]]])
    return hops


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10**6), st.integers(1, 40), st.integers(0, 2))
def test_admissible_max_flow_equals_ortools(seed, n, max_w):
    """The compiled max flow over the admissible slots (room, reduced cost 0) sends what OR-Tools' max flow sends
    from the excesses to the deficits over those slots; rooms stay within each pair's total, every excess and
    deficit moves toward 0 and no further, and what left the excesses reached the deficits (conservation)."""
    rng = np.random.default_rng(seed)
    indptr, head, cost, room, mate, tail = _residual_slots(rng, n, int(rng.integers(0, 4 * n + 1)), max_w)
    pot = rng.integers(0, 2, n).astype(np.int64)
    excess = _excess(rng, n)
    adm = (room > 0) & (cost + pot[tail] - pot[head] == 0)
    src, dst = np.flatnonzero(excess > 0), np.flatnonzero(excess < 0)
    from flowbalance.flow.primal_dual import _max_flow

    _, want = _max_flow(n, np.concatenate([tail[adm], np.full(len(src), n), dst]),
                        np.concatenate([head[adm], src, np.full(len(dst), n + 1)]),
                        np.concatenate([room[adm], excess[src], -excess[dst]]))
    before_room, before_excess = room.copy(), excess.copy()
    w = pk.workspace(n, len(head))
    sent = pk.admissible_max_flow(n, indptr, head, cost, room, mate, pot, excess, w.label, w.count, w.current,
                                  w.path, w.sources, w.queue)
    assert sent == want
    assert (room >= 0).all() and (room + room[mate] == before_room + before_room[mate]).all()
    moved = before_excess - excess
    assert (np.abs(moved) <= np.abs(before_excess)).all() and (moved * before_excess >= 0).all()
    assert moved[before_excess > 0].sum() == sent == -moved[before_excess < 0].sum()
    net = np.zeros(n, np.int64)  # flow out minus in per node, counted on both slots of each pair (twice)
    change = before_room - room  # > 0: sent along the slot
    np.add.at(net, tail, change)
    np.subtract.at(net, head, change)
    assert (net // 2 == moved).all() and not (net % 2).any()


@settings(max_examples=60, deadline=None)
@given(networks(), st.integers(0, 2), st.booleans())
def test_feasibility_check_in_a_forked_child_gives_the_same_answer(g, check_after, wait):
    """The feasibility check run by a forked child alongside the phases (large networks, two cores; forced here)
    gives what the serial check gives: the same flow, or None for both. ``wait``: the child's answer is read at
    the first phase boundary (else whenever it is ready: often never, on networks this small)."""
    import select

    from flowbalance import forked
    from flowbalance.flow import primal_dual as pd

    n, tails, heads, caps, costs, supply = g
    serial = primal_dual(n, tails, heads, caps, costs, supply, check_after=check_after)
    saved = pd.CHECK_FORK_FROM_ARCS, pd.can_fork, forked.Forked.ready
    try:
        pd.CHECK_FORK_FROM_ARCS, pd.can_fork = 0, lambda: True
        if wait:
            forked.Forked.ready = lambda self: bool(select.select([self.pipe], [], [], None)[0])
        got = primal_dual(n, tails, heads, caps, costs, supply, check_after=check_after)
    finally:
        pd.CHECK_FORK_FROM_ARCS, pd.can_fork, forked.Forked.ready = saved
    assert (got is None) == (serial is None)
    if got is not None:
        assert np.array_equal(got[0], serial[0]) and np.array_equal(got[2], serial[2])


@settings(max_examples=300, deadline=None)
@given(networks())
def test_compiled_search_gives_the_numpy_phases_flow(g):
    """The numpy phases with their slots sorted, distances found and admissible slots picked by ``phase_kernel``
    (a large network in a process that has loaded numba) send exactly the numpy phases' flow, with the same
    potentials: the same arcs reach OR-Tools' max flow in the same order."""
    import flowbalance.flow.phase_kernel  # noqa: F401  (numba loaded)
    import flowbalance.flow.primal_dual as pd

    n, tails, heads, caps, costs, supply = g
    if int(supply.sum()) != 0:
        return
    with _kernel_from(n + 1):
        want = primal_dual(n, tails, heads, caps, costs, supply, check_after=-1)
        saved, pd.SLOTS_COMPILED_FROM_ARCS = pd.SLOTS_COMPILED_FROM_ARCS, 0
        try:
            assert pd._Residual(n, *(np.asarray(x, np.int64) for x in (tails, heads, caps, costs, supply))
                                ).compiled_search is not None
            got = primal_dual(n, tails, heads, caps, costs, supply, check_after=-1)
        finally:
            pd.SLOTS_COMPILED_FROM_ARCS = saved
    assert (got is None) == (want is None)
    if got is not None:
        assert got[0].tolist() == want[0].tolist() and got[1] == want[1] and got[2].tolist() == want[2].tolist()
