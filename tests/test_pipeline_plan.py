"""The planning stage's schedule: the largest clusters first, one Spark task each (on real Spark)."""
from __future__ import annotations

import pandas as pd
from pyspark.sql import functions as F

from flowbalance.pipeline.fleetplan import _murmur3_int, guided_tasks, hash_slots, planning_work


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


def test_planning_work_is_replicas_times_live_brokers():
    health = pd.DataFrame({"cluster": ["a", "b"], "replicas": [100, 300], "live_brokers": [6, 3]})
    assert planning_work(health, ["a", "b", "c"]) == {"a": 600.0, "b": 900.0, "c": 0.0}


def test_guided_tasks_shrink_to_single_clusters_and_cover_all():
    work = sorted((float(x) for x in range(1, 201)), reverse=True)
    sizes = guided_tasks(work, 2)
    assert sum(sizes) == 200 and sizes[-1] == 1
    held, start = [], 0
    for n in sizes:
        held.append(sum(work[start:start + n]))
        start += n
    assert held[0] <= sum(work) / 4 + work[0] and all(a >= b for a, b in zip(held, held[1:]))
    assert len(sizes) < 40
    assert guided_tasks([0.0] * 5, 2) == [1] * 5 and guided_tasks([5.0], 8) == [1] and guided_tasks([], 2) == []
