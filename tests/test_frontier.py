"""``flowbalance frontier``: every point is the plan ``plan`` makes for that budget (same JSON numbers), its moves,
spreads and failover match plain-loop oracles, moves rise and per-topic spread falls with the budget, points the
request cannot use are reported, the JSON keys are the documented ones, the page renders in headless Chromium with
one marker per point and escaped names, and bad budgets end in one line naming --budgets. The screens group
thousands (against a token-by-token oracle) and price strict per-topic balance once, by the strict plan."""
from __future__ import annotations

import dataclasses
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowbalance import PlanRequest, RequestError, load_cluster
from flowbalance.frontier import frontier, frontier_summary, group_digits, point_text
from flowbalance.frontier_html import render_frontier_html, request_text

from .conftest import ROOT
from .test_bad_input import assert_one_line
from .browser import dump_dom

NEW = (15, 16, 17)
ADD = ["--add", ",".join(map(str, NEW))]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A Kafka-placed cluster grown in 3 waves, 15 brokers in 3 racks, sizes; plus three new brokers, one per rack.
    Its budgets buy per-topic balance in several steps (checked below, so the monotonicity tests are not empty)."""
    from flowbalance_cli.app import main

    folder = tmp_path_factory.mktemp("frontier")
    with pytest.raises(SystemExit) as done:
        main(["generate", "--brokers", "15", "--racks", "3", "--rack-aware", "--topics", "30", "--partitions", "4-20",
              "--rf", "3", "--layout", "kafka", "--history", "3", "--seed", "5", "--sizes",
              "--formats", "json,brokers,logdirs", "-o", str(folder)])
    assert done.value.code == 0
    more = folder / "more.csv"
    more.write_text((folder / "brokers.csv").read_text() + "".join(f"{b},r{i}\n" for i, b in enumerate(NEW)))
    return folder


def _inputs(folder):
    return [folder / "assignment.json", "--brokers", folder / "more.csv", "--sizes", folder / "logdirs.txt"]


def _json(run_cli, *args):
    code, out, err = run_cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


# ---- plain-loop oracles -------------------------------------------------------------------------------------------

def _lists(state):
    return [[int(x) for x in row if x >= 0] for row in state.replicas]


def _moves(before, after) -> int:
    return sum(len(set(a) - set(b)) for b, a in zip(_lists(before), _lists(after)))


def _topic_spread(state) -> int:
    live = [int(b) for b, r in zip(state.brokers.ids, state.brokers.removed) if not r]
    counts: dict[int, dict[int, int]] = {}
    for t, row in zip(state.topic, _lists(state)):
        for b in row:
            counts.setdefault(int(t), {}).setdefault(b, 0)
            counts[int(t)][b] += 1
    return max(max(c.get(b, 0) for b in live) - min(c.get(b, 0) for b in live) for c in counts.values())


def _worst_failover(state, group) -> int:
    """Fail each group of brokers (one broker, or one rack): a partition led there goes to its first replica
    outside; the worst spread of leaders over the surviving live brokers."""
    b = state.brokers
    live = [int(x) for x, r in zip(b.ids, b.removed) if not r]
    lists = _lists(state)
    worst = 0
    for failed in {group(x) for x in live}:
        leaders = {x: 0 for x in live if group(x) != failed}
        for row in lists:
            lead = next((x for x in row if group(x) != failed), None) if group(row[0]) == failed else row[0]
            if lead in leaders:
                leaders[lead] += 1
        worst = max(worst, max(leaders.values()) - min(leaders.values()))
    return worst


# ---- the command against plan -------------------------------------------------------------------------------------

def test_every_point_is_what_plan_prints_for_that_budget(cluster, run_cli, tmp_path):
    d = _json(run_cli, "frontier", *_inputs(cluster), *ADD)
    labels = [p["label"] for p in d["points"]]
    assert labels == ["0", "1%", "2%", "5%", "10%", "strict"]
    zero = d["points"][0]
    for p in d["points"]:
        flag = ["--per-topic", "strict"] if p["label"] == "strict" else ["--extra-moves", p["label"]]
        s = _json(run_cli, "plan", *_inputs(cluster), *ADD, *flag, "-o", tmp_path / "plan.json")
        for key in ("moves", "verdict", "per_topic", "lower_bound", "proven_optimal", "targets_met", "optimality",
                    "bytes_to_move", "changed_partitions", "leader_changes", "empty"):
            assert p[key] == s[key], (p["label"], key)
        for key in ("replica_spread", "topic_spread", "leader_spread", "failover_worst_spread"):
            assert p[key] == s[key][1], (p["label"], key)
        assert p["budget_note"] == ("; ".join(n for n in s["notes"] if n.startswith("move budget:")) or None)
        if p["label"] != "strict":
            assert p["extra_moves_spent"] == p["moves"] - zero["moves"]
    assert zero["proven_optimal"] and zero["extra_moves_spent"] == 0


def test_points_match_oracles_and_move_along_the_frontier(cluster):
    loaded = load_cluster(cluster / "assignment.json", brokers=cluster / "more.csv", sizes=cluster / "logdirs.txt")
    f = frontier(loaded.state, PlanRequest(add=NEW), budgets="10,2%,5%,10%,20%,50%")
    assert all(pt.usable for pt in f.points)
    assert f.scope_replicas == sum(len(r) for r in _lists(loaded.state))
    rack = dict(zip((int(x) for x in f.points[0].plan.before.brokers.ids), f.points[0].plan.before.brokers.rack))
    d = frontier_summary(f)
    for pt, row in zip(f.points, d["points"]):
        p = pt.plan
        assert row["moves"] == p.changes.moves == _moves(loaded.state, p.after)
        assert row["topic_spread"] == _topic_spread(p.after)
        assert row["failover_worst_spread"] == _worst_failover(p.after, lambda b: b)
        assert row["rack_failover_worst_spread"] == _worst_failover(p.after, lambda b: rack[b])
    budgets, strict = d["points"][:-1], d["points"][-1]
    assert strict["label"] == "strict" and strict["budget_moves"] is None
    fewest = budgets[0]["moves"]
    for a, b in zip(budgets, budgets[1:]):
        assert a["budget_moves"] <= b["budget_moves"]  # budget order: 0, 10, 2% (21), 5%, ...
        assert a["moves"] <= b["moves"]
        assert b["topic_spread"] <= a["topic_spread"]
        if b["moves"] > a["moves"]:  # the budget bought something: a more even worst topic, or a lower excess
            assert b["topic_spread"] < a["topic_spread"] or "spent" in b["budget_note"]
    for p in budgets:
        assert p["moves"] <= fewest + p["budget_moves"]
        assert strict["moves"] >= p["moves"] and strict["topic_spread"] <= p["topic_spread"]
    assert len({p["moves"] for p in budgets}) >= 3 and budgets[-1]["topic_spread"] < budgets[0]["topic_spread"]


def test_points_the_request_cannot_use_are_reported(cluster, run_cli):
    d = _json(run_cli, "frontier", *_inputs(cluster), *ADD, "--no-per-topic", "--budgets", "0,3%")
    by = {p["label"]: p for p in d["points"]}
    assert by["0"]["usable"] and by["0"]["moves"] > 0 and by["0"]["per_topic"]["mode"] == "off"
    # a budget without per-topic balance buys failover only; strict has nothing to balance
    assert by["3%"]["usable"] and by["3%"]["moves"] <= by["0"]["moves"] + by["3%"]["budget_moves"]
    assert by["3%"]["per_topic"]["mode"] == "off" and "failover" in by["3%"]["budget_note"]
    point = by["strict"]
    assert not point["usable"] and point["moves"] is None and "per-topic balance is off" in point["reason"]
    code, out, err = run_cli("frontier", *_inputs(cluster), *ADD, "--strategy", "template", "--budgets", "0,3%")
    assert code == 0, err
    assert out.count("not planned") == 2 and "strategy" in out
    loaded = load_cluster(cluster / "assignment.json", brokers=cluster / "more.csv")
    f = frontier(loaded.state, PlanRequest(add=NEW, stages=("leaders", "followers")), budgets=["0", 5])
    assert [(pt.label, pt.usable) for pt in f.points] == [("0", True), ("5", False), ("strict", False)]
    assert all("replicas stage" in pt.reason for pt in f.points[1:])
    assert "replicas" not in f.points[0].plan.stages_run
    with pytest.raises(RequestError):
        frontier(loaded.state, PlanRequest(add=NEW, extra_moves=5))
    with pytest.raises(RequestError):
        frontier(loaded.state, PlanRequest(add=NEW, per_topic_mode="strict"))


def test_json_keys_are_the_documented_ones(cluster, run_cli):
    text = (ROOT / "docs" / "commands.md").read_text()
    section = text[text.index("## `flowbalance frontier`"):text.index("Usage: flowbalance frontier")]
    items = re.split(r"\n- ", section.split("`--json` prints")[1])[1:]

    def keys(item: str) -> set[str]:
        return {k for k in re.findall(r"`([^`]+)`", item.split(":", 1)[1]) if re.fullmatch(r"[a-z][a-z_0-9]*", k)}

    top, fingerprint, current, points = (keys(i) for i in items)
    d = _json(run_cli, "frontier", *_inputs(cluster), *ADD, "--budgets", "0,1%", "--no-per-topic")
    assert set(d) == top and set(d["current"]) == current and set(d["cluster"]) == fingerprint
    assert d["kind"] == "flowbalance frontier" and d["request"] == {"add": list(NEW), "per_topic": False}
    assert all(set(p) == points for p in d["points"])
    assert [p["usable"] for p in d["points"]] == [True, True, False]  # an unplanned point has the same keys


# ---- the page ---------------------------------------------------------------------------------------------------

HOSTILE = '<img src=x onerror="alert(1)">&amp;'


def _hostile_frontier(cluster):
    loaded = load_cluster(cluster / "assignment.json", brokers=cluster / "more.csv", sizes=cluster / "logdirs.txt")
    state = dataclasses.replace(loaded.state, topics=tuple(HOSTILE + t for t in loaded.state.topics))
    d = frontier_summary(frontier(state, PlanRequest(add=NEW), budgets="0,1%,5%,10%"))
    assert all(p["per_topic"]["worst_topic"].startswith(HOSTILE) for p in d["points"])
    return d


def test_the_chart_places_each_point_at_its_values(cluster):
    d = _hostile_frontier(cluster)
    page = render_frontier_html(d)
    marks = re.findall(r'<g class="point" data-label="([^"]+)">.*?<circle class="topic" cx="([\d.]+)" cy="([\d.]+)"'
                       r'.*?<rect class="failover" x="([\d.]+)" y="([\d.]+)"', page)
    assert [m[0] for m in marks] == [p["label"] for p in d["points"]]
    for (_, cx, cy, rx, ry), p in zip(marks, d["points"]):
        for (_, cx2, cy2, rx2, ry2), q in zip(marks, d["points"]):
            assert (float(cx) < float(cx2)) == (p["moves"] < q["moves"])
            assert (float(cy) > float(cy2)) == (p["topic_spread"] < q["topic_spread"])  # SVG y grows downwards
            assert (float(ry) > float(ry2)) == (p["failover_worst_spread"] < q["failover_worst_spread"])
    assert HOSTILE not in page and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;amp;" in page
    assert "<script" not in page and not re.search(r"https?://(?!www\.w3\.org/2000/svg)", page)


def test_page_renders_in_headless_chromium_with_one_marker_per_point(cluster, tmp_path):
    d = _hostile_frontier(cluster)
    page = tmp_path / "frontier.html"
    page.write_text(render_frontier_html(d, title="</title><script>document.title='x'</script>"))
    html = dump_dom(page, tmp_path)
    n = sum(p["usable"] for p in d["points"])
    assert html.count('<g class="point"') == html.count('<circle class="topic"') == n == len(d["points"])
    assert html.count('<rect class="failover"') == n
    assert "<img" not in html and "<script" not in html  # the names stayed text
    assert "&lt;img src=x onerror=\"alert(1)\"&gt;&amp;amp;topic-" in html
    assert "&lt;/title&gt;&lt;script&gt;" in html


# ---- files and bad input ------------------------------------------------------------------------------------------

def test_html_file_is_written_and_never_over_an_input(cluster, run_cli, tmp_path):
    out = tmp_path / "frontier.html"
    code, stdout, err = run_cli("frontier", *_inputs(cluster), *ADD, "--budgets", "0,2%", "--html", out, "-q")
    assert code == 0 and stdout == "", err
    assert out.read_text().count('<g class="point"') == 3
    assert not list(tmp_path.glob(".flowbalance-*"))
    before = (cluster / "more.csv").read_bytes()
    code, stdout, err = run_cli("frontier", *_inputs(cluster), *ADD, "--html", cluster / "more.csv")
    assert_one_line(code, stdout, err, "more.csv", "refusing to overwrite an input")
    assert (cluster / "more.csv").read_bytes() == before


@pytest.mark.parametrize("budgets", ["x", "-1", "101%", "", "1%,,2%", "5,5", "0,0%", "2 moves"])
def test_bad_budgets_are_one_line_naming_the_flag(cluster, run_cli, budgets):
    code, out, err = run_cli("frontier", *_inputs(cluster), *ADD, "--budgets", budgets)
    line = assert_one_line(code, out, err, "--budgets")
    assert "extra_moves" not in line and "--extra-moves" not in line


def test_the_frontier_sets_the_budget_itself(cluster, run_cli):
    code, out, err = run_cli("frontier", *_inputs(cluster), *ADD, "--extra-moves", "5")
    assert_one_line(code, out, err, "--extra-moves")


# ---- what the screens show: thousands grouped, strict priced once ------------------------------------------------

WORDS = ["moves", "bound", "topic-1234", "x9999", "1.5", "1234.5", "0.1234", "2,345", "±1", "1.8×", "(min-cost flow)"]
SEPARATORS = [" ", ", ", "; ", " (", "): "]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.integers(0, 10 ** 12), st.sampled_from(WORDS)), st.sampled_from(SEPARATORS)),
                max_size=12))
def test_group_digits_groups_free_standing_integers_only(tokens):
    text = "".join(f"{t}{sep}" for t, sep in tokens)
    expected = "".join(f"{t:,}{sep}" if isinstance(t, int) else f"{t}{sep}" for t, sep in tokens)
    assert group_digits(text) == expected


@pytest.fixture(scope="module")
def larger(tmp_path_factory):
    """A cluster where the fewest moves are above 1,000 (so the verdict's numbers need grouping), and strict
    per-topic balance costs more than its closed-form bound would say is needed at the least."""
    from flowbalance_cli.app import main

    folder = tmp_path_factory.mktemp("frontier_larger")
    with pytest.raises(SystemExit) as done:
        main(["generate", "--brokers", "15", "--racks", "3", "--rack-aware", "--topics", "90", "--partitions", "4-20",
              "--rf", "3", "--layout", "kafka", "--history", "3", "--seed", "5", "-o", str(folder)])
    assert done.value.code == 0
    (folder / "more.csv").write_text((folder / "brokers.csv").read_text() + "".join(f"{b},r{i}\n" for i, b in
                                                                                    enumerate(NEW)))
    return [folder / "assignment.json", "--brokers", folder / "more.csv", *ADD, "--budgets", "0"]


def test_the_terminal_groups_thousands_and_prices_strict_once(larger, run_cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")
    d = _json(run_cli, "frontier", *larger)
    zero, strict = d["points"]
    assert zero["moves"] >= 1000 and f"{zero['moves']:,}" in zero["verdict"]  # the certificate's own words, grouped
    assert "needs at least" in zero["per_topic"]["text"] and strict["usable"]
    code, out, err = run_cli("frontier", *larger)
    assert code == 0, err
    assert not re.search(r"(?<![\w.,])\d{4,}", out), out  # every count of 1,000 or more is grouped
    lines = {ln.split(":", 1)[0]: ln for ln in out.splitlines() if ln.startswith(("0:", "strict:"))}
    assert lines["0"].startswith(f"0: {zero['moves']:,} moves")
    assert f"strict ±1 per topic: {strict['moves']:,} moves (the strict plan)" in lines["0"]
    assert "needs at least" not in out  # one strict figure: the strict column's, not also the closed-form bound
    assert f"{strict['moves']:,}" in lines["strict"]
    assert point_text(zero, None) == f"{group_digits(zero['verdict'])}; {group_digits(zero['per_topic']['text'])}"


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 60), max_size=30))
def test_the_pages_broker_runs_expand_back_to_the_ids(ids):
    text = request_text({"add": sorted(ids)})
    assert text.startswith("add ") or not ids
    shown = [] if not ids else text[4:].split(", ")
    ends = [(int(p.split("–")[0]), int(p.split("–")[-1])) for p in shown]
    assert [x for lo, hi in ends for x in range(lo, hi + 1)] == sorted(ids)
    assert all(hi - lo >= 2 for lo, hi in ends if lo != hi)  # a range is 3 ids or more
    assert all(b[0] != a[1] + 1 for a, b in zip(ends, ends[1:]) if a[0] != a[1] or b[0] != b[1])  # runs are whole
    assert all(not (a[1] + 1 == b[0] and b[1] + 1 == c[0]) for a, b, c in zip(ends, ends[1:], ends[2:]))
