"""One plan, one certificate: ``plan --json``, ``report --plan``, ``compare`` and the fleet's planning task (run
without Spark: ingest's per-cluster parser and ``plan_cluster`` on pandas rows) print the same moves verdict for the
same plan, and the printed bound is a true lower bound (checked against a CP-SAT oracle of the fewest moves that
reach the targets, written here from the rules in plain Python, with no flowbalance code).

The oracle's targets, from the documented rules (``flowbalance.certificate``'s docstring), computed with
``Fraction``: every live broker within [floor, ceil] of its weight share of the target replicas (a broker holding
more replicas that may not move than its share's ceiling held at that count, the others sharing the rest); when the rack rule
fixes every rack's count for every movable partition (``tests.oracles.rack_optima`` has one vector), within its
share of its rack's total instead; with per-topic balance, every topic's movable replicas within their shares too
(within racks likewise). Hard rules: target RF of distinct live brokers, each placed set's rack counts one of
``rack_optima``'s vectors, partitions out of scope unchanged.
"""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from flowbalance.certificate import certificate_fields
from flowbalance.load import mark_removed
from flowbalance.model import Brokers, ClusterState
from flowbalance.planfile import plan_from_text
from flowbalance.planner import certify_plan, plan, plan_files
from flowbalance.request import PlanRequest

from . import plan_oracle
from .conftest import TESTDATA
from .oracles import rack_optima

KAFKA = TESTDATA / "kafka"
SEED = TESTDATA / "seed"
# the verdict's keys (certificate_fields) compared across the views, each where the view prints it (report names
# the moves "replica_moves"; the fleet summary has moves, min_moves, lower_bound, bound_for, proven_optimal)
VERDICT_KEYS = ("moves", "lower_bound", "bound_for", "bound_by_flow", "closed_form_bound", "min_moves",
                "topic_min_moves", "targets_met", "missed_targets", "proven_optimal", "verdict")
SHOWN_EVERYWHERE = {"moves", "lower_bound", "bound_for", "min_moves", "proven_optimal"}
COUNTS_REACHED = "the counts this plan reaches"


# ---- the oracle ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Plain:
    """A cluster as plain Python: broker id → (rack, weight, removed); rows of (topic, replicas)."""

    brokers: dict
    rows: list

    @property
    def live(self) -> list[int]:
        return [b for b in sorted(self.brokers) if not self.brokers[b][2]]

    @property
    def racked(self) -> bool:
        return all(r is not None for r, _, _ in self.brokers.values())


def plain_of(state: ClusterState) -> Plain:
    """The cluster's brokers and rows, read through the object API (weights as exact fractions)."""
    brokers = {b.id: (b.rack, Fraction(b.weight), b.removed) for b in state.brokers}
    return Plain(brokers, [(p.topic, tuple(p.replicas)) for p in state.partitions()])


@dataclass(frozen=True)
class Targets:
    """Count targets as the oracle states them, and the rack rule's allowed vectors per movable row."""

    lo: dict  # live broker → least replicas
    hi: dict
    topic: dict  # (topic, live broker) → (lo, hi) over the topic's movable rows; {} when per-topic is off
    optima: dict  # movable row → the rack-count vectors the rack rule allows ({} without racks)


def _shares(total: int, members: list[int], c: Plain) -> dict:
    """[floor, ceil] of each member's weight share of ``total``, exactly."""
    w = sum(c.brokers[b][1] for b in members)
    return {b: (math.floor(Fraction(total) * c.brokers[b][1] / w), math.ceil(Fraction(total) * c.brokers[b][1] / w))
            for b in members}


def _floored_shares(total: int, members: list[int], c: Plain, fixed: Counter) -> dict:
    """``_shares``, except that a broker holding more replicas that may not move (``fixed``) than its share's
    ceiling is held at that count, [f, f], and the others share the rest; repeated until none is above."""
    held: dict = {}
    while True:
        free = [b for b in members if b not in held]
        shares = _shares(total - sum(held.values()), free, c) if free else {}
        over = [b for b in free if fixed[b] > shares[b][1]]
        if not over:
            return {**{b: (f, f) for b, f in held.items()}, **shares}
        held.update({b: fixed[b] for b in over})


