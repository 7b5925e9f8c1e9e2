"""The stage chain, stage by stage: each stage object run directly through a ``Context`` on small clusters and
checked against plain-Python oracles (``tests.plan_oracle``'s enumerations, direct counts), and the chain's
invariant checks shown to catch broken stages (``ChainInvariantError``; through the CLI, exit 3, nothing written).
"""
from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import flowbalance.planner as planner
from flowbalance.certificate import count_targets, missed_targets
from flowbalance.chain.base import ChainInvariantError, Context, Outcome, Stage, run_chain
from flowbalance.chain.steps import Followers, Leaders, ReplicaCounts, Templates
from flowbalance.generate import generate_cluster
from flowbalance.metrics import measure, topic_lower_bound
from flowbalance.model import Brokers, ClusterState
from flowbalance.request import PlanRequest
from flowbalance.resolve import resolve
from flowbalance.verify import PlanVerificationError, verify_plan
from flowbalance_cli.app import main

from . import plan_oracle
from .conftest import TESTDATA

SEED = TESTDATA / "seed"
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def context(state: ClusterState, **fields) -> Context:
    """A chain's context as ``plan`` builds it: the request resolved, the state measured, the moves bound."""
    r = resolve(state, PlanRequest(**fields))
    mb = measure(r.before, target_rf=r.target_rf)
    tstar = topic_lower_bound(r.before, r.target_rf, r.movable) if r.request.strict_per_topic else 0
    return Context(r, mb, max(mb.min_moves, tstar))


def rows_of(replicas: np.ndarray) -> list[list[int]]:
    """Replica lists as plain lists of broker ids (padding dropped)."""
    return [[int(x) for x in row if x >= 0] for row in replicas]


def no_progress(step: int, of: int, name: str) -> None:
    pass


@st.composite
def tiny_cluster(draw, max_brokers=5, max_parts=6, max_rf=3, racks=False):
    """2..max_brokers brokers (ids 10, 11, ...; racks "a"/"b" alternating when asked), up to max_parts partitions
    of RF 1..max_rf over topics t0/t1, random replicas."""
    n = draw(st.integers(2, max_brokers))
    ids = [10 + b for b in range(n)]
    brokers = Brokers.build(ids, ["ab"[b % 2] for b in range(n)] if racks else None)
    topics, reps = [], []
    for _ in range(draw(st.integers(1, max_parts))):
        k = draw(st.integers(1, min(max_rf, n)))
        topics.append(draw(st.sampled_from(["t0", "t1"])))
        reps.append(list(draw(st.permutations(ids))[:k]) + [-1] * (max_rf - k))
    parts = [sum(1 for t in topics[:i] if t == topics[i]) for i in range(len(topics))]
    return ClusterState.build(brokers, topics, parts, np.array(reps))


# ---- plain oracles ----------------------------------------------------------------------------------

def floor_ceil(total: int, n: int) -> tuple[int, int]:
    """[floor, ceil] of total / n, exactly (equal weights)."""
    q = Fraction(total, n)
    return q.numerator // q.denominator, -(-q.numerator // q.denominator)


def leaders_within(live: list[int], topics: list[str], leaders: list[int], per_topic: bool) -> bool:
    """Leader counts within [floor, ceil] of the partitions over the live brokers, and per topic when asked."""
    groups = [list(range(len(leaders)))]
    if per_topic:
        groups += [[i for i, t in enumerate(topics) if t == tp] for tp in sorted(set(topics))]
    for rows in groups:
        lo, hi = floor_ceil(len(rows), len(live))
        c = Counter(leaders[i] for i in rows)
        if any(not lo <= c[b] <= hi for b in live):
            return False
    return True


def leaders_feasible(live: list[int], topics: list[str], sets: list[list[int]], per_topic: bool) -> bool:
    """Is there a choice of one leader per partition from its replicas meeting ``leaders_within``?"""
    return any(leaders_within(live, topics, list(pick), per_topic) for pick in itertools.product(*sets))


# ---- each stage on its own --------------------------------------------------------------------------

