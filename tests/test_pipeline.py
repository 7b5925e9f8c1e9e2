"""The fleet pipeline on real Spark: local mode in-process, and a standalone master + worker started from the
pyspark installation. Every cluster's plan files must equal the single-cluster CLI's, byte for byte.

In-process runs share conftest's session (one per pytest-xdist worker); ``flowbalance fleet`` on testdata/fleet runs
once in-process, for both the library's result and the command's output. Subprocesses only where the process itself
is tested (a standalone master and worker, spark-submit)."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from .conftest import FAST_JVM, ROOT, TESTDATA, fast_jvm_env, restore_spark_conf
from .once import once_per_run

FLEET = TESTDATA / "fleet"
FAILED_LINE = "flowbalance: 2 of 6 clusters failed: broken, ghost"  # testdata/fleet's two bad clusters
# the CLI arguments equivalent to each cluster's entry in testdata/fleet/fleet.json
CLI_ARGS = {
    "alpha": ["alpha/describe.txt", "--brokers", "alpha/brokers.csv", "--sizes", "alpha/logdirs.txt", "--remove", "11"],
    "beta": ["beta/assignment.json", "--brokers", "beta/brokers.csv", "--sizes", "beta/logdirs.txt"],
    "delta": ["delta/assignment.json", "--brokers", "delta/brokers.csv", "--replication-factor", "3"],
    "gamma": ["gamma/assignment.json"],
}


def _cli_files(run_cli, tmp: Path, cluster: str) -> dict[str, bytes]:
    args = [str(FLEET / a) if "/" in a else a for a in CLI_ARGS[cluster]]
    d = tmp / f"cli-{cluster}"
    d.mkdir()
    code, _, err = run_cli("plan", *args, "-o", d / "plan.json", "--rollback", d / "rollback.json",
                           "--election", d / "election.json", "-q")
    assert code == 0, err
    return {n: (d / n).read_bytes() for n in ("plan.json", "rollback.json", "election.json", "plan.meta.json")}


def _sidecar_body(data: bytes) -> dict:
    """A sidecar's content but the fields that name the moment and the input (``created``, ``current``), the
    request as the ``PlanRequest`` it reads as (the command line keeps ``extra_moves`` as typed, "0")."""
    from flowbalance.planmeta import request_from_json, request_json

    doc = json.loads(data)
    doc["request"] = request_json(request_from_json(doc["request"], "sidecar"))
    doc["request"]["extra_moves"] = str(doc["request"]["extra_moves"])
    return {k: v for k, v in doc.items() if k not in ("created", "current")}


@pytest.fixture(scope="module")
def fleet_command_run(request, tmp_path_factory):
    """``flowbalance fleet testdata/fleet -o OUT --json`` in-process on the shared session: (exit code, stdout,
    stderr, the FleetResult its ``run_fleet`` returned, OUT). One Spark run serves the library's tests and the
    command's, once per test run (also under xdist: the standalone and spark-submit tests compare with it)."""
    return once_per_run(tmp_path_factory, "fleet-local", lambda out: _fleet_command(request.getfixturevalue("spark"),
                                                                                    out))


def _fleet_command(spark, out: Path):
    """Run the command in-process, recording what its ``run_fleet`` returned."""
    import flowbalance.pipeline.run as run
    from flowbalance_cli.app import main

    results = []
    real = run.run_fleet

    def recording(*args, **kwargs):
        results.append(real(*args, **kwargs))
        return results[-1]

    mp = pytest.MonkeyPatch()
    stdout, stderr = io.StringIO(), io.StringIO()
    mp.setattr(run, "run_fleet", recording)
    mp.setattr(sys, "stdout", stdout)
    mp.setattr(sys, "stderr", stderr)
    try:
        main(["fleet", str(FLEET), "-o", str(out), "--json"])
        code = 0
    except SystemExit as e:
        code = e.code
    finally:
        mp.undo()
        restore_spark_conf(spark)
    assert len(results) == 1, stderr.getvalue()
    return code, stdout.getvalue(), stderr.getvalue(), results[0], out