def oracle_targets(c: Plain, krf: list[int], movable: list[bool], per_topic: bool) -> Targets:
    """The targets of the module docstring for target RFs ``krf``; rows not ``movable`` stay where they are."""
    live = c.live
    mov = [i for i, m in enumerate(movable) if m]
    per_rack = Counter(c.brokers[b][0] for b in live) if c.racked else Counter()
    optima = {i: rack_optima(krf[i], dict(per_rack)) for i in mov} if per_rack else {}
    forced = len(per_rack) >= 2 and bool(mov) and all(len(optima[i]) == 1 for i in mov)
    groups = {r: [b for b in live if c.brokers[b][0] == r] for r in per_rack} if forced else {None: live}
    fixed = Counter(b for i, (_, reps) in enumerate(c.rows) if not movable[i] for b in reps)
    lo, hi, topic = {}, {}, {}
    for r, members in groups.items():
        total = (sum(optima[i][0][r] for i in mov) + sum(fixed[b] for b in members)) if forced else sum(krf)
        for b, (a, z) in _floored_shares(total, members, c, fixed).items():
            lo[b], hi[b] = a, z
    if per_topic:
        for t in sorted({c.rows[i][0] for i in mov}):
            rows = [i for i in mov if c.rows[i][0] == t]
            for r, members in groups.items():
                total = sum(optima[i][0][r] for i in rows) if forced else sum(krf[i] for i in rows)
                topic.update({(t, b): v for b, v in _shares(total, members, c).items()})
    return Targets(lo, hi, topic, optima)


def _count_of(x: dict, rows: list[int], b: int):
    """The model's count of broker ``b`` over ``rows``."""
    return sum(x[i, b] for i in rows)


def oracle_fewest(c: Plain, krf: list[int], movable: list[bool], t: Targets) -> int | None:
    """The fewest moves (arrivals) of any assignment meeting the hard rules and ``t``; None when none does."""
    live, mov = c.live, [i for i, m in enumerate(movable) if m]
    m = cp_model.CpModel()
    x = {(i, b): m.NewBoolVar(f"x{i}_{b}") for i in mov for b in live}
    for i in mov:
        m.Add(sum(x[i, b] for b in live) == krf[i])
        _rack_rule(m, x, i, t.optima.get(i), c)
    fixed = Counter(b for i, (_, reps) in enumerate(c.rows) if not movable[i] for b in reps)
    for b in live:
        m.Add(fixed[b] + _count_of(x, mov, b) >= t.lo[b])
        m.Add(fixed[b] + _count_of(x, mov, b) <= t.hi[b])
    for (topic, b), (a, z) in t.topic.items():
        n = _count_of(x, [i for i in mov if c.rows[i][0] == topic], b)
        m.Add(n >= a)
        m.Add(n <= z)
    m.Minimize(sum(x[i, b] for i in mov for b in live if b not in c.rows[i][1]))
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 30
    status = solver.Solve(m)
    if status == cp_model.INFEASIBLE:
        return None
    assert status == cp_model.OPTIMAL, solver.StatusName(status)
    return round(solver.ObjectiveValue())


def _rack_rule(m: cp_model.CpModel, x: dict, i: int, optima: list | None, c: Plain) -> None:
    """Row ``i``'s count in every rack is one of the rack rule's vectors."""
    if optima is None:
        return
    pick = [m.NewBoolVar(f"v{i}_{j}") for j in range(len(optima))]
    m.AddExactlyOne(pick)
    for r in optima[0]:
        held = sum(x[i, b] for b in c.live if c.brokers[b][0] == r)
        m.Add(held == sum(v[r] * p for v, p in zip(optima, pick)))


def reached_targets(after: Plain, movable: list[bool], per_topic: bool) -> Targets:
    """Targets that are exactly ``after``'s per-broker (and per-topic movable) counts."""
    cnt = Counter(b for _, reps in after.rows for b in reps)
    topic = {}
    if per_topic:
        tc = Counter((after.rows[i][0], b) for i, m in enumerate(movable) if m for b in after.rows[i][1])
        topics = {after.rows[i][0] for i, m in enumerate(movable) if m}
        topic = {(tp, b): (tc[tp, b], tc[tp, b]) for tp in topics for b in after.live}
    return Targets({b: cnt[b] for b in after.live}, {b: cnt[b] for b in after.live}, topic, {})


# ---- the invariants every view must satisfy --------------------------------------------------------

