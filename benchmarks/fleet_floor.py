"""What the fleet benchmark cannot do without, on its cores (``python -m benchmarks fleet-floor``).

The fleet job is CPU-bound on ``local[2]``: its wall time is at least its CPU seconds over the two cores. Two parts
of that work are fixed by what the job must deliver, whatever the pipeline's own stages cost:

* a Spark JVM started fresh (the job runs as one process), which reads the tables and computes one weight per
  partition from the metric history (``pipeline.weights.partition_weights``, collected as the job collects it),
  plus one aggregation of each row table: the least any health stage reads. Measured here in a child process,
  the CPU seconds of its whole process tree (Python driver and JVM) at each step;
* the planner on every cluster, whose plans must be byte-identical to ``flowbalance plan`` on each cluster alone
  (issue 7): ``fleet_planner``'s two processes, their CPU seconds.

Their sum over the cores is a floor for ``python -m benchmarks fleet`` on this machine, printed beside the
target (docs/performance.md). Only runs on the same day compare: the machine's speed varies.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

TARGET_SECONDS = 60.0  # issue 17: the fleet benchmark on local[2]


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system, with those of children already ended) of ``pid`` and every descendant."""
    from .fleet import _tree_rss

    return _tree_rss(pid)[1]


def spark_steps(snap: Path, master: str) -> dict[str, list[float]]:
    """[wall, CPU] seconds of each step of the least Spark work, in this process (start a fresh JVM first)."""
    from pyspark.sql import functions as F

    from flowbalance.pipeline.session import start
    from flowbalance.pipeline.weights import partition_weights

    steps: dict[str, list[float]] = {}
    t, c = time.perf_counter(), tree_cpu(os.getpid())

    def mark(name: str) -> None:
        nonlocal t, c
        t2, c2 = time.perf_counter(), tree_cpu(os.getpid())
        steps[name] = [round(t2 - t, 2), round(c2 - c, 2)]
        t, c = t2, c2

    spark = start(master, conf={"spark.ui.enabled": "false"})
    mark("start")
    weights = partition_weights(spark.read.parquet(str(snap / "metrics"))).toPandas()
    mark("weights")
    replicas = (spark.read.parquet(str(snap / "replicas.parquet")).groupBy("cluster", "broker")
                .agg(F.count(F.lit(1)).alias("replicas"), F.count_if(F.col("position") == 0).alias("leaders"))
                .toPandas())
    sizes = spark.read.parquet(str(snap / "sizes.parquet")).groupBy("cluster").agg(F.sum("bytes")).toPandas()
    brokers = spark.read.parquet(str(snap / "brokers.parquet")).groupBy("cluster").count().toPandas()
    mark("tables")
    spark.stop()
    if min(len(weights), len(replicas), len(sizes), len(brokers)) == 0:
        raise SystemExit("fleet-floor: an empty table in the snapshot")
    return steps


def floor_seconds(spark_cpu: float, planner_cpu: float, cores: int) -> float:
    """The least wall time of work that takes these CPU seconds on ``cores`` cores, all kept busy."""
    return (spark_cpu + planner_cpu) / cores


def bench_fleet_floor(root: Path) -> None:
    from .fleet import CLUSTERS, CORES, build
    from .fleet_planner import plan_halves, totals

    snap = build(root)
    proc = subprocess.run([sys.executable, "-m", "benchmarks.fleet_floor", str(snap), f"local[{CORES}]"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"fleet-floor: the Spark step failed ({proc.returncode})")
    steps = json.loads(proc.stdout.strip().splitlines()[-1])
    spark_cpu = sum(cpu for _, cpu in steps.values())
    records, wall = plan_halves(snap, CLUSTERS)
    planner_cpu = totals(records)["cpu"]
    print(f"least Spark work, fresh JVM on local[{CORES}]: {sum(w for w, _ in steps.values()):.1f} s wall, "
          f"{spark_cpu:.1f} s CPU (" + ", ".join(f"{k} {w:.1f} s / {c:.1f} CPU-s" for k, (w, c) in steps.items())
          + ")")
    print(f"the planner over {len(records)} clusters: {planner_cpu:.1f} s CPU ({wall:.1f} s wall, 2 processes)")
    floor = floor_seconds(spark_cpu, planner_cpu, CORES)
    print(f"floor of the fleet benchmark on {CORES} cores: {floor:.1f} s (target {TARGET_SECONDS:.0f} s; "
          f"{'above' if floor > TARGET_SECONDS else 'within'} it before any stage of the pipeline's own)")


if __name__ == "__main__":  # the Spark step: python -m benchmarks.fleet_floor SNAPSHOT MASTER
    print(json.dumps(spark_steps(Path(sys.argv[1]), sys.argv[2])))