@pytest.fixture(scope="module")
def local_run(fleet_command_run):
    """The fleet job on testdata/fleet in local mode: (FleetResult, its output folder)."""
    _, _, _, res, out = fleet_command_run
    return res, out


def test_local_run_plans_what_needs_it_and_reports_bad_clusters(local_run):
    res, out = local_run
    status = dict(zip(res.summary.cluster, res.summary.status))
    assert status == {"alpha": "planned", "beta": "planned", "delta": "planned", "gamma": "balanced",
                      "broken": "error", "ghost": "error"}
    reasons = dict(zip(res.summary.cluster, res.summary.reason))
    assert "broker 1 appears twice" in reasons["broken"] and "broken/assignment.json" in reasons["broken"]
    assert "no folder" in reasons["ghost"]
    for name in ("summary", "health_clusters", "health_brokers", "errors"):
        assert (out / f"{name}.parquet").exists() and (out / f"{name}.csv").exists()
    assert not (out / "gamma").exists() and not (out / "broken").exists()
    csv = pd.read_csv(out / "summary.csv")
    assert list(csv.cluster) == sorted(status) and (csv.moves.dropna() >= csv.lower_bound.dropna()).all()
    planned = csv[csv.status == "planned"]
    # the certificate's failover bound (a lower bound on the planned worst spread), for every planned cluster
    assert planned.failover_bound.notna().all()
    assert (planned.failover_bound <= planned.failover_spread_after + 1e-9).all()
    # whole numbers are written as such in every CSV table, and the CSV reads back as the Parquet's values
    for name in ("summary", "health_clusters", "health_brokers"):
        text = (out / f"{name}.csv").read_text()
        assert not re.search(r"(^|,)-?\d+\.0(,|$)", text, flags=re.M), name
        typed = pd.read_parquet(out / f"{name}.parquet")
        back = pd.read_csv(out / f"{name}.csv")
        for col in typed.columns:
            if typed[col].dtype.kind in "fiu":
                assert np.allclose(back[col].astype(float), typed[col].astype(float), equal_nan=True), (name, col)


def test_csv_tables_write_whole_numbers_without_a_decimal_point(tmp_path):
    from flowbalance.pipeline.output import _table_files

    df = pd.DataFrame({"name": ["a", "b", "c"], "spread": [42.0, 1.5, None], "count": [1, 2, 3]})
    files = _table_files("t", df, tmp_path)
    assert files[str(tmp_path / "t.csv")].decode() == "name,spread,count\na,42,1\nb,1.5,2\nc,,3\n"
    assert pd.read_parquet(io.BytesIO(files[str(tmp_path / "t.parquet")])).spread.dtype.kind == "f"


