"""``flowbalance report`` and the end of ``plan``: JSON against its schema and a plain-loop oracle, HTML in a real
headless Chromium, plain text when piped, one-line errors."""
from __future__ import annotations

import html
import json
import re
import struct
import subprocess

import numpy as np
import pytest

from flowbalance.generate import generate_cluster
from flowbalance.planner import plan
from flowbalance.report import build_report
from flowbalance.report_html import render_html

from .browser import chromium, dump_dom, flags
from .conftest import ROOT, TESTDATA
from .test_bad_input import assert_one_line

K = TESTDATA / "kafka"
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())


def _validate(doc):
    import jsonschema

    jsonschema.validate(doc, SCHEMA)


def _plan_file(tmp_path, run_cli, *args):
    out = tmp_path / "plan.json"
    code, _, err = run_cli("plan", K / "assignment.json", "--brokers", K / "brokers.csv", *args, "-o", out, "-q")
    assert code == 0, err
    return out


def test_json_report_matches_the_schema_with_and_without_a_plan(tmp_path, run_cli):
    code, out, err = run_cli("report", K / "assignment.json", "--brokers", K / "brokers.csv", "--sizes",
                             K / "logdirs.txt", "--json")
    assert code == 0, err
    alone = json.loads(out)
    _validate(alone)
    assert alone["has_plan"] is False and alone["moves"] is None
    pf = _plan_file(tmp_path, run_cli, "--remove", "2")
    code, out, err = run_cli("report", K / "assignment.json", "--brokers", K / "brokers.csv", "--sizes",
                             K / "logdirs.txt", "--plan", pf, "--remove", "2", "--json")
    assert code == 0, err
    rep = json.loads(out)
    _validate(rep)
    assert rep["has_plan"] and rep["moves"]["replica_moves"] > 0
    on2 = [r for r in rep["per_broker"] if r["broker"] == 2][0]
    assert on2["removed"] and on2["replicas"][1] == 0


def _failover_oracle(reps: list[list[int]], live: list[int]) -> dict[int, tuple[int, int]]:
    """Plain loop: fail broker f; each partition f leads goes to its next replica; survivors' (min, max) leaders."""
    out = {}
    for f in live:
        leaders = {b: 0 for b in live if b != f}
        for r in reps:
            lead = r[0]
            if lead == f:
                nxt = next((x for x in r[1:] if x != f), None)
                if nxt is not None and nxt in leaders:
                    leaders[nxt] += 1
            elif lead in leaders:
                leaders[lead] += 1
        out[f] = (min(leaders.values()), max(leaders.values()))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_failover_rows_match_a_plain_loop_before_and_after(seed):
    st0 = generate_cluster(brokers=6, topics=4, partitions=(3, 20), rf=3, skew=0.7, seed=seed)
    p = plan(st0)
    rep = build_report(p.before, p.after)
    live = [int(b) for b in st0.brokers.ids]
    for side, state in (("before", p.before), ("after", p.after)):
        reps = [[int(x) for x in row if x >= 0] for row in state.replicas]
        want = _failover_oracle(reps, live)
        for row in rep["failover"]["table"]:
            got = row[side]
            assert (got["min"], got["max"]) == want[row["failed"]]
    worst = max(rep["failover"]["table"], key=lambda r: r["after"]["spread"])
    assert rep["failover"]["worst_after"]["spread"] == worst["after"]["spread"]


def test_warnings_name_what_an_operator_must_see():
    st0 = generate_cluster(brokers=4, racks=2, rack_aware=True, topics=3, partitions=(4, 8), rf=2, sizes=True, seed=2)
    b = st0.brokers
    cap = np.full(len(b), 1, dtype=np.int64)  # 1 byte disks: every broker is above its capacity
    from dataclasses import replace

    st1 = st0.with_brokers(replace(b, capacity=cap))
    big = st1.size.copy()
    big[0] = int(np.median(big)) * 50 + (2 << 30)
    st1 = replace(st1, size=big)
    reps = st1.replicas.copy()
    reps[1, :2] = [0, 2]  # brokers 0 and 2 share rack r0
    st1 = st1.with_replicas(reps)
    rep = build_report(st1)
    kinds = {w["kind"]: w for w in rep["warnings"]}
    assert set(kinds) >= {"above_disk_capacity", "very_large_partitions", "rack_violations"}
    assert kinds["above_disk_capacity"]["items"] == [0, 1, 2, 3]
    assert kinds["very_large_partitions"]["items"][0] == f"{st1.topics[st1.topic[0]]}-{int(st1.partition[0])}"
    _validate(json.loads(json.dumps(rep)))
    three = build_report(st0, st0.with_replicas(np.pad(st0.replicas, ((0, 0), (0, 1)), constant_values=-1)))
    _validate(json.loads(json.dumps(three)))