@SETTINGS
@given(tiny_cluster(), st.booleans())
def test_leaders_only_reorders_and_balances_leaders_whenever_possible(state, per_topic):
    ctx = context(state, per_topic=per_topic)
    out = Leaders().run(ctx)
    before, after = rows_of(state.replicas), rows_of(out.replicas)
    assert [sorted(r) for r in after] == [sorted(r) for r in before]
    live = [int(b) for b in state.brokers.ids]
    topics = [state.topics[t] for t in state.topic]
    leaders = [r[0] for r in after]
    event(f"cluster-wide feasible {plan_oracle.leaders_balanceable(live, before)}")
    # cluster-wide leader balance first: met exactly when some choice of leaders meets it
    assert leaders_within(live, topics, leaders, False) == plan_oracle.leaders_balanceable(live, before)
    if per_topic and leaders_feasible(live, topics, before, True):
        assert leaders_within(live, topics, leaders, True)
    # and the invariants it establishes are exactly those: every broker's, and every topic's when asked
    names = {inv.name for inv in out.establishes}
    assert ("leader balance" in names) == leaders_within(live, topics, leaders, False)
    assert ("topic leader balance" in names) == (per_topic and leaders_within(live, topics, leaders, True))


def leader_choice_exists(live: list[int], topics: list[str], sets: list[list[int]], raise_of: dict[str, int],
                         brokers_even: bool) -> bool:
    """CP-SAT: is there one leader per partition from its replicas with every topic's count on every broker at
    most ``raise_of[topic]`` above its ceiling (and, with ``brokers_even``, every broker within its interval)?"""
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    x = {(i, b): m.NewBoolVar(f"x{i}_{b}") for i, row in enumerate(sets) for b in row if b in live}
    for i in range(len(sets)):
        m.AddExactlyOne(v for (j, _), v in x.items() if j == i)
    groups = [(list(range(len(sets))), None)] if brokers_even else []
    groups += [([i for i, t in enumerate(topics) if t == tp], d) for tp, d in raise_of.items()]
    for rows, d in groups:
        lo, hi = floor_ceil(len(rows), len(live))
        for b in live:
            count = sum(x[i, b] for i in rows if (i, b) in x)
            m.Add(count <= hi + (d or 0))
            if d is None:
                m.Add(count >= lo)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    return solver.Solve(m) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def topic_raise(live: list[int], topics: list[str], sets: list[list[int]], topic: str) -> int:
    """The least d such that some choice of the topic's leaders has every broker within d above its ceiling."""
    return next(d for d in itertools.count() if leader_choice_exists(live, topics, sets, {topic: d}, False))


@st.composite
def crowded_cluster(draw):
    """3..4 brokers; topic t0 on a subset of them (fewer brokers than it would need for ±1 leaders) with its
    leaders on the subset's lowest ids, a larger topic t1 anywhere: per-topic ±1 often unreachable, the brokers
    balanceable."""
    n = draw(st.integers(3, 4))
    ids = [10 + b for b in range(n)]
    subset = sorted(draw(st.lists(st.sampled_from(ids), min_size=2, max_size=n - 1, unique=True)))
    topics, reps = [], []
    for _ in range(draw(st.integers(n, n + 3))):
        topics.append("t0")
        reps.append(sorted(draw(st.permutations(subset))[:2]))
    for _ in range(draw(st.integers(2 * n, 3 * n))):
        topics.append("t1")
        reps.append(list(draw(st.permutations(ids))[:2]))
    parts = [sum(1 for t in topics[:i] if t == topics[i]) for i in range(len(topics))]
    return ClusterState.build(Brokers.build(ids, None), topics, parts, np.array(reps))


