"""The template strategy: sequence properties, matching against brute force, the plan it gives, determinism."""
from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowbalance.errors import InputError, PlanningError
from flowbalance.generate import generate_cluster
from flowbalance.metrics import leader_counts, pair_matrix, rack_violations
from flowbalance.model import Brokers, ClusterState
from flowbalance.planner import plan
from flowbalance.templates.matching import dense_costs, match, pair_costs, weights
from flowbalance.templates.place import place_by_templates
from flowbalance.templates.sequence import TemplateSequence, broker_order

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---- the sequence ---------------------------------------------------------------------------------

def test_rotation_order_is_the_seed_list():
    seq = TemplateSequence(np.arange(4), None)
    got = [tuple(int(x) + 1 for x in t) for t in seq.take(2, 12)]
    assert got == [(1, 2), (2, 3), (3, 4), (4, 1), (1, 3), (2, 4), (3, 1), (4, 2), (1, 4), (2, 1), (3, 2), (4, 3)]
    # more partitions than tuples: start over
    seq = TemplateSequence(np.arange(4), None)
    assert [tuple(t) for t in seq.take(2, 14)[12:]] == [(0, 1), (1, 2)]


def _check_topic(t: np.ndarray, N: int) -> None:
    P, k = t.shape
    assert all(len(set(row)) == k for row in t.tolist()), "a tuple repeats a broker"
    lead = np.bincount(t[:, 0], minlength=N)
    assert lead.min() >= P // N and lead.max() <= -(-P // N)
    if k >= 2 and P >= N * (N - 1):
        pairs = Counter(map(tuple, t[:, :2].tolist()))
        counts = [pairs.get((a, b), 0) for a in range(N) for b in range(N) if a != b]
        assert max(counts) - min(counts) <= 1


@FAST
@given(N=st.integers(2, 9), k=st.integers(1, 4), sizes=st.lists(st.integers(1, 150), min_size=1, max_size=6))
def test_every_run_balances_leaders_and_pairs(N, k, sizes):
    k = min(k, N)
    seq = TemplateSequence(np.arange(N), None)
    runs = [seq.take(k, m) for m in sizes]
    for t in runs:  # per topic
        _check_topic(t, N)
    _check_topic(np.concatenate(runs), N)  # across topics


@FAST
@given(R=st.integers(2, 4), per=st.integers(1, 4), k=st.integers(2, 4), sizes=st.lists(st.integers(1, 120), min_size=1, max_size=4))
def test_equal_racks_keep_the_properties_and_the_rack_rule(R, per, k, sizes):
    N = R * per
    k = min(k, R)
    ids = np.arange(100, 100 + N)
    b = Brokers.build(ids, [f"r{i % R}" for i in range(N)])
    seq = TemplateSequence(broker_order(b, True), b.rack)
    assert seq.periodic
    for m in sizes:
        t = seq.take(k, m)
        racks = b.rack[t]
        assert all(len(set(r)) == k for r in racks.tolist())
        lead = np.bincount(t[:, 0], minlength=N)
        assert lead.min() >= m // N and lead.max() <= -(-m // N)
        if m >= N * (N - 1):
            pairs = Counter(map(tuple, t[:, :2].tolist()))
            allowed = [(a, c) for a in range(N) for c in range(N) if b.rack[a] != b.rack[c]]
            counts = [pairs.get(p, 0) for p in allowed]
            assert max(counts) - min(counts) <= 1


@FAST
@given(sizes=st.lists(st.integers(1, 4), min_size=2, max_size=4), k=st.integers(2, 3), m=st.integers(1, 60))
def test_unequal_racks_never_share_a_rack(sizes, k, m):
    racks = [f"r{j}" for j, s in enumerate(sizes) for _ in range(s)]
    N = len(racks)
    k = min(k, len(sizes))
    b = Brokers.build(np.arange(N), racks)
    seq = TemplateSequence(broker_order(b, True), b.rack)
    t = seq.take(k, m)
    assert all(len(set(r)) == k for r in b.rack[t].tolist())


# ---- the matching ---------------------------------------------------------------------------------

