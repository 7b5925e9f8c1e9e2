"""The scale machinery against independent oracles: the pooled network vs the full keep network (a second
solver), the windowed realization vs the full one, per-component solving vs one solve, vectorized list edits vs
a plain loop, and balance within racks when RF = the number of racks vs brute force."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from flowbalance.flow.mincost import solve_min_cost, solve_min_cost_split
from flowbalance.flow.network import Network
from flowbalance.generate import generate_cluster
from flowbalance.metrics import compare, rack_violations, replica_counts
from flowbalance.model import PAD, Brokers, ClusterState
from flowbalance.planner import plan
from flowbalance.stages import pooled as pooled_mod
from flowbalance.stages.common import apply_changes_arrays
from flowbalance.stages.pooled import balance_pooled
from flowbalance.stages.replicas import balance_keep
from flowbalance.targets import intervals, within
from flowbalance.verify import verify_plan

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _moves(before: ClusterState, reps: np.ndarray) -> int:
    return compare(before, before.with_replicas(reps)).moves


def _random_change(n: int, racks: int, topics: int, seed: int, change: str, partitions: tuple[int, int]
                   ) -> tuple[ClusterState, np.ndarray, np.ndarray]:
    """A small skewed cluster (rack-aware when it has racks) and a change to plan: nothing, the last broker
    removed, or RF + 1 on half the partitions (no racks). Returns (state, target RF, movable)."""
    rf = min(3, n - 1)
    if racks:
        rf = min(rf, racks)
    state = generate_cluster(brokers=n, racks=racks, topics=topics, partitions=partitions, rf=rf, skew=0.6,
                             rack_aware=bool(racks), seed=seed)
    b = state.brokers
    target_rf = state.rf.astype(np.int64).copy()
    if change == "remove":
        state = state.with_brokers(b.with_removed([int(b.ids[-1])]))
    elif change == "rf" and rf + 1 < n and not racks:
        target_rf[: len(target_rf) // 2] = rf + 1
    return state, target_rf, np.ones(state.num_partitions, dtype=bool)


@SETTINGS
@given(st.integers(3, 9), st.integers(0, 3), st.integers(2, 8), st.integers(0, 10_000), st.booleans(),
       st.sampled_from(["none", "remove", "rf"]))
def test_pooled_moves_equal_keep_network(n, racks, topics, seed, per_topic, change):
    """Same targets, two different networks: the realized pooled optimum moves exactly as many replicas as the full
    keep network, and the result meets the same broker totals."""
    state, target_rf, movable = _random_change(n, racks, topics, seed, change, (1, 6))
    pooled = balance_pooled(state, target_rf, movable, per_topic=per_topic)
    keep = balance_keep(state, target_rf, movable, per_topic=per_topic)
    if pooled.replicas is None:  # realization failed: the planner falls back to the keep network
        return
    if pooled.rack_forced:  # different targets (within racks): compared with brute force below
        return
    after = state.with_replicas(pooled.replicas)
    verify_plan(state, after, target_rf, movable)
    assert _moves(state, pooled.replicas) == _moves(state, keep.replicas)
    total = int(target_rf.sum())
    lo, hi = intervals(total, state.brokers.weight, state.brokers.live)
    live = state.brokers.live
    if within(replica_counts(state.with_replicas(keep.replicas)), lo, hi, live):
        assert within(replica_counts(after), lo, hi, live)


@SETTINGS
@given(st.integers(0, 10_000), st.booleans())
def test_windowed_realization_matches_full(seed, per_topic):
    """Forcing the realization to start from small windows gives the same number of moves and a valid plan."""
    state = generate_cluster(brokers=12, topics=6, partitions=(4, 20), rf=3, skew=0.8, seed=seed)
    movable = np.ones(state.num_partitions, dtype=bool)
    full = balance_pooled(state, state.rf, movable, per_topic=per_topic)
    old = pooled_mod._REALIZE_ARCS
    try:
        pooled_mod._REALIZE_ARCS = 0
        win = balance_pooled(state, state.rf, movable, per_topic=per_topic)
    finally:
        pooled_mod._REALIZE_ARCS = old
    assert (full.replicas is None) == (win.replicas is None)  # the last window is the whole pool
    if win.replicas is not None and full.replicas is not None:
        verify_plan(state, state.with_replicas(win.replicas), state.rf, movable)
        assert _moves(state, win.replicas) == _moves(state, full.replicas) == full.moves


@SETTINGS
@given(st.integers(1, 6), st.integers(0, 10_000))
def test_split_solve_equals_one_solve(components, seed):
    """Independent components solved one by one: same optimal cost as one solve of the whole network."""
    rng = np.random.default_rng(seed)
    net = Network()
    comp = []
    for k in range(components):
        n = int(rng.integers(2, 7))
        nodes = net.nodes(n)
        comp += [k] * n
        m = int(rng.integers(n, 3 * n))
        t = rng.integers(0, n, m)
        h = rng.integers(0, n, m)
        keep = t != h
        net.add(nodes[t[keep]], nodes[h[keep]], rng.integers(1, 5, keep.sum()), rng.integers(-3, 6, keep.sum()))
        # a feasible supply: send some units from node 0 to node n-1 along a chain of big arcs
        net.add(nodes[:-1], nodes[1:], 50, 7)
        sup = np.zeros(n, dtype=np.int64)
        sup[0], sup[-1] = 3, -3
        comp_sup = sup
        net.supply = comp_sup if net.supply is None else np.concatenate([net.supply, comp_sup])
    flows_split = solve_min_cost_split(net, np.array(comp))
    flows_one, cost_one = solve_min_cost(net)
    _, _, _, costs = net.arrays()
    assert int((flows_split * costs).sum()) == cost_one


@SETTINGS
@given(st.integers(0, 10_000))
def test_apply_changes_arrays_matches_a_loop(seed):
    rng = np.random.default_rng(seed)
    P, W = int(rng.integers(1, 8)), int(rng.integers(1, 4))
    reps = np.full((P, W), PAD, dtype=np.int32)
    rel_r, rel_c, add_r, add_i = [], [], [], []
    for r in range(P):
        k = int(rng.integers(1, W + 1))
        row = rng.choice(20, size=k, replace=False)
        reps[r, :k] = row
        gone = [c for c in range(k) if rng.random() < 0.4]
        rel_r += [r] * len(gone)
        rel_c += gone
        fresh = [x for x in rng.choice(np.arange(20, 40), size=int(rng.integers(0, 3)), replace=False)]
        add_r += [r] * len(fresh)
        add_i += fresh
    got = apply_changes_arrays(reps, np.array(rel_r), np.array(rel_c), np.array(add_r), np.array(add_i))
    for r in range(P):
        old = [int(x) for x in reps[r] if x != PAD]
        gone = {rel_c[i] for i in range(len(rel_r)) if rel_r[i] == r}
        new = sorted(int(add_i[i]) for i in range(len(add_r)) if add_r[i] == r)
        want = []
        for c, x in enumerate(old):
            if c not in gone:
                want.append(x)
            elif new:
                want.append(new.pop(0))
        want += new
        assert [int(x) for x in got[r] if x != PAD] == want


def _within_rack_brute_force(state: ClusterState, per_rack_ids: list[list[int]]) -> int:
    """Fewest moves to make every broker's count its share within its rack (±1), one replica per rack."""
    parts = [[int(x) for x in row if x != PAD] for row in state.replicas]
    best = None
    for choice in itertools.product(*[itertools.product(*per_rack_ids) for _ in parts]):
        counts: dict[int, int] = {}
        for sel in choice:
            for x in sel:
                counts[x] = counts.get(x, 0) + 1
        ok = True
        for ids in per_rack_ids:
            c = [counts.get(x, 0) for x in ids]
            if max(c) - min(c) > 1:
                ok = False
        if not ok:
            continue
        moves = sum(len(set(sel) - set(p)) for sel, p in zip(choice, parts))
        best = moves if best is None else min(best, moves)
    return best


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 4))
def test_rf_equal_to_racks_balances_within_racks(seed, nparts):
    """Racks of 3 and 1 brokers, RF 2 = racks: every rack's total is fixed; the plan balances within the big rack
    with the fewest moves (brute force), keeps the rack rule, and says so."""
    rng = np.random.default_rng(seed)
    ids = [0, 1, 2, 3]
    rack_of = {0: "a", 1: "a", 2: "a", 3: "b"}
    b = Brokers.build(ids, [rack_of[i] for i in ids])
    rows = np.array([[int(rng.integers(0, 3)), 3] for _ in range(nparts)])
    for r in rows:
        rng.shuffle(r)
    state = ClusterState.build(b, ["t"] * nparts, list(range(nparts)), rows)
    p = plan(state, per_topic=False)
    assert len(rack_violations(p.after)) == 0
    c = replica_counts(p.after)
    assert c[:3].max() - c[:3].min() <= 1
    want = _within_rack_brute_force(state, [[0, 1, 2], [3]])
    assert p.changes.moves == want
    if not p.is_empty:
        assert p.certificate.proven_optimal


