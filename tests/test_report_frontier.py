"""``flowbalance report --html --frontier F``: the saved frontier is drawn in the page as saved (the section equals the
one rendered from the file, and nothing is planned), any format of the same cluster is accepted, a frontier of
another cluster or assignment is refused, every malformed or mistyped field ends in one line naming the file, the
field and the value with nothing written, and hostile text in the file stays text in headless Chromium."""
from __future__ import annotations

import contextlib
import copy
import importlib
import io
import json
import random

import pytest

from flowbalance import load_cluster
from flowbalance.frontier import bound_text, cluster_fingerprint, strict_point
from flowbalance.frontier_html import frontier_section

from .test_bad_input import assert_one_line
from .browser import dump_dom

NEW = "12,13"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A Kafka-placed cluster grown in two waves (12 brokers, 3 racks) in JSON and describe form, and a broker file
    with two new brokers."""
    from flowbalance_cli.app import main

    folder = tmp_path_factory.mktemp("report_frontier")

    def run(*args) -> None:
        with pytest.raises(SystemExit) as done:
            main([str(a) for a in args])
        assert done.value.code == 0

    run("generate", "--brokers", "12", "--racks", "3", "--rack-aware", "--topics", "16", "--partitions", "4-14",
        "--rf", "3", "--layout", "kafka", "--history", "2", "--seed", "3", "--formats", "json,describe,brokers",
        "-o", folder)
    (folder / "more.csv").write_text((folder / "brokers.csv").read_text() + "12,r0\n13,r1\n")
    return folder


@pytest.fixture(scope="module")
def files(saved):
    """The saved frontier (what `frontier --json` printed: budgets 0 and 5 %) and the budget 0 plan."""
    from flowbalance_cli.app import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main(["frontier", str(saved / "assignment.json"), "--brokers", str(saved / "more.csv"), "--add", NEW,
              "--budgets", "0,5%", "--json"])
    assert done.value.code == 0
    (saved / "frontier.json").write_text(out.getvalue())
    with pytest.raises(SystemExit) as done:
        main(["plan", str(saved / "assignment.json"), "--brokers", str(saved / "more.csv"), "--add", NEW, "-q",
              "-o", str(saved / "plan.json")])
    assert done.value.code == 0
    return saved


def _report(run_cli, folder, current, frontier, out, *extra):
    return run_cli("report", folder / current, "--brokers", folder / "more.csv", "--plan", folder / "plan.json",
                   "--frontier", frontier, "--html", out, *extra)


# ---- the page ---------------------------------------------------------------------------------------------------

def test_the_page_carries_the_saved_frontier_and_nothing_is_planned(files, run_cli, tmp_path, monkeypatch):
    def no_planning(*args, **kwargs):
        raise AssertionError("report --frontier planned")

    for name in ("flowbalance.planner", "flowbalance.frontier"):  # (the package's `frontier` is the function)
        monkeypatch.setattr(importlib.import_module(name), "plan", no_planning)
    monkeypatch.setattr(importlib.import_module("flowbalance.frontier"), "frontier", no_planning)
    data = json.loads((files / "frontier.json").read_text())
    for current in ("assignment.json", "describe.txt"):  # the frontier was made from the JSON; any format is the same
        out = tmp_path / f"{current}.html"
        code, stdout, err = _report(run_cli, files, current, files / "frontier.json", out)
        assert code == 0, err
        page = out.read_text()
        assert frontier_section(data) in page  # drawn from the file as saved
        assert page.count('<g class="point"') == sum(p["usable"] for p in data["points"]) == 3
        assert page.index("<h2>Moves</h2>") < page.index('<section class="frontier">')


def test_the_plans_strict_bound_is_called_a_bound_beside_the_frontiers_strict_plan(files, run_cli, tmp_path):
    data = json.loads((files / "frontier.json").read_text())
    strict, zero = strict_point(data), data["points"][0]
    assert strict["usable"] and "needs at least" in zero["per_topic"]["text"]  # the case this test is about
    out = tmp_path / "r.html"
    assert _report(run_cli, files, "assignment.json", files / "frontier.json", out)[0] == 0
    bound, page = zero["per_topic"]["strict_moves_bound"], out.read_text()
    assert f"needs at least {bound:,} moves" in page and strict["moves"] > bound  # (else the words below differ)
    assert f"(a lower bound; the frontier&#x27;s strict plan takes {strict['moves']:,} moves)" in page
    met = copy.deepcopy(data)
    strict_point(met)["moves"] = bound
    assert bound_text(zero["per_topic"], strict_point(met)).endswith("(a lower bound, which the frontier's strict "
                                                                      "plan meets)")
    assert bound_text(zero["per_topic"], None) == zero["per_topic"]["text"]  # no frontier: the certificate's words


def test_the_page_says_which_frontier_point_the_plan_is(files, run_cli, tmp_path):
    data = json.loads((files / "frontier.json").read_text())
    out = tmp_path / "r.html"
    assert _report(run_cli, files, "assignment.json", files / "frontier.json", out)[0] == 0
    zero = data["points"][0]
    same = [p["label"] for p in data["points"] if p["usable"] and all(
        p[k] == zero[k] for k in ("moves", "topic_spread", "failover_worst_spread"))]  # the plan is budget 0's
    assert f"This plan is the frontier&#x27;s point {', '.join(same)} (the same moves and spreads)." in out.read_text()
    moved = copy.deepcopy(data)
    for p in moved["points"]:
        p["moves"] = (p["moves"] or 0) + 1
    (tmp_path / "other.json").write_text(json.dumps(moved))
    assert _report(run_cli, files, "assignment.json", tmp_path / "other.json", out)[0] == 0
    assert "This plan is none of the frontier&#x27;s points" in out.read_text()


def test_frontier_needs_html(files, run_cli, tmp_path):
    code, out, err = run_cli("report", files / "assignment.json", "--frontier", files / "frontier.json")
    assert_one_line(code, out, err, "--frontier", "--html", "frontier.json")


# ---- the cluster's fingerprint ----------------------------------------------------------------------------------

def _assignment(folder):
    return json.loads((folder / "assignment.json").read_text())


def test_fingerprint_counts_match_a_plain_count_and_ignore_format_and_order(files, tmp_path):
    doc = _assignment(files)
    fp = cluster_fingerprint(load_cluster(files / "assignment.json").state)
    assert fp["partitions"] == len(doc["partitions"])
    assert fp["replicas"] == sum(len(p["replicas"]) for p in doc["partitions"])
    assert fp["topics"] == len({p["topic"] for p in doc["partitions"]})
    assert fp["brokers"] == sorted({b for p in doc["partitions"] for b in p["replicas"]})
    shuffled = copy.deepcopy(doc)
    random.Random(1).shuffle(shuffled["partitions"])
    (tmp_path / "shuffled.json").write_text(json.dumps(shuffled))
    for other in (files / "describe.txt", tmp_path / "shuffled.json"):
        assert cluster_fingerprint(load_cluster(other).state) == fp
    assert cluster_fingerprint(load_cluster(files / "assignment.json", brokers=files / "more.csv").state) == fp


def _swap_leader(doc):
    p = doc["partitions"][7]
    p["replicas"] = p["replicas"][1:] + p["replicas"][:1]


def _rename_broker(doc):
    for p in doc["partitions"]:
        p["replicas"] = [99 if b == 3 else b for b in p["replicas"]]


def _move_one_replica(doc):
    p = next(p for p in doc["partitions"] if 11 not in p["replicas"])
    p["replicas"][-1] = 11


def _drop_partition(doc):
    doc["partitions"].pop()


@pytest.mark.parametrize("change, field", [(_swap_leader, "cluster.assignment_sha256"),
                                           (_rename_broker, "cluster.brokers"),
                                           (_move_one_replica, "cluster.assignment_sha256"),
                                           (_drop_partition, "cluster.partitions")])
def test_a_frontier_of_another_cluster_is_refused(files, run_cli, tmp_path, change, field):
    doc = _assignment(files)
    change(doc)
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    (tmp_path / "more.csv").write_text((files / "more.csv").read_text() + "99,r2\n")
    out = tmp_path / "r.html"
    code, stdout, err = run_cli("report", other, "--brokers", tmp_path / "more.csv", "--frontier",
                                files / "frontier.json", "--html", out)
    line = assert_one_line(code, stdout, err, "frontier.json", field, "another")
    assert "other.json" in line and not out.exists()


# ---- malformed files --------------------------------------------------------------------------------------------

def _set(path: str, value):
    """A change to the saved dict: set (or with value ... delete) the field at ``path`` (``points.0.moves``)."""
    def change(d):
        *head, last = [int(k) if k.isdigit() else k for k in path.split(".")]
        for k in head:
            d = d[k]
        if value is ...:
            del d[last]
        else:
            d[last] = value
    return change


def _none_planned(d):
    for p in d["points"]:
        p.update(usable=False, reason="not planned here")


BAD = {
    # name: (change of the saved dict, or the file's text; needles of the one line)
    "malformed": ('{"kind": "flowbalance frontier",, "points": []}', ["line 1 column", "malformed JSON"]),
    "empty_file": ("", ["malformed JSON"]),
    "not_an_object": ("[1, 2, 3]", ["expected a JSON object", "[1, 2, 3]"]),
    "wrong_kind": (_set("kind", "flowbalance report"), ["kind", "not a frontier", "'flowbalance report'"]),
    "no_kind": (_set("kind", ...), ["kind", "not a frontier", "None"]),
    "newer_version": (_set("version", 2), ["version", "(got 2)"]),
    "no_points": (_set("points", ...), ["points", "non-empty list", "None"]),
    "empty_points": (_set("points", []), ["points", "non-empty list", "[]"]),
    "missing_moves": (_set("points.0.moves", ...), ["points[0].moves", "missing field"]),
    "moves_as_text": (_set("points.1.moves", "12"), ["points[1].moves", "whole number", "'12'"]),
    "moves_as_bool": (_set("points.0.moves", True), ["points[0].moves", "True"]),
    "moves_too_large": (_set("points.0.moves", 10 ** 16), ["points[0].moves", "10000000000000000"]),
    "negative_spread": (_set("points.2.topic_spread", -1), ["points[2].topic_spread", "-1"]),
    "spread_nan": (_set("points.0.topic_spread", float("nan")), ["points[0].topic_spread", "nan"]),
    "usable_as_text": (_set("points.1.usable", "yes"), ["points[1].usable", "true or false", "'yes'"]),
    "label_twice": (_set("points.1.label", "0"), ["points[1].label", "listed twice", "'0'"]),
    "label_missing": (_set("points.2.label", ...), ["points[2].label", "missing field"]),
    "nothing_planned": (_none_planned, ["points", "no point was planned"]),
    "no_reason": (lambda d: d["points"][1].update(usable=False, reason=None), ["points[1].reason", "reason"]),
    "budget_missing": (_set("points.1.budget_moves", None), ["points[1].budget_moves", "budget"]),
    "per_topic_text": (_set("points.0.per_topic.text", ...), ["points[0].per_topic.text", "missing field"]),
    "verdict_number": (_set("points.0.verdict", 5), ["points[0].verdict", "text", "(got 5)"]),
    "current_brokers": (_set("current.brokers", ...), ["current.brokers", "missing field"]),
    "cluster_text": (_set("cluster", "mine"), ["cluster", "JSON object", "'mine'"]),
    "cluster_hash": (_set("cluster.assignment_sha256", ...), ["cluster.assignment_sha256", "missing field"]),
    "brokers_text": (_set("cluster.brokers", "0-11"), ["cluster.brokers", "'0-11'"]),
    "request_value": (_set("request.add", {"b": 1}), ["request.add", "{'b': 1}"]),
    "terminal_escape": (_set("kind", "\x1b[2J\x1b[31mred"), ["kind", "\\x1b[2J"]),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_bad_frontier_file_is_one_line_and_nothing_is_written(files, run_cli, tmp_path, name):
    change, needles = BAD[name]
    if isinstance(change, str):
        text = change
    else:
        d = json.loads((files / "frontier.json").read_text())
        change(d)
        text = json.dumps(d)
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    out = tmp_path / "r.html"
    code, stdout, err = _report(run_cli, files, "assignment.json", bad, out)
    line = assert_one_line(code, stdout, err, "bad.json", *needles)
    assert "\x1b" not in line and not out.exists() and not list(tmp_path.glob(".flowbalance-*"))


def test_a_plan_file_is_not_a_frontier(files, run_cli, tmp_path):
    out = tmp_path / "r.html"
    code, stdout, err = _report(run_cli, files, "assignment.json", files / "plan.json", out)
    assert_one_line(code, stdout, err, "plan.json", "kind", "not a frontier")
    assert not out.exists()


# ---- hostile text in the file, in a real browser ----------------------------------------------------------------

HOSTILE = '<script>document.title="owned"</script><img src=x onerror="alert(1)">\'"\x1b[31m'


def _hostile(files, tmp_path):
    d = json.loads((files / "frontier.json").read_text())
    for i, p in enumerate(d["points"]):
        p["label"] = p["label"] if p["label"] == "strict" else f"{HOSTILE}{i}"
        p["verdict"] = HOSTILE
        if p["per_topic"]:
            p["per_topic"].update(worst_topic=HOSTILE, text=HOSTILE)
    d["points"][1].update(usable=False, reason=HOSTILE)
    d["request"]["topics"] = HOSTILE
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(d))
    return d, path


def test_hostile_text_in_the_file_stays_text_in_headless_chromium(files, run_cli, tmp_path):
    d, path = _hostile(files, tmp_path)
    page = tmp_path / "r.html"
    code, stdout, err = _report(run_cli, files, "assignment.json", path, page)
    assert code == 0, err
    source = page.read_text()
    assert "<script" not in source and "<img" not in source and "\x1b" not in source
    html = dump_dom(page, tmp_path)
    planned = sum(p["usable"] for p in d["points"])
    assert html.count('<g class="point"') == html.count('<circle class="topic"') == planned == 2
    assert "<script" not in html and "<img" not in html and "owned" not in html.split("</title>")[0]
    assert 'Planned for: add 12, 13; topics &lt;script&gt;document.title="owned"&lt;/script&gt;&lt;img' in html
    assert f'<td class="l">&lt;script&gt;document.title="owned"&lt;/script&gt;&lt;img src=x onerror="alert(1)"&gt;' \
           f"'\"\\x1b[31m1</td>" in html  # the unplanned point's label cell
    assert "\\x1b[31m" in html and "\x1b" not in html