def _brute(cur, tmpl):
    n = len(cur)
    full = dense_costs(cur, tmpl)
    return min(sum(full[i, p[i]] for i in range(n)) for p in itertools.permutations(range(n)))


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_matching_is_optimal_against_brute_force(data):
    N = data.draw(st.integers(2, 5))
    k = data.draw(st.integers(1, min(3, N)))
    n = data.draw(st.integers(1, 6))
    rows = []
    for _ in range(n):
        kc = data.draw(st.integers(1, min(N, 4)))  # may differ from k: an RF change
        r = list(data.draw(st.permutations(list(range(N)))))[:kc]
        if data.draw(st.booleans()):  # a replica on a removed broker: -1 in place, at any position
            r[data.draw(st.integers(0, kc - 1))] = -1
        rows.append(r)
    width = max(len(r) for r in rows)
    cur = np.array([r + [-1] * (width - len(r)) for r in rows])
    tmpl = TemplateSequence(np.arange(N), None).take(k, n)
    pick, exact = match(cur, tmpl)
    assert exact and sorted(pick.tolist()) == list(range(n))
    got = pair_costs(cur, tmpl, np.arange(n), pick, n).sum()
    assert got == _brute(cur, tmpl)


def test_costs_are_lexicographic():
    w_move, w_lead = weights(10)
    assert w_lead > 10 and w_move > 10 * w_lead + 10


@FAST
@given(seed=st.integers(0, 10_000), N=st.integers(3, 8), k=st.integers(1, 3))
def test_sparse_matching_is_a_perfect_matching_and_close(seed, N, k):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(10, 80))
    k = min(k, N)
    cur = np.stack([rng.permutation(N)[:k] for _ in range(n)])
    tmpl = TemplateSequence(np.arange(N), None).take(k, n)
    dense, _ = match(cur, tmpl)
    sparse, exact = match(cur, tmpl, dense_limit=0)
    assert not exact and sorted(sparse.tolist()) == list(range(n))
    cd = pair_costs(cur, tmpl, np.arange(n), dense, n).sum()
    cs = pair_costs(cur, tmpl, np.arange(n), sparse, n).sum()
    assert cs >= cd  # the dense matching is optimal, so the candidate one can only tie or lose


# ---- the plan ------------------------------------------------------------------------------------

def _topic_props(state: ClusterState):
    N = int(state.brokers.live.sum())
    idx = state.replica_index
    for t in range(len(state.topics)):
        rows = state.topic == t
        sub = idx[rows]
        live_pos = {b: i for i, b in enumerate(np.flatnonzero(state.brokers.live))}
        mapped = np.vectorize(lambda x: live_pos[int(x)])(sub)
        _check_topic(mapped, N)


@pytest.mark.parametrize("n,rf", [(4, 2), (6, 3), (5, 3), (8, 2)])
def test_template_plan_has_the_template_properties(n, rf):
    st0 = generate_cluster(brokers=n, topics=4, partitions=(3, n * (n - 1) + 5), rf=rf, skew=0.8, seed=n)
    p = plan(st0, strategy="template")
    assert p.stages_run == ("templates", "failover")
    _topic_props(p.after)
    L = leader_counts(p.after)
    assert L.max() - L.min() <= 1  # across topics too


def test_template_plan_honours_remove_add_rf_and_topics():
    st0 = generate_cluster(brokers=6, topics=3, partitions=(5, 30), rf=2, seed=4)
    p = plan(st0, remove=[2], add=[9], strategy="template")
    ids = set(p.after.replicas[p.after.replicas >= 0].tolist())
    assert 2 not in ids and 9 in ids
    p = plan(st0, replication_factor=3, strategy="template")
    assert (p.after.rf == 3).all()
    keep = st0.topics[0]
    p = plan(st0, exclude_topics=keep, strategy="template")
    rows = st0.topic == 0
    assert np.array_equal(p.after.replicas[rows, :2], st0.replicas[rows, :2])


def test_template_plan_with_racks_keeps_the_rack_rule():
    st0 = generate_cluster(brokers=9, racks=3, topics=3, partitions=(5, 40), rf=3, skew=0.5, seed=2)
    p = plan(st0, strategy="template")
    assert len(rack_violations(p.after)) == 0
    _topic_props(p.after)


def test_templated_cluster_gets_an_empty_plan_and_output_is_deterministic():
    st0 = generate_cluster(brokers=7, topics=5, partitions=(3, 50), rf=3, skew=1.0, seed=9)
    p1 = plan(st0, strategy="template")
    p2 = plan(st0, strategy="template")
    assert np.array_equal(p1.after.replicas, p2.after.replicas)
    again = plan(p1.after, strategy="template")
    assert again.is_empty and again.changes.moves == 0


def test_balanced_cluster_is_skipped_by_the_precheck():
    balanced = generate_cluster(brokers=6, topics=3, partitions=(6, 30), rf=2, seed=1, layout="balanced")
    p = plan(balanced, strategy="template")
    assert p.skipped and p.is_empty