# ---- a real standalone Spark cluster -------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(pred, timeout: float, what: str) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_standalone_master_and_worker_give_the_same_outputs(local_run, tmp_path):
    import pyspark

    home = Path(pyspark.__file__).parent
    spark_class = home / "bin" / "spark-class"
    env = fast_jvm_env(dict(os.environ, SPARK_HOME=str(home), PYSPARK_PYTHON=sys.executable,
                            SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=str(tmp_path / "work"),
                            SPARK_LOG_DIR=str(tmp_path / "logs")))
    port, ui, wui = _free_port(), _free_port(), _free_port()
    logs = [open(tmp_path / "master.log", "w"), open(tmp_path / "worker.log", "w")]
    master = subprocess.Popen([str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                               "--port", str(port), "--webui-port", str(ui)], env=env, stdout=logs[0],
                              stderr=subprocess.STDOUT)
    worker = None
    try:
        url = f"spark://127.0.0.1:{port}"
        _wait_for(lambda: "I have been elected leader" in (tmp_path / "master.log").read_text(), 90, "the master")
        # the executors it starts inherit its environment: JAVA_TOOL_OPTIONS gives them FAST_JVM too
        worker = subprocess.Popen([str(spark_class), "org.apache.spark.deploy.worker.Worker", url, "--host",
                                   "127.0.0.1", "--cores", "2", "--memory", "1g", "--webui-port", str(wui)],
                                  env=dict(env, JAVA_TOOL_OPTIONS=FAST_JVM), stdout=logs[1], stderr=subprocess.STDOUT)
        _wait_for(lambda: "Successfully registered with master" in (tmp_path / "worker.log").read_text(), 90,
                  "the worker")
        out = tmp_path / "o"
        run = subprocess.run([sys.executable, "-m", "flowbalance_cli", "fleet", str(FLEET), "-o", str(out),
                              "--master", url, "--json"], env=env, capture_output=True, text=True, timeout=600)
        assert run.returncode == 1, run.stderr[-3000:]
        assert run.stderr.splitlines() == [FAILED_LINE]  # nothing from Java or Spark with --master either
        d = json.loads(run.stdout)
        assert d["master"] == url
        assert "app-" in (tmp_path / "master.log").read_text()  # the job ran as an application of this master
        _, local_out = local_run
        for cluster in ("alpha", "beta", "delta"):
            for name in ("plan.json", "rollback.json", "election.json"):
                assert (out / cluster / name).read_bytes() == (local_out / cluster / name).read_bytes()
        for table in ("summary", "health_clusters", "health_brokers", "errors"):
            a = pd.read_parquet(out / f"{table}.parquet").drop(columns=["seconds"], errors="ignore")
            b = pd.read_parquet(local_out / f"{table}.parquet").drop(columns=["seconds"], errors="ignore")
            pd.testing.assert_frame_equal(a, b)
    finally:
        for proc in (worker, master):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
        for f in logs:
            f.close()
    assert master.poll() is not None and (worker is None or worker.poll() is not None)


def test_every_plan_is_byte_identical_to_the_single_cluster_cli(local_run, run_cli, tmp_path):
    res, out = local_run
    for cluster in ("alpha", "beta", "delta"):
        want = _cli_files(run_cli, tmp_path, cluster)
        side = want.pop("plan.meta.json")
        for name, data in want.items():
            assert (out / cluster / name).read_bytes() == data, (cluster, name)
        # the sidecar: the same assignment, request and plan fingerprint (so status and --resume work on it)
        got = (out / cluster / "plan.meta.json").read_bytes()
        assert _sidecar_body(got) == _sidecar_body(side), cluster
        assert json.loads(got)["current"] == f"{cluster} (fleet snapshot)"


def test_plan_all_also_plans_balanced_clusters(spark, run_cli, tmp_path):
    from flowbalance.pipeline.run import run_fleet

    res = run_fleet(str(FLEET), str(tmp_path / "o"), spark=spark, plan_all=True)
    assert dict(zip(res.summary.cluster, res.summary.status))["gamma"] == "nothing to do"
    want = _cli_files(run_cli, tmp_path, "gamma")
    assert (tmp_path / "o" / "gamma" / "plan.json").read_bytes() == want["plan.json"]
    assert _sidecar_body((tmp_path / "o" / "gamma" / "plan.meta.json").read_bytes()) == \
        _sidecar_body(want["plan.meta.json"])


def test_fleet_places_new_topics_on_spark_as_place_does(spark, run_cli, tmp_path):
    """``"place"`` in fleet.json, run by Spark for real: the cluster's place.json is byte for byte what
    ``flowbalance place CURRENT --topics-file ... -o`` writes for the same topics."""
    from flowbalance.pipeline.run import run_fleet

    root = tmp_path / "fleet"
    shutil.copytree(FLEET / "beta", root / "beta")
    entry = [{"topic": "new-topic-a", "partitions": 12, "rf": 3}, {"topic": "new-topic-b", "partitions": 5, "rf": 2}]
    (root / "fleet.json").write_text(json.dumps({"clusters": {"beta": {"place": entry}}}))
    res = run_fleet(str(root), str(tmp_path / "o"), spark=spark)
    row = res.summary.set_index("cluster").loc["beta"]
    assert row.status != "error", row.to_dict()
    (tmp_path / "topics.csv").write_text("topic,partitions,rf\nnew-topic-a,12,3\nnew-topic-b,5,2\n")
    code, _, err = run_cli("place", root / "beta" / "assignment.json", "--brokers", root / "beta" / "brokers.csv",
                           "--topics-file", tmp_path / "topics.csv", "-o", tmp_path / "place.json", "--json")
    assert code == 0, err
    assert (tmp_path / "o" / "beta" / "place.json").read_bytes() == (tmp_path / "place.json").read_bytes()


