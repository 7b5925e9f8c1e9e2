"""The generalized rack rule (``flowbalance/racks.py``): RF above the number of racks and racks of unequal size.

Everything is checked against brute force: the rule itself against the definition "the per-rack count vector,
sorted descending, is the lexicographically smallest that fits" (``oracles.rack_optima``, by enumeration), and
plans on tiny clusters against the fewest moves over every assignment that keeps that rule and the balance
intervals (enumerated here).
"""
from __future__ import annotations

import itertools
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowbalance.errors import PlanningError
from flowbalance.load import load_cluster
from flowbalance import metrics
from flowbalance.metrics import rack_violations, replica_counts
from flowbalance.model import PAD, Brokers, ClusterState
from flowbalance.planner import plan
from flowbalance.racks import distinct_rack_bounds, live_rack_sizes, rack_bounds, rack_levels, rack_totals_fixed
from flowbalance.targets import intervals, within
from flowbalance.templates.sequence import TemplateSequence, broker_order

from .oracles import rack_optima
from .plan_oracle import intervals as oracle_intervals

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PLANS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def optima(k: int, sizes: list[int]) -> set[tuple[int, ...]]:
    """The optimal per-rack count vectors (in rack order) by enumeration."""
    names = [f"r{j}" for j in range(len(sizes))]
    return {tuple(v[n] for n in names) for v in rack_optima(k, dict(zip(names, sizes)))}


# ---- the rule itself ----------------------------------------------------------------------------

@FAST
@given(sizes=st.lists(st.integers(0, 5), min_size=1, max_size=4), data=st.data())
def test_bounds_bracket_exactly_the_optimal_vectors(sizes, data):
    k = data.draw(st.integers(0, sum(sizes)))
    best = optima(k, sizes)
    assert best  # k <= the live brokers: some vector fits
    lo, hi = rack_bounds(np.array([k]), np.array(sizes))
    lo, hi = lo[0].tolist(), hi[0].tolist()
    for r in range(len(sizes)):
        assert lo[r] == min(v[r] for v in best)
        assert hi[r] == max(v[r] for v in best)
    # the box [lo, hi] with sum k holds exactly the optimal vectors
    box = {c for c in itertools.product(*[range(a, b + 1) for a, b in zip(lo, hi)]) if sum(c) == k}
    assert box == best
    # L is the largest entry of the optimal vector
    assert int(rack_levels(np.array([k]), np.array(sizes))[0]) == max(next(iter(best)), default=0)
    assert rack_totals_fixed(np.array([k]), np.array(sizes)) == (len(best) == 1)


@FAST
@given(sizes=st.lists(st.integers(1, 6), min_size=1, max_size=5), ks=st.lists(st.integers(0, 12), max_size=40))
def test_vectorized_per_distinct_rf_equals_one_by_one(sizes, ks):
    k = np.array(ks, dtype=np.int64)
    lo, hi = rack_bounds(k, np.array(sizes))
    assert lo.shape == hi.shape == (len(ks), len(sizes))
    uniq, inv, level, ulo, uhi = distinct_rack_bounds(k, np.array(sizes))
    assert len(uniq) == len(set(ks)) and np.array_equal(uniq[inv], k)
    for i, kk in enumerate(ks):
        one_lo, one_hi = rack_bounds(np.array([kk]), np.array(sizes))
        assert np.array_equal(lo[i], one_lo[0]) and np.array_equal(hi[i], one_hi[0])
        if kk > sum(sizes):  # no placement: every live broker, the request is refused elsewhere
            assert np.array_equal(lo[i], sizes) and np.array_equal(hi[i], sizes)


