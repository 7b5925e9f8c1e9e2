"""The terminal view an operator reads (issue 20): full-width rows when piped, failures with the same counts on
one row (worst first, one screen by default, ``--all`` for the rest), the target column a plan uses, the disk
warning, the wording, and a progress display that keeps moving while the planner holds the interpreter."""
from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from flowbalance.model import Brokers, ClusterState
from flowbalance.planner import plan
from flowbalance.report import build_report
from flowbalance.request import PlanRequest
from flowbalance.summary import plan_summary

from .conftest import TESTDATA

SEED = TESTDATA / "seed"
K = TESTDATA / "kafka"


def _generate(run_cli, out: Path, *args: str) -> Path:
    formats = "describe,brokers,logdirs" if "--sizes" in args else "describe,brokers"
    code, _, err = run_cli("generate", *args, "--formats", formats, "-o", out)
    assert code == 0, err
    return out


def _demo24(run_cli, tmp_path) -> Path:
    """A 24-broker, 3-rack, unevenly grown cluster with sizes (the review's demo)."""
    return _generate(run_cli, tmp_path / "d24", "--brokers", "24", "--racks", "3", "--rack-aware", "--topics", "60",
                     "--partitions", "6-24", "--rf", "3", "--skew", "0.5", "--sizes", "--seed", "7")


