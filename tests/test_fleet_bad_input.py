"""``flowbalance fleet`` on bad input: names that would escape -o, bad values in tables, unusable snapshots, exit
codes, no Java or Spark output on the terminal, progress only on a terminal, names printed as text.

Spark runs for real: the session-wide local session of conftest (one per pytest-xdist worker), one ``run_fleet``
per snapshot with many bad clusters in it (a module fixture; each cluster's error row is its own test), and one
subprocess run for what the terminal sees.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pyspark")

from flowbalance.errors import InputError  # noqa: E402
from flowbalance.pipeline.names import MAX_LENGTH, name_problem  # noqa: E402

from .conftest import ROOT, SPARK_TEST_CONF, TESTDATA, fast_jvm_env, restore_spark_conf  # noqa: E402
from .once import once_per_run  # noqa: E402
from .test_bad_input import assert_one_line  # noqa: E402

FLEET = TESTDATA / "fleet"
FAILED_LINE = "flowbalance: 2 of 6 clusters failed: broken, ghost"
ESC_NAME = "esc\x1b[2J"
MARKUP_NAME = "[bold red]x"
MARKUP_TOPIC = "[bold red]t[/bold red]"


# ---- the name rule (no Spark) -----------------------------------------------------------------------------

@pytest.mark.parametrize("name,why", [
    ("", "empty"), ("../../evil", "/"), ("a\\b", "/"), (".", ". or .."), ("..", ". or .."), ("-x", "start with -"),
    ("a\x00b", "control"), ("a\x1bb", "control"), ("a\x7fb", "control"), ("a\u202eb", "control"),
    ("a\u2028b", "control"), ("a\u2029b", "control"), ("a\u0085b", "control"), ("a\ud800b", "control"),
    ("x" * (MAX_LENGTH + 1), "at most"),
])
def test_bad_names_are_refused_with_the_reason(name, why):
    assert why in name_problem(name)


@pytest.mark.parametrize("name", ["alpha", "prod-eu-1", "a.b", "...", "x" * MAX_LENGTH, "ünï", "a b", "[bold]x",
                                  "x-", "_x", ".hidden"])
def test_ordinary_names_are_accepted(name):
    assert name_problem(name) is None


NAME_CHARS = (st.sampled_from(list("ab./\\-~ \x00\x1b\x7f\x85\u200b\u202e\u2028\u2029\ud800"))
              | st.characters(exclude_categories=()))  # surrogates included


@settings(max_examples=500, deadline=None)
@given(st.text(NAME_CHARS, max_size=12))
def test_an_accepted_name_is_one_folder_right_under_the_output_and_shows_as_itself(tmp_path_factory, name):
    from flowbalance_cli.fleet import _escape_controls

    root = tmp_path_factory.getbasetemp().resolve()
    if name_problem(name) is None:
        target = (root / name).resolve()
        assert target.parent == root and target.name == name
        assert _escape_controls(name) == name and not name.startswith("-")


# ---- output paths are checked where they are written (no Spark) ----------------------------------------------

def _planned(*clusters: str) -> pd.DataFrame:
    return pd.DataFrame([{"cluster": c, "ok": True, "reason": None, "plan_json": "{}\n", "rollback_json": "{}\n",
                          "election_json": "{}\n"} for c in clusters])


def _files_under(path: Path) -> set[Path]:
    return {p for p in path.rglob("*") if p.is_file()}


def test_write_outputs_refuses_a_path_outside_the_output_folder(tmp_path):
    from flowbalance.pipeline.output import write_outputs

    out = tmp_path / "a" / "out"
    with pytest.raises(InputError, match="cluster name"):
        write_outputs(out, _planned("good", "../../evil"), {})
    assert _files_under(tmp_path) == set()  # nothing written, not even the good cluster's files


def test_a_cluster_folder_linked_elsewhere_is_an_error_not_a_write(tmp_path):
    from flowbalance.pipeline.output import guard_outputs, write_outputs

    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "linked").symlink_to(elsewhere, target_is_directory=True)
    planned = guard_outputs(out, _planned("good", "linked"))
    assert list(planned.ok) == [True, False] and "resolves outside the output folder" in planned.reason.iloc[1]
    files = write_outputs(out, planned, {})
    assert sorted(Path(f).relative_to(out).as_posix() for f in files) == [
        "good/election.json", "good/plan.json", "good/rollback.json"]
    assert _files_under(elsewhere) == set()
    with pytest.raises(InputError, match="resolves outside"):  # and the writer itself refuses it too
        write_outputs(out, _planned("linked"), {})
    assert _files_under(elsewhere) == set()


# ---- what the terminal sees: no Java, no Spark, no progress when piped (a real process) --------------------------

def test_the_command_prints_nothing_from_java_or_spark(tmp_path):
    out = tmp_path / "out"
    env = fast_jvm_env(dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1"))
    settings = [a for k, v in SPARK_TEST_CONF.items() for a in ("--conf", f"{k}={v}")]  # the tests' (faster) ones
    run = subprocess.run([sys.executable, "-m", "flowbalance_cli", "fleet", str(FLEET), "-o", str(out),
                          "--master", "local[2]", "--conf", "spark.ui.enabled=false", *settings],
                         env=env, capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert run.returncode == 1, run.stderr[-3000:]
    assert run.stderr.splitlines() == [FAILED_LINE]  # no log4j, JVM or progress line
    assert "\x1b" not in run.stdout  # piped: no progress display, no colours
    assert run.stdout.startswith("Fleet: 6 clusters on local[2]")
    assert (out / "spark.log").is_file()  # where Java's and Spark's own output went


# ---- tables with bad names and bad values (Spark) --------------------------------------------------------------

def _cluster_rows(cluster: str, brokers=(1, 2, 3), parts=4, topic="t") -> tuple[list, list]:
    """An unbalanced cluster (every replica on broker 1, RF 1): it is planned."""
    b = [{"cluster": cluster, "broker": str(i)} for i in brokers]
    r = [{"cluster": cluster, "topic": topic, "partition": str(p), "position": "0", "broker": "1"}
         for p in range(parts)]
    return b, r


BAD_NAMES = {"../../evil": "must not contain / or \\", "..": "must not be . or ..", "-dash": "must not start with -",
             ESC_NAME: "must not contain control characters"}
# cluster: (table, the bad row's change, needles of the reason)
BAD_VALUES = {
    "negbroker": ("replicas", {"broker": "-1"}, ["replicas.csv", "column broker", "must be 0 or more", "'-1'"]),
    "negpart": ("replicas", {"partition": "-3"}, ["replicas.csv", "column partition", "must be 0 or more", "'-3'"]),
    "negid": ("brokers", {"broker": "-2"}, ["brokers.csv", "column broker", "must be 0 or more", "'-2'"]),
    "emptybroker": ("replicas", {"broker": ""}, ["replicas.csv", "column broker", "is empty", "partition 1"]),
    "badweight": ("brokers", {"weight": "heavy"}, ["brokers.csv", "broker 2", "column weight", "expected a number",
                                                     "'heavy'"]),
    "floatpos": ("replicas", {"position": "0.5"}, ["replicas.csv", "column position", "expected an integer",
                                                    "'0.5'"]),
}


def _bad_tables_snapshot(tmp: Path) -> Path:
    """CSV tables: two good clusters (one named like rich markup), clusters with bad names, clusters with one bad
    value each, a cluster whose topic (named like markup) lists a broker twice; fleet.json with bad keys."""
    snap = tmp / "snap"
    snap.mkdir()
    brokers, replicas = [], []
    for c in ("good", MARKUP_NAME, *BAD_NAMES, *BAD_VALUES):
        b, r = _cluster_rows(c)
        if c in BAD_VALUES:
            table, change, _ = BAD_VALUES[c]
            (b if table == "brokers" else r)[1].update(change)
        brokers += b
        replicas += r
    b, r = _cluster_rows("dupe", topic=MARKUP_TOPIC)
    r.append({"cluster": "dupe", "topic": MARKUP_TOPIC, "partition": "0", "position": "1", "broker": "1"})
    brokers += b
    replicas += r
    pd.DataFrame(brokers).reindex(columns=["cluster", "broker", "rack", "weight"]).to_csv(snap / "brokers.csv",
                                                                                        index=False)
    pd.DataFrame(replicas).to_csv(snap / "replicas.csv", index=False)
    (snap / "fleet.json").write_text(json.dumps({"clusters": {"../../evil": {"remove": [1]}, "x/y": {},
                                                              "good": {}}}))
    return snap


@pytest.fixture(scope="module")
def bad_tables_run(request, tmp_path_factory):
    """``flowbalance fleet`` (in-process, on the shared session) on the bad CSV snapshot, with a wide console: (exit
    code, stdout, stderr, the run's folder, -o). Once per test run, also under xdist."""
    from flowbalance_cli.app import main

    def run(tmp: Path):
        spark = request.getfixturevalue("spark")
        snap = _bad_tables_snapshot(tmp)
        out = tmp / "deep" / "out"
        mp = pytest.MonkeyPatch()
        mp.setenv("COLUMNS", "400")
        err, stdout = io.StringIO(), io.StringIO()
        mp.setattr(sys, "stderr", err)
        mp.setattr(sys, "stdout", stdout)
        try:
            main(["fleet", str(snap), "-o", str(out)])
            code = 0
        except SystemExit as e:
            code = e.code
        finally:
            mp.undo()
            restore_spark_conf(spark)
        return code, stdout.getvalue(), err.getvalue(), tmp, out

    return once_per_run(tmp_path_factory, "bad-tables", run)


def _reasons(out: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(status, reason) of each cluster in the summary the run wrote."""
    summary = pd.read_parquet(out / "summary.parquet")
    return dict(zip(summary.cluster, summary.status)), dict(zip(summary.cluster, summary.reason))


# every cluster of the bad CSV snapshot that must be an error row: (test id, cluster, needles of its reason)
NAME_IDS = {"../../evil": "slash", "..": "dotdot", "-dash": "dash", ESC_NAME: "escape"}  # readable test ids
BAD_TABLE_ROWS = [
    *[(f"name-{NAME_IDS[n]}", n, [f"cluster name: {why}", f"(got {n!r})"]) for n, why in BAD_NAMES.items()],
    ("fleet-json-key", "x/y", ["fleet.json: cluster name: must not contain / or \\ (got 'x/y')"]),
    *[(f"value-{c}", c, needles) for c, (_, _, needles) in BAD_VALUES.items()],
    ("broker-twice", "dupe", [f"partition {MARKUP_TOPIC}-0 lists a broker twice"]),
]


def test_bad_names_and_values_are_error_rows_and_the_others_are_planned(bad_tables_run):
    code, stdout, err, tmp, out = bad_tables_run
    status, _ = _reasons(out)
    assert status.pop("good") == "planned" and status.pop(MARKUP_NAME) == "planned"
    assert set(status) == {*BAD_NAMES, *BAD_VALUES, "dupe", "x/y"} and set(status.values()) == {"error"}
    assert set(status) == {c for _, c, _ in BAD_TABLE_ROWS}
    assert code == 1


@pytest.mark.parametrize("cluster,needles", [(c, n) for _, c, n in BAD_TABLE_ROWS],
                         ids=[i for i, _, _ in BAD_TABLE_ROWS])
def test_each_bad_cluster_is_an_error_row_with_its_reason(bad_tables_run, cluster, needles):
    _, _, _, _, out = bad_tables_run
    status, reasons = _reasons(out)
    assert status[cluster] == "error"
    for n in needles:
        assert n in reasons[cluster], (cluster, n, reasons[cluster])


def test_nothing_is_written_outside_the_output_folder(bad_tables_run):
    _, _, _, tmp, out = bad_tables_run
    outside = {p for p in _files_under(tmp) if not p.is_relative_to(out) and not p.is_relative_to(tmp / "snap")}
    assert outside == set()
    assert sorted(p.parent.name for p in out.rglob("plan.json")) == sorted(["good", MARKUP_NAME])
    for p in _files_under(out):
        assert p.resolve().is_relative_to(out.resolve())


def test_the_summary_shows_names_and_reasons_as_text(bad_tables_run):
    code, stdout, err, _, _ = bad_tables_run
    assert "\x1b" not in stdout and "\x1b" not in err  # no escape sequence from the input reaches the terminal
    assert f"│ {MARKUP_NAME} " in stdout  # a name like markup is shown as it is, not styled away
    assert "esc\\x1b[2J" in stdout  # a control character is shown as its escape
    assert f"partition {MARKUP_TOPIC}-0 lists a broker twice" in stdout
    assert "cluster name: must not contain / or \\ (got '../../evil')" in stdout
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"flowbalance: 12 of 14 clusters failed: ")
    assert "esc\\x1b[2J" in lines[0] and "../../evil" in lines[0] and "Traceback" not in err


@pytest.fixture(scope="module")
def parquet_run(request, tmp_path_factory):
    """``run_fleet`` on Parquet tables with typed columns (a good cluster, a bad name, bad broker and partition ids):
    (FleetResult, the run's folder, -o). Once per test run, also under xdist."""
    return once_per_run(tmp_path_factory, "bad-parquet", lambda tmp: _parquet_run(request.getfixturevalue("spark"),
                                                                                 tmp))


def _parquet_run(spark, tmp: Path):
    from flowbalance.pipeline.run import run_fleet

    snap = tmp / "snap"
    snap.mkdir()
    brokers, replicas = [], []
    for c in ("good", "../../evil", "negbroker", "halfbroker", "negpart", "hugebroker"):
        b, r = _cluster_rows(c)
        brokers += b
        replicas += r
    b = pd.DataFrame(brokers).astype({"broker": "int64"})
    r = pd.DataFrame(replicas).astype({"partition": "int64", "position": "int64", "broker": "float64"})
    r.loc[r.cluster == "negbroker", "broker"] = [1, 2, -1, 3]
    r.loc[r.cluster == "halfbroker", "broker"] = [1, 1.5, 2, 3]
    r.loc[r.cluster == "hugebroker", "broker"] = [1, 2, 3, 2.0 ** 40]
    r.loc[r.cluster == "negpart", "partition"] = [0, 1, 2, -7]
    b.to_parquet(snap / "brokers.parquet", index=False)
    r.to_parquet(snap / "replicas.parquet", index=False)
    out = tmp / "out"
    return run_fleet(str(snap), str(out), spark=spark), tmp, out


PARQUET_ROWS = {  # cluster: the needle of its reason
    "../../evil": "brokers.parquet: cluster name: must not contain / or \\ (got '../../evil')",
    "negbroker": "column broker: must be 0 or more (got '-1.0')",
    "halfbroker": "column broker: expected an integer (got '1.5')",
    "hugebroker": "column broker: is out of range",
    "negpart": "column partition: must be 0 or more (got '-7')",
}


def test_parquet_tables_check_ids_names_and_types(parquet_run):
    res, tmp, out = parquet_run
    assert dict(zip(res.summary.cluster, res.summary.status))["good"] == "planned"
    assert res.failed == sorted(["../../evil", "negbroker", "halfbroker", "negpart", "hugebroker"])
    assert res.failed == sorted(PARQUET_ROWS)
    assert not (tmp / "evil").exists() and sorted(p.parent.name for p in out.rglob("plan.json")) == ["good"]


@pytest.mark.parametrize("cluster", list(PARQUET_ROWS), ids=[NAME_IDS.get(c, c) for c in PARQUET_ROWS])
def test_each_bad_parquet_cluster_names_column_and_value(parquet_run, cluster):
    res, _, _ = parquet_run
    reasons = dict(zip(res.summary.cluster, res.summary.reason))
    assert PARQUET_ROWS[cluster] in reasons[cluster], reasons[cluster]


# ---- dump folders with bad names, and an output folder linked elsewhere (Spark) -----------------------------------

def test_dump_folders_with_bad_names_fleet_json_keys_and_a_linked_output(spark, tmp_path):
    from flowbalance.pipeline.run import run_fleet

    snap = tmp_path / "snap"
    for c in ("alpha", "delta", "gamma"):
        shutil.copytree(FLEET / c, snap / c)
    shutil.copytree(FLEET / "gamma", snap / "-dash")
    shutil.copytree(FLEET / "gamma", snap / ESC_NAME)
    (snap / "fleet.json").write_text(json.dumps({"clusters": {"alpha": {"remove": [11]}, "delta": {"add": [8]},
                                                              "../../evil": {"add": [5]}, "..": {}}}))
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "delta").symlink_to(elsewhere, target_is_directory=True)
    seen: list[tuple[str, int, int]] = []
    res = run_fleet(str(snap), str(out), spark=spark, progress=lambda *a: seen.append(a))
    status = dict(zip(res.summary.cluster, res.summary.status))
    reasons = dict(zip(res.summary.cluster, res.summary.reason))
    assert status == {"alpha": "planned", "gamma": "balanced", "delta": "error", "-dash": "error", ESC_NAME: "error",
                      "../../evil": "error", "..": "error"}
    assert "snapshot folder: cluster name: must not start with - (got '-dash')" in reasons["-dash"]
    assert f"snapshot folder: cluster name: must not contain control characters" in reasons[ESC_NAME]
    assert repr(ESC_NAME) in reasons[ESC_NAME]
    assert "fleet.json: cluster name: must not contain / or \\ (got '../../evil')" in reasons["../../evil"]
    assert "fleet.json: cluster name: must not be . or .. (got '..')" in reasons[".."]
    assert "resolves outside the output folder" in reasons["delta"]
    assert _files_under(elsewhere) == set() and not (tmp_path / "evil").exists()
    # progress: the stages in order, counts never above the total, every stage ends complete
    stages = [s for s, _, _ in seen]
    order = [s for i, s in enumerate(stages) if i == 0 or stages[i - 1] != s]
    assert order == ["ingest", "health", "plan", "write"]
    assert all(d <= t for _, d, t in seen if t)
    last = {s: (d, t) for s, d, t in seen}
    assert last["ingest"] == (7, 7) and last["health"] == (3, 3) and last["plan"] == (2, 2)


# ---- unusable snapshots: one line, exit 2 -----------------------------------------------------------------------

@pytest.fixture
def fleet_cli(spark, run_cli):
    """``run_cli`` for ``flowbalance fleet`` in-process on the shared session, whose test settings are put back
    after each command (its ``session.start`` sets the command's own shuffle partitions)."""
    def run(*args):
        try:
            return run_cli(*args)
        finally:
            restore_spark_conf(spark)

    return run


def _csv_snapshot(tmp: Path, replicas: str, brokers: str = "cluster,broker\nc,1\nc,2\n") -> Path:
    snap = tmp / "snap"
    snap.mkdir()
    (snap / "brokers.csv").write_text(brokers)
    (snap / "replicas.csv").write_text(replicas)
    return snap


@pytest.mark.parametrize("case", ["missing_column", "header_only", "corrupt_parquet", "bad_fleet_json",
                                  "empty_folder", "bad_conf"])
def test_an_unusable_snapshot_is_one_line_and_exit_2(fleet_cli, tmp_path, case):
    args: list = []
    if case == "missing_column":
        snap = _csv_snapshot(tmp_path, "cluster,topic,partition,broker\nc,t,0,1\n")
        needles = ["replicas.csv", "no column position"]
    elif case == "header_only":
        snap = _csv_snapshot(tmp_path, "cluster,topic,partition,position,broker\n", "cluster,broker\n")
        needles = ["no clusters found"]
    elif case == "corrupt_parquet":
        snap = tmp_path / "snap"
        snap.mkdir()
        pd.DataFrame({"cluster": ["c"], "broker": [1]}).to_parquet(snap / "brokers.parquet")
        (snap / "replicas.parquet").write_bytes(b"PAR1 this is not parquet")
        needles = ["replicas.parquet", "cannot read the replicas table"]
    elif case == "bad_fleet_json":
        snap = tmp_path / "snap"
        shutil.copytree(FLEET / "gamma", snap / "gamma")
        (snap / "fleet.json").write_text('{"clusters": {"gamma": ')
        needles = ["fleet.json", "malformed JSON"]
    elif case == "empty_folder":
        snap = tmp_path / "snap"
        snap.mkdir()
        needles = ["no clusters found"]
    else:
        snap, args, needles = FLEET, ["--conf", "novalue"], ["--conf", "KEY=VALUE", "'novalue'"]
    code, out, err = fleet_cli("fleet", snap, "-o", tmp_path / "out", *args)
    line = assert_one_line(code, out, err, *needles)
    assert line.startswith("flowbalance: error: ")
    assert not (tmp_path / "out" / "summary.csv").exists()


# ---- exit 0, and progress only on a terminal --------------------------------------------------------------------

def test_a_fleet_without_failures_exits_0_and_shows_progress_on_a_terminal(fleet_cli, tmp_path, monkeypatch):
    import flowbalance_cli.fleet as cli_fleet
    from rich.console import Console

    snap = tmp_path / "snap"
    for c in ("alpha", "gamma"):
        shutil.copytree(FLEET / c, snap / c)
    (snap / "fleet.json").write_text(json.dumps({"clusters": {"alpha": {"remove": [11]}}}))
    term = io.StringIO()
    monkeypatch.setattr(cli_fleet, "_progress_enabled", lambda json_out, quiet: not json_out and not quiet)
    monkeypatch.setattr(cli_fleet, "_progress_console", lambda: Console(file=term, force_terminal=True, width=100))
    code, out, err = fleet_cli("fleet", snap, "-o", tmp_path / "out")
    assert code == 0 and err == "", err
    assert "alpha" in out and "planned" in out and "balanced" in out
    shown = term.getvalue()
    for stage in ("ingest", "health", "plan", "write"):
        assert stage in shown, stage
    assert "2/2 clusters" in shown and "1/1 clusters" in shown  # ingest and health of 2, the plan of 1
    assert "\x1b[2K" in shown  # drawn in place (a live terminal display) and erased at the end


def test_progress_is_off_when_piped_or_asked_for_json_or_quiet(monkeypatch):
    import flowbalance_cli.fleet as cli_fleet

    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert cli_fleet._progress_enabled(False, False)
    assert not cli_fleet._progress_enabled(True, False) and not cli_fleet._progress_enabled(False, True)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert not cli_fleet._progress_enabled(False, False)


# ---- the command's output for a given result (no Spark: run_fleet replaced by one returning that result) ----------

def _fake_result(statuses: dict[str, str]):
    from flowbalance.pipeline.output import summary_table
    from flowbalance.pipeline.run import FleetResult

    errors = pd.DataFrame([{"cluster": c, "stage": "ingest", "reason": f"{c}: [red]bad[/red] \x1b[2J"}
                           for c, s in statuses.items() if s == "error"], columns=["cluster", "stage", "reason"])
    health = pd.DataFrame({"cluster": list(statuses), "balanced": True})
    planned = pd.DataFrame(columns=["cluster", "ok"])
    return FleetResult(summary=summary_table(list(statuses), planned, health, errors), files=[], master="local[1]")


@pytest.mark.parametrize("flags", [[], ["-q"], ["--json"]])
def test_failed_clusters_give_exit_1_and_the_last_line_in_every_mode(run_cli, monkeypatch, tmp_path, flags):
    import flowbalance.pipeline.run as run

    statuses = {"alpha": "balanced", "beta": "error", "gamma": "balanced", "delta": "error", "e\x1bx": "error"}
    monkeypatch.setattr(run, "run_fleet", lambda *a, **k: _fake_result(statuses))
    code, out, err = run_cli("fleet", FLEET, "-o", tmp_path, *flags)
    assert code == 1
    assert err.splitlines() == ["flowbalance: 3 of 5 clusters failed: beta, delta, e\\x1bx"]
    if flags == ["-q"]:
        assert out == ""
    elif flags == ["--json"]:
        assert json.loads(out)["failed"] == ["beta", "delta", "e\x1bx"]
    else:
        assert "\x1b" not in out and "beta: ingest: beta: [red]bad[/red] \\x1b[2J" in out
    monkeypatch.setattr(run, "run_fleet", lambda *a, **k: _fake_result({"alpha": "balanced"}))
    code, out, err = run_cli("fleet", FLEET, "-o", tmp_path, *flags)
    assert code == 0 and err == ""