def _cell_costs(state: ClusterState, reps: np.ndarray, target_rf: np.ndarray, movable: np.ndarray) -> tuple[int, int]:
    """(graded per-topic excess, units outside the per-topic intervals) of a plan, counted cell by cell in plain
    Python over the targets of ``state`` (the objective the split and pooled networks minimize after moves)."""
    from flowbalance.stages.common import TOPIC_STEPS
    from flowbalance.stages.stage_targets import stage_targets

    kw = dict(per_topic=True, racks=True, count_targets=True, topic_slack=0, lower_bound=None)
    tg = stage_targets(state, target_rf, movable, **kw)
    after = stage_targets(state.with_replicas(reps), target_rf, movable, **kw).c_tb
    graded = outside = 0
    for x, lo, hi in zip(after.tolist(), tg.tlo.tolist(), tg.thi.tolist()):
        d = max(x - hi, lo - x, 0)
        graded += sum(min(k, TOPIC_STEPS + 1) for k in range(1, d + 1))
        outside += d
    return graded, outside


def _split(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray, *, per_topic: bool = True,
           topics_after_moves: bool = False):
    """``balance_split`` on the default targets of stage 1 (rack rule, broker intervals, no slack)."""
    from flowbalance.stages.split import balance_split
    from flowbalance.stages.stage_targets import stage_targets

    tg = stage_targets(state, target_rf, movable, per_topic=per_topic, racks=True, count_targets=True,
                       topic_slack=0, lower_bound=None)
    return balance_split(state, tg, topics_after_moves=topics_after_moves)


