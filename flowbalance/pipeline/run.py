"""The fleet job: ingest → weights → health → plan → write, each a Spark job, timed. ``flowbalance fleet`` and
``spark-submit`` both call ``run_fleet``."""
from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd
from pyspark.sql import SparkSession

from ..errors import InputError
from .fleetplan import PLANNED_COLUMNS, needs_plan, plan_fleet, planning_work
from .health import health_and_parts
from .ingest import Tables, ingest_dumps, ingest_tables, read_fleet_file
from .output import guard_outputs, summary_table, write_outputs
from .session import start
from .weights import as_sizes, partition_weights

INPUTS = ("auto", "dumps", "parquet", "csv")
SIZES_FROM_METRICS = ("none", "fill", "replace")
LOG_NAME = "spark.log"  # in OUT: the JVM's stdout and stderr when the session is started here
SOURCE = "run_fleet"  # the source of its option errors; the place is the parameter's name


@dataclass
class FleetResult:
    """What the job did: the summary table, the files written, the wall time of each stage, and where Spark's
    own log went (None when the session was given)."""

    summary: pd.DataFrame
    files: list[str]
    seconds: dict[str, float] = field(default_factory=dict)
    master: str = ""
    log_file: str | None = None

    @property
    def failed(self) -> list[str]:
        """The clusters that could not be planned (status ``error``), sorted."""
        return sorted(self.summary.loc[self.summary.status == "error", "cluster"].tolist())


# progress(stage, done, total): stage is "start", "ingest", "weights", "health", "plan" or "write"; done and total
# count clusters (total 0 while unknown)
Progress = Callable[[str, int, int], None]


def _no_progress(stage: str, done: int, total: int) -> None:
    """The default progress callback: report nothing."""


def detect_input(snapshot: str) -> str:
    """Tables when a local snapshot holds a replicas table, dumps otherwise (non-local URIs need ``input_format``)."""
    if "://" in snapshot and not snapshot.startswith("file://"):
        return "dumps"
    root = Path(snapshot.removeprefix("file://"))
    if not root.is_dir():
        raise InputError(snapshot, "", "the fleet snapshot folder does not exist")
    if (root / "replicas.parquet").exists() or (root / "replicas").is_dir():
        return "parquet"
    if (root / "replicas.csv").exists():
        return "csv"
    return "dumps"


def _check_options(out: str, input_format: str, metric: str, quantile: float, window_days: float,
                   sizes_from_metrics: str) -> None:
    """Bad options are InputErrors ``run_fleet: PARAMETER: ...`` before Spark starts (the command line shows them
    under its flags)."""
    if input_format not in INPUTS:
        raise InputError(SOURCE, "input_format", f"unknown input (choose from {', '.join(INPUTS)})", input_format)
    if sizes_from_metrics not in SIZES_FROM_METRICS:
        raise InputError(SOURCE, "sizes_from_metrics", f"choose from {', '.join(SIZES_FROM_METRICS)}",
                         sizes_from_metrics)
    if metric not in ("bytes_in", "bytes_out"):
        raise InputError(SOURCE, "metric", "choose from bytes_in, bytes_out", metric)
    if not 0.0 <= quantile <= 1.0:
        raise InputError(SOURCE, "quantile", "must be within 0 .. 1", quantile)
    if window_days <= 0:
        raise InputError(SOURCE, "window_days", "must be above 0", window_days)
    if os.path.exists(out) and not os.path.isdir(out):
        raise InputError(SOURCE, "out", "exists and is not a folder", out)


def _log_path(out: str) -> str:
    """OUT/spark.log (OUT created), refused when it would resolve outside OUT."""
    root = Path(out)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(SOURCE, "out", f"cannot create the folder: {err.strerror or err}", out) from None
    log = root / LOG_NAME
    if not log.resolve().is_relative_to(root.resolve()):
        raise InputError(SOURCE, "out", f"{LOG_NAME} resolves outside the output folder", str(log.resolve()))
    return str(log)