@SETTINGS
@given(st.one_of(tiny_cluster(max_parts=8), crowded_cluster()))
def test_leaders_per_topic_as_even_as_each_topic_allows_when_not_within_one(state):
    """When no choice meets every topic's ±1 but the brokers can balance, each topic's leaders end at most the least
    raise above its ceiling that the topic alone allows (CP-SAT), whenever some choice with balanced brokers
    reaches that for every topic at once."""
    out = Leaders().run(context(state, per_topic=True))
    before, leaders = rows_of(state.replicas), [[r[0]] for r in rows_of(out.replicas)]
    live = [int(b) for b in state.brokers.ids]
    topics = [state.topics[t] for t in state.topic]
    if leader_choice_exists(live, topics, before, {t: 0 for t in set(topics)}, True) or \
            not plan_oracle.leaders_balanceable(live, before):
        return
    raise_of = {t: topic_raise(live, topics, before, t) for t in sorted(set(topics))}
    reachable = leader_choice_exists(live, topics, before, raise_of, True)
    event(f"each topic's least raise reachable with balanced brokers: {reachable}")
    if reachable:
        assert leader_choice_exists(live, topics, leaders, raise_of, True)


def test_leaders_of_a_topic_crowded_on_two_brokers_need_a_large_raise():
    """Topic a: 40 partitions on brokers 10 and 11 only (ceiling 4 of 10 brokers: raise 16); topic b: 160 on the
    other 8 (ceiling 16: raise 4), its leaders all on broker 12. Every broker can lead exactly 20, and does."""
    ids = list(range(10, 20))
    rows = [[10, 11] if i % 2 else [11, 10] for i in range(40)]
    rows += [[12, 13 + i % 7] for i in range(160)]
    topics = ["a"] * 40 + ["b"] * 160
    state = ClusterState.build(Brokers.build(ids, None), topics, list(range(40)) + list(range(160)), np.array(rows))
    out = Leaders().run(context(state, per_topic=True))
    leaders = Counter((t, r[0]) for t, r in zip(topics, rows_of(out.replicas)))
    assert all(leaders["a", b] == 20 for b in (10, 11))
    assert all(leaders["b", b] == 20 for b in ids[2:])
    assert [inv.name for inv in out.establishes] == ["leader balance"]


@SETTINGS
@given(tiny_cluster(max_brokers=6, max_parts=8), st.booleans())
def test_followers_changes_neither_leaders_nor_replica_sets(state, per_topic):
    ctx = context(state, per_topic=per_topic)
    after = rows_of(Followers().run(ctx).replicas)
    before = rows_of(state.replicas)
    assert [r[0] for r in after] == [r[0] for r in before]
    assert [sorted(r) for r in after] == [sorted(r) for r in before]
    event(f"reordered {after != before}")


def test_followers_reorders_something_on_an_uneven_cluster():
    """Not a vacuous check: on a skewed RF-3 cluster the stage does reorder followers (and keeps leaders)."""
    state = generate_cluster(brokers=6, topics=3, partitions=8, rf=3, skew=1.0, seed=3)
    after = rows_of(Followers().run(context(state)).replicas)
    before = rows_of(state.replicas)
    assert after != before
    assert [r[0] for r in after] == [r[0] for r in before]


@st.composite
def count_request(draw, state: ClusterState) -> dict:
    """A removal, an added broker, an RF change (None, 1 or 2), strict per-topic balance on or off (the oracle's
    targets; "spread" ranks topics after the moves, so its moves are those of counts alone)."""
    ids = [int(b) for b in state.brokers.ids]
    fields = {"per_topic": draw(st.booleans()), "per_topic_mode": "strict"}
    if len(ids) > 2 and draw(st.booleans()):
        fields["remove"] = (draw(st.sampled_from(ids)),)
    if len(ids) < 4 and draw(st.booleans()):
        fields["add"] = (99,)
    rf = draw(st.sampled_from([None, 1, 2]))
    if rf is not None:
        fields["replication_factor"] = rf
    return fields


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_cluster(max_brokers=4, max_parts=4, max_rf=2), st.data())
def test_replica_counts_meets_the_targets_with_the_fewest_moves(state, data):
    fields = data.draw(count_request(state))
    ctx = context(state, **fields)
    r = ctx.resolved
    live = [int(b) for b, gone in zip(r.before.brokers.ids, r.before.brokers.removed) if not gone]
    target = [int(k) for k in r.target_rf]
    if max(target) > len(live):
        return
    out = ReplicaCounts().run(ctx)
    after = r.before.with_replicas(out.replicas)
    verify_plan(r.before, after, r.target_rf, r.movable)
    parts = [(p.topic, list(p.replicas)) for p in r.before.partitions()]
    best = plan_oracle.min_moves(live, parts, target, None, fields["per_topic"])
    targets = count_targets(r.before, r.target_rf, r.movable, fields["per_topic"])
    missed = missed_targets(targets, r.before, after, r.movable)
    event(f"{out.evidence.method}; reachable {best is not None}")
    if best is None:
        assert missed  # no assignment meets them, so this one cannot
        assert not out.establishes
        return
    assert missed == ()
    moves = sum(len(set(a) - set(b)) for (_, b), a in zip(parts, rows_of(after.replicas)))
    assert moves == best
    assert [inv.name for inv in out.establishes] == ["count targets"]


