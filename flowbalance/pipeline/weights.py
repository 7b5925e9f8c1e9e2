"""Stage 2: metric history → one weight per partition, usable as its size by the planner.

The weight of a partition is a quantile (default the p95) of one metric column (default ``bytes_in``) over the
last ``window_days`` of that cluster's history (counted back from its newest sample), computed with
``percentile_approx`` so it scales to tens of millions of rows. ``as_sizes`` turns weights into the sizes table
(whole bytes), filling partitions that have no measured size, or replacing every size with ``replace=True``.
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

WEIGHTS = "cluster string, topic string, partition int, weight double, samples long"


def partition_weights(metrics: DataFrame, *, column: str = "bytes_in", quantile: float = 0.95,
                      window_days: float = 7.0, accuracy: int = 10_000) -> DataFrame:
    """(cluster, topic, partition, weight, samples) from the metric history."""
    if column not in ("bytes_in", "bytes_out"):
        raise ValueError("column must be bytes_in or bytes_out")
    if not 0.0 <= quantile <= 1.0:
        raise ValueError("quantile must be within 0 .. 1")
    # each cluster's newest sample: one small aggregate, joined back to the rows (a window over the cluster would
    # shuffle and sort every row of the history by cluster first)
    newest = metrics.groupBy("cluster").agg(F.max("timestamp").alias("_newest"))
    recent = (metrics.join(F.broadcast(newest), "cluster")
              .where(F.col("timestamp") >= F.col("_newest") - F.expr(f"make_dt_interval(0, 0, 0, {window_days * 86400})"))
              .where(F.col(column).isNotNull()))
    return (recent.groupBy("cluster", "topic", "partition")
            .agg(F.percentile_approx(column, quantile, accuracy).cast("double").alias("weight"),
                 F.count(F.lit(1)).alias("samples")))


def as_sizes(sizes: DataFrame, weights: DataFrame, *, replace: bool = False) -> DataFrame:
    """The sizes table with weights in place of missing sizes (or of every size)."""
    w = weights.select("cluster", "topic", "partition", F.round("weight").cast("long").alias("_w"))
    if replace:
        return w.withColumnRenamed("_w", "bytes")
    both = sizes.join(w, ["cluster", "topic", "partition"], "full_outer")
    return both.select("cluster", "topic", "partition", F.coalesce("bytes", "_w").alias("bytes"))
