"""flowbalance.metrics and flowbalance.targets checked against independent plain-Python oracles.

Every expected value comes from ``tests/oracles.py`` (loops over partitions, dicts, itertools, exact
``Fraction`` arithmetic; it does not import flowbalance) or is written out by hand.  The library is only
called to produce the value under test.  Random clusters are drawn by hypothesis and built through the public
model API (``Brokers.build``, ``ClusterState.build`` with rows in shuffled order, ``Brokers.with_removed``).
"""
from __future__ import annotations

import importlib.util
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from flowbalance import metrics, targets
from flowbalance.load import load_cluster, mark_removed
from flowbalance.model import PAD, Brokers, ClusterState


def _load_oracles():
    # Load tests/oracles.py by path so this works whether or not tests/ is a package.
    name = "flowbalance_test_oracles"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("oracles.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


O = _load_oracles()
BrokerSpec, PartSpec, Spec = O.BrokerSpec, O.PartSpec, O.Spec

SEED_DIR = Path(__file__).resolve().parent.parent / "testdata" / "seed"

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TOPIC_NAMES = ["alpha", "beta", "Gamma", "d.e-f", "orders_2"]
RACK_NAMES = ["rack-a", "rack-b", "rack-c"]
WEIGHTS = [0.5, 1.0, 1.5, 2.0, 3.0]


# ---- building states from plain specs ------------------------------------------------------------
def build_state(spec: Spec, row_order=None, broker_order=None, width: int | None = None) -> ClusterState:
    """A ClusterState for ``spec``: brokers and rows fed in the given (shuffled) orders, replicas padded with -1."""
    ids = spec.ids if broker_order is None else list(broker_order)
    brokers = Brokers.build(
        ids,
        racks=[spec.brokers[b].rack for b in ids] if spec.has_racks else None,
        weights=[spec.brokers[b].weight for b in ids],
    )
    if spec.removed:
        brokers = brokers.with_removed(spec.removed)
    parts = list(spec.partitions)
    if row_order is not None:
        parts = [parts[i] for i in row_order]
    k = max([len(p.replicas) for p in parts] + [1]) if width is None else width
    reps = np.full((len(parts), k), PAD, dtype=np.int64)
    for i, p in enumerate(parts):
        reps[i, : len(p.replicas)] = p.replicas
    sizes = None
    if O.has_sizes(spec):
        sizes = [-1 if p.size is None else p.size for p in parts]
    return ClusterState.build(brokers, [p.topic for p in parts], [p.partition for p in parts], reps, sizes)


@st.composite
def specs(
    draw,
    *,
    max_brokers: int = 7,
    max_topics: int = 4,
    max_parts: int = 8,
    max_total_parts: int | None = None,
    max_rf: int = 3,
    racks: bool | None = None,
    weights: bool | None = None,
    removed: bool | None = None,
    sizes: bool | None = None,
):
    n = draw(st.integers(1, max_brokers))
    ids = draw(st.lists(st.integers(0, 60), min_size=n, max_size=n, unique=True))
    use_racks = draw(st.booleans()) if racks is None else racks
    rack_of = {b: None for b in ids}
    if use_racks:
        k = draw(st.integers(2, 3))
        rack_of = {b: draw(st.sampled_from(RACK_NAMES[:k])) for b in ids}
    use_weights = draw(st.booleans()) if weights is None else weights
    weight_of = {b: 1.0 for b in ids}
    if use_weights:
        weight_of = {b: draw(st.sampled_from(WEIGHTS)) for b in ids}
    use_removed = draw(st.booleans()) if removed is None else removed
    gone: set[int] = set()
    if use_removed and n > 1:
        gone = set(draw(st.lists(st.sampled_from(ids), min_size=1, max_size=n - 1, unique=True)))
    brokers = {b: BrokerSpec(rack_of[b], weight_of[b], b in gone) for b in ids}

    topics = draw(st.lists(st.sampled_from(TOPIC_NAMES), min_size=1, max_size=max_topics, unique=True))
    use_sizes = draw(st.booleans()) if sizes is None else sizes
    parts = []
    for t in topics:
        nums = draw(st.lists(st.integers(0, 30), min_size=1, max_size=max_parts, unique=True))
        for num in nums:
            rf = draw(st.integers(1, min(max_rf, n)))
            perm = draw(st.permutations(ids))
            size = None
            if use_sizes:
                size = draw(st.one_of(st.none(), st.integers(0, 10_000))) if draw(st.booleans()) else draw(
                    st.integers(0, 10_000)
                )
            parts.append(PartSpec(t, num, tuple(perm[:rf]), size))
    if max_total_parts is not None:
        parts = parts[:max_total_parts]
    parts.sort(key=lambda p: (p.topic, p.partition))
    return Spec(brokers, tuple(parts))


@st.composite
def clusters(draw, **kw):
    """(spec, state): the state is built with brokers and rows in a random order."""
    spec = draw(specs(**kw))
    rows = draw(st.permutations(range(len(spec.partitions))))
    border = draw(st.permutations(spec.ids))
    extra = draw(st.integers(0, 1))  # sometimes an all-padding column on the right
    width = max(len(p.replicas) for p in spec.partitions) + extra
    return spec, build_state(spec, rows, border, width)


def by_id(state: ClusterState, arr) -> dict[int, object]:
    return {int(b): v for b, v in zip(state.brokers.ids, np.asarray(arr).tolist())}


def close(x, y: Fraction, tol: float = 1.5e-3) -> bool:
    # the library rounds non-integral spreads to 3 decimals (metrics._clean)
    return abs(float(x) - float(y)) <= tol


# ==== 1. M* against brute force ==================================================================
@st.composite
def tiny_with_target(draw, *, weights=None, removed=None, change_rf=None):
    """<= 4 brokers, <= 4 partitions, RF <= 2, and optionally a target RF per partition (<= 2, <= live)."""
    spec, state = draw(clusters(max_brokers=4, max_topics=2, max_parts=2, max_total_parts=4, max_rf=2,
                                racks=False, weights=weights, removed=removed))
    live_n = len(spec.live)
    use_target = draw(st.booleans()) if change_rf is None else change_rf
    target = None
    if use_target:
        target = [draw(st.integers(1, min(2, live_n))) for _ in spec.partitions]
    return spec, state, target


@SETTINGS
@given(tiny_with_target(weights=False, removed=False, change_rf=False))
def test_mstar_equals_brute_force_pure_rebalance(case):
    """Equal weights, no removed broker, no RF change: M* (measure().min_moves) is EXACTLY the fewest arrivals
    over every assignment whose counts lie in the [floor, ceil] intervals (research §3.1, attainability)."""
    spec, state, _ = case
    best = O.brute_force_min_arrivals(spec)
    assert best is not None  # with equal weights a balanced assignment always exists
    m = metrics.measure(state)
    assert m.min_moves == best
    assert m.min_moves == O.doc_pure_rebalance_mstar([O.replica_counts(spec)[b] for b in spec.live])


@SETTINGS
@given(tiny_with_target())
def test_mstar_is_lower_bound_of_brute_force(case):
    """Any mix of weights, removed brokers and target RF: M* never exceeds the brute-force minimum
    (it is only a lower bound there, research §3.1 / §3.4; see test_mstar_gap_with_removed_broker)."""
    spec, state, target = case
    best = O.brute_force_min_arrivals(spec, target)
    m = metrics.measure(state, target_rf=None if target is None else np.array(target))
    if best is None:
        return  # no assignment meets the intervals (weighted quotas can exceed the partition count)
    assert m.min_moves <= best


@SETTINGS
@given(tiny_with_target(weights=False))
def test_mstar_equals_count_vector_bound(case):
    """M* is exactly the count-vector bound: min over integer t (live brokers) with lo <= t <= hi and
    sum t = R' of sum (t - c)+, with exact [floor, ceil] intervals; removed brokers and target RF included."""
    spec, state, target = case
    total_after = sum(len(p.replicas) for p in spec.partitions) if target is None else sum(target)
    iv = O.exact_intervals(total_after, spec)
    c = O.replica_counts(spec)
    ids = spec.ids
    expect = O.count_vector_min_arrivals(
        [c[b] for b in ids], total_after, [iv[b][0] for b in ids], [iv[b][1] for b in ids],
        [not spec.brokers[b].removed for b in ids],
    )
    m = metrics.measure(state, target_rf=None if target is None else np.array(target))
    assert m.min_moves == expect


@SETTINGS
@given(clusters(max_brokers=5, max_topics=3, max_parts=5, racks=False))
def test_mstar_count_vector_bound_random_clusters(case):
    """Same as above on larger random clusters (weights, removed brokers allowed)."""
    spec, state = case
    total = sum(len(p.replicas) for p in spec.partitions)
    iv = O.exact_intervals(total, spec)
    c = O.replica_counts(spec)
    ids = spec.ids
    expect = O.count_vector_min_arrivals(
        [c[b] for b in ids], total, [iv[b][0] for b in ids], [iv[b][1] for b in ids],
        [not spec.brokers[b].removed for b in ids],
    )
    assert metrics.measure(state).min_moves == expect


@st.composite
def count_vectors(draw):
    """Random counts, a live mask, arbitrary intervals [lo, hi] (width <= 3) and R' with sum lo <= R' <= sum hi."""
    n = draw(st.integers(1, 7))
    counts = draw(st.lists(st.integers(0, 12), min_size=n, max_size=n))
    live = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    assume(any(live))
    lo = [draw(st.integers(0, 8)) if lv else 0 for lv in live]
    hi = [l + (draw(st.integers(0, 3)) if lv else 0) for l, lv in zip(lo, live)]
    slo = sum(l for l, lv in zip(lo, live) if lv)
    shi = sum(h for h, lv in zip(hi, live) if lv)
    total = draw(st.integers(slo, shi))
    return counts, total, lo, hi, live


@SETTINGS
@given(count_vectors())
def test_min_arrivals_count_vector_brute_force(case):
    counts, total, lo, hi, live = case
    expect = O.count_vector_min_arrivals(counts, total, lo, hi, live)
    got = targets.min_arrivals(np.array(counts), total, np.array(lo), np.array(hi), np.array(live))
    assert got == expect


@SETTINGS
@given(
    st.lists(st.tuples(st.integers(0, 15), st.sampled_from(WEIGHTS), st.booleans()), min_size=1, max_size=7),
    st.integers(0, 60),
)
def test_min_arrivals_with_weighted_intervals_brute_force(brokers, extra):
    """Intervals from exact weighted quotas; R' drawn freely (RF changes), counts arbitrary."""
    assume(any(not r for _, _, r in brokers))
    spec = Spec({i: BrokerSpec(None, w, r) for i, (_, w, r) in enumerate(brokers)}, ())
    counts = [c for c, _, _ in brokers]
    total = extra
    iv = O.exact_intervals(total, spec)
    assume(all(iv[i][1] - iv[i][0] <= 1 for i in iv))
    ids = spec.ids
    lo, hi = [iv[b][0] for b in ids], [iv[b][1] for b in ids]
    live = [not r for _, _, r in brokers]
    assume(math.prod(h - l + 1 for h, l in zip(hi, lo)) <= 5000)
    expect = O.count_vector_min_arrivals(counts, total, lo, hi, live)
    got = targets.min_arrivals(np.array(counts), total, np.array(lo), np.array(hi), np.array(live))
    assert got == expect


@SETTINGS
@given(
    st.lists(st.tuples(st.sampled_from(WEIGHTS), st.booleans()), min_size=1, max_size=7),
    st.integers(0, 200),
)
def test_intervals_and_quotas_exact(brokers, total):
    """targets.intervals / quotas against exact Fraction floor/ceil of total * w / W (removed -> [0, 0])."""
    assume(any(not r for _, r in brokers))
    spec = Spec({i: BrokerSpec(None, w, r) for i, (w, r) in enumerate(brokers)}, ())
    weight = np.array([w for w, _ in brokers])
    live = np.array([not r for _, r in brokers])
    lo, hi = targets.intervals(total, weight, live)
    q = targets.quotas(total, weight, live)
    exact = O.exact_quotas(total, spec)
    iv = O.exact_intervals(total, spec)
    for i in spec.ids:
        assert (int(lo[i]), int(hi[i])) == iv[i]
        assert abs(q[i] - float(exact.get(i, 0))) < 1e-9
    assert int(lo[live].sum()) <= total <= int(hi[live].sum())


# ==== 2. the seed example ========================================================================
@pytest.fixture
def seed_state() -> ClusterState:
    loaded = load_cluster(SEED_DIR / "assignment.json", brokers=SEED_DIR / "brokers.csv")
    return mark_removed(loaded.state, [19])


def test_seed_metrics_by_hand(seed_state):
    """testdata/seed (killerwhile's example): 20 brokers 0..19, even ids in rack a, odd in rack b; one topic
    x.y.z.t with 10 partitions p -> [(7+p) % 20, (18+p) % 20 ... ] i.e. every broker holds exactly one replica;
    broker 19 is removed.  R = R' = 20, N = 19 live -> q = 1, r = 1: every live broker's interval is [1, 2],
    all 19 live brokers sit at 1, so exactly one more replica (the one on 19) must arrive: M* = 1."""
    m = metrics.measure(seed_state)
    assert m.min_moves == 1
    assert m.num_partitions == 10 and m.num_replicas == 20
    assert m.replicas.tolist() == [1] * 20
    assert m.replicas_on_removed == 1
    assert m.replica_lo.tolist() == [1] * 19 + [0]
    assert m.replica_hi.tolist() == [2] * 19 + [0]
    assert m.replica_spread == 0  # all live brokers hold 1
    assert m.replicas_balanced is False  # the removed broker 19 still holds a replica
    # leaders: 7, 8, 9, 0, 1, ..., 6 -> brokers 0..9 lead one partition, 10..18 none (19 is not live)
    assert m.leaders.tolist() == [1] * 10 + [0] * 10
    assert m.leader_spread == 1
    assert m.leaders_balanced is True  # P = 10 over 19 live brokers: intervals [0, 1]
    assert m.rack_violations.tolist() == []  # every pair is (even, odd) = (rack a, rack b)
    assert (m.topic.spread, m.topic.worst_topic, m.topic.unbalanced_topics) == (0, "x.y.z.t", 0)
    assert m.bytes is None and m.bytes_spread is None


def test_seed_failover_by_hand(seed_state):
    """Failing any live broker f: f's partition (if it leads one) goes to its follower, which led nothing;
    survivors then hold 0 or 1 leaders (follower of 8 is the removed 19, which is not a survivor).
    Every row is min 0, max 1, spread 1; the worst is the first broker, 0."""
    fo = metrics.broker_failover(seed_state)
    assert fo.rows() == [{"failed": f, "min": 0, "max": 1, "spread": 1} for f in range(19)]
    assert fo.worst == (0, 1)
    # Rack a fails: partitions led by 8, 0, 2, 4, 6 go to 19 (removed), 11, 13, 15, 17; rack b's live
    # brokers 1, 3, 5, 7, 9 already lead one each -> all 9 survivors lead exactly 1.
    # Rack b fails: partitions led by 7, 9, 1, 3, 5 go to 18, 10, 12, 14, 16; with 8, 0, 2, 4, 6 every one of
    # the 10 even brokers leads exactly 1.
    rf = metrics.rack_failover(seed_state)
    assert rf.rows() == [
        {"failed": "a", "min": 1, "max": 1, "spread": 0},
        {"failed": "b", "min": 1, "max": 1, "spread": 0},
    ]
    assert rf.worst == ("a", 0)


def test_seed_hand_fix_compare(seed_state):
    """The hand fix of the seed: partition 1 [8, 19] -> [8, 1]: one arrival, no leader change."""
    reps = seed_state.replicas.copy()
    row = seed_state.find("x.y.z.t", 1)
    reps[row] = [8, 1]
    after = seed_state.with_replicas(reps)
    ch = metrics.compare(seed_state, after)
    assert (ch.moves, ch.bytes_moved, ch.leader_changes, ch.reorder_only, ch.rf_changed) == (1, None, 0, 0, 0)
    assert ch.changed_rows.tolist() == [row]
    m = metrics.measure(after)
    assert m.min_moves == 0 and m.replicas_on_removed == 0
    assert m.replicas_balanced is True


# ==== 3. failover ================================================================================
@SETTINGS
@given(clusters(weights=False))
def test_broker_failover_by_simulation(case):
    """Per live broker f (the library fails live brokers only): table rows and the worst row."""
    spec, state = case
    expect = O.broker_failover(spec)
    fo = metrics.broker_failover(state)
    assert fo.failed == spec.live
    for row in fo.rows():
        lo, hi, sp = expect[row["failed"]]
        assert (row["min"], row["max"], row["spread"]) == (lo, hi, sp)
    wk, wv = O.worst({f: v[2] for f, v in expect.items()}, spec.live)
    assert fo.worst == ((wk, wv) if wk is not None else (None, 0.0))
    assert metrics.measure(state).failover.rows() == fo.rows()


@SETTINGS
@given(clusters(weights=True))
def test_broker_failover_weighted_spread(case):
    spec, state = case
    expect = O.broker_failover(spec)
    fo = metrics.broker_failover(state)
    assert fo.failed == spec.live
    for f, a, b, s in zip(fo.failed, fo.min, fo.max, fo.spread):
        lo, hi, sp = expect[f]
        assert (int(a), int(b)) == (lo, hi)
        assert close(s, sp)


@SETTINGS
@given(clusters(racks=True, weights=False))
def test_rack_failover_by_simulation(case):
    spec, state = case
    expect = O.rack_failover(spec)
    rf = metrics.rack_failover(state)
    assert rf.failed == sorted(expect)
    for row in rf.rows():
        lo, hi, sp = expect[row["failed"]]
        assert (row["min"], row["max"], row["spread"]) == (lo, hi, sp)
    wk, wv = O.worst({k: v[2] for k, v in expect.items()}, sorted(expect))
    assert rf.worst == (wk, wv)


@SETTINGS
@given(clusters(racks=True, weights=True))
def test_rack_failover_weighted_spread(case):
    spec, state = case
    expect = O.rack_failover(spec)
    rf = metrics.rack_failover(state)
    assert rf.failed == sorted(expect)
    for k, a, b, s in zip(rf.failed, rf.min, rf.max, rf.spread):
        lo, hi, sp = expect[k]
        assert (int(a), int(b)) == (lo, hi)
        assert close(s, sp)


def test_rack_failover_empty_without_racks():
    spec = Spec({1: BrokerSpec(), 2: BrokerSpec()}, (PartSpec("t", 0, (1, 2)),))
    assert metrics.rack_failover(build_state(spec)).failed == []


# ==== 4. per-topic spread ========================================================================
@SETTINGS
@given(clusters(weights=False), st.sampled_from([None, 1, 7]))
def test_topic_spread_unweighted(case, chunk):
    """max over topics of (max - min over live brokers of the topic's replica count); worst = first topic (in
    sorted order) with that spread; also the number of topics outside their [floor, ceil] intervals.
    ``chunk`` small forces the chunked path (one or a few topics per chunk)."""
    spec, state = case
    per_topic = O.topic_spreads(spec)
    wk, wv = O.worst(per_topic, spec.topics)
    ts = metrics.topic_spread(state) if chunk is None else metrics.topic_spread(state, chunk=chunk)
    assert ts.spread == wv
    assert ts.worst_topic == wk
    assert ts.unbalanced_topics == O.topic_unbalanced(spec)


@SETTINGS
@given(clusters(weights=True))
def test_topic_spread_weighted(case):
    spec, state = case
    per_topic = O.topic_spreads(spec)
    wv = max(per_topic.values())
    ts = metrics.topic_spread(state)
    assert close(ts.spread, wv)
    assert close(per_topic[ts.worst_topic], wv)  # ties within rounding may pick either
    assert ts.unbalanced_topics == O.topic_unbalanced(spec)


# ==== 5. counts, spreads, bytes, racks, removed ===================================================
@SETTINGS
@given(clusters())
def test_counts_spreads_bytes_racks(case):
    spec, state = case
    m = metrics.measure(state)
    live = spec.live
    c, L, by = O.replica_counts(spec), O.leader_counts(spec), O.byte_counts(spec)
    assert by_id(state, m.replicas) == c
    assert by_id(state, m.leaders) == L
    assert m.brokers.tolist() == spec.ids
    if by is None:
        assert m.bytes is None and m.bytes_spread is None
    else:
        assert by_id(state, m.bytes) == by
        assert close(m.bytes_spread, O.weighted_spread(by, spec, live))
    assert close(m.replica_spread, O.weighted_spread(c, spec, live))
    assert close(m.leader_spread, O.weighted_spread(L, spec, live))
    if not spec.weighted:
        assert m.replica_spread == O.plain_spread(c, live)
        assert m.leader_spread == O.plain_spread(L, live)
        if by is not None:
            assert m.bytes_spread == O.plain_spread(by, live)
    R, P = sum(c.values()), len(spec.partitions)
    assert m.num_replicas == R and m.num_partitions == P
    assert m.replicas_balanced == O.within(c, O.exact_intervals(R, spec))
    assert m.leaders_balanced == O.within(L, O.exact_intervals(P, spec))
    iv = O.exact_intervals(R, spec)
    assert by_id(state, m.replica_lo) == {b: v[0] for b, v in iv.items()}
    assert by_id(state, m.replica_hi) == {b: v[1] for b, v in iv.items()}
    assert m.rack_violations.tolist() == O.rack_violations(spec)
    assert m.replicas_on_removed == O.replicas_on_removed(spec)


# ==== 6. compare ================================================================================
@st.composite
def before_after(draw):
    spec, before = draw(clusters())
    ids = spec.ids
    new_parts = []
    for p in spec.partitions:
        kind = draw(st.sampled_from(["same", "reorder", "new", "new"]))
        if kind == "same":
            reps = p.replicas
        elif kind == "reorder":
            reps = tuple(draw(st.permutations(p.replicas)))
        else:
            rf = draw(st.integers(1, min(4, len(ids))))
            reps = tuple(draw(st.permutations(ids))[:rf])
        new_parts.append(PartSpec(p.topic, p.partition, reps, p.size))
    after_spec = Spec(spec.brokers, tuple(new_parts))
    rows = draw(st.permutations(range(len(new_parts))))
    return spec, after_spec, before, build_state(after_spec, rows)


@SETTINGS
@given(before_after())
def test_compare_against_loop(case):
    spec, after_spec, before, after = case
    expect = O.compare(spec, after_spec)
    ch = metrics.compare(before, after)
    assert ch.moves == expect.moves
    assert ch.bytes_moved == expect.bytes_moved
    assert ch.leader_changes == expect.leader_changes
    assert ch.reorder_only == expect.reorder_only
    assert ch.changed_rows.tolist() == expect.changed_rows
    assert ch.leader_changed_rows.tolist() == expect.leader_changed_rows
    assert ch.rf_changed == expect.rf_changed


def test_compare_rejects_different_partitions():
    b = Spec({1: BrokerSpec(), 2: BrokerSpec()}, (PartSpec("t", 0, (1, 2)), PartSpec("t", 1, (2, 1))))
    a = Spec(b.brokers, (PartSpec("t", 0, (1, 2)), PartSpec("t", 2, (2, 1))))
    with pytest.raises(ValueError):
        metrics.compare(build_state(b), build_state(a))


# ==== 7. hand-computed cases ====================================================================
def _spec(replica_lists, weights=None, removed=(), ids=None, topic="t"):
    ids = sorted({b for r in replica_lists for b in r} | set(ids or ()))
    w = weights or {}
    brokers = {b: BrokerSpec(None, float(w.get(b, 1.0)), b in removed) for b in ids}
    return Spec(brokers, tuple(PartSpec(topic, i, tuple(r)) for i, r in enumerate(replica_lists)))


def test_hand_4_brokers_4422():
    """Counts (4, 4, 2, 2), R = 12, N = 4: q = 3, r = 0 -> brokers 1, 2 each release one: M* = 2.
    With RF 3 -> 4 on all four partitions (Appier's figure): R' = 16, q = 4 -> 3 and 4 gain 2 each: M* = 4."""
    spec = _spec([[1, 2, 3], [1, 2, 4], [1, 2, 3], [1, 2, 4]])
    st_ = build_state(spec)
    m = metrics.measure(st_)
    assert m.replicas.tolist() == [4, 4, 2, 2]
    assert m.min_moves == 2
    assert O.brute_force_min_arrivals(spec) == 2
    m4 = metrics.measure(st_, target_rf=np.array([4, 4, 4, 4]))
    assert m4.min_moves == 4
    assert (m4.replica_lo.tolist(), m4.replica_hi.tolist()) == ([4] * 4, [4] * 4)


def test_hand_3_brokers_522():
    """Counts (5, 2, 2), R = 9, N = 3: q = 3, r = 0: brokers 2 and 3 each gain one: M* = 2."""
    spec = _spec([[1]] * 5 + [[2]] * 2 + [[3]] * 2)
    m = metrics.measure(build_state(spec))
    assert m.replicas.tolist() == [5, 2, 2]
    assert m.min_moves == 2
    assert m.replica_spread == 3
    assert targets.min_arrivals(np.array([5, 2, 2]), 9, np.array([3, 3, 3]), np.array([3, 3, 3]),
                                np.ones(3, bool)) == 2


def test_hand_3_brokers_331():
    """Counts (3, 3, 1), R = 7: q = 2, r = 1, intervals [2, 3]: only broker 3 must gain one: M* = 1."""
    spec = _spec([[1, 2], [1, 2], [1, 3], [2]])
    m = metrics.measure(build_state(spec))
    assert m.replicas.tolist() == [3, 3, 1]
    assert (m.replica_lo.tolist(), m.replica_hi.tolist()) == ([2, 2, 2], [3, 3, 3])
    assert m.min_moves == 1
    assert O.brute_force_min_arrivals(spec) == 1


def test_hand_weighted_2_1_1():
    """Weights 2:1:1 with 8 replicas: quotas 4, 2, 2 -> intervals [4, 4], [2, 2], [2, 2]."""
    lo, hi = targets.intervals(8, np.array([2.0, 1.0, 1.0]), np.ones(3, bool))
    assert lo.tolist() == [4, 2, 2] and hi.tolist() == [4, 2, 2]
    # the same through measure(): 8 single-replica partitions, all on broker 3
    spec = _spec([[3]] * 8, weights={1: 2, 2: 1, 3: 1}, ids=[1, 2])
    m = metrics.measure(build_state(spec))
    assert m.replica_lo.tolist() == [4, 2, 2] and m.replica_hi.tolist() == [4, 2, 2]
    assert m.min_moves == 6  # broker 1 gains 4, broker 2 gains 2
    assert m.replica_spread == 10  # deviations from quotas 4, 2, 2: -4, -2, +6 -> 6 - (-4)
    # 9 replicas: quotas 4.5, 2.25, 2.25 -> [4, 5], [2, 3], [2, 3]
    lo, hi = targets.intervals(9, np.array([2.0, 1.0, 1.0]), np.ones(3, bool))
    assert lo.tolist() == [4, 2, 2] and hi.tolist() == [5, 3, 3]


def test_hand_removed_broker_intervals():
    """Removing a broker gives it [0, 0] and spreads its share over the live ones."""
    lo, hi = targets.intervals(6, np.ones(4), np.array([True, True, False, True]))
    assert lo.tolist() == [2, 2, 0, 2] and hi.tolist() == [2, 2, 0, 2]


def test_mstar_gap_with_removed_broker():
    """M* is only a lower bound once a broker is removed (research §3.1: "with decommissioning ... only a
    lower bound; chains can become necessary").  Live 1, 2; removed 3.  Partitions [2, 3], [1], [1], [1]:
    counts 1:3, 2:1, 3:1, R' = 5 over 2 live brokers -> intervals [2, 3].  Count bound: broker 2 needs one
    arrival, M* = 1.  But the replica on 3 can only go to 1 (2 already holds that partition), making 1 hold 4,
    so a second move 1 -> 2 is needed: the true minimum is 2."""
    spec = _spec([[2, 3], [1], [1], [1]], removed={3})
    m = metrics.measure(build_state(spec))
    assert m.min_moves == 1
    assert O.brute_force_min_arrivals(spec) == 2


def test_mstar_zero_on_balanced_cluster():
    spec = _spec([[1, 2], [2, 3], [3, 1], [1, 2]])  # counts 3, 3, 2: within [2, 3]
    m = metrics.measure(build_state(spec))
    assert m.min_moves == 0 and m.replicas_balanced


def test_mstar_gap_with_rf_increase():
    """Same with an RF change (research §3.4).  Brokers 0, 1; partitions alpha-0 [0], alpha-1 [1], beta-0 [0];
    target RF (1, 2, 1): R' = 4 -> intervals [2, 2].  Count bound: broker 1 gains one, M* = 1.  But alpha-1's new
    replica can only go to 0 (making it 3), so one of 0's single-replica partitions must also move: 2."""
    spec = Spec({0: BrokerSpec(), 1: BrokerSpec()},
                (PartSpec("alpha", 0, (0,)), PartSpec("alpha", 1, (1,)), PartSpec("beta", 0, (0,))))
    m = metrics.measure(build_state(spec), target_rf=np.array([1, 2, 1]))
    assert m.min_moves == 1
    assert O.brute_force_min_arrivals(spec, [1, 2, 1]) == 2


def test_mstar_gap_with_weights():
    """And with unequal weights, even in a pure rebalance (the equal-weight attainability argument of §3.1 needs
    c_releaser > c_gainer, which weights break).  Weights 0:1, 1:1.5, 2:0.5; partitions [0, 1, 2], [1, 2], [0]:
    counts 2, 2, 2, quotas 2, 3, 1 -> intervals [2,2], [3,3], [1,1].  Count bound: M* = 1 (2 -> 1).  But both of
    broker 2's partitions are already on broker 1, so it takes a chain (p1: 2 -> 0, p2: 0 -> 1): 2 arrivals."""
    spec = Spec({0: BrokerSpec(None, 1.0), 1: BrokerSpec(None, 1.5), 2: BrokerSpec(None, 0.5)},
                (PartSpec("alpha", 0, (0, 1, 2)), PartSpec("alpha", 1, (1, 2)), PartSpec("alpha", 2, (0,))))
    m = metrics.measure(build_state(spec))
    assert (m.replica_lo.tolist(), m.replica_hi.tolist()) == ([2, 3, 1], [2, 3, 1])
    assert m.min_moves == 1
    assert O.brute_force_min_arrivals(spec) == 2
