"""The review page (``report --plan --html``) and the verdict line: one verdict text in ``plan``, ``report --plan``,
both ``--json`` outputs and the page; the identity (input files' SHA-256 checked against hashlib, the request, the
time); the moves per broker pair and the (leader, first follower) matrices against plain loops; the colours on
known cases; and the 24-broker demo rendered by headless Chromium."""
from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
from collections import Counter

import numpy as np
import pytest

from flowbalance.generate import generate_cluster
from flowbalance.planmeta import sidecar_path
from flowbalance.planner import plan
from flowbalance.report import build_report
from flowbalance.report_html import _broker_row, _tone, render_html
from flowbalance.report_moves import MAX_PAIR_BROKERS, WORST_ROWS, transfers

from .browser import dump_dom
from .conftest import ROOT, TESTDATA

SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())
VERDICT_DIV = re.compile(r'<div class="verdict[^"]*" id="verdict">(.*?)</div>', re.S)


def _text(fragment: str) -> str:
    """The text of an HTML fragment: tags stripped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def _ok(result):
    code, out, err = result
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def racked(tmp_path_factory):
    """A generated racked cluster (9 brokers in 3 racks, sizes) in JSON, with its broker and sizes files."""
    from flowbalance_cli.app import main

    out = tmp_path_factory.mktemp("racked")
    with pytest.raises(SystemExit) as e:
        main(["generate", "--brokers", "9", "--racks", "3", "--rack-aware", "--topics", "6", "--partitions", "4-12",
              "--rf", "3", "--skew", "0.6", "--sizes", "--seed", "5", "--formats", "json,brokers,logdirs",
              "-o", str(out)])
    assert e.value.code == 0
    return out


def _case(name, racked):
    k, s = TESTDATA / "kafka", TESTDATA / "seed"
    return {"kafka": (k / "assignment.json", ["--brokers", k / "brokers.csv", "--sizes", k / "logdirs.txt"], "2"),
            "seed": (s / "assignment.json", ["--brokers", s / "brokers.csv"], "19"),
            "racked": (racked / "assignment.json", ["--brokers", racked / "brokers.csv", "--sizes",
                                                    racked / "logdirs.txt"], "4")}[name]


def _verdict_of_terminal(out: str) -> str:
    """The verdict in the terminal's "Replica moves — VERDICT (M* … context, not the bound)" line."""
    (line,) = [ln for ln in out.splitlines() if ln.startswith("Replica moves — ")]
    assert line.endswith("context, not the bound)"), line
    return line[len("Replica moves — "):line.rindex(" (")]


@pytest.mark.parametrize("name", ["kafka", "seed", "racked"])
def test_one_verdict_line_in_plan_report_json_and_page(name, racked, run_cli, tmp_path):
    current, files, remove = _case(name, racked)
    planned = tmp_path / "plan.json"
    plan_out = _ok(run_cli("plan", current, *files, "--remove", remove, "-o", planned))
    plan_json = json.loads(_ok(run_cli("plan", current, *files, "--remove", remove, "--json",
                                       "-o", tmp_path / "again.json")))
    assert (tmp_path / "again.json").read_bytes() == planned.read_bytes()  # the same plan
    page = tmp_path / "review.html"
    report_out = _ok(run_cli("report", current, *files, "--plan", planned, "--html", page))
    rep = json.loads(_ok(run_cli("report", current, *files, "--plan", planned, "--json")))
    (div,) = VERDICT_DIV.findall(page.read_text())
    verdict = rep["verdict"]
    assert verdict and verdict == rep["moves"]["verdict"] == plan_json["verdict"]
    assert _verdict_of_terminal(plan_out) == _verdict_of_terminal(report_out) == _text(div) == verdict
    assert re.match(r"[\d,]+ moves?[,;] ", verdict)  # the certificate's line, starting with the moves