def test_templates_that_lower_no_spread_are_not_proposed():
    # the pre-check does not pass (pairs are not ideal), yet the templates cannot lower any spread either
    b = Brokers.build([0, 1, 2])
    reps = np.array([[0, 2, 1], [0, 2, 1], [2, 1, 0], [1, 0, 2]])
    st0 = ClusterState.build(b, ["t"] * 4, range(4), reps)
    flow = plan(st0)
    assert not flow.skipped
    p = plan(st0, strategy="template")
    # the templates are not laid (counts at target); as with the flow strategy, only a reordering that lowers a
    # spread is proposed
    assert p.changes.moves == 0 and any("not laid" in n for n in p.certificate.notes)
    assert np.array_equal(p.after.replicas, flow.after.replicas) or p.is_empty
    # while a skewed layout of the same topic is laid out anew
    b = Brokers.build([0, 1, 2, 3])
    skew = ClusterState.build(b, ["t"] * 4, range(4), np.array([[0, 1, 2]] * 4))
    q = plan(skew, strategy="template")
    assert not q.is_empty and q.metrics_after.failover.worst[1] < q.metrics_before.failover.worst[1]


def test_template_moves_meet_the_templates_own_bound_on_tiny_topics():
    st0 = generate_cluster(brokers=5, topics=2, partitions=(2, 6), rf=2, seed=5)
    res = place_by_templates(st0, st0.rf.astype(np.int64), np.ones(st0.num_partitions, bool))
    assert res.moves >= res.bound and res.certified


