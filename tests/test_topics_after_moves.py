"""Stage 1 with per-topic balance ranked below the number of moves (issue 16's order): among the plans with the
fewest moves for count balance, the least graded per-topic excess (the d-th replica above a topic's ceiling on a
broker, or missing below its floor, costs min(d, 4): convex, so excess is spread rather than piled up). Checked
against brute force on tiny clusters."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowbalance import InputError, PlanRequest, plan
from flowbalance.model import Brokers, ClusterState
from flowbalance.stages.pooled import balance_pooled
from flowbalance.stages.replicas import balance_keep

from .plan_oracle import intervals


STEPS = 3  # flowbalance.stages.common.TOPIC_STEPS


def graded(n: int) -> int:
    """Cost of a deviation of n units: 1 + 2 + ... capped at STEPS + 1 per unit."""
    return sum(min(d, STEPS + 1) for d in range(1, n + 1))


def lexicographic_optimum(live: list[int], rows: list[tuple[str, list[int]]], rf: int) -> tuple[int, int] | None:
    """(fewest arrivals, then the least graded per-topic excess) over every assignment of RF distinct live brokers
    per partition with every broker within its count interval; excess = Σ over (topic, broker) of ``graded`` of the
    distance of the count to [floor, ceil] of the topic's share. Plain Python, no flowbalance."""
    sets = [frozenset(c) for c in itertools.combinations(live, rf)]
    bounds = intervals(rf * len(rows), live)
    topics = sorted({t for t, _ in rows})
    tb = {t: intervals(rf * sum(1 for tt, _ in rows if tt == t), live) for t in topics}
    best = None
    for combo in itertools.product(sets, repeat=len(rows)):
        counts = {b: 0 for b in live}
        for s in combo:
            for x in s:
                counts[x] += 1
        if any(not bounds[b][0] <= counts[b] <= bounds[b][1] for b in live):
            continue
        moves = sum(len(s - set(r)) for s, (_, r) in zip(combo, rows))
        if best is not None and moves > best[0]:
            continue
        excess = 0
        for t in topics:
            tc = {b: 0 for b in live}
            for (tt, _), s in zip(rows, combo):
                if tt == t:
                    for x in s:
                        tc[x] += 1
            excess += sum(graded(max(0, tc[b] - tb[t][b][1])) + graded(max(0, tb[t][b][0] - tc[b])) for b in live)
        if best is None or (moves, excess) < best:
            best = (moves, excess)
    return best


def topic_excess(state: ClusterState) -> int:
    """The same excess measured on a planned state (equal weights, every broker live)."""
    live = [int(x) for x in state.brokers.ids]
    rows = [(state.topics[t], [int(x) for x in r if x >= 0]) for t, r in zip(state.topic, state.replicas)]
    out = 0
    for t in sorted({t for t, _ in rows}):
        mine = [r for tt, r in rows if tt == t]
        tb = intervals(sum(len(r) for r in mine), live)
        for b in live:
            c = sum(r.count(b) for r in mine)
            out += graded(max(0, c - tb[b][1])) + graded(max(0, tb[b][0] - c))
    return out


@st.composite
def tiny(draw):
    n = draw(st.integers(3, 4))
    rf = draw(st.integers(1, 2)) if n == 4 else draw(st.integers(1, 2))
    parts = draw(st.integers(2, 5 if n == 4 and rf == 2 else 6))
    ids = list(range(n))
    rows = []
    for p in range(parts):
        topic = draw(st.sampled_from(["a", "b", "c"]))
        rows.append((topic, list(draw(st.permutations(ids)))[:rf]))
    return ids, rows, rf


@settings(max_examples=150, deadline=None)
@given(tiny())
def test_fewest_moves_first_then_least_per_topic_excess(case):
    ids, rows, rf = case
    topics = [t for t, _ in rows]
    parts = [topics[:i].count(t) for i, t in enumerate(topics)]
    state = ClusterState.build(Brokers.build(ids), topics, parts, np.array([r for _, r in rows]))
    want = lexicographic_optimum(ids, rows, rf)
    assert want is not None  # equal weights, every broker live: count balance is always reachable
    every = np.ones(len(rows), dtype=bool)
    res = balance_pooled(state, state.rf.astype(np.int64), every, per_topic=True, topics_after_moves=True)
    count_only = balance_pooled(state, state.rf.astype(np.int64), every, per_topic=False)
    assert res.moves == want[0] == count_only.moves  # per-topic balance never costs a move
    if res.replicas is not None:  # realized exactly (tiny clusters may need the keep network instead)
        planned = state.with_replicas(res.replicas)
        arrivals = sum(len(set(a[a >= 0].tolist()) - set(b[b >= 0].tolist()))
                       for a, b in zip(res.replicas, state.replicas))
        assert arrivals == want[0]
        assert topic_excess(planned) == want[1]
    # the full keep network (stage 1's fallback) ranks topics the same way
    keep = balance_keep(state, state.rf.astype(np.int64), every, per_topic=True, topics_after_moves=True)
    arrivals = sum(len(set(a[a >= 0].tolist()) - set(b[b >= 0].tolist())) for a, b in zip(keep.replicas, state.replicas))
    assert (arrivals, topic_excess(state.with_replicas(keep.replicas))) == want