@SETTINGS
@given(st.integers(3, 9), st.integers(0, 3), st.integers(1, 7), st.integers(0, 10_000),
       st.sampled_from(["none", "remove", "rf"]), st.sampled_from(["moves first", "strict", "none"]),
       st.booleans(), st.booleans())
def test_split_network_optimum_equals_the_pooled_optimum(n, racks, topics, seed, change, mode, pruned, lazy):
    """The split network (no partition nodes) against the pooled network on the same targets: where it applies
    and realizes, its plan is valid and as good at every level the mode ranks: moves, then the graded per-topic
    excess (fewest moves first) or the per-topic units outside their intervals, then moves (strict). With
    ``pruned``, the split network is solved from its cheapest arcs and proven by potentials (``flow.pruned``), as
    on large clusters; with ``lazy``, the arrival arcs of cells that hold none of their topic are built only when
    picked or priced below 0 (``split._LazyArcs``), as from 4,000,000 cells."""
    from unittest import mock

    import flowbalance.stages.split as split_mod

    state, target_rf, movable = _random_change(n, racks, topics, seed, change, (1, 8))
    kw = dict(per_topic=mode != "none", topics_after_moves=mode == "moves first")
    first_piece = split_mod._first_piece

    def checked_first_piece(tg, cells, lexicographic):  # a lazy cell's first piece is _segments' of [0, 1)
        got = first_piece(tg, cells, lexicographic)
        zero = np.zeros(len(cells), dtype=np.int64)
        want = split_mod._segments(tg, cells, zero, zero + 1, lexicographic)
        assert np.array_equal(got[0], want[2]) and np.array_equal(got[1], want[3])
        return got

    with mock.patch.object(split_mod, "PRUNE_FROM_ARCS", 0 if pruned else split_mod.PRUNE_FROM_ARCS), \
            mock.patch.object(split_mod, "PRUNE_SLACK", 0 if pruned else split_mod.PRUNE_SLACK), \
            mock.patch.object(split_mod, "LAZY_FROM_CELLS", 0 if lazy else split_mod.LAZY_FROM_CELLS), \
            mock.patch.object(split_mod, "LAZY_SHARE", 0 if lazy else split_mod.LAZY_SHARE), \
            mock.patch.object(split_mod, "_first_piece", checked_first_piece):
        split = _split(state, target_rf, movable, **kw)
    pooled = balance_pooled(state, target_rf, movable, **kw)
    if split is None or pooled.replicas is None:
        return
    verify_plan(state, state.with_replicas(split.replicas), target_rf, movable)
    moves = (_moves(state, split.replicas), _moves(state, pooled.replicas))
    if mode == "none":
        assert moves[0] == moves[1]
        return
    cells = (_cell_costs(state, split.replicas, target_rf, movable),
             _cell_costs(state, pooled.replicas, target_rf, movable))
    if mode == "moves first":
        assert (moves[0], cells[0][0]) == (moves[1], cells[1][0])
    else:
        assert (cells[0][1], moves[0]) == (cells[1][1], moves[1])