def _tables_snapshot(tmp: Path, fmt: str) -> Path:
    """The testdata fleet as brokers/replicas/sizes tables plus a metric history (delta and gamma only: no
    log_dirs in their dumps, so their plans must match the dumps' plans byte for byte)."""
    from flowbalance.load import load_cluster
    from flowbalance.pipeline.rows import state_rows

    root = tmp / f"tables-{fmt}"
    root.mkdir()
    parts = {"brokers": [], "replicas": [], "sizes": []}
    metrics = []
    rng = np.random.default_rng(5)
    t0 = datetime(2026, 11, 1)
    for c in ("delta", "gamma"):
        st = load_cluster(FLEET / c / "assignment.json",
                          brokers=(FLEET / c / "brokers.csv") if (FLEET / c / "brokers.csv").exists() else None).state
        for k, v in state_rows(c, st).items():
            parts[k].append(v)
        for i in range(st.num_partitions):
            for h in range(30):  # 30 hourly samples per partition, some older than the window
                metrics.append((c, st.topics[st.topic[i]], int(st.partition[i]), t0 + timedelta(days=h / 2),
                                float(rng.integers(0, 10_000)), float(rng.integers(0, 10_000))))
    tables = {k: pd.concat(v, ignore_index=True) for k, v in parts.items()}
    tables["metrics"] = pd.DataFrame(metrics, columns=["cluster", "topic", "partition", "timestamp", "bytes_in",
                                                       "bytes_out"])
    for k, df in tables.items():
        if fmt == "parquet":
            df.to_parquet(root / f"{k}.parquet", index=False, coerce_timestamps="us")
        else:
            df.to_csv(root / f"{k}.csv", index=False)
    shutil.copy(FLEET / "fleet.json", root / "fleet.json")
    return root


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_tables_input_gives_the_same_plans_and_weights(spark, local_run, tmp_path, fmt):
    from flowbalance.pipeline.run import run_fleet

    snap = _tables_snapshot(tmp_path, fmt)
    out = tmp_path / "o"
    res = run_fleet(str(snap), str(out), spark=spark, plan_all=True)
    status = dict(zip(res.summary.cluster, res.summary.status))
    # fleet.json also names alpha, beta, broken, ghost: not in the tables, so only delta and gamma are planned
    assert status["delta"] == "planned" and status["gamma"] == "nothing to do"
    _, dumps_out = local_run
    assert (out / "delta" / "plan.json").read_bytes() == (dumps_out / "delta" / "plan.json").read_bytes()
    w = pd.read_parquet(out / "weights.parquet")
    m = pd.read_parquet(snap / "metrics.parquet") if fmt == "parquet" else pd.read_csv(snap / "metrics.csv",
                                                                                        parse_dates=["timestamp"])
    # oracle: the p95 of bytes_in over the last 7 days of each cluster, as percentile_approx defines it
    # (the smallest sample with at least 95 % of the samples at or below it)
    for c, g in m.groupby("cluster"):
        newest = g.timestamp.max()
        recent = g[g.timestamp >= newest - pd.Timedelta(days=7)]
        for (t, p), gg in recent.groupby(["topic", "partition"]):
            vals = np.sort(gg.bytes_in.to_numpy())
            want = vals[int(np.ceil(0.95 * len(vals))) - 1]
            got = w[(w.cluster == c) & (w.topic == t) & (w.partition == p)]
            assert len(got) == 1 and got.weight.iloc[0] == want and got.samples.iloc[0] == len(vals)


