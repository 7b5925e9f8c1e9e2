"""Start Spark: ``local[*]`` by default (nothing to set up beyond the ``spark`` extra and Java 17), or any master
URL (``spark://host:7077``, ``yarn``, ``k8s://...``). Executors run this same Python (PYSPARK_PYTHON)."""
from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
DEFAULT_DRIVER_MEMORY = "4g"
LOG_CONFIG = os.path.join(os.path.dirname(__file__), "log4j2.properties")  # Spark's 1g is too little to collect the health of a 200-cluster fleet


def start(master: str | None = None, *, app: str = "flowbalance-fleet", shuffle_partitions: int = 8,
          conf: dict[str, str] | None = None, quiet: bool = True) -> SparkSession:
    """A SparkSession for the fleet pipeline (reuses a running one with the same master)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    b = (SparkSession.builder.appName(app)
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
         .config("spark.sql.execution.arrow.pyspark.enabled", "true")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.executorEnv.PYSPARK_PYTHON", os.environ["PYSPARK_PYTHON"]))
    if master:
        b = b.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ and "spark.master" not in (conf or {}):
        b = b.master(DEFAULT_MASTER)  # under spark-submit (gateway already up) its --master applies
    conf = dict(conf or {})
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # under spark-submit its --driver-memory applies
        conf.setdefault("spark.driver.memory", DEFAULT_DRIVER_MEMORY)
        if quiet:  # errors only, from the JVM's first line on (setLogLevel comes too late for start-up warnings)
            conf.setdefault("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{LOG_CONFIG}")
    for k, v in conf.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    return spark
