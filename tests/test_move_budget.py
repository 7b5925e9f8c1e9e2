"""The move budget (``extra_moves``): moves beyond the fewest, spent on the worst per-topic excess.

Brute force on tiny clusters (plain Python): the plan's excess is the smallest of any assignment within the fewest
moves + the budget, with the fewest moves for that excess, and the count targets still met. Then the request
field's forms and errors, the CLI flag and the fleet key."""
from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowbalance import PlanRequest, RequestError, plan
from flowbalance.model import Brokers, ClusterState

from .plan_oracle import intervals


def assignments(live: list[int], rows: list[tuple[str, list[int]]], rf: int):
    """(moves, excess) of every assignment of RF distinct live brokers per partition within the count intervals;
    excess: the largest distance of a (topic, broker) count outside [floor, ceil] of the topic's share."""
    bounds = intervals(rf * len(rows), live)
    topics = sorted({t for t, _ in rows})
    tb = {t: intervals(rf * sum(1 for tt, _ in rows if tt == t), live) for t in topics}
    for combo in itertools.product([frozenset(c) for c in itertools.combinations(live, rf)], repeat=len(rows)):
        counts = {b: sum(b in s for s in combo) for b in live}
        if any(not bounds[b][0] <= counts[b] <= bounds[b][1] for b in live):
            continue
        excess = 0
        for t in topics:
            for b in live:
                c = sum(b in s for (tt, _), s in zip(rows, combo) if tt == t)
                excess = max(excess, c - tb[t][b][1], tb[t][b][0] - c)
        yield sum(len(s - set(r)) for s, (_, r) in zip(combo, rows)), excess


def excess_of(state: ClusterState) -> int:
    live = [int(x) for x in state.brokers.ids]
    rows = [(state.topics[t], [int(x) for x in r if x >= 0]) for t, r in zip(state.topic, state.replicas)]
    out = 0
    for t in sorted({t for t, _ in rows}):
        mine = [r for tt, r in rows if tt == t]
        tb = intervals(sum(len(r) for r in mine), live)
        for b in live:
            c = sum(r.count(b) for r in mine)
            out = max(out, c - tb[b][1], tb[b][0] - c)
    return out


@st.composite
def tiny(draw):
    n = draw(st.integers(3, 4))
    rf = draw(st.integers(1, 2))
    parts = draw(st.integers(3, 5 if rf == 2 and n == 4 else 6))
    rows = [(draw(st.sampled_from(["a", "b"])), list(draw(st.permutations(range(n))))[:rf]) for _ in range(parts)]
    return list(range(n)), rows, rf, draw(st.integers(0, 4))


@settings(max_examples=120, deadline=None)
@given(tiny())
def test_budget_reaches_the_smallest_excess_within_it_with_the_fewest_moves(case):
    ids, rows, rf, budget = case
    topics = [t for t, _ in rows]
    parts = [topics[:i].count(t) for i, t in enumerate(topics)]
    state = ClusterState.build(Brokers.build(ids), topics, parts, np.array([r for _, r in rows]))
    every = list(assignments(ids, rows, rf))
    fewest = min(m for m, _ in every)
    best = min(e for m, e in every if m <= fewest + budget)
    p = plan(state, PlanRequest(extra_moves=budget, stages=("replicas",)))
    got = excess_of(p.after)
    assert p.changes.moves <= fewest + budget
    assert p.certificate.moves_verdict.targets_met
    base = plan(state, PlanRequest(stages=("replicas",)))
    assert got == best
    if got < excess_of(base.after):  # bought: the fewest moves for that excess
        assert p.changes.moves == min(m for m, e in every if e <= got)
        assert "budget" in p.stages_run


@pytest.mark.parametrize("value, moves", [(0, 0), ("0", 0), (7, 7), ("12", 12), ("2%", 20), ("2.5%", 25),
                                          ("100%", 1000), ("0%", 0)])
def test_budget_forms(value, moves):
    assert PlanRequest(extra_moves=value).validate().extra_moves_for(1000) == moves