def test_fleet_command_prints_the_summary_and_refuses_bad_options(fleet_command_run, run_cli, tmp_path):
    code, out, err, _, _ = fleet_command_run
    assert code == 1, err  # broken and ghost failed
    assert err.splitlines() == [FAILED_LINE]
    d = json.loads(out)
    assert {c["cluster"]: c["status"] for c in d["clusters"]}["alpha"] == "planned"
    assert d["failed"] == ["broken", "ghost"]
    assert d["master"].startswith("local")
    from .test_bad_input import assert_one_line

    code, out, err = run_cli("fleet", FLEET, "-o", tmp_path / "p", "--quantile", "2")
    assert_one_line(code, out, err, "--quantile", "2")
    code, out, err = run_cli("fleet", tmp_path / "nowhere", "-o", tmp_path / "q")
    assert_one_line(code, out, err, "nowhere", "does not exist")


# ---- spark-submit --------------------------------------------------------------------------------------------

def test_spark_submit_runs_the_same_entry_point(local_run, tmp_path):
    import pyspark

    import flowbalance_cli.spark_entry as entry

    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    out = tmp_path / "o"
    env = fast_jvm_env(dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1"))
    run = subprocess.run([str(submit), "--master", "local[1]", entry.__file__, str(FLEET), "-o", str(out), "--json"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stderr[-3000:]  # broken and ghost failed; spark-submit passes the code on
    d = json.loads(run.stdout)  # spark-submit merges the script's stderr into stdout: no failure line there
    assert d["master"] == "local[1]" and d["failed"] == ["broken", "ghost"]  # spark-submit's --master, not local[*]
    _, local_out = local_run
    for cluster in ("alpha", "beta", "delta"):
        assert (out / cluster / "plan.json").read_bytes() == (local_out / cluster / "plan.json").read_bytes()


def test_status_tracks_a_fleet_plan_from_its_sidecar(local_run, run_cli):
    """A fleet plan is tracked like a single plan: ``status`` against the snapshot it was made from finds every
    planned partition not started, and the plan is not stale."""
    _, out = local_run
    args = [str(FLEET / a) if "/" in a else a for a in CLI_ARGS["alpha"]][:5]  # CURRENT, --brokers, --sizes
    code, text, err = run_cli("status", out / "alpha" / "plan.json", "--current", *args, "--json")
    assert code == 0, err
    d = json.loads(text)
    planned = len(json.loads((out / "alpha" / "plan.json").read_text())["partitions"])
    assert d["totals"]["not_started"] == planned and d["totals"]["done"] == 0 and not d["stale"], d["totals"]


def test_a_driver_started_here_runs_the_throughput_collector(tmp_path):
    """``session.start`` gives the JVM it launches the parallel (throughput) collector, unless the caller sets the
    driver's options itself; log4j stays at errors (no Spark warning on stderr)."""
    code = ("import sys, json; from flowbalance.pipeline.session import start\n"
            "conf = json.loads(sys.argv[1])\n"
            "s = start('local[1]', conf={'spark.ui.enabled': 'false', **conf})\n"
            "beans = s.sparkContext._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()\n"
            "jvm = s.sparkContext._jvm\n"
            "bean = jvm.java.lang.management.ManagementFactory.getPlatformMXBean(\n"
            "    jvm.java.lang.Class.forName('com.sun.management.HotSpotDiagnosticMXBean'))\n"
            "print(sorted(b.getName() for b in beans), bean.getVMOption('GCTimeRatio').getValue()); s.stop()\n")
    runs = {}
    for name, conf in (("default", {}), ("own", {"spark.driver.extraJavaOptions": "-XX:+UseSerialGC"})):
        run = subprocess.run([sys.executable, "-c", code, json.dumps(conf)], capture_output=True, text=True,
                             timeout=240, cwd=tmp_path, env=fast_jvm_env(dict(os.environ)))
        assert run.returncode == 0, run.stderr
        runs[name] = run
    assert runs["default"].stdout.strip() == "['PS MarkSweep', 'PS Scavenge'] 9"  # and its time ratio
    assert not re.search(r"\bWARN\b|log4j", runs["default"].stderr)  # the JVM's own "WARNING: ..." may show
    assert runs["own"].stdout.strip() == "['Copy', 'MarkSweepCompact'] 99"  # the caller's options win