def test_identity_names_every_input_with_its_sha256_and_the_request(racked, run_cli, tmp_path, monkeypatch):
    current = tmp_path / "cur<i>&.json"  # a hostile file name: escaped on the page
    shutil.copy(racked / "assignment.json", current)
    files = ["--brokers", racked / "brokers.csv", "--sizes", racked / "logdirs.txt"]
    planned = tmp_path / "plan.json"
    _ok(run_cli("plan", current, *files, "--remove", "4", "-o", planned, "-q"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "86400")  # ignored: the plan's sidecar has the time
    page = tmp_path / "r.html"
    rep = json.loads(_ok(run_cli("report", current, *files, "--plan", planned, "--html", page, "--json")))
    ident = rep["identity"]
    meta = json.loads(open(sidecar_path(planned)).read().replace("\n", ""))
    assert ident["version"] == meta["tool_version"] and ident["created"] == meta["created"]
    assert ident["created_from"] == "plan sidecar"
    want = {"current": current, "plan": planned, "plan sidecar": sidecar_path(planned),
            "brokers": racked / "brokers.csv", "sizes": racked / "logdirs.txt"}
    assert [f["role"] for f in ident["inputs"]] == list(want)
    for f in ident["inputs"]:
        data = open(want[f["role"]], "rb").read()
        assert f["sha256"] == hashlib.sha256(data).hexdigest() and f["bytes"] == len(data), f["role"]
    assert ident["request"] == {"remove": [4]} and ident["request_from"] == "plan sidecar"
    text = page.read_text()
    assert all(f'<code class="sha256">{f["sha256"]}</code>' in text for f in ident["inputs"])
    assert "cur&lt;i&gt;&amp;.json" in text and "cur<i>" not in text
    import jsonschema

    jsonschema.validate(rep, SCHEMA)
    # options given instead of the sidecar's request; a bare report takes its time from SOURCE_DATE_EPOCH or has none
    rep = json.loads(_ok(run_cli("report", current, *files, "--plan", planned, "--remove", "4,5", "--json",
                                 "--force")))
    assert rep["identity"]["request"] == {"remove": [4, 5]} and rep["identity"]["request_from"] == "options"
    bare = json.loads(_ok(run_cli("report", current, "--json")))["identity"]
    assert (bare["created"], bare["created_from"]) == ("1970-01-02T00:00:00Z", "SOURCE_DATE_EPOCH")
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    bare = json.loads(_ok(run_cli("report", current, "--json")))["identity"]
    assert bare["created"] is None and bare["created_from"] is None and [f["role"] for f in bare["inputs"]] == ["current"]


def _moves_oracle(before, after):
    """Plain loops: per partition, departures (old list order) paired with arrivals (new list order)."""
    pairs, per_row = Counter(), Counter()
    size = before.size
    for r in range(before.num_partitions):
        old = [int(x) for x in before.replicas[r] if x >= 0]
        new = [int(x) for x in after.replicas[r] if x >= 0]
        gone = [b for b in old if b not in new]
        came = [b for b in new if b not in old]
        for i in range(max(len(gone), len(came))):
            key = (gone[i] if i < len(gone) else None, came[i] if i < len(came) else None)
            pairs[key] += 1
            pairs[key, "bytes"] += int(size[r])
            per_row[r] += key[1] is not None
    return pairs, per_row


@pytest.mark.parametrize("seed", [1, 2])
def test_transfers_match_plain_loops_and_the_full_list_is_capped(seed):
    st0 = generate_cluster(brokers=8, topics=5, partitions=(4, 12), rf=3, skew=0.7,
                           sizes=True, seed=seed)
    p = plan(st0, remove=[7], topic_rf=(("topic-0000", 2), ("topic-0001", 4)))
    t = transfers(p.before, p.after, p.changes.changed_rows, limit=5)
    pairs, per_row = _moves_oracle(p.before, p.after)
    assert {(x["from"], x["to"]): (x["replicas"], x["bytes"]) for x in t["pairs"]} == \
        {k: (v, pairs[k, "bytes"]) for k, v in pairs.items() if len(k) == 2 and k[1] != "bytes"}
    assert any(x["from"] is None for x in t["pairs"]) and any(x["to"] is None for x in t["pairs"])  # RF 4 and 2
    assert sum(x["replicas"] for x in t["pairs"] if x["to"] is not None) == p.changes.moves
    keys = [(-x["replicas"], -x["bytes"]) for x in t["pairs"]]
    assert keys == sorted(keys)
    copied = sorted(((int(p.before.size[r]) * n, r) for r, n in per_row.items() if n), reverse=True)
    assert [x["size_bytes"] * x["moves"] for x in t["largest"]] == [c for c, _ in copied[:10]]
    assert len(t["partitions"]) == 5 and t["listed_of"] == len(p.changes.changed_rows) > 5
    rep = build_report(p)
    page = render_html({**rep, "transfers": t})
    assert f"(the first 5 of {t['listed_of']:,}; the plan file lists all)" in page
    assert "<script" not in page and re.search(r"<details class=\"changed\">", page)


def _pairs_oracle(state):
    out = Counter()
    for row in state.replicas:
        if len(row) > 1 and row[0] >= 0 and row[1] >= 0:
            out[int(row[0]), int(row[1])] += 1
    return out


def test_leader_pairs_match_a_plain_count_and_keep_the_worst_rows_above_60_brokers():
    st0 = generate_cluster(brokers=7, racks=1, topics=4, partitions=(3, 9), rf=3, skew=0.8, seed=3)
    p = plan(st0, remove=[6])
    lp = build_report(p)["leader_pairs"]
    assert lp["all_rows"] and lp["rows"] == lp["brokers"] == [int(b) for b in st0.brokers.ids]
    for key, state in (("before", p.before), ("after", p.after)):
        want = _pairs_oracle(state)
        got = {(lp["rows"][i], lp["brokers"][j]): v for i, row in enumerate(lp[key]) for j, v in enumerate(row) if v}
        assert got == dict(want), key
    big = generate_cluster(brokers=MAX_PAIR_BROKERS + 4, topics=6, partitions=(20, 40), rf=3, skew=0.9, seed=1)
    rep = build_report(big)
    lp = rep["leader_pairs"]
    worst = sorted(rep["failover"]["table"], key=lambda r: (-r["before"]["spread"], r["failed"]))[:WORST_ROWS]
    assert not lp["all_rows"] and lp["rows"] == sorted(r["failed"] for r in worst) and lp["after"] is None
    want = _pairs_oracle(big)
    assert all(lp["before"][i][j] == want[b, c] for i, b in enumerate(lp["rows"]) for j, c in enumerate(lp["brokers"]))
    page = render_html(rep)
    cells = re.findall(r'<rect class="cell"[^>]*>', page)
    assert len(cells) == sum(v > 0 for row in lp["before"] for v in row)  # only non-zero cells above 60 brokers


def test_colour_rules_on_known_values():
    assert _tone(5, 3) == "good" and _tone(3, 5) == "bad" and _tone(3, 3) == "" and _tone(3, 3, ok=False) == "bad"
    row = {"broker": 1, "rack": None, "removed": False, "target_replicas": [4, 5], "capacity_bytes": 100,
           "leaders": [2, 2]}
    cases = [  # (replicas, bytes, removed) → classes of the replicas cell and the bytes cell
        (([9, 5], [10, 20], False), ("good", "")),  # brought onto its target
        (([5, 4], [10, 20], False), ("", "")),  # on target before and after: no colour
        (([5, 9], [10, 200], False), ("bad", "bad")),  # off target, and above the disk's capacity
        (([6, 0], [10, 0], True), ("good", "")),  # a removed broker emptied
        (([6, 1], [10, 5], True), ("bad", "")),  # a replica left on a removed broker
    ]
    for (reps, nbytes, removed), (want_r, want_b) in cases:
        cells = _broker_row({**row, "replicas": reps, "bytes": nbytes, "removed": removed}, True)
        got = tuple((re.findall(r'class="(\w+)"', c) or [""])[0] for c in (cells[2], cells[5]))
        assert got == (want_r, want_b), (reps, nbytes, removed)


def test_a_plan_that_makes_things_worse_is_red_and_never_green():
    """A "plan" back from a balanced cluster to a skewed one: every spread that grows is red, none green, and the
    verdict (targets missed) is red; the balanced plan itself has no red at all."""
    st0 = generate_cluster(brokers=6, topics=5, partitions=(6, 18), rf=3, skew=0.9, seed=7)
    p = plan(st0)
    good = render_html(build_report(p))
    assert 'class="bad"' not in good and 'class="verdict good"' in good
    worse = render_html(build_report(p.after, p.before))
    spreads = worse[worse.index('<table class="spreads">'):].split("</table>")[0]
    assert 'class="good"' not in spreads and spreads.count('class="bad"') >= 3
    assert 'class="verdict bad"' in worse


def test_24_broker_demo_page_in_headless_chromium(run_cli, tmp_path):
    """The demo of the docs: 24 brokers in 3 racks, broker 5 removed; the page's DOM as Chromium builds it."""
    d = tmp_path / "demo"
    _ok(run_cli("generate", "--brokers", "24", "--racks", "3", "--rack-aware", "--topics", "60", "--partitions",
                "6-24", "--rf", "3", "--skew", "0.5", "--sizes", "--formats", "describe,brokers,logdirs", "-o", d))
    files = [d / "describe.txt", "--brokers", d / "brokers.csv", "--sizes", d / "logdirs.txt"]
    _ok(run_cli("plan", *files, "--remove", "5", "-o", d / "plan.json", "-q"))
    page = tmp_path / "review.html"
    rep = json.loads(_ok(run_cli("report", *files, "--plan", d / "plan.json", "--html", page, "--json")))
    dom = dump_dom(page, tmp_path)
    for h2 in ("Identity", "Moves", "Warnings", "Spreads (max − min per broker)", "Load per broker",
               "(Leader, first follower) pairs", "Leaders when one broker fails", "Leaders when one rack fails"):
        assert f"<h2>{html.escape(h2, quote=False)}</h2>" in dom, h2
    (div,) = VERDICT_DIV.findall(dom)
    assert _text(div) == rep["verdict"] and "proven minimal" in rep["verdict"]
    shas = re.findall(r'<code class="sha256">([0-9a-f]{64})</code>', dom)
    want = [d / "describe.txt", d / "plan.json", d / "plan.meta.json", d / "brokers.csv", d / "logdirs.txt"]
    assert shas == [hashlib.sha256(f.read_bytes()).hexdigest() for f in want]
    # everything improves on this plan: no red anywhere (the large partitions warning is about the cluster now)
    assert rep["spreads"]["replicas"][1] < rep["spreads"]["replicas"][0]
    assert not re.search(r'class="[^"]*\bbad\b', dom)
    heat = re.findall(r'<svg class="heat" data-state="(\w+)".*?</svg>', dom, flags=re.S)
    assert heat == ["before", "after"]
    for block in re.findall(r'<svg class="heat".*?</svg>', dom, flags=re.S):
        assert block.count('<rect class="cell"') == 24 * 24
    assert re.search(r"<details class=\"changed\"><summary>All [\d,]+ changed partitions</summary>", dom)
    assert np.isclose(sum(x["replicas"] for x in rep["transfers"]["pairs"]), rep["moves"]["replica_moves"])


@pytest.mark.parametrize("value", ["abc", "", "99999999999999999", "1.5", "\u00b2", "\x1b[2J"])
def test_a_bad_source_date_epoch_is_one_line_and_exit_2(value, tmp_path):
    """SOURCE_DATE_EPOCH (the page's time without a sidecar) is checked before numpy is imported: numpy's f2py
    reads it at import and stopped with a traceback on 'abc' or a value past year 9999."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, SOURCE_DATE_EPOCH=value)
    res = subprocess.run([sys.executable, "-m", "flowbalance_cli", "report", str(TESTDATA / "kafka" / "assignment.json"),
                          "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 2 and res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("flowbalance: error: SOURCE_DATE_EPOCH:"), res.stderr
    assert "\x1b" not in res.stderr
    ok = subprocess.run([sys.executable, "-m", "flowbalance_cli", "report", str(TESTDATA / "kafka" / "assignment.json"),
                         "--json"], capture_output=True, text=True, env=dict(os.environ, SOURCE_DATE_EPOCH="1700000000"),
                        timeout=120)
    assert ok.returncode == 0 and json.loads(ok.stdout)["identity"]["created"] == "2023-11-14T22:13:20Z"
