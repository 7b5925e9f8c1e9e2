"""Stage 2 (preferred leaders) when the replica sets cannot balance every broker and every topic at once.

A broker holding replicas of only one topic must lead many of that topic's partitions to reach its leader floor:
no choice meets both the broker and the per-topic intervals. The stage then keeps the broker intervals hard and
makes the per-topic ones graded soft (solve 3 of the module doc). Checked against brute force over every choice
of leaders on small clusters: the brokers' intervals hold, and the objective (TOPIC_WEIGHT x graded per-topic
excess + leadership changes) equals the least any choice reaches.
"""
from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import flowbalance.stages.leaders as leaders
from flowbalance.model import Brokers, ClusterState
from flowbalance.flow.mincost import try_min_cost
from flowbalance.stages.common import TOPIC_STEPS, StageInput

N_BROKERS = 4


def _graded(x: int, lo: int, hi: int) -> int:
    """Graded distance of a count from [lo, hi]: the d-th unit outside costs min(d, STEPS + 1)."""
    gap = max(x - hi, lo - x, 0)
    return sum(min(d, TOPIC_STEPS + 1) for d in range(1, gap + 1))


def _brute(rows: list[list[int]], topics: list[str]) -> tuple[int, bool]:
    """(least objective over leader choices that keep every broker in [floor, ceil], whether any choice meets
    every topic's [floor, ceil] too). Equal weights, every broker live, current leader = first replica."""
    P = len(rows)
    lo, hi = P // N_BROKERS, -(-P // N_BROKERS)
    per_topic = {t: topics.count(t) for t in set(topics)}
    best, all_met = None, False
    for choice in itertools.product(*(range(len(r)) for r in rows)):
        led = [rows[p][c] for p, c in enumerate(choice)]
        counts = np.bincount(led, minlength=N_BROKERS)
        if counts.min() < lo or counts.max() > hi:
            continue
        excess = 0
        for t, n in per_topic.items():
            cell = np.bincount([b for b, tp in zip(led, topics) if tp == t], minlength=N_BROKERS)
            excess += sum(_graded(int(x), n // N_BROKERS, -(-n // N_BROKERS)) for x in cell)
        all_met = all_met or excess == 0
        value = leaders.TOPIC_WEIGHT * excess + sum(1 for c in choice if c)
        best = value if best is None else min(best, value)
    return best, all_met


def _state(rows: list[list[int]], topics: list[str]) -> ClusterState:
    """The cluster (rows in the state's canonical order, which the brute force reads back)."""
    return ClusterState.build(Brokers.build(list(range(N_BROKERS))), topics, range(len(rows)), np.array(rows))


@st.composite
def _forced_clusters(draw):
    """Small clusters where broker 3 holds replicas of topic "a" only (so it may have to lead several of them)."""
    n_a = draw(st.integers(2, 4))
    rows, topics = [], []
    for _ in range(n_a):
        rows.append(draw(st.permutations([3, draw(st.integers(0, 2))])))
        topics.append("a")
    for i in range(draw(st.integers(3, 6))):
        rows.append(draw(st.permutations(draw(st.sampled_from([[0, 1], [1, 2], [0, 2]])))))
        topics.append("b" if i % 2 else "c")
    return rows, topics


@settings(max_examples=60, deadline=None)
@given(_forced_clusters())
def test_soft_topics_match_brute_force(case):
    state = _state(*case)
    rows, topics = state.replicas.tolist(), [state.topics[t] for t in state.topic]
    best, all_met = _brute(rows, topics)
    movable = np.ones(len(rows), dtype=bool)
    used = []
    real_network = leaders._network

    def network(pb, cost, **kw):
        used.append(kw.get("topic_weight"))
        return real_network(pb, cost, **kw)

    leaders._network = network
    try:
        out = leaders.balance_leaders(state, state.replicas[:, 0].copy(), movable, per_topic=True)
    finally:
        leaders._network = real_network
    assert sorted(map(sorted, out.tolist())) == sorted(map(sorted, rows))  # only the order changes
    _check_counting_skip(state, movable)
    if best is None:  # the brokers cannot be balanced: the all-soft solve (4) ran
        assert used[-1] is None
        return
    led = [int(r[0]) for r in out]
    counts = np.bincount(led, minlength=N_BROKERS)
    P = len(rows)
    assert counts.min() >= P // N_BROKERS and counts.max() <= -(-P // N_BROKERS)
    if used[-1] == leaders.TOPIC_WEIGHT:  # solve 3 chose: its objective is the least of any balanced choice
        assert not all_met
        excess = 0
        for t in set(topics):
            n = topics.count(t)
            cell = np.bincount([b for b, tp in zip(led, topics) if tp == t], minlength=N_BROKERS)
            excess += sum(_graded(int(x), n // N_BROKERS, -(-n // N_BROKERS)) for x in cell)
        changes = sum(1 for r, o in zip(out.tolist(), rows) if r[0] != o[0])
        assert leaders.TOPIC_WEIGHT * excess + changes == best


def _check_counting_skip(state: ClusterState, movable: np.ndarray) -> None:
    """When the counting check says some broker cannot reach its floor under the raised ceilings, the raised
    networks (solve 2, either floor) really have no flow: skipping them never skips a feasible solve."""
    pb = leaders._problem(state, StageInput.of(state, movable), movable, state.replicas[:, 0].copy(), True)
    if not len(pb.cells):
        return
    raised = pb.cell_hi + leaders._topic_raise(pb, leaders._CellBound.of(pb))[pb.cells // pb.NL]
    available = np.bincount(pb.cell[pb.cell >= 0], minlength=len(pb.cells))
    if leaders._brokers_can_fill(pb, np.minimum(raised, available)):
        return
    for floor in (np.minimum(pb.cell_lo, available), np.zeros_like(pb.cell_lo)):
        net, _ = leaders._network(replace(pb, cell_lo=floor, cell_hi=np.maximum(raised, floor)), pb.cost)
        assert try_min_cost(net) is None


@st.composite
def _clusters(draw):
    """Small clusters of 2-4 topics, RF 2-3 on 4 brokers, some partitions not movable."""
    P = draw(st.integers(2, 12))
    rf = draw(st.integers(2, 3))
    rows = [draw(st.permutations(range(N_BROKERS)))[:rf] for _ in range(P)]
    topics = [draw(st.sampled_from("abcd"[: draw(st.integers(2, 4))])) for _ in range(P)]
    movable = np.array(draw(st.lists(st.booleans(), min_size=P, max_size=P)), dtype=bool) | (np.arange(P) < 2)
    return rows, topics, movable


@settings(max_examples=300, deadline=None)
@given(_clusters())
def test_counting_skips_solve_1_only_when_it_has_no_flow(case):
    """``_counted_out`` is sound: whenever it skips solve (1), by counting or because a topic needs its ceilings
    raised, the solve has no flow."""
    rows, topics, movable = case
    state = _state(rows, topics)
    pb = leaders._problem(state, StageInput.of(state, movable), movable, state.replicas[:, 0].copy(), True)
    bound = leaders._CellBound.of(pb) if len(pb.cells) else None
    if leaders._counted_out(pb, None if bound is None else leaders._topic_raise(pb, bound)):
        net, _ = leaders._network(pb, pb.cost)
        assert try_min_cost(net) is None


@settings(max_examples=200, deadline=None)
@given(_clusters())
def test_topic_raise_is_the_least_raise_per_topic(case):
    """``_topic_raise`` (one max flow per bisection step over the topics still open) against networkx, topic by
    topic: the least d >= 0 such that every partition of the topic whose candidates all lie in selected cells gets
    a leader in one of them with every cell's ceiling raised by d."""
    import networkx as nx

    rows, topics, movable = case
    state = _state(rows, topics)
    pb = leaders._problem(state, StageInput.of(state, movable), movable, state.replicas[:, 0].copy(), True)
    if not len(pb.cells):
        return
    got = leaders._topic_raise(pb, leaders._CellBound.of(pb))
    outside = np.zeros(pb.Pm, dtype=bool)
    outside[pb.rows[pb.cell < 0]] = True
    cell_topic = pb.cells // pb.NL
    for t in np.unique(cell_topic).tolist():
        cand = [(int(r), int(c)) for r, c in zip(pb.rows, pb.cell) if c >= 0 and not outside[r]
                and cell_topic[c] == t]
        need = sorted({r for r, _ in cand})
        d = 0
        while True:
            g = nx.DiGraph()
            for r in need:
                g.add_edge("s", ("r", r), capacity=1)
            for r, c in cand:
                g.add_edge(("r", r), ("c", c), capacity=1)
            for c in np.flatnonzero(cell_topic == t).tolist():
                g.add_edge(("c", c), "t", capacity=int(pb.cell_hi[c]) + d)
            if not need or nx.maximum_flow_value(g, "s", "t") == len(need):
                break
            d += 1
        assert got[t] == d, (t, got[t], d)


def test_counting_skips_solve_1_when_a_topic_cannot_fit_its_cells():
    """Topic "a" has 4 partitions, all on brokers 0 and 1, whose ceilings for it are 1 each: no choice of
    leaders meets them, and counting says so without a solve."""
    rows = [[0, 1], [1, 0], [0, 1], [1, 0], [2, 3], [3, 2], [2, 3], [3, 2]]
    topics = ["a"] * 4 + ["b"] * 4
    state = _state(rows, topics)
    movable = np.ones(8, dtype=bool)
    pb = leaders._problem(state, StageInput.of(state, movable), movable, state.replicas[:, 0].copy(), True)
    assert leaders._counted_out(pb, leaders._topic_raise(pb, leaders._CellBound.of(pb)))
    net, _ = leaders._network(pb, pb.cost)
    assert try_min_cost(net) is None


def test_soft_topics_run_when_a_broker_holds_one_topic():
    """Broker 3 holds only topic "a" (2 partitions, ceiling 1 per broker) and must lead 2 of the 8 partitions."""
    rows = [[0, 3], [1, 3], [0, 1], [1, 2], [2, 0], [0, 1], [1, 2], [2, 0]]
    topics = ["a", "a", "b", "b", "b", "c", "c", "c"]
    state = _state(rows, topics)
    rows, topics = state.replicas.tolist(), [state.topics[t] for t in state.topic]
    used = []
    real_network = leaders._network
    leaders._network = lambda pb, cost, **kw: used.append(kw.get("topic_weight")) or real_network(pb, cost, **kw)
    try:
        out = leaders.balance_leaders(state, state.replicas[:, 0].copy(), np.ones(8, dtype=bool), per_topic=True)
    finally:
        leaders._network = real_network
    assert used[-1] == leaders.TOPIC_WEIGHT
    assert np.bincount(out[:, 0], minlength=4).tolist() == [2, 2, 2, 2]
    best, all_met = _brute(rows, topics)
    assert not all_met and best is not None