def check_verdict(f: dict) -> None:
    """The verdict's own logic: the bound never above the moves, proven exactly when met and equal."""
    assert f["lower_bound"] <= f["moves"], f
    assert f["proven_optimal"] == (f["targets_met"] and f["moves"] == f["lower_bound"]), f
    if not f["targets_met"]:
        assert f["bound_for"] == COUNTS_REACHED, f
    assert f["closed_form_bound"] <= f["lower_bound"] or not f["targets_met"], f


def check_against_oracle(f: dict, before: ClusterState, after: ClusterState, movable: list[bool],
                         per_topic: bool, meets_when_reachable: bool) -> None:
    """The printed bound is a true lower bound, and "proven" is true, by the CP-SAT oracle. With
    ``meets_when_reachable`` (the flow strategy, whose stage 1 aims at the targets), targets the oracle can reach
    are met."""
    c, a = plain_of(before), plain_of(after)
    krf = [len(reps) for _, reps in a.rows]
    best = oracle_fewest(c, krf, movable, oracle_targets(c, krf, movable, per_topic))
    if f["targets_met"]:
        assert best is not None, ("the plan meets targets the oracle says no plan meets", f)
        assert f["lower_bound"] <= best, (f, best)
        assert best <= f["moves"], (f, best)
        if f["proven_optimal"]:
            assert f["moves"] == best, (f, best)
    else:
        assert best is None or not meets_when_reachable, ("targets reachable but missed", f, best)
        reach = oracle_fewest(c, krf, movable, reached_targets(a, movable, per_topic))
        assert reach is not None and f["lower_bound"] <= reach <= f["moves"], (f, reach)


def test_oracle_agrees_with_brute_force_on_tiny_clusters():
    """The CP-SAT oracle against plan_oracle's enumeration of every assignment (no racks: the same targets)."""
    rng = np.random.default_rng(5)
    for _ in range(25):
        n = int(rng.integers(2, 5))
        rows = [(f"t{int(rng.integers(0, 2))}", tuple(int(b) for b in rng.permutation(n)[:int(rng.integers(1, 3))]))
                for _ in range(int(rng.integers(1, 5)))]
        per_topic = bool(rng.integers(0, 2))
        c = Plain({b: (None, Fraction(1), False) for b in range(n)}, rows)
        krf = [len(r) for _, r in rows]
        mov = [True] * len(rows)
        want = plan_oracle.min_moves(list(range(n)), [(t, list(r)) for t, r in rows], krf, None, per_topic)
        assert oracle_fewest(c, krf, mov, oracle_targets(c, krf, mov, per_topic)) == want


# ---- random clusters: certify == certify_plan read back, and the bound against the oracle ----------------

@st.composite
def small_cluster(draw):
    """4–7 brokers (equal weights, or weights from 0.5, 1, 2), no racks or 2–3 racks, 1–3 topics of 1–4
    partitions at RF 2–3, random replicas. (Weights within racks found the keep network's bug of missing the
    within-rack targets; see the fixed cases at the end.)"""
    n = draw(st.integers(4, 7))
    racks = draw(st.sampled_from([0, 2, 3]))
    ids = [10 + b for b in range(n)]
    weights = [draw(st.sampled_from([0.5, 1.0, 2.0])) for _ in ids] if draw(st.booleans()) else None
    brokers = Brokers.build(ids, [f"r{b % racks}" for b in range(n)] if racks else None, weights)
    topics, parts, reps = [], [], []
    for t in range(draw(st.integers(1, 3))):
        k = draw(st.integers(2, 3))
        for p in range(draw(st.integers(1, 4))):
            order = draw(st.permutations(ids))
            topics.append(f"t{t}")
            parts.append(p)
            reps.append(list(order[:k]) + [-1] * (3 - k))
    return ClusterState.build(brokers, topics, parts, np.array(reps))


@st.composite
def small_request(draw, state: ClusterState, strategy: str) -> PlanRequest:
    """Optionally: a topic scope (t0 only), one broker removed, an RF change (all or one topic); per-topic on or
    off. A removal is dropped when an out-of-scope partition has a replica on that broker (a contradiction)."""
    scoped = len(state.topics) > 1 and draw(st.booleans())
    in_scope = ["t0"] if scoped else list(state.topics)
    out = [set(state.partition_at(i).replicas) for i in range(state.num_partitions)
           if state.topics[state.topic[i]] not in in_scope]
    ids = [int(b) for b in state.brokers.ids]
    remove = (draw(st.sampled_from(ids)),) if draw(st.booleans()) else ()
    if remove and any(remove[0] in reps for reps in out):
        remove = ()
    fields = {}
    rf_kind = draw(st.sampled_from(["none", "all", "topic"]))
    if rf_kind == "all":
        fields["replication_factor"] = draw(st.integers(2, 3))
    elif rf_kind == "topic":
        fields["topic_rf"] = ((draw(st.sampled_from(in_scope)), draw(st.integers(1, 3))),)
    return PlanRequest(remove=remove, per_topic=draw(st.booleans()), strategy=strategy,
                       per_topic_mode=draw(st.sampled_from(["strict", "spread"])),
                       topics="t0" if scoped else None, **fields)