@pytest.mark.parametrize("value", [-1, "-3", "x", "5 moves", "101%", "nan%", "%", 1.5, True, None])
def test_bad_budgets_name_the_field(value):
    with pytest.raises(RequestError) as err:
        PlanRequest(extra_moves=value).validate()
    assert "extra_moves" in str(err.value.line({})) or err.value.fields == ("extra_moves",)


@pytest.mark.parametrize("fields", [dict(strategy="template"), dict(objective="bytes"), dict(balance="count+bytes")])
def test_budget_with_another_strategy_objective_or_balance_is_refused(fields):
    with pytest.raises(RequestError):
        PlanRequest(extra_moves="2%", **fields).validate()
    PlanRequest(extra_moves=0, **fields).validate()  # no budget: fine


def _skewed(tmp_path, run_cli):
    code, _, err = run_cli("generate", "--brokers", "12", "--topics", "20", "--partitions", "4-9", "--rf", "3",
                           "--layout", "kafka", "--seed", "4", "-o", str(tmp_path / "g"))
    assert code == 0, err
    return [str(tmp_path / "g" / "assignment.json"), "--brokers", str(tmp_path / "g" / "brokers.csv")]


def test_cli_budget_is_spent_and_report_certifies_the_same_moves(tmp_path, run_cli):
    inputs = _skewed(tmp_path, run_cli)
    add = ["--brokers", str(tmp_path / "more.csv"), "--add", "12,13"]
    (tmp_path / "more.csv").write_text("id\n" + "".join(f"{i}\n" for i in range(14)))
    inputs = inputs[:1] + add
    out = {}
    for b in ("0", "30%"):
        code, text, err = run_cli("plan", *inputs, "--extra-moves", b, "-o", str(tmp_path / f"p{b[:2]}.json"),
                                  "--json")
        assert code == 0, err
        out[b] = json.loads(text)
    zero, spent = out["0"], out["30%"]
    assert spent["moves"] >= zero["moves"] and spent["min_moves"] == zero["min_moves"]
    assert spent["per_topic"]["spread"] <= zero["per_topic"]["spread"]
    if spent["moves"] > zero["moves"]:
        assert any("move budget" in n for n in spent["notes"])
        assert not spent["proven_optimal"]
    code, text, err = run_cli("report", *inputs[:3], "--plan", str(tmp_path / "p30.json"), "--json")
    assert code == 0, err
    assert json.loads(text)["moves"]["replica_moves"] == spent["moves"]


def test_cli_bad_budget_is_one_line_naming_the_flag(tmp_path, run_cli):
    inputs = _skewed(tmp_path, run_cli)
    code, _, err = run_cli("plan", *inputs, "--extra-moves", "lots", "-o", str(tmp_path / "p.json"))
    assert code == 2 and err.count("\n") == 1 and "--extra-moves" in err and "lots" in err, err
    assert not (tmp_path / "p.json").exists()


def test_fleet_entry_takes_extra_moves():
    assert PlanRequest.from_json({"extra_moves": "2%"}, "fleet.json: clusters.a").extra_moves == "2%"
    with pytest.raises(Exception) as err:
        PlanRequest.from_json({"extra_moves": [1]}, "fleet.json: clusters.a")
    assert "clusters.a.extra_moves" in str(err.value.line({}) if hasattr(err.value, "line") else err.value)


def test_method_md_shows_what_the_commands_print(tmp_path, run_cli):
    """docs/method.md's 40-broker example: the lines it shows are the ones plan prints."""
    from .conftest import ROOT

    doc = (ROOT / "docs" / "method.md").read_text()
    g = tmp_path / "k40"
    code, _, err = run_cli("generate", "--brokers", "40", "--topics", "300", "--layout", "kafka", "--history", "3",
                           "--rf", "3", "-o", str(g))
    assert code == 0, err
    shows = ("Replica moves", "Per-topic", "note: move budget")
    for budget, heads, lines in (("0", shows, 2), ("1%", shows[2:], 2), ("5%", shows, 4)):
        code, text, err = run_cli("plan", str(g / "assignment.json"), "--brokers", str(g / "brokers.csv"), "--add",
                                  "40,41", "--extra-moves", budget, "-o", str(tmp_path / "p.json"))
        assert code == 0, err
        shown = [ln for ln in text.splitlines() if ln.startswith(heads)]
        assert len(shown) == lines and all(ln in doc for ln in shown), shown