@FAST
@given(R=st.integers(1, 5), n=st.integers(1, 5), data=st.data())
def test_equal_racks_take_at_most_the_ceiling(R, n, data):
    k = data.draw(st.integers(1, R * n))
    lo, hi = rack_bounds(np.array([k]), np.full(R, n))
    assert (hi[0] == min(n, -(-k // R))).all()
    assert (lo[0] <= hi[0]).all() and lo[0].sum() <= k <= hi[0].sum()
    if k <= R:
        assert (hi[0] == 1).all() and (lo[0] == (1 if k == R else 0)).all()


def test_worked_examples_of_the_docs():
    for k, sizes in [(4, [4, 1]), (5, [3, 3, 1])]:
        (vec,) = optima(k, sizes)
        lo, hi = rack_bounds(np.array([k]), np.array(sizes))
        assert lo[0].tolist() == hi[0].tolist() == list(vec)
        assert rack_totals_fixed(np.array([k]), np.array(sizes))


def test_live_rack_sizes_leave_out_removed_brokers_and_empty_racks():
    b = Brokers.build([1, 2, 3, 4, 5, 6], ["a", "a", "b", "c", "c", "c"]).with_removed([3, 4])
    ids, sizes = live_rack_sizes(b)
    assert [b.rack_names[i] for i in ids] == ["a", "c"] and sizes.tolist() == [2, 2]
    ids, sizes = live_rack_sizes(Brokers.build([1, 2]))
    assert len(ids) == len(sizes) == 0


# ---- the metric ---------------------------------------------------------------------------------

def _state(rack_of: dict[int, str], removed: list[int], rows: list[tuple[str, list[int]]], sizes=None) -> ClusterState:
    ids = sorted(rack_of)
    b = Brokers.build(ids, [rack_of[x] for x in ids])
    if removed:
        b = b.with_removed(removed)
    width = max(len(r) for _, r in rows)
    mat = np.full((len(rows), width), PAD, dtype=np.int64)
    for i, (_, r) in enumerate(rows):
        mat[i, : len(r)] = r
    seen: Counter = Counter()
    nums = []
    for t, _ in rows:
        nums.append(seen[t])
        seen[t] += 1
    return ClusterState.build(b, [t for t, _ in rows], nums, mat, sizes)


def breaks_rule(replicas: list[int], rack_of: dict[int, str], live: list[int]) -> bool:
    """Independent per-partition check (see metrics.rack_violations): a rack above the most an optimal vector gives it
    (a rack without live brokers: above L), or, every replica on a live rack, counts that are not optimal; an RF
    above the live brokers has no placement and is not counted."""
    live_racks = sorted({rack_of[x] for x in live})
    sizes = [sum(rack_of[x] == r for x in live) for r in live_racks]
    best = optima(len(replicas), sizes)
    held = Counter(rack_of[x] for x in replicas)
    vec = tuple(held.get(r, 0) for r in live_racks)
    if not best:
        return False
    level = max(next(iter(best)), default=0)
    caps = {r: max(v[i] for v in best) for i, r in enumerate(live_racks)}
    above = any(n > caps.get(r, level) for r, n in held.items())
    return above or (set(held) <= set(live_racks) and vec not in best)


@st.composite
def rack_clusters(draw, max_brokers=7, max_rf=6, max_parts=6):
    """Brokers in 1-3 racks of unequal size (some removed), partitions of any RF up to the brokers."""
    n = draw(st.integers(2, max_brokers))
    rack_of = {b: draw(st.sampled_from("abc")) for b in range(n)}
    removed = draw(st.lists(st.sampled_from(range(n)), max_size=n - 1, unique=True))
    rows = []
    for _ in range(draw(st.integers(1, max_parts))):
        k = draw(st.integers(1, min(n, max_rf)))
        rows.append((draw(st.sampled_from(["t0", "t1"])), draw(st.permutations(range(n)))[:k]))
    return rack_of, removed, rows


@FAST
@given(rack_clusters())
def test_rack_violations_match_the_per_partition_check(cluster):
    rack_of, removed, rows = cluster
    state = _state(rack_of, removed, rows)
    live = [b for b in rack_of if b not in removed]
    expect = []
    for i in range(state.num_partitions):
        reps = [int(x) for x in state.replicas[i] if x != PAD]
        if breaks_rule(reps, rack_of, live):
            expect.append(i)
    assert rack_violations(state).tolist() == expect


@FAST
@given(rack_clusters(max_brokers=9, max_rf=9, max_parts=12))
def test_rack_violations_by_table_and_row_by_row_agree(cluster):
    """The lookup table of verdicts (few racks) and the row-by-row comparisons give the same rows."""
    state = _state(*cluster)
    by_table = rack_violations(state).tolist()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(metrics, "VIOLATION_TABLE_MAX", 0)
        assert rack_violations(state).tolist() == by_table


def test_rack_violations_keep_the_old_rule_up_to_rf_equal_racks():
    # RF <= racks: a violation is exactly two replicas in one rack, whatever the rack sizes
    rack_of = {1: "a", 2: "a", 3: "a", 4: "b", 5: "c"}
    state = _state(rack_of, [], [("t", [1, 2, 4]), ("t", [1, 4, 5]), ("t", [4, 5]), ("t", [1, 2])])
    assert rack_violations(state).tolist() == [0, 3]
    # RF above the racks: RF 4 over racks of 3, 1, 1 is 2, 1, 1
    state = _state(rack_of, [], [("t", [1, 2, 3, 4]), ("t", [1, 2, 4, 5]), ("t", [1, 2, 3, 5])])
    assert rack_violations(state).tolist() == [0, 2]


# ---- plans --------------------------------------------------------------------------------------

@st.composite
def tiny_uneven(draw):
    """2-3 racks of unequal size, at most 5 brokers, up to 3 partitions of RF 1-4, an optional RF change (often
    above the number of racks) and an optional removal."""
    sizes = draw(st.lists(st.integers(1, 3), min_size=2, max_size=3).filter(lambda s: sum(s) <= 5))
    rack_of = {}
    for j, s in enumerate(sizes):
        for _ in range(s):
            rack_of[len(rack_of)] = "abc"[j]
    n = len(rack_of)
    rows = [(draw(st.sampled_from(["t0", "t1"])), draw(st.permutations(range(n)))[: draw(st.integers(1, min(4, n)))])
            for _ in range(draw(st.integers(1, 3)))]
    rf = draw(st.one_of(st.none(), st.integers(2, min(4, n))))
    remove = [draw(st.sampled_from(range(n)))] if draw(st.booleans()) else []
    return rack_of, rows, rf, remove


def oracle_fewest_moves(rack_of, rows, target, live, per_topic) -> int | None:
    """Fewest arrivals over every assignment of distinct live brokers that keeps the rack rule (count vector
    optimal) and the equal-weight broker (and per-topic) intervals; None when there is none."""
    live_racks = sorted({rack_of[x] for x in live})
    sizes = [sum(rack_of[x] == r for x in live) for r in live_racks]
    choices = []
    for k in target:
        best = optima(k, sizes)
        choices.append([set(c) for c in itertools.combinations(live, k)
                        if tuple(sum(rack_of[x] == r for x in c) for r in live_racks) in best])
    bounds = oracle_intervals(sum(target), live)
    topics = sorted({t for t, _ in rows})
    tb = {t: oracle_intervals(sum(k for (tt, _), k in zip(rows, target) if tt == t), live) for t in topics}
    fewest = None
    for combo in itertools.product(*choices):
        moves = sum(len(s - set(old)) for s, (_, old) in zip(combo, rows))
        if fewest is not None and moves >= fewest:
            continue
        counts = Counter(x for s in combo for x in s)
        if any(not (bounds[b][0] <= counts[b] <= bounds[b][1]) for b in live):
            continue
        if per_topic and any(
                not (tb[t][b][0] <= sum(b in s for (tt, _), s in zip(rows, combo) if tt == t) <= tb[t][b][1])
                for t in topics for b in live):
            continue
        fewest = moves
    return fewest


def assert_rule_kept(p, rack_of):
    """Every planned replica set: target RF, distinct live brokers, per-rack counts an optimal vector."""
    after = p.after
    live = [int(x) for x in after.brokers.ids[after.brokers.live]]
    live_racks = sorted({rack_of[x] for x in live})
    sizes = [sum(rack_of[x] == r for x in live) for r in live_racks]
    assert np.array_equal(after.rf, p.target_rf)
    for i in range(after.num_partitions):
        reps = [int(x) for x in after.replicas[i] if x != PAD]
        assert len(set(reps)) == len(reps) and set(reps) <= set(live)
        vec = tuple(sum(rack_of[x] == r for x in reps) for r in live_racks)
        assert vec in optima(len(reps), sizes), (reps, vec)
    assert len(rack_violations(after)) == 0


@PLANS
@given(tiny_uneven(), st.booleans(), st.sampled_from(["strict", "spread"]))
def test_plans_keep_the_rule_with_the_fewest_moves(case, per_topic, mode):
    rack_of, rows, rf, remove = case
    state = _state(rack_of, [], rows)
    live = [b for b in rack_of if b not in remove]
    target = [len(r) if rf is None else rf for _, r in rows]
    if max(target) > len(live):
        with pytest.raises(PlanningError) as err:
            plan(state, remove=remove, replication_factor=rf, per_topic=per_topic, per_topic_mode=mode)
        assert "\n" not in str(err.value) and "live brokers" in str(err.value)
        return
    p = plan(state, remove=remove, replication_factor=rf, per_topic=per_topic, per_topic_mode=mode)
    assert_rule_kept(p, rack_of)
    parts = [(state.topics[state.topic[i]], [int(x) for x in state.replicas[i] if x != PAD])
             for i in range(state.num_partitions)]  # canonical row order, as the plan's
    target = [len(r) if rf is None else rf for _, r in parts]
    fewest = oracle_fewest_moves(rack_of, parts, target, live, per_topic and mode == "strict")
    if fewest is None:
        return  # no assignment meets every interval: the planner returns its closest plan
    b = p.after.brokers
    assert within(replica_counts(p.after), *intervals(sum(target), b.weight, b.live), b.live)
    assert p.changes.moves == fewest, (p.changes.moves, fewest)
    assert p.certificate.lower_bound <= fewest


@PLANS
@given(tiny_uneven())
def test_template_strategy_keeps_the_rule_or_refuses_in_one_line(case):
    rack_of, rows, rf, remove = case
    state = _state(rack_of, [], rows)
    live = [b for b in rack_of if b not in remove]
    target = [len(r) if rf is None else rf for _, r in rows]
    try:
        p = plan(state, remove=remove, replication_factor=rf, strategy="template")
    except PlanningError as e:
        msg = str(e)
        assert "\n" not in msg
        assert max(target) > len(live) or "template strategy" in msg
        return
    assert max(target) <= len(live)
    assert_rule_kept(p, rack_of)


@FAST
@given(sizes=st.lists(st.integers(1, 5), min_size=2, max_size=4), k=st.integers(1, 8), m=st.integers(1, 40))
def test_template_tuples_keep_the_rule_above_the_number_of_racks(sizes, k, m):
    racks = [f"r{j}" for j, s in enumerate(sizes) for _ in range(s)]
    k = min(k, len(racks))
    b = Brokers.build(np.arange(len(racks)), racks)
    seq = TemplateSequence(broker_order(b, True), b.rack)
    best = optima(k, sizes)
    try:
        t = seq.take(k, m)
    except ValueError:
        return  # too few valid tuples within the scan limit: place_by_templates turns this into a refusal
    assert t.shape == (m, k)
    for brokers, row in zip(t.tolist(), b.rack[t].tolist()):
        assert len(set(brokers)) == k
        assert tuple(row.count(j) for j in range(len(sizes))) in best


def test_rf4_over_racks_of_4_and_1_plans_3_plus_1():
    rack_of = {1: "a", 2: "a", 3: "a", 4: "a", 5: "b"}
    rows = [("t", [1, 2, 3, 4]), ("t", [2, 3, 4, 1]), ("t", [3, 4, 1, 2]), ("t", [4, 1, 2, 3]), ("t", [1, 2, 3, 5])]
    state = _state(rack_of, [], rows)
    for strategy in ("flow", "template"):
        p = plan(state, strategy=strategy)
        assert_rule_kept(p, rack_of)
        assert all(5 in set(r.tolist()) for r in p.after.replicas)
    p = plan(state)
    # broker 5 must take every partition it lacks; rack a's brokers then hold (5 x 3) / 4 each
    assert p.changes.moves == 4 and p.certificate.proven_optimal
    assert sorted(replica_counts(p.after)[:4].tolist()) == [3, 4, 4, 4]


def test_rf5_over_racks_of_3_3_1_is_2_2_1_and_rf_above_the_brokers_is_refused():
    rack_of = {1: "a", 2: "a", 3: "a", 4: "b", 5: "b", 6: "b", 7: "c"}
    spread = itertools.islice(itertools.permutations(range(1, 8), 3), 0, 40, 7)
    rows = [(t, list(r)) for r in spread for t in ("x", "y")]
    state = _state(rack_of, [], rows)
    p = plan(state, replication_factor=5)
    assert_rule_kept(p, rack_of)
    for r in p.after.replicas:
        assert sorted(Counter(rack_of[int(x)] for x in r).values()) == [1, 2, 2]
    with pytest.raises(PlanningError) as err:
        plan(state, replication_factor=7, remove=[7])
    assert "\n" not in str(err.value)


def test_disk_stage_and_bytes_objective_keep_the_rule_on_uneven_racks():
    rack_of = {1: "a", 2: "a", 3: "a", 4: "a", 5: "b", 6: "b"}
    spread = itertools.islice(itertools.permutations(range(1, 7), 4), 0, 60, 9)
    rows = [(t, list(r)) for r in spread for t in ("x", "y")]
    sizes = [(i * 37 % 11 + 1) * 1000 for i in range(len(rows))]
    state = _state(rack_of, [], rows, sizes)
    for kw in ({"objective": "bytes"}, {"balance": "count+bytes"}, {"balance": "bytes"}):
        p = plan(state, replication_factor=5, **kw)  # RF 5 over racks of 4 and 2: 3 + 2
        assert_rule_kept(p, rack_of)
        for r in p.after.replicas:
            assert sorted(Counter(rack_of[int(x)] for x in r).values()) == [2, 3]


def test_fixed_rack_totals_need_no_flow_error_when_rf_is_a_multiple():
    # RF 4 over two racks of 3: every partition 2 + 2, so each rack's total is fixed
    rack_of = {1: "a", 2: "a", 3: "a", 4: "b", 5: "b", 6: "b"}
    rows = [("t", [1, 2, 3, 4]), ("t", [1, 2, 4, 5]), ("t", [2, 3, 5, 6]), ("t", [4, 5, 6, 1])]
    p = plan(_state(rack_of, [], rows))
    assert_rule_kept(p, rack_of)


def test_cli_plans_rf4_over_racks_of_4_and_1(tmp_path, run_cli):
    cur = tmp_path / "cur.json"
    cur.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": i, "replicas": r}
        for i, r in enumerate([[1, 2, 3, 4], [2, 3, 4, 1], [3, 4, 1, 2], [4, 1, 2, 3], [1, 2, 3, 5]])]}))
    brokers = tmp_path / "brokers.csv"
    brokers.write_text("id,rack\n1,a\n2,a\n3,a\n4,a\n5,b\n")
    out = tmp_path / "p.json"
    code, stdout, err = run_cli("plan", cur, "--brokers", brokers, "-o", out, "--json")
    assert code == 0, err
    assert json.loads(stdout)["moves"] == 4
    planned = {p["partition"]: p["replicas"] for p in json.loads(out.read_text())["partitions"]}
    assert sorted(planned) == [0, 1, 2, 3]
    assert all(5 in r and len(set(r)) == 4 for r in planned.values())
    code, _, err = run_cli("plan", cur, "--brokers", brokers, "-o", tmp_path / "q.json", "--remove", "5",
                           "--replication-factor", "5")
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "q.json").exists()