def test_replica_counts_meets_reachable_targets_after_removing_a_racks_only_broker():
    brokers = Brokers.build([10, 11, 12, 13], ["r0", "r1", "r2", "r0"])
    rows = [[10, 13, -1], [11, 12, -1], [11, 10, -1], [10, 11, -1], [11, 10, -1], [10, 11, -1], [11, 10, 12]]
    state = ClusterState.build(brokers, ["t"] * 7, list(range(7)), np.array(rows))
    ctx = context(state, remove=(12,), per_topic=False)
    r = ctx.resolved
    targets = count_targets(r.before, r.target_rf, r.movable, False)
    reachable = r.before.with_replicas(np.array(
        [[13, 11, -1], [11, 13, -1], [11, 13, -1], [10, 11, -1], [11, 10, -1], [10, 11, -1], [11, 10, 13]]))
    verify_plan(r.before, reachable, r.target_rf, r.movable)
    assert missed_targets(targets, r.before, reachable, r.movable) == ()
    after = r.before.with_replicas(ReplicaCounts().run(ctx).replicas)
    assert missed_targets(targets, r.before, after, r.movable) == ()


@SETTINGS
@given(tiny_cluster(max_brokers=6, max_parts=8, racks=True), st.data())
def test_templates_output_passes_verification(state, data):
    ids = [int(b) for b in state.brokers.ids]
    fields = {"per_topic": data.draw(st.booleans())}
    if len(ids) > 3 and data.draw(st.booleans()):
        fields["remove"] = (data.draw(st.sampled_from(ids)),)
    live = len(ids) - len(fields.get("remove", ()))
    if data.draw(st.booleans()):
        fields["replication_factor"] = data.draw(st.integers(1, min(3, live)))
    elif int(state.rf.max()) > live:
        return
    ctx = context(state, **fields)
    r = ctx.resolved
    after = r.before.with_replicas(Templates().run(ctx).replicas)
    verify_plan(r.before, after, r.target_rf, r.movable)


def test_verification_of_template_output_can_fail():
    """The check above is not vacuous: the same output with a broker twice in a row is refused."""
    state = generate_cluster(brokers=5, racks=0, topics=2, partitions=4, rf=2, seed=1)
    ctx = context(state, remove=(int(state.brokers.ids[0]),))
    r = ctx.resolved
    bad = Templates().run(ctx).replicas.copy()
    bad[0, 1] = bad[0, 0]
    with pytest.raises(PlanVerificationError):
        verify_plan(r.before, r.before.with_replicas(bad), r.target_rf, r.movable)


# ---- broken stages: the chain refuses them ---------------------------------------------------------

def _outside_broker(row: np.ndarray, ids: np.ndarray) -> int:
    return int(next(b for b in ids if b not in row))


class SetChangingLeaders(Leaders):
    """A leader stage that also swaps a follower for a broker outside the partition: may only reorder."""

    def run(self, ctx: Context) -> Outcome:
        out = super().run(ctx)
        reps = out.replicas.copy()
        ids = ctx.current.brokers.ids[ctx.current.brokers.live]
        i = int(np.flatnonzero((reps >= 0).sum(axis=1) >= 2)[0])
        reps[i, 1] = _outside_broker(reps[i], ids)
        return Outcome(reps, out.evidence, out.notes, out.establishes)