def test_split_network_leaves_rf_decreases_to_the_pooled_network():
    """A partition that must lose a replica needs the choice of which one: the split network does not apply, and
    the planner still plans it (pooled network, or the keep network when that cannot be realized)."""
    state = generate_cluster(brokers=6, topics=3, partitions=(4, 6), rf=3, seed=4)
    target_rf = np.full(state.num_partitions, 2, dtype=np.int64)
    movable = np.ones(state.num_partitions, dtype=bool)
    assert _split(state, target_rf, movable) is None
    p = plan(state, replication_factor=2)
    assert not any("split network" in n for n in p.certificate.notes)
    assert any("pooled" in n for n in p.certificate.notes)
    verify_plan(state, p.after, target_rf, movable)


def test_method_md_split_example():
    """docs/method.md's split-network example: p0, p1, p2 of topic t on brokers {0, 1}, broker 2 new. Brokers 0 and
    1 each release one unit; broker 0's cell gives p0, broker 1's would give p0 too but passes to p1 (a partition
    that left once is passed over), so broker 2 receives p0 and p1: two moves, M* = 2."""
    br = Brokers.build([0, 1, 2], None)
    state = ClusterState.build(br, ["t"] * 3, [0, 1, 2], np.array([[0, 1], [0, 1], [0, 1]]))
    movable = np.ones(3, dtype=bool)
    res = _split(state, state.rf.astype(np.int64), movable, topics_after_moves=True)
    assert res is not None and res.moves == 2
    assert [sorted(r) for r in res.replicas.tolist()] == [[1, 2], [0, 2], [0, 1]]