def _table_rows(text: str, title: str) -> list[list[str]]:
    """The body rows of the table under ``title`` as lists of stripped cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows, body = [], False
    for line in lines[start + 1:]:
        if line.startswith("┡"):
            body = True
            continue
        if line.startswith("└"):
            break
        if body:
            rows.append([c.strip() for c in line.strip("│").split("│")])
    return rows


# ---- piped output -------------------------------------------------------------------------------------------------

def test_piped_output_keeps_every_row_on_one_line(run_cli, tmp_path):
    """A real pipe (a subprocess, COLUMNS=80 as a CI runner sets it): each broker is one row whose bytes cell holds
    both values; rich's 80-column default folded it over four lines."""
    d = _demo24(run_cli, tmp_path)
    plan_file = tmp_path / "plan.json"
    code, _, err = run_cli("plan", d / "describe.txt", "--brokers", d / "brokers.csv", "--sizes", d / "logdirs.txt",
                           "--remove", "5", "-o", plan_file, "-q")
    assert code == 0, err
    env = dict(os.environ, COLUMNS="80")
    env.pop("FORCE_COLOR", None)
    res = subprocess.run([sys.executable, "-m", "flowbalance_cli", "report", d / "describe.txt", "--brokers",
                          d / "brokers.csv", "--sizes", d / "logdirs.txt", "--plan", plan_file, "--all"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    rows = _table_rows(res.stdout, "Brokers, before → after")
    assert len(rows) == 24 and all(r[0] for r in rows)  # no continuation line (an empty broker cell)
    assert all(re.fullmatch(r"[\d.]+ [KMGT]?i?B → [\d.]+ [KMGT]?i?B|[\d.]+ [KMGT]?i?B", r[6]) for r in rows), rows
    assert max(map(len, res.stdout.splitlines())) > 80


# ---- collapsed, worst first, one screen ---------------------------------------------------------------------------

def _expected_groups(table: list[dict]) -> list[tuple]:
    """Independent statement: one group per distinct (before, after) counts, sorted by spread after, then before."""
    groups: dict[tuple, list] = {}
    for r in table:
        b, a = r["before"], r["after"] or {"min": None, "max": None, "spread": -1}
        groups.setdefault((b["min"], b["max"], b["spread"], a["min"], a["max"], a["spread"]), []).append(r["failed"])
    return sorted(groups.items(), key=lambda kv: (-kv[0][5], -kv[0][2], str(kv[1][0])))


def test_identical_failover_rows_collapse_into_one(run_cli):
    """The seed example: 20 brokers whose failures all look the same are one row, not 20."""
    code, out, err = run_cli("report", SEED / "assignment.json", "--brokers", SEED / "brokers.csv")
    assert code == 0, err
    rows = _table_rows(out, "Leaders when one broker fails")
    code, js, _ = run_cli("report", SEED / "assignment.json", "--brokers", SEED / "brokers.csv", "--json")
    expected = _expected_groups(json.loads(js)["failover"]["table"])
    assert len(rows) == len(expected) == 1
    assert rows[0][0] == "0-19"


def test_failover_rows_worst_first_cut_to_one_screen_and_all_shows_every_broker(run_cli, tmp_path):
    d = _demo24(run_cli, tmp_path)
    plan_file = tmp_path / "plan.json"
    base = (d / "describe.txt", "--brokers", d / "brokers.csv", "--sizes", d / "logdirs.txt")
    assert run_cli("plan", *base, "--remove", "5", "-o", plan_file, "-q")[0] == 0
    code, js, _ = run_cli("report", *base, "--plan", plan_file, "--json")
    expected = _expected_groups(json.loads(js)["failover"]["table"])
    code, short, err = run_cli("report", *base, "--plan", plan_file)
    assert code == 0, err
    code, full, err = run_cli("report", *base, "--plan", plan_file, "--all")
    assert code == 0, err
    short_rows, full_rows = _table_rows(short, "Leaders when one broker fails"), _table_rows(full, "Leaders when one broker fails")
    assert len(full_rows) == len(expected) and len(short_rows) == min(5, len(expected))
    assert [int(r[4]) for r in full_rows] == [k[5] for k, _ in expected]  # the spread after, worst first
    assert full_rows[:len(short_rows)] == short_rows
    named = [x for r in full_rows for x in _brokers_in(r[0])]
    assert sorted(named) == sorted(x for _, failed in expected for x in failed)  # every failure exactly once
    assert len(short.splitlines()) <= 50 < len(full.splitlines())  # one screen, and --all shows the rest
    assert len(_table_rows(full, "Brokers, before → after")) == 24
    assert len(_table_rows(short, "Brokers, before → after")) == 16


def _brokers_in(cell: str) -> list[int]:
    out = []
    for part in cell.split(", "):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


# ---- the target column --------------------------------------------------------------------------------------------

def test_target_column_is_what_the_plan_aims_at_within_racks(run_cli, tmp_path):
    """Racks of 4, 3 and 3 brokers and RF 3: every rack holds one replica of each partition, so a broker's target
    is its rack's share (P / rack size), not the cluster-wide P * 3 / 10; report, check and report --plan agree."""
    g = _generate(run_cli, tmp_path / "g", "--brokers", "10", "--racks", "3", "--rack-aware", "--topics", "6",
                  "--partitions", "12", "--rf", "3", "--skew", "0.8", "--seed", "3")
    base = (g / "describe.txt", "--brokers", g / "brokers.csv")
    partitions = 72
    code, js, err = run_cli("report", *base, "--json")
    assert code == 0, err
    rows = json.loads(js)["per_broker"]
    size = {rack: sum(r["rack"] == rack for r in rows) for rack in {r["rack"] for r in rows}}
    for r in rows:
        assert r["target_replicas"] == [partitions // size[r["rack"]], -(-partitions // size[r["rack"]])]
    code, cj, _ = run_cli("check", *base, "--json")
    assert [[r["target_min"], r["target_max"]] for r in json.loads(cj)["per_broker"]] == \
        [r["target_replicas"] for r in rows]
    plan_file = tmp_path / "p.json"
    assert run_cli("plan", *base, "-o", plan_file, "-q")[0] == 0
    code, pj, _ = run_cli("report", *base, "--plan", plan_file, "--json")
    assert [r["target_replicas"] for r in json.loads(pj)["per_broker"]] == [r["target_replicas"] for r in rows]


# ---- warnings -----------------------------------------------------------------------------------------------------

def _heavy_move_cluster() -> ClusterState:
    """RF 1 on brokers 0, 1, 2 holding 3, 1 and 2 partitions: the one move a count-balanced plan can make puts a
    400-byte partition on broker 1, already the fullest (1,300 bytes): disk max/mean 1.55 → 2.02."""
    brokers = Brokers.build([0, 1, 2])
    reps = np.array([[0], [0], [0], [1], [2], [2]])
    sizes = np.array([400, 400, 400, 1300, 10, 10])
    return ClusterState.build(brokers, ["t"] * 6, list(range(6)), reps, sizes)


def test_a_plan_that_makes_disk_use_less_even_warns_with_the_bytes():
    p = plan(_heavy_move_cluster(), PlanRequest(per_topic=False))
    assert p.changes.moves == 1
    warning = plan_summary(p)["disk_warning"]
    assert warning is not None and warning["items"][0] == 1
    mean = (1200 + 1300 + 20) / 3
    assert f"{1300 / mean:.2f} → {1700 / mean:.2f}" in warning["message"]
    assert "broker 1 1.3 KiB → 1.7 KiB" in warning["message"]
    assert warning in build_report(p)["warnings"]  # the report (terminal, JSON, page) shows the same warning


def test_no_disk_warning_when_disk_use_gets_more_even(run_cli, tmp_path):
    d = _demo24(run_cli, tmp_path)
    code, out, err = run_cli("plan", d / "describe.txt", "--brokers", d / "brokers.csv", "--sizes",
                             d / "logdirs.txt", "--remove", "5", "-o", tmp_path / "p.json", "--json")
    data = json.loads(out)
    assert data["disk_max_over_mean"][1] < data["disk_max_over_mean"][0] and data["disk_warning"] is None


def test_a_plan_emptying_a_broker_the_report_was_not_told_about_warns(run_cli, tmp_path):
    plan_file = tmp_path / "p.json"
    assert run_cli("plan", K / "assignment.json", "--brokers", K / "brokers.csv", "--remove", "2", "-o",
                   plan_file, "-q")[0] == 0
    (tmp_path / "p.meta.json").unlink()  # a bare plan file: nothing says broker 2 is leaving
    code, out, err = run_cli("report", K / "assignment.json", "--brokers", K / "brokers.csv", "--plan", plan_file,
                             "--json")
    kinds = {w["kind"]: w for w in json.loads(out)["warnings"]}
    assert kinds["emptied_not_removed"]["items"] == [2]
    code, out, err = run_cli("report", K / "assignment.json", "--brokers", K / "brokers.csv", "--plan", plan_file,
                             "--remove", "2", "--json")
    assert "emptied_not_removed" not in {w["kind"] for w in json.loads(out)["warnings"]}


# ---- wording ------------------------------------------------------------------------------------------------------

def test_removed_brokers_are_named_as_brokers_and_counts_have_separators(run_cli, tmp_path):
    code, out, err = run_cli("plan", K / "assignment.json", "--brokers", K / "brokers.csv", "--remove", "2",
                             "-o", tmp_path / "a.json")
    assert code == 0, err
    assert "removing broker 2)" in out
    g = _generate(run_cli, tmp_path / "g", "--brokers", "6", "--topics", "60", "--partitions", "40", "--rf", "2",
                  "--seed", "1")
    code, out, err = run_cli("plan", g / "describe.txt", "--add", "6,7,8,9,10,11", "-o", tmp_path / "b.json")
    assert code == 0, err
    changed = int(json.loads(run_cli("plan", g / "describe.txt", "--add", "6,7,8,9,10,11", "-o",
                                     tmp_path / "c.json", "--json")[1])["changed_partitions"])
    assert changed >= 1000 and f"Changed partitions: {changed:,} " in out


# ---- progress -----------------------------------------------------------------------------------------------------

_HOG = r'''
import sys, time
from flowbalance_cli.progress import Steps
with Steps(total=3, delay=0.2) as s:
    s.step("reading input")
    s.step("stage 1: replicas")
    sys.setswitchinterval(1000)  # like a solver that keeps the GIL: no other thread of this process runs
    t = time.monotonic()
    while time.monotonic() - t < 3.3:
        pass
    sys.setswitchinterval(0.005)
    s.step("writing files")
print("done")
'''


def test_progress_keeps_moving_while_the_interpreter_is_held():
    """On a terminal (a pty), the elapsed clock ticks and the step's name shows while the process never lets go of
    its GIL for 3 s (an in-process display froze at 0:00:00); the bar is gone when the command prints."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-c", _HOG])
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text[-500:]
    assert {"0:00:01", "0:00:02"} <= set(re.findall(r"\d:\d\d:\d\d", text)), text[-500:]
    assert "stage 1: replicas" in text
    assert text.rstrip().endswith("done")