def test_large_topic_uses_the_candidate_matching():
    st0 = generate_cluster(brokers=12, topics=1, partitions=600, rf=3, skew=0.5, seed=3)
    movable = np.ones(st0.num_partitions, bool)
    dense = place_by_templates(st0, st0.rf.astype(np.int64), movable)
    sparse = place_by_templates(st0, st0.rf.astype(np.int64), movable, dense_limit=100)
    assert sparse.sparse_groups == 1 and dense.sparse_groups == 0
    assert sparse.moves >= dense.moves >= dense.bound
    assert sparse.moves <= dense.moves * 1.05 + 5  # close to exact on a realistic topic
    a = st0.with_replicas(sparse.replicas)
    assert (np.bincount(a.replica_index[:, 0], minlength=12) >= 600 // 12).all()


def test_strategy_and_stages_are_checked():
    st0 = generate_cluster(brokers=4, topics=1, partitions=4, rf=2, seed=0)
    # the library names the request's fields, never a command-line flag
    with pytest.raises(InputError, match="^request: strategy: unknown strategy") as err:
        plan(st0, strategy="random")
    assert "--" not in str(err.value)
    with pytest.raises(InputError, match="^request: stages: ") as err:
        plan(st0, strategy="template", stages=("replicas",))
    assert "--" not in str(err.value)


def test_pairs_balance_across_topics():
    """Many small topics: a shared sequence keeps each broker's first followers spread (failover)."""
    st0 = generate_cluster(brokers=6, topics=30, partitions=6, rf=3, skew=0.5, seed=8)
    p = plan(st0, strategy="template")
    M = pair_matrix(p.after)
    off = M[~np.eye(6, dtype=bool)]
    assert off.max() - off.min() <= 1


def test_a_topic_above_the_limit_is_refused(monkeypatch):
    import flowbalance.templates.place as place

    monkeypatch.setattr(place, "TOPIC_LIMIT", 10)
    st0 = generate_cluster(brokers=4, topics=2, partitions=(4, 20), rf=2, skew=1.0, seed=1)
    big = max(range(len(st0.topics)), key=lambda t: int((st0.topic == t).sum()))
    with pytest.raises(PlanningError, match=f"topic {st0.topics[big]} has"):
        plan(st0, strategy="template")


def test_no_per_topic_matches_the_whole_cluster_and_moves_no_more():
    st0 = generate_cluster(brokers=6, topics=6, partitions=(4, 20), rf=3, skew=0.8, seed=6)
    per = plan(st0, strategy="template")
    whole = plan(st0, strategy="template", per_topic=False)
    assert whole.certificate.notes[0].startswith("template strategy: 1 group laid")
    # the same templates in the same order, matched with more freedom: never more moves
    assert whole.changes.moves <= per.changes.moves
    L = leader_counts(whole.after)
    assert L.max() - L.min() <= 1


def test_replace_moves_the_old_brokers_replicas_away():
    st0 = generate_cluster(brokers=5, topics=3, partitions=(5, 15), rf=3, seed=2)
    p = plan(st0, replace={4: 9}, strategy="template")
    ids = set(p.after.replicas[p.after.replicas >= 0].tolist())
    assert 4 not in ids and 9 in ids


def test_template_output_is_the_same_under_different_hash_seeds(tmp_path):
    import os
    import subprocess
    import sys

    from .conftest import TESTDATA

    K = TESTDATA / "kafka"
    outs = []
    for seed in ("3", "999"):
        out = tmp_path / f"p{seed}.json"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        proc = subprocess.run([sys.executable, "-m", "flowbalance_cli", "plan", str(K / "describe.txt"), "--brokers",
                               str(K / "brokers.csv"), "--strategy", "template", "-o", str(out)], env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and b'"partitions":[\n]' not in outs[0]


def test_unequal_racks_get_leaders_reordered_after_the_templates():
    st0 = generate_cluster(brokers=8, racks=2, rack_aware=True, topics=6, partitions=(8, 30), rf=2, skew=0.5, seed=4)
    p = plan(st0, remove=[7], strategy="template")  # racks of 4 and 3 brokers
    assert len(rack_violations(p.after)) == 0
    assert p.stages_run == ("templates", "leaders", "followers", "failover")
    L = leader_counts(p.after)[p.after.brokers.live]
    assert L.max() - L.min() <= 1
    # reordering moves no data: the moves are those of the templates alone
    assert p.changes.moves == place_by_templates(p.before, p.target_rf, p.movable).moves


# ---- count balancing of the templates -----------------------------------------------------------------------

def _raw_and_balanced(st0: ClusterState):
    """The templates as the sequence gives them, and after the count balancing (per topic, whole cluster)."""
    from flowbalance.certificate import count_targets
    from flowbalance.templates import place
    from flowbalance.templates.balance import TemplateCounts, balance_templates

    trf = st0.rf.astype(np.int64)
    movable = np.ones(st0.num_partitions, bool)
    groups = place._groups(st0, trf, movable, True)
    tmpls = place._take_templates(st0, trf, groups, True)
    raw = [t.copy() for t in tmpls]
    t = count_targets(st0, trf, movable, False)
    tc = TemplateCounts(tmpls, [st0.replica_index[r] for r in groups], np.zeros(len(st0.brokers), np.int64), t.lo,
                        t.hi, st0.brokers, False)
    return raw, tmpls, balance_templates(tc)


@pytest.mark.parametrize("n", [24, 48])
def test_count_balancing_changes_only_later_followers_where_they_suffice(n):
    # the benchmark's clusters: the last, partial block left the replica spread at 2
    st0 = generate_cluster(brokers=n, topics=20, partitions=(n, 4 * n), rf=3, skew=0.5, seed=n)
    raw, done, changed = _raw_and_balanced(st0)
    spread = lambda ts: np.ptp(np.bincount(np.concatenate([t.ravel() for t in ts]), minlength=n))  # noqa: E731
    assert spread(raw) > 1 and spread(done) <= 1 and changed > 0
    for a, b in zip(raw, done):  # leaders and first followers (failover) are the templates' own
        assert np.array_equal(a[:, :2], b[:, :2])
    assert sum(int((a != b).sum()) for a, b in zip(raw, done)) == changed


@FAST
@given(data=st.data())
def test_balancing_random_templates_meets_equal_shares_and_keeps_tuples_valid(data):
    from flowbalance.templates.balance import TemplateCounts, balance_templates
    from flowbalance.targets import intervals

    N = data.draw(st.integers(2, 9))
    R = data.draw(st.sampled_from([0, 2, 3]))
    R = R if R <= N else 0
    b = Brokers.build(np.arange(N), [f"r{i % R}" for i in range(N)] if R else None)
    seq = TemplateSequence(broker_order(b, bool(R)), b.rack if R else None)
    tmpls, curs = [], []
    for _ in range(data.draw(st.integers(1, 4))):
        k = data.draw(st.integers(1, min(N, R) if R else N))
        m = data.draw(st.integers(1, 3 * N))
        tmpls.append(seq.take(k, m))
        curs.append(np.stack([np.random.default_rng(m).permutation(N)[:k] for _ in range(m)]))
    total = sum(t.size for t in tmpls)
    lo, hi = intervals(total, b.weight, b.live)
    shapes = [t.shape for t in tmpls]
    tc = TemplateCounts(tmpls, curs, np.zeros(N, np.int64), lo, hi, b, False)
    balance_templates(tc)
    assert [t.shape for t in tmpls] == shapes
    for t in tmpls:
        assert all(len(set(row)) == len(row) for row in t.tolist())  # a broker at most once per tuple
        if R:
            assert all(len(set(row)) == len(row) for row in b.rack[t].tolist())  # k <= racks: distinct racks
    c = np.bincount(np.concatenate([t.ravel() for t in tmpls]), minlength=N)
    if not R:  # a broker above another always has a tuple without it: an equal spread is always reachable
        assert c.max() - c.min() <= 1