@SETTINGS
@given(st.integers(0, 10_000), st.sampled_from(["graded", "strict", "none"]), st.booleans())
def test_split_segments_match_a_unit_by_unit_cut(seed, mode, compiled):
    """The split network's parallel arcs per cell: the counts x in [first, end) grouped by the marginal-cost
    piece each falls in, as a loop over every x finds them (cell, units, cost, piece), in cell then piece order,
    whatever the block of cells cut at a time, by numpy or (``compiled``, large clusters) by
    ``segments_kernel``; each unit's cost is the module doc's marginal cost of x."""
    from types import SimpleNamespace

    from flowbalance.stages import split as split_mod
    from flowbalance.stages.common import TOPIC_STEPS
    from flowbalance.stages.common import penalties
    from flowbalance.stages.split import _layout

    def _segments(*args, **kw):
        saved = split_mod.COMPILED_SEGMENTS_FROM
        split_mod.COMPILED_SEGMENTS_FROM = 0 if compiled else 10 ** 9
        try:
            return split_mod._segments(*args, **kw)
        finally:
            split_mod.COMPILED_SEGMENTS_FROM = saved

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 30))
    tlo = rng.integers(0, 6, n)
    tg = SimpleNamespace(per_topic=mode != "none", tlo=tlo, thi=tlo + rng.integers(0, 3, n), total=50,
                         si=SimpleNamespace(Pm=10 ** 6))  # movable partitions: enough for the compiled cut
    cells = np.sort(rng.choice(n, size=int(rng.integers(1, n + 1)), replace=False))
    first = rng.integers(0, 8, len(cells))
    end = first + rng.integers(0, 12, len(cells))
    got = _segments(tg, cells, first, end, mode == "graded", block=int(rng.integers(1, 40)))
    lo, hi, below, above, costs = _layout(tg, cells, mode == "graded")
    st_ = np.hstack([np.full((len(cells), 1), np.iinfo(np.int64).min // 4), lo[:, None] + below[None, :],
                     hi[:, None] + above[None, :]])  # where piece k of each cell starts
    S, pen = TOPIC_STEPS, penalties(1, 50, 1, 1)[0]

    def marginal(x: int, lo: int, hi: int) -> int:  # the cost of the unit that takes the count from x to x + 1
        if mode == "none":
            return 0
        if mode == "strict":
            return -pen if x < lo else 0 if x < hi else pen
        return max(x - lo, -(S + 1)) if x < lo else 0 if x < hi else min(x - hi + 1, S + 1)

    want = []
    for i, c in enumerate(cells.tolist()):
        run = {}
        for x in range(int(first[i]), int(end[i])):
            k = int(np.flatnonzero(st_[i] <= x).max())
            assert int(costs[k]) == marginal(x, int(tg.tlo[c]), int(tg.thi[c]))
            run[k] = run.get(k, 0) + 1
        want += [(c, u, int(costs[k]), k) for k, u in sorted(run.items())]
    assert list(zip(*[a.tolist() for a in got])) == want


@SETTINGS
@given(st.lists(st.integers(0, 400), min_size=1, max_size=40, unique=True),
       st.lists(st.integers(0, 10 ** 6), max_size=300), st.integers(0, 2), st.sampled_from([None, -2, 5, 401, 10 ** 6]))
@example(list(range(10)), [1, 2, 3], 1, -2)
def test_index_of_matches_a_dict(ids, picks, pad_every, stranger):
    """Broker ids to dense indices, by table (many ids) or by binary search (few): each id's position in the
    sorted ids, PAD stays PAD, and the first unknown id (in row order) is the KeyError's, as a dict finds them.
    Repeated to 4,096 ids and more so that the table is tried whenever the ids allow it."""
    from flowbalance.model import LOOKUP_FROM

    br = Brokers.build(ids)
    pos = {b: i for i, b in enumerate(sorted(ids))}
    asked = [ids[p % len(ids)] for p in picks] + [PAD] * pad_every
    if stranger is not None and picks:
        asked.insert(picks[0] % len(asked), stranger)
    arr = np.array(asked * (LOOKUP_FROM // max(len(asked), 1) + 1), dtype=np.int64)
    unknown = [x for x in arr.tolist() if x != PAD and x not in pos]
    if unknown:
        with pytest.raises(KeyError) as err:
            br.index_of(arr)
        assert err.value.args == (unknown[0],)
        return
    got = br.index_of(arr.reshape(-1, 1))
    assert got.dtype == np.int32
    assert got.ravel().tolist() == [PAD if x == PAD else pos[x] for x in arr.tolist()]
    assert br.index_of(arr[:3]).tolist() == [PAD if x == PAD else pos[x] for x in arr[:3].tolist()]
