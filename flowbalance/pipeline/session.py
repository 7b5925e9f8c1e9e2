"""Start Spark: ``local[*]`` by default (nothing to set up beyond the ``spark`` extra and Java 17), or any master
URL (``spark://host:7077``, ``yarn``, ``k8s://...``). Executors run this same Python (PYSPARK_PYTHON).

Quiet by default: log4j at ``error`` from the JVM's first line (``log4j2.properties`` through
``spark.driver.extraJavaOptions``), and with ``log_file`` the JVM's stdout and stderr go to that file for its whole
life, so nothing of Java or Spark (the JVM's own warnings, log4j's lines, a failed task's stack trace) reaches the
terminal; the command prints its own messages.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
DEFAULT_DRIVER_MEMORY = "4g"  # Spark's 1g is too little to collect the health of a 200-cluster fleet
LOG_CONFIG = os.path.join(os.path.dirname(__file__), "log4j2.properties")
# the driver JVM's collector: the throughput one. G1 (Java 17's default) runs concurrent threads and costlier write
# barriers; on 2 cores its Spark stages of the fleet benchmark took 13.5 / 22.1 / 31.6 s (weights, ingest, health)
# against 12.0 / 19.2 / 23.8 s with this (docs/performance.md). Batch jobs do not mind its longer pauses.
# GCTimeRatio 9 (up to 10 % of the time in collections, against its default 1 %): the collector then grows the heap
# less eagerly; the fleet benchmark's peak memory 4.85-4.93 -> 4.42-4.57 GiB, no slower (docs/performance.md).
DRIVER_GC = "-XX:+UseParallelGC -XX:GCTimeRatio=9"


def start(master: str | None = None, *, app: str = "flowbalance-fleet", shuffle_partitions: int = 8,
          conf: dict[str, str] | None = None, quiet: bool = True, log_file: str | None = None) -> SparkSession:
    """A SparkSession for the fleet pipeline (reuses a running one with the same master). With ``log_file``, a JVM
    started here writes its stdout and stderr to that file (appended) instead of the terminal."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    b = (SparkSession.builder.appName(app)
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
         # the fleet's row tables are spread by (cluster, topic) (``ingest``): a join on (cluster, topic,
         # partition) of two such tables then needs no shuffle of either
         .config("spark.sql.requireAllClusterKeysForCoPartition", "false")
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.executorEnv.PYSPARK_PYTHON", os.environ["PYSPARK_PYTHON"]))
    if master:
        b = b.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ and "spark.master" not in (conf or {}):
        b = b.master(DEFAULT_MASTER)  # under spark-submit (gateway already up) its --master applies
    conf = dict(conf or {})
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # under spark-submit its --driver-memory and options apply
        conf.setdefault("spark.driver.memory", DEFAULT_DRIVER_MEMORY)
        conf.setdefault("spark.driver.extraJavaOptions", driver_java_options(quiet))
    for k, v in conf.items():
        b = b.config(k, v)
    if log_file is not None and _launches_jvm():
        with _output_to(log_file):
            spark = b.getOrCreate()
    else:
        spark = b.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


def driver_java_options(quiet: bool) -> str:
    """The driver JVM's options when this process starts it: ``DRIVER_GC``, and when ``quiet`` log4j at errors
    only from the JVM's first line on (``setLogLevel`` comes too late for start-up warnings)."""
    return " ".join(([f"-Dlog4j2.configurationFile=file:{LOG_CONFIG}"] if quiet else []) + [DRIVER_GC])


def _launches_jvm() -> bool:
    """Whether getOrCreate would start a JVM (none running in this process, not under spark-submit)."""
    from pyspark import SparkContext

    return "PYSPARK_GATEWAY_PORT" not in os.environ and SparkContext._gateway is None


@contextmanager
def _output_to(path: str):
    """File descriptors 1 and 2 point at ``path`` meanwhile: a child started now (the JVM) keeps them for its
    whole life, this process gets its own back at the end."""
    sys.stdout.flush()
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (*saved, fd):
            os.close(f)
