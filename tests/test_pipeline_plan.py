"""The planning stage's schedule: the largest clusters first, one Spark task each (on real Spark)."""
from __future__ import annotations

import pandas as pd
from pyspark.sql import functions as F

from flowbalance.pipeline.fleetplan import _murmur3_int, hash_slots, planning_order


def test_murmur3_is_sparks_hash_of_an_int(spark):
    values = [0, 1, -1, 7, 42, 12345, 2**31 - 1, -(2**31), 99991, -123456789]
    got = spark.createDataFrame([(v,) for v in values], "v int").select("v", F.hash("v").alias("h")).collect()
    assert {r.v: r.h for r in got} == {v: _murmur3_int(v) for v in values}


def test_hash_slots_send_the_ith_value_to_partition_i(spark):
    for n in (1, 2, 7, 64, 200):
        slots = hash_slots(n)
        assert len(set(slots)) == n
        df = spark.createDataFrame(list(enumerate(slots)), "i int, v int").repartition(n, "v")
        assert all(r.i == r.p for r in df.select("i", F.spark_partition_id().alias("p")).collect())


def test_planning_order_is_most_work_first_then_by_name():
    health = pd.DataFrame({"cluster": ["a", "b", "c", "d"], "replicas": [100, 300, 100, 50],
                           "live_brokers": [6, 3, 6, 20]})
    assert planning_order(health, ["a", "b", "c", "d", "e"]) == ["d", "b", "a", "c", "e"]