def test_nothing_movable_plans_nothing_even_with_a_rack_violation():
    # every partition held (pinned): stage 1 has no partition to place and must not build an empty network
    rack_of = {1: "a", 2: "a", 3: "b", 4: "b"}
    state = _state(rack_of, [], [("t", [1, 2]), ("u", [3, 4, 1, 2]), ("u", [1, 3])])
    assert len(rack_violations(state)) == 1
    p = plan(state, pinned=np.ones(state.num_partitions, dtype=bool))
    assert p.changes.moves == 0 and np.array_equal(p.after.replicas, state.replicas)


REALWORLD = Path(__file__).resolve().parent.parent.parent / "shared" / "realworld"


def test_cruise_control_unsatisfiable_rack_case_is_as_even_as_the_brokers_allow():
    """Cruise Control's rackAwareUnsatisfiable: RF 3 over racks of 2 and 1 brokers, which its RackAwareGoal
    cannot satisfy; under the generalized rule 2 + 1 is the even spread, so nothing needs to move."""
    folder = REALWORLD / "cruisecontrol-rack-unsatisfiable"
    if not folder.is_dir():
        pytest.skip("../shared/realworld is not present")
    state = load_cluster(folder / "assignment.json", brokers=folder / "brokers.csv").state
    assert len(rack_violations(state)) == 0
    assert plan(state).changes.moves == 0
    p = plan(state, replication_factor=2)  # RF 2 over 2 racks: one replica per rack
    assert_rule_kept(p, {int(i): state.brokers.rack_names[r] for i, r in zip(state.brokers.ids, state.brokers.rack)})