# ---- the request option, end to end --------------------------------------------------------------------------

KAFKA_CASES = [
    dict(brokers=12, racks=0, topics=8, partitions=(3, 9), rf=3, seed=1, add=(12, 13)),
    dict(brokers=15, racks=3, topics=10, partitions=(4, 10), rf=3, seed=2, add=(), remove=(4,)),
    dict(brokers=20, racks=0, topics=12, partitions=(5, 15), rf=2, seed=3, add=(20,)),
]


def _kafka_case(case: dict):
    from flowbalance.generate import generate_cluster

    gen = {k: v for k, v in case.items() if k not in ("add", "remove")}
    state = generate_cluster(layout="kafka", rack_aware=gen["racks"] > 0, **gen)
    if case.get("add") and state.brokers.has_racks:
        state = state.with_brokers(state.brokers.with_added(list(case["add"]), rack=state.brokers.rack_names[0]))
        return state, dict(remove=case.get("remove", ()))
    return state, dict(add=case.get("add", ()), remove=case.get("remove", ()))


@pytest.mark.parametrize("case", KAFKA_CASES, ids=lambda c: f"{c['brokers']}b-{c['racks']}r-rf{c['rf']}")
def test_spread_plans_the_fewest_moves_for_count_balance_and_evens_topics(case):
    """On Kafka-placed clusters: the spread mode moves exactly as few replicas as count balance needs (certified
    against the cluster-wide bound), keeps per-topic spread no worse than ignoring topics, and strict costs more."""
    state, change = _kafka_case(case)
    spread = plan(state, PlanRequest(per_topic_mode="spread", **change))
    counts = plan(state, PlanRequest(per_topic=False, **change))
    strict = plan(state, PlanRequest(**change))
    v = spread.certificate.moves_verdict
    assert spread.changes.moves == counts.changes.moves == v.bound and v.proven
    assert v.bound_for in ("count balance", "balance within racks") and v.topic_min_moves is None
    assert spread.metrics_after.topic.spread <= counts.metrics_after.topic.spread
    assert strict.changes.moves >= spread.changes.moves
    assert any("per-topic spread" in n for n in spread.certificate.notes)


def test_spread_is_a_cli_option_and_report_certifies_it_the_same(tmp_path, run_cli):
    from flowbalance.formats.writers import reassignment_json

    state, change = _kafka_case(KAFKA_CASES[0])
    cur = tmp_path / "cur.json"
    cur.write_text(reassignment_json(state, None))
    out = tmp_path / "plan.json"
    code, stdout, err = run_cli("plan", cur, "--add", "12,13", "--per-topic", "spread", "-o", out, "--json")
    assert code == 0, err
    planned = json.loads(stdout)
    code, stdout, err = run_cli("report", cur, "--plan", out, "--per-topic", "spread", "--json")
    assert code == 0, err
    reported = json.loads(stdout)["moves"]
    for key in ("lower_bound", "bound_for", "proven_optimal", "min_moves", "verdict"):
        assert reported[key] == planned[key], key
    code, _, err = run_cli("plan", cur, "--per-topic", "loose", "-o", out)
    assert code == 2 and err.count("\n") == 1 and "--per-topic" in err and "'loose'" in err


def test_fleet_entry_takes_per_topic_mode():
    req = PlanRequest.from_json({"per_topic_mode": "spread"}, "fleet.json: clusters.c")
    assert req.topics_after_moves and not req.strict_per_topic
    with pytest.raises(InputError, match=r"^fleet.json: clusters.c.per_topic_mode: unknown per_topic_mode"):
        PlanRequest.from_json({"per_topic_mode": "loose"}, "fleet.json: clusters.c")