def test_method_md_frontier_table_is_what_frontier_prints(tmp_path, run_cli):
    """docs/method.md's frontier table (the same 40-broker cluster): moves, per-topic and failover spread per point."""
    import json

    from .conftest import ROOT

    doc = (ROOT / "docs" / "method.md").read_text()
    block = doc[doc.index("### The frontier"):doc.index("### The rack rule")]
    rows = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]]
            for ln in block.splitlines() if ln.startswith("| ") and not ln.startswith("| |")}
    g = tmp_path / "k40"
    code, _, err = run_cli("generate", "--brokers", "40", "--topics", "300", "--layout", "kafka", "--history", "3",
                           "--rf", "3", "-o", str(g))
    assert code == 0, err
    code, out, err = run_cli("frontier", str(g / "assignment.json"), "--brokers", str(g / "brokers.csv"), "--add",
                             "40,41", "--json")
    assert code == 0, err
    d = json.loads(out)
    points = d["points"]
    assert [p["label"] for p in points] == ["0", "1%", "2%", "5%", "10%", "strict"]
    assert rows["replica moves"][1:] == [f"{p['moves']:,}" for p in points]
    assert rows["per-topic spread"][1:] == [f"{p['topic_spread']:g}" for p in points]
    assert rows["failover spread, broker down"][1:] == [f"{p['failover_worst_spread']:g}" for p in points]
    assert rows["failover spread, broker down"][0] == f"{d['current']['failover_worst_spread']:g}"
    # docs/strategies.md's worked example: the same points, and the template strategy beside them
    strat = (ROOT / "docs" / "strategies.md").read_text()
    table = {ln.split("|")[1].strip(): [c.strip() for c in ln.split("|")[2:-1]] for ln in strat.splitlines()
             if ln.startswith("| ") and ("flow, " in ln or ln.startswith("| template |"))}
    by = {p["label"]: p for p in points}
    for row, label in (("flow, budget 0 (default)", "0"), ("flow, `--extra-moves 1%` (108)", "1%"),
                       ("flow, `--extra-moves 5%` (540)", "5%"), ("flow, `--per-topic strict`", "strict")):
        p = by[label]
        assert table[row][0].split(" ")[0] == f"{p['moves']:,}", row
        assert table[row][1:] == [f"{p['topic_spread']:g}", f"{p['failover_worst_spread']:g}"], row
    code, out, err = run_cli("plan", str(g / "assignment.json"), "--brokers", str(g / "brokers.csv"), "--add",
                             "40,41", "--strategy", "template", "--json", "-o", str(tmp_path / "t.json"))
    assert code == 0, err
    t = json.loads(out)
    assert table["template"] == [f"{t['moves']:,}", f"{t['topic_spread'][1]:g}", f"{t['failover_worst_spread'][1]:g}"]


def test_a_slack_too_large_to_solve_leaves_stage_1s_plan_and_says_so(monkeypatch):
    """A budget solve that raises PlanningError (stage 1's full network would not fit) is no plan for that slack,
    named in the notes; the plan is stage 1's, not an error."""
    import flowbalance.chain.budget as budget
    from flowbalance.errors import PlanningError
    from flowbalance.generate import generate_cluster

    def too_large(*args, **kwargs):
        raise PlanningError("the pooled optimum could not be realized and the full network would need 9 arcs")

    state = generate_cluster(brokers=12, topics=20, partitions=(4, 9), rf=3, layout="kafka", seed=4)
    base = plan(state, PlanRequest())
    monkeypatch.setattr(budget, "balance_replicas", too_large)
    p = plan(state, PlanRequest(extra_moves="30%"))
    assert p.changes.moves == base.changes.moves
    assert any("was not solved" in n for n in p.certificate.notes)
    assert not any("not reachable" in n for n in p.certificate.notes if n.startswith("move budget"))