def test_terminal_output_is_plain_text_when_piped(run_cli, tmp_path):
    pf = _plan_file(tmp_path, run_cli, "--remove", "2")
    code, out, err = run_cli("report", K / "assignment.json", "--brokers", K / "brokers.csv", "--plan", pf)
    assert code == 0, err
    assert "\x1b[" not in out
    assert "Leaders when one broker fails" in out and "Leaders when one rack fails" in out and "→" in out
    code, out, err = run_cli("plan", K / "assignment.json", "--brokers", K / "brokers.csv", "--remove", "2",
                             "-o", tmp_path / "p2.json")
    assert code == 0 and "\x1b[" not in out and "Brokers, before → after" in out and "Replica moves" in out


def test_quiet_prints_nothing_and_verbose_prints_step_times(run_cli, tmp_path):
    code, out, err = run_cli("plan", K / "assignment.json", "--remove", "2", "-o", tmp_path / "a.json", "-q")
    assert code == 0 and out == "" and err == ""
    assert (tmp_path / "a.json").exists()
    code, out, err = run_cli("plan", K / "assignment.json", "--remove", "2", "-o", tmp_path / "b.json", "-v")
    assert code == 0 and "time per step:" in out


def test_progress_bar_only_on_a_terminal(monkeypatch, capsys):
    import sys

    from flowbalance_cli.progress import Steps

    with Steps(total=3, delay=0.0) as s:  # stderr is captured: not a terminal
        s.step("one")
        s.step("two")
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    s = Steps(total=3, delay=0.0)
    assert s.enabled and s.child is not None  # the display process
    s.step("one")
    s.close()
    assert s.child is None


def test_a_plan_naming_an_unknown_partition_is_one_line(tmp_path, run_cli):
    bad = tmp_path / "bad.json"
    bad.write_text('{"version":1,"partitions":[{"topic":"nope","partition":0,"replicas":[1,2]}]}')
    code, out, err = run_cli("report", K / "assignment.json", "--plan", bad, "--html", tmp_path / "r.html")
    assert_one_line(code, out, err, "bad.json", "partitions[0]", "nope-0")
    assert not (tmp_path / "r.html").exists()


def test_html_is_self_contained(tmp_path, run_cli):
    pf = _plan_file(tmp_path, run_cli, "--remove", "2")
    html = tmp_path / "r.html"
    code, out, err = run_cli("report", K / "assignment.json", "--brokers", K / "brokers.csv", "--sizes",
                             K / "logdirs.txt", "--plan", pf, "--html", html)
    assert code == 0, err
    text = html.read_text()
    assert "<script" not in text and "<link" not in text and " src=" not in text
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text)
    assert text.count("<svg") >= 4  # replicas, bytes, leaders, failover per broker (and per rack)
    # the page is the same for the same input
    html2 = tmp_path / "r2.html"
    run_cli("report", K / "assignment.json", "--brokers", K / "brokers.csv", "--sizes", K / "logdirs.txt",
            "--plan", pf, "--html", html2)
    assert html2.read_text() == text.replace("r.html", "r2.html")


def test_html_renders_in_headless_chromium(tmp_path):
    st0 = generate_cluster(brokers=9, racks=3, rack_aware=True, topics=6, partitions=(6, 24), rf=3, skew=0.6,
                           sizes=True, seed=4)
    p = plan(st0, remove=[8])
    page = tmp_path / "report.html"
    page.write_text(render_html(build_report(p)))
    dom = dump_dom(page, tmp_path)
    assert dom.count("<svg") >= 4 and "Leaders when one broker fails" in dom
    # the certificate's failover line, as plan prints it
    assert html.escape(p.certificate.failover.text()) in dom
    shot = tmp_path / "report.png"
    run = subprocess.run([chromium(), *flags(tmp_path), f"--screenshot={shot}", "--window-size=1200,1800",
                          page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    w, h = struct.unpack(">II", data[16:24])
    assert (w, h) == (1200, 1800)
    assert len(data) > 30_000  # a blank page compresses to a few KB; this one has charts and tables