def read_back(state: ClusterState, p, req: PlanRequest):
    """What ``report --plan`` does: the plan file read onto the current state, the removals marked. Returns the
    current state (removals marked), the plan applied to it, and the plan applied to ``state`` as read."""
    final = plan_from_text(plan_files(p).plan, "plan.json", state).final
    after, current = final, state.with_brokers(final.brokers)
    if req.remove:
        current = mark_removed(current, list(req.remove))
        after = after.with_brokers(current.brokers)
    return current, after, final


def _without_reason(f: dict) -> dict:
    return {k: v for k, v in f.items() if k != "optimality"}


@pytest.mark.parametrize("strategy", ["flow", "template"])
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_certificate_is_a_function_of_the_plan_and_its_bound_is_true(strategy, data):
    """``plan``'s certificate equals ``certify_plan`` on the plan file read back (report --plan's path), and the
    oracle confirms its bound (and, for the flow strategy, that reachable targets are met)."""
    state = data.draw(small_cluster())
    req = data.draw(small_request(state, strategy))
    p = plan(state, req)
    f = certificate_fields(p.certificate)
    current, after, final = read_back(state, p, req)
    scope = PlanRequest(per_topic=req.per_topic, per_topic_mode=req.per_topic_mode, topics=req.topics)
    read = certify_plan(current, after, scope)
    g = certificate_fields(read)
    assert _without_reason(g) == _without_reason(f)
    # the library's own path: certify_plan marks the request's removals itself
    lib = certify_plan(state, final, scope.with_changes(remove=req.remove))
    assert _without_reason(certificate_fields(lib)) == _without_reason(f)
    assert f["optimality"].startswith(g["optimality"])  # the plan may add what its stages know
    assert (read.leader_changes, read.leader_lower_bound) == (p.certificate.leader_changes,
                                                              p.certificate.leader_lower_bound)
    check_verdict(f)
    event(f"targets met {f['targets_met']}, proven {f['proven_optimal']}, by flow {f['bound_by_flow']}")
    event(f"bound for {f['bound_for']}; scoped {req.topics is not None}")
    check_against_oracle(f, p.before, p.after, [bool(m) for m in p.movable], req.strict_per_topic,
                         meets_when_reachable=strategy == "flow")


# ---- the same plan through plan, report --plan, compare and the fleet's planning task ------------------

@dataclass(frozen=True)
class Case:
    """A cluster (``current`` with ``files``: flag → file) and a request: ``scope`` flags every command takes
    (--remove, --topics, --no-per-topic), ``rf`` flags report does not take (it reads the RF from the plan)."""

    name: str
    folder: str  # under testdata, or "generated"
    files: tuple  # (flag or None for CURRENT, file name)
    scope: tuple = ()
    rf: tuple = ()
    fleet: dict = field(default_factory=dict)  # the same request as fleet.json gives it

    @property
    def per_topic(self) -> bool:
        """Per-topic targets are targets of the moves verdict (strict, the default)."""
        return "--no-per-topic" not in self.scope and "spread" not in self.scope

    @property
    def topics(self) -> str | None:
        return self.scope[self.scope.index("--topics") + 1] if "--topics" in self.scope else None

    @property
    def remove(self) -> list[int]:
        return [int(x) for x in self.scope[self.scope.index("--remove") + 1].split(",")] if "--remove" in self.scope \
            else []