class LeaderSwappingFollowers(Followers):
    """A follower stage that swaps the leader with the first follower: may not change leaders."""

    def run(self, ctx: Context) -> Outcome:
        reps = super().run(ctx).replicas.copy()
        i = int(np.flatnonzero((reps >= 0).sum(axis=1) >= 2)[0])
        reps[i, [0, 1]] = reps[i, [1, 0]]
        return Outcome(reps)


class Unbalancer(Stage):
    """Says it keeps the count targets, then moves a replica onto the busiest live broker (above its ceiling)."""

    name, label = "unbalance", "unbalance"
    keeps = ("count targets",)

    def applies(self, ctx: Context) -> bool:
        return True

    def run(self, ctx: Context) -> Outcome:
        cur = ctx.current
        b = cur.brokers
        counts = Counter(int(x) for x in cur.replicas.ravel() if x >= 0)
        busiest = max((int(x) for x in b.ids[b.live]), key=lambda x: (counts[x], -x))
        reps = cur.replicas.copy()
        i = next(i for i in range(len(reps)) if busiest not in reps[i])
        reps[i, 0] = busiest
        return Outcome(reps)


class TradingUnbalancer(Unbalancer):
    """The same move from a stage that does not keep the count targets (as the disk stage trades them): allowed."""

    keeps = ()


def _seed_context(**fields) -> Context:
    from flowbalance.load import load_cluster

    return context(load_cluster(SEED / "assignment.json", brokers=SEED / "brokers.csv").state, **fields)


def test_the_unbroken_chain_passes_its_checks():
    ctx = run_chain(_seed_context(remove=(19,)), (ReplicaCounts(), Leaders(), Followers()), no_progress, 1, 3)
    assert ctx.ran == ["replicas", "leaders", "followers"]
    assert {"count targets", "leader balance"} <= set(ctx.invariants)


@pytest.mark.parametrize("chain, message", [
    ((ReplicaCounts(), SetChangingLeaders()), "stage leaders changed replica sets"),
    ((ReplicaCounts(), Leaders(), LeaderSwappingFollowers()), "stage followers changed leaders"),
    ((ReplicaCounts(), Unbalancer()), "stage unbalance undid count targets"),
], ids=["leaders-change-sets", "followers-change-leaders", "keeps-counts-but-unbalances"])
def test_a_broken_stage_raises_chain_invariant_error(chain, message):
    ctx = _seed_context(remove=(19,))
    with pytest.raises(ChainInvariantError, match=message):
        run_chain(ctx, chain, no_progress, 1, len(chain))


def test_a_stage_that_does_not_keep_the_counts_may_trade_them():
    ctx = run_chain(_seed_context(remove=(19,)), (ReplicaCounts(), TradingUnbalancer(), Leaders()), no_progress, 1, 3)
    assert "count targets" not in ctx.invariants
    t = count_targets(ctx.resolved.before, ctx.resolved.target_rf, ctx.resolved.movable, True)
    assert missed_targets(t, ctx.resolved.before, ctx.current, ctx.resolved.movable)  # the trade really broke them


@pytest.mark.parametrize("chain", [
    lambda: (ReplicaCounts(), SetChangingLeaders(), Followers()),
    lambda: (ReplicaCounts(), Leaders(), LeaderSwappingFollowers()),
    lambda: (ReplicaCounts(), Unbalancer(), Leaders(), Followers()),
], ids=["leaders-change-sets", "followers-change-leaders", "keeps-counts-but-unbalances"])
def test_a_broken_stage_is_exit_3_and_writes_nothing(chain, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(planner, "flow_chain", chain)
    files = [tmp_path / "plan.json", tmp_path / "rollback.json", tmp_path / "election.json"]
    with pytest.raises(SystemExit) as e:
        main(["plan", str(SEED / "assignment.json"), "--brokers", str(SEED / "brokers.csv"), "--remove", "19",
              "-o", str(files[0]), "--rollback", str(files[1]), "--election", str(files[2])])
    err = capsys.readouterr().err
    assert e.value.code == 3
    assert err.count("\n") == 1 and err.startswith("flowbalance: internal error:"), err
    assert "Traceback" not in err and "nothing was written" in err
    assert not list(tmp_path.iterdir())