def _sorted(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``df`` collected from Spark, sorted by its unique ``keys`` and numbered 0, 1, ... (the order written)."""
    return df.sort_values(keys, kind="stable").reset_index(drop=True)


@contextmanager
def _counting(spark: SparkSession, report: Callable[[int], None]):
    """A Spark accumulator whose value (clusters done, summed as tasks end) is reported every 0.2 s meanwhile."""
    acc = spark.sparkContext.accumulator(0)
    stop = threading.Event()

    def poll() -> None:
        last = -1
        while not stop.wait(0.2):
            if acc.value != last:
                last = acc.value
                report(last)

    thread = threading.Thread(target=poll, name="fleet-progress", daemon=True)
    thread.start()
    try:
        yield acc
    finally:
        stop.set()
        thread.join()


def run_fleet(snapshot: str, out: str, *, master: str | None = None, input_format: str = "auto",
              metric: str = "bytes_in", quantile: float = 0.95, window_days: float = 7.0,
              sizes_from_metrics: str = "none", plan_all: bool = False, conf: dict[str, str] | None = None,
              spark: SparkSession | None = None, progress: Progress | None = None) -> FleetResult:
    """Run every stage; InputError for an unusable snapshot or bad options (nothing planned), otherwise a result
    in which each cluster is planned, balanced or an error with its reason. Without ``spark``, the session started
    here writes Java's and Spark's output to OUT/spark.log."""
    _check_options(out, input_format, metric, quantile, window_days, sizes_from_metrics)
    report = progress or _no_progress
    kind = detect_input(snapshot) if input_format == "auto" else input_format
    seconds: dict[str, float] = {}
    log_file = None
    t = time.perf_counter()
    if spark is None:
        report("start", 0, 0)
        log_file = _log_path(out)
        spark = start(master, conf=conf, log_file=log_file)
    seconds["start"] = time.perf_counter() - t

    t = time.perf_counter()
    report("ingest", 0, 0)
    requests = read_fleet_file(spark, snapshot)
    if kind == "dumps":
        with _counting(spark, lambda n: report("ingest", n, 0)) as acc:
            tables: Tables = ingest_dumps(spark, snapshot, requests, counter=acc)
            errors = tables.errors.toPandas()
    else:
        tables = ingest_tables(spark, snapshot, kind, requests)
        errors = tables.errors.toPandas()
    names = sorted(r.cluster for r in tables.clusters.select("cluster").collect())
    total = len(set(names) | set(errors.cluster))
    report("ingest", total, total)
    seconds["ingest"] = time.perf_counter() - t

    outputs: dict[str, pd.DataFrame] = {}
    read_by_health_only: list = []  # cached here, and read by nothing after the health stage
    if tables.metrics is not None:
        t = time.perf_counter()
        report("weights", 0, len(names))
        w = partition_weights(tables.metrics, column=metric, quantile=quantile, window_days=window_days).cache()
        tables.cached.append(w)
        read_by_health_only.append(w)
        # sorted here rather than by Spark (a sampling job and a range shuffle for rows collected anyway)
        outputs["weights"] = _sorted(w.toPandas(), ["cluster", "topic", "partition"])
        if sizes_from_metrics != "none":  # read by health and by planning: computed once
            sizes = as_sizes(tables.sizes, w, replace=sizes_from_metrics == "replace")
            # spread as ingest spreads the replicas, so that health joins the two without a shuffle
            tables.sizes = sizes.repartition(int(spark.conf.get("spark.sql.shuffle.partitions")), "cluster",
                                             "topic").cache()
            tables.cached.append(tables.sizes)
            read_by_health_only.append(tables.sizes)
        report("weights", len(names), len(names))
        seconds["weights"] = time.perf_counter() - t
    elif sizes_from_metrics != "none":
        raise InputError(SOURCE, "sizes_from_metrics", "needs a metrics table in the snapshot", sizes_from_metrics)

    t = time.perf_counter()
    report("health", 0, len(names))
    hc, hb, parts = health_and_parts(tables.brokers, tables.replicas, tables.sizes)
    hc = hc.cache()
    tables.cached += [hc, parts]  # the partitions, measured here, are planned from too
    # sorted here, as the weights are (Spark's orderBy adds a sampling job and a range shuffle per table: about
    # 0.8 s of the benchmark's health stage); the keys are unique, so the order is Spark's (UTF-8 bytes and code
    # points order strings alike)
    outputs["health_clusters"] = _sorted(hc.toPandas(), ["cluster"])
    outputs["health_brokers"] = _sorted(hb.toPandas(), ["cluster", "broker"])
    tables.release_rows()  # planning reads health's partitions instead
    for df in read_by_health_only:
        df.unpersist()
    report("health", len(names), len(names))
    seconds["health"] = time.perf_counter() - t

    t = time.perf_counter()
    todo = names if plan_all else needs_plan(names, outputs["health_clusters"], requests)
    report("plan", 0, len(todo))
    if todo:
        chosen = spark.createDataFrame([(c,) for c in todo], "cluster string")
        with _counting(spark, lambda n: report("plan", min(n, len(todo)), len(todo))) as acc:
            planned = plan_fleet(tables, parts, chosen, counter=acc,
                                 work=planning_work(outputs["health_clusters"], todo)).toPandas()
        planned = planned.sort_values("cluster", kind="stable").reset_index(drop=True)
    else:
        planned = pd.DataFrame({c: pd.Series([], dtype=object) for c in PLANNED_COLUMNS})
    tables.release()
    report("plan", len(todo), len(todo))
    seconds["plan"] = time.perf_counter() - t

    t = time.perf_counter()
    report("write", 0, len(todo))
    planned = guard_outputs(out, planned)
    summary = summary_table(names, planned, outputs["health_clusters"], errors)
    outputs["summary"] = summary
    outputs["errors"] = errors.sort_values(["cluster", "stage"], kind="stable").reset_index(drop=True)
    files = write_outputs(out, planned, outputs, inputs=[snapshot])
    report("write", len(todo), len(todo))
    seconds["write"] = time.perf_counter() - t
    return FleetResult(summary=summary, files=files, seconds=seconds, master=spark.sparkContext.master,
                       log_file=log_file)