KAFKA_RACKS = ((None, "assignment.json"), ("--brokers", "racks.json"))
GEN = ((None, "assignment.json"), ("--brokers", "brokers.csv"))
CASES = [
    Case("kafka-racks", "kafka", KAFKA_RACKS, fleet={}),
    Case("kafka-racks-no-per-topic", "kafka", KAFKA_RACKS, ("--no-per-topic",), fleet={"per_topic": False}),
    Case("kafka-racks-remove", "kafka", KAFKA_RACKS, ("--remove", "6"), fleet={"remove": [6]}),
    Case("kafka-remove-no-racks", "kafka", ((None, "assignment.json"),), ("--remove", "2,5", "--no-per-topic"),
         fleet={"remove": [2, 5], "per_topic": False}),
    Case("kafka-racks-topics", "kafka", KAFKA_RACKS, ("--topics", "clicks|orders"), fleet={"topics": "clicks|orders"}),
    Case("kafka-racks-rf", "kafka", KAFKA_RACKS, rf=("--replication-factor", "3"), fleet={"replication_factor": 3}),
    Case("kafka-topic-rf", "kafka", ((None, "assignment.json"),), ("--remove", "4"),
         ("--topic-rf", "clicks=3", "--topic-rf", "audit-log=1"),
         fleet={"remove": [4], "topic_rf": {"clicks": 3, "audit-log": 1}}),
    Case("generated-racks-remove", "generated", GEN, ("--remove", "4"), fleet={"remove": [4]}),
    Case("generated-racks-remove-no-per-topic", "generated", GEN, ("--remove", "4,7", "--no-per-topic"),
         fleet={"remove": [4, 7], "per_topic": False}),
    Case("generated-racks-remove-spread", "generated", GEN, ("--remove", "4", "--per-topic", "spread"),
         fleet={"remove": [4], "per_topic_mode": "spread"}),
    Case("seed-racks-remove", "seed", GEN, ("--remove", "19"), fleet={"remove": [19]}),
]


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """A random racked cluster (9 brokers in 3 racks, 4 topics of 6 partitions at RF 3, skewed) by ``generate``."""
    from flowbalance_cli.app import main

    out = tmp_path_factory.mktemp("generated")
    with pytest.raises(SystemExit) as e:
        main(["generate", "--brokers", "9", "--racks", "3", "--topics", "4", "--partitions", "6", "--rf", "3",
              "--skew", "0.8", "--seed", "11", "-o", str(out)])
    assert e.value.code == 0
    return out


def _folder(case: Case, generated: Path) -> Path:
    return generated if case.folder == "generated" else TESTDATA / case.folder


def _args(case: Case, folder: Path) -> list:
    out = []
    for flag, name in case.files:
        out += [folder / name] if flag is None else [flag, folder / name]
    return out


def _cli_json(run_cli, *args) -> dict:
    code, out, err = run_cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def _report_view(moves: dict) -> dict:
    """report's ``moves`` object under the certificate's key names."""
    return {("moves" if k == "replica_moves" else k): v for k, v in moves.items()}


def _fleet_row(case: Case, folder: Path, strategy: str) -> dict:
    """The fleet's planning task on the same files, without Spark: ingest's per-cluster parser, then
    ``plan_cluster``, on the pandas rows a Spark task would get."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyspark")  # the pipeline modules import pyspark's types (no session is started)
    from flowbalance.pipeline.fleetplan import plan_cluster
    from flowbalance.pipeline.ingest import parse_cluster

    names = [name for _, name in case.files]
    files = pd.DataFrame({"cluster": "c1", "name": names, "content": [(folder / n).read_bytes() for n in names]})
    req = {**case.fleet, "current": "assignment.json", "strategy": strategy}
    if len(case.files) > 1:
        req["brokers"] = case.files[1][1]
    long = parse_cluster(files, {"c1": req})
    assert "error" not in set(long["kind"]), long[long["kind"] == "error"]["reason"].tolist()
    row = plan_cluster(long).iloc[0].to_dict()
    assert row["ok"], row["reason"]
    return row


def _after_of_plan_file(case: Case, folder: Path, plan_file: Path):
    """The current state (removals marked) and the plan file applied, read by the library's readers."""
    from flowbalance.load import load_cluster
    from flowbalance.planfile import read_plan

    brokers = folder / case.files[1][1] if len(case.files) > 1 else None
    state = load_cluster(folder / "assignment.json", brokers=brokers).state
    pf = read_plan(plan_file, state)
    current = state.with_brokers(pf.final.brokers)
    if case.remove:
        current = mark_removed(current, case.remove)
    return current, pf.final.with_brokers(current.brokers)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_plan_report_compare_and_fleet_print_the_same_certificate(case, run_cli, generated, tmp_path):
    folder = _folder(case, generated)
    inputs = _args(case, folder)
    compared = _cli_json(run_cli, "compare", *inputs, *case.scope, *case.rf)["strategies"]
    for strategy in ("flow", "template"):
        out = tmp_path / f"{strategy}.json"
        planned = _cli_json(run_cli, "plan", *inputs, *case.scope, *case.rf, "--strategy", strategy, "-o", out)
        reported = _report_view(_cli_json(run_cli, "report", *inputs, *case.scope, "--plan", out)["moves"])
        fleet = _fleet_row(case, folder, strategy)
        views = {"plan": planned, "report": reported, "compare": compared[strategy], "fleet": fleet}
        for name, view in views.items():
            keys = [k for k in VERDICT_KEYS if k in view]
            assert SHOWN_EVERYWHERE <= set(keys), (strategy, name)
            assert {k: view[k] for k in keys} == {k: planned[k] for k in keys}, (strategy, name)
            assert view["lower_bound"] <= view["moves"], (strategy, name)
        assert fleet["plan_json"] == out.read_text(), strategy  # the same plan, byte for byte
        for view in (planned, reported, compared[strategy]):
            check_verdict(view)
        current, after = _after_of_plan_file(case, folder, out)
        movable = [case.topics is None or re.fullmatch(case.topics, p.topic) is not None
                   for p in current.partitions()]
        # the commands' default is per-topic spread: the targets are the broker totals' (strict: with topics)
        strict = case.per_topic and PlanRequest().strict_per_topic
        check_against_oracle(planned, current, after, movable, strict, meets_when_reachable=strategy == "flow")


