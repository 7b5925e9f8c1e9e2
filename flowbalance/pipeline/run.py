"""The fleet job: ingest → weights → health → plan → write, each a Spark job, timed. ``flowbalance fleet`` and
``spark-submit`` both call ``run_fleet``."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from pyspark.sql import SparkSession

from ..errors import InputError
from .fleetplan import needs_plan, plan_fleet
from .health import health
from .ingest import Tables, ingest_dumps, ingest_tables, read_fleet_file
from .output import summary_table, write_outputs
from .session import start
from .weights import as_sizes, partition_weights

INPUTS = ("auto", "dumps", "parquet", "csv")
SIZES_FROM_METRICS = ("none", "fill", "replace")


@dataclass
class FleetResult:
    """What the job did: the summary table, the files written and the wall time of each stage."""

    summary: pd.DataFrame
    files: list[str]
    seconds: dict[str, float] = field(default_factory=dict)
    master: str = ""


def detect_input(snapshot: str) -> str:
    """Tables when a local snapshot holds a replicas table, dumps otherwise (non-local URIs need --input)."""
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


def run_fleet(snapshot: str, out: str, *, master: str | None = None, input_format: str = "auto",
              metric: str = "bytes_in", quantile: float = 0.95, window_days: float = 7.0,
              sizes_from_metrics: str = "none", plan_all: bool = False, conf: dict[str, str] | None = None,
              spark: SparkSession | None = None) -> FleetResult:
    if input_format not in INPUTS:
        raise InputError("--input", "", f"unknown input (choose from {', '.join(INPUTS)})", input_format)
    if sizes_from_metrics not in SIZES_FROM_METRICS:
        raise InputError("--sizes-from-metrics", "", f"choose from {', '.join(SIZES_FROM_METRICS)}",
                         sizes_from_metrics)
    if metric not in ("bytes_in", "bytes_out"):
        raise InputError("--metric", "", "choose from bytes_in, bytes_out", metric)
    if not 0.0 <= quantile <= 1.0:
        raise InputError("--quantile", "", "must be within 0 .. 1", quantile)
    if window_days <= 0:
        raise InputError("--window-days", "", "must be above 0", window_days)
    if os.path.exists(out) and not os.path.isdir(out):
        raise InputError("-o", "", "exists and is not a folder", out)
    kind = detect_input(snapshot) if input_format == "auto" else input_format
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    spark = spark or start(master, conf=conf)
    seconds["start"] = time.perf_counter() - t

    t = time.perf_counter()
    requests = read_fleet_file(spark, snapshot)
    tables: Tables = (ingest_dumps(spark, snapshot, requests) if kind == "dumps"
                      else ingest_tables(spark, snapshot, kind, requests))
    errors = tables.errors.toPandas()
    names = sorted(r.cluster for r in tables.clusters.select("cluster").collect())
    seconds["ingest"] = time.perf_counter() - t

    outputs: dict[str, pd.DataFrame] = {}
    if tables.metrics is not None:
        t = time.perf_counter()
        w = partition_weights(tables.metrics, column=metric, quantile=quantile, window_days=window_days).cache()
        outputs["weights"] = w.orderBy("cluster", "topic", "partition").toPandas()
        if sizes_from_metrics != "none":
            tables.sizes = as_sizes(tables.sizes, w, replace=sizes_from_metrics == "replace")
        seconds["weights"] = time.perf_counter() - t
    elif sizes_from_metrics != "none":
        raise InputError("--sizes-from-metrics", "", "needs a metrics table in the snapshot", sizes_from_metrics)

    t = time.perf_counter()
    hc, hb = health(tables.brokers, tables.replicas, tables.sizes)
    hc = hc.cache()
    outputs["health_clusters"] = hc.orderBy("cluster").toPandas()
    outputs["health_brokers"] = hb.orderBy("cluster", "broker").toPandas()
    seconds["health"] = time.perf_counter() - t

    t = time.perf_counter()
    # a small DataFrame from the collected health (not the health query itself, whose long lineage Spark
    # would analyse again for every action)
    balanced = spark.createDataFrame(outputs["health_clusters"][["cluster", "balanced"]].astype({"balanced": bool}),
                                     "cluster string, balanced boolean")
    todo = None if plan_all else needs_plan(tables, balanced)
    planned = plan_fleet(tables, todo).toPandas().sort_values("cluster", kind="stable").reset_index(drop=True)
    seconds["plan"] = time.perf_counter() - t

    t = time.perf_counter()
    summary = summary_table(names, planned, outputs["health_clusters"], errors)
    outputs["summary"] = summary
    outputs["errors"] = errors.sort_values(["cluster", "stage"], kind="stable").reset_index(drop=True)
    files = write_outputs(out, planned, outputs, inputs=[snapshot])
    seconds["write"] = time.perf_counter() - t
    return FleetResult(summary=summary, files=files, seconds=seconds, master=spark.sparkContext.master)