# ---- removals that leave racks of unequal size: two plans the oracle refutes --------------------------------
# Both go through stage 1's fallback ("full keep network; the pooled optimum could not be realized"), and in both the
# library's own certificate of a better plan (certify_plan, report --plan's path) shows the plan is not the best.

def _racked(racks: list[str], weights: list[float], rows: list[list[int]], topics: list[str]) -> ClusterState:
    """Brokers 10, 11, ... in ``racks`` with ``weights``; one partition per (topic, replicas) row."""
    brokers = Brokers.build([10 + i for i in range(len(racks))], racks, weights)
    width = max(len(r) for r in rows)
    parts = [topics[:i].count(t) for i, t in enumerate(topics)]
    return ClusterState.build(brokers, topics, parts, np.array([r + [-1] * (width - len(r)) for r in rows]))


def _certified(state: ClusterState, req: PlanRequest, rows: list[list[int]]) -> dict:
    """``report --plan``'s certificate of the plan that ends with ``rows``."""
    width = max(len(r) for r in rows)
    after = state.with_replicas(np.array([r + [-1] * (width - len(r)) for r in rows]))
    current = mark_removed(state, list(req.remove))
    return certificate_fields(certify_plan(current, after.with_brokers(current.brokers),
                                           PlanRequest(per_topic=req.per_topic)))


@pytest.mark.parametrize("per_topic", [False, True])
def test_flow_meets_reachable_targets_after_removing_a_racks_only_broker(per_topic):
    state = _racked(["r0", "r1", "r2", "r0"], [1.0] * 4,
                    [[10, 13], [11, 12], [11, 10], [10, 11], [11, 10], [10, 11], [11, 10, 12]], ["t"] * 7)
    req = PlanRequest(remove=(12,), per_topic=per_topic)
    better = _certified(state, req, [[13, 11], [11, 13], [11, 13], [10, 11], [11, 10], [10, 11], [11, 10, 13]])
    assert better["targets_met"] and better["moves"] == 4
    p = plan(state, req)
    f = certificate_fields(p.certificate)
    check_verdict(f)
    check_against_oracle(f, p.before, p.after, [True] * 7, per_topic, meets_when_reachable=True)


def test_proven_bound_with_unequal_weights_in_a_rack_is_a_true_lower_bound():
    state = _racked(["r0", "r1", "r0", "r1"], [2.0, 1.0, 1.0, 1.0], [[10, 11], [11, 12], [10, 11]],
                    ["t0", "t0", "t1"])
    req = PlanRequest(remove=(11,), topic_rf=(("t1", 3),), per_topic=False)
    four = _certified(state, req, [[10, 13], [12, 13], [10, 12, 13]])
    assert four["targets_met"] and four["moves"] == 4
    p = plan(state, req)
    f = certificate_fields(p.certificate)
    check_verdict(f)
    assert f["lower_bound"] <= four["moves"], f["verdict"]
