"""Stage 4: plan every cluster that needs it, clusters in parallel (one Spark task per cluster, the largest first,
``mapInPandas``).

Each task rebuilds the cluster's state from its rows (``rows.rows_state``), calls the library planner with the
cluster's request, and returns the three files ``flowbalance plan`` writes (plan, rollback, election) as text,
byte for byte, plus the figures of the fleet summary. A cluster that cannot be planned gets a reason instead.
"""
from __future__ import annotations

import json
import time

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from . import rows
from .ingest import HELD_KEY, LONG, LONG_COLUMNS, Tables, as_long

PLANNED = ("cluster string, ok boolean, reason string, strategy string, plan_json string, rollback_json string, "
           "election_json string, empty boolean, moves long, min_moves long, lower_bound long, bound_for string, "
           "proven_optimal boolean, bytes_to_move long, leader_changes long, changed_partitions long, "
           "replica_spread_before double, replica_spread_after double, topic_spread_before double, "
           "topic_spread_after double, leader_spread_before double, leader_spread_after double, "
           "failover_spread_before double, failover_spread_after double, failover_bound double, seconds double")
PLANNED_COLUMNS = [c.strip().split(" ")[0] for c in PLANNED.split(",")]


def plan_cluster(pdf: pd.DataFrame) -> pd.DataFrame:
    """One cluster's rows (long schema) → one row of PLANNED."""
    from ..certificate import certificate_fields
    from ..errors import InputError, PlanningError, RequestError
    from ..planner import plan, plan_files
    from ..request import PlanRequest

    cluster = str(pdf["cluster"].iloc[0])
    out = {c: None for c in PLANNED_COLUMNS}
    out["cluster"] = cluster
    meta = pdf[pdf.kind == "clusters"]
    had_dirs = bool(meta["had_log_dirs"].iloc[0]) if len(meta) else False
    req = json.loads(meta["request"].iloc[0]) if len(meta) and meta["request"].iloc[0] else {}
    t0 = time.perf_counter()
    try:
        held = req.pop(HELD_KEY, None)
        request = PlanRequest.from_json(req, f"fleet.json: clusters.{cluster}")
        state = rows.rows_state(pdf[pdf.kind == "brokers"], pdf[pdf.kind == "replicas"], pdf[pdf.kind == "sizes"],
                                had_log_dirs=had_dirs)
        pinned = _held_rows(state, held["partitions"]) if held is not None else None
        p = plan(state, request, pinned=pinned, notes=held["notes"] if held is not None else ())
    except RequestError as err:  # a field that does not fit this cluster (an unknown broker, topic, ...)
        out.update(ok=False, reason=err.under(f"fleet.json: clusters.{cluster}").line())
        return pd.DataFrame([out])
    except InputError as err:
        out.update(ok=False, reason=err.line())
        return pd.DataFrame([out])
    except (PlanningError, ValueError) as err:
        out.update(ok=False, reason=str(err))
        return pd.DataFrame([out])
    c, mb, ma = p.changes, p.metrics_before, p.metrics_after
    files, cert = plan_files(p), certificate_fields(p.certificate)
    out.update(
        ok=True, reason=None, strategy=p.strategy,
        plan_json=files.plan, rollback_json=files.rollback, election_json=files.election,
        empty=p.is_empty, moves=c.moves, min_moves=cert["min_moves"], lower_bound=cert["lower_bound"],
        bound_for=cert["bound_for"], proven_optimal=cert["proven_optimal"], bytes_to_move=c.bytes_moved, leader_changes=c.leader_changes,
        changed_partitions=int(len(c.changed_rows)),
        replica_spread_before=float(mb.replica_spread), replica_spread_after=float(ma.replica_spread),
        topic_spread_before=float(mb.topic.spread), topic_spread_after=float(ma.topic.spread),
        leader_spread_before=float(mb.leader_spread), leader_spread_after=float(ma.leader_spread),
        failover_spread_before=float(mb.failover.worst[1]), failover_spread_after=float(ma.failover.worst[1]),
        failover_bound=None if cert["failover"] is None else float(cert["failover"]["bound"]),
        seconds=round(time.perf_counter() - t0, 4),
    )
    return pd.DataFrame([out])


def _held_rows(state, partitions: list) -> "np.ndarray":
    """Mask over ``state``'s rows of the (topic, partition) pairs ingest held in place."""
    import numpy as np

    mask = np.zeros(state.num_partitions, dtype=bool)
    for topic, part in partitions:
        mask[state.find(topic, part)] = True
    return mask


def plan_fleet(tables: Tables, clusters: DataFrame | None = None, counter=None,
               order: list[str] | None = None) -> DataFrame:
    """PLANNED rows for the clusters in ``clusters`` (a DataFrame with a ``cluster`` column; all when None).
    ``counter`` (a Spark accumulator, optional) counts the clusters planned, for progress.

    ``order`` lists the clusters from the most to the least work (``planning_order``; sorted names when None):
    the i-th goes to shuffle partition i (of at most ``MAX_TASKS``, round robin beyond), and Spark starts the tasks
    of a stage in partition order, so the largest clusters are planned first and the smallest fill the gaps at the
    end (a hash of the name would leave the 2 cores waiting on whichever large cluster came last). The number of
    partitions is set here, so adaptive execution does not merge them into fewer tasks than clusters."""
    meta = tables.clusters
    if clusters is not None:
        meta = meta.join(clusters.select("cluster").distinct(), "cluster", "left_semi")
    names = sorted(r.cluster for r in meta.select("cluster").collect())
    spark = meta.sparkSession
    if not names:
        return spark.createDataFrame([], PLANNED)
    ranked = [c for c in (order or []) if c in set(names)]
    ranked += [c for c in names if c not in set(ranked)]
    n = min(len(ranked), MAX_TASKS)
    slots = hash_slots(n)
    plan_rows = spark.createDataFrame([(c, i, slots[i % n]) for i, c in enumerate(ranked)],
                                      "cluster string, _rank int, _slot int")
    keep = F.broadcast(plan_rows)
    long = (as_long(tables.brokers.join(keep.select("cluster"), "cluster", "left_semi"), "brokers")
            .unionByName(as_long(tables.replicas.join(keep.select("cluster"), "cluster", "left_semi"), "replicas"))
            .unionByName(as_long(tables.sizes.join(keep.select("cluster"), "cluster", "left_semi"), "sizes"))
            .unionByName(as_long(meta, "clusters")))
    assert long.columns == LONG_COLUMNS
    long = long.join(keep, "cluster").repartition(n, "_slot")

    def run(batches):
        parts = [b for b in batches if len(b)]
        if not parts:
            return
        pdf = pd.concat(parts, ignore_index=True)
        for _, group in sorted(pdf.groupby("cluster", sort=False), key=lambda kv: int(kv[1]["_rank"].iloc[0])):
            out = plan_cluster(group[LONG_COLUMNS].reset_index(drop=True))
            if counter is not None:
                counter.add(1)
            yield out

    return long.mapInPandas(run, PLANNED)


MAX_TASKS = 1024  # at most this many planning tasks (one cluster each below it)


def planning_order(health_clusters: pd.DataFrame, clusters: list[str]) -> list[str]:
    """``clusters`` from the most planning work to the least, estimated from the health table as replicas times
    live brokers (the failover stage, most of a plan's time, grows with both); ties by name."""
    h = {r["cluster"]: r for r in health_clusters.to_dict("records")}

    def work(c: str) -> float:
        r = h.get(c)
        if r is None:
            return 0.0
        return float(r.get("replicas") or 0) * float(r.get("live_brokers") or 0)

    return sorted(clusters, key=lambda c: (-work(c), c))


def hash_slots(n: int) -> list[int]:
    """For each shuffle partition p of ``n``, the smallest int v >= 0 that Spark's hash partitioning
    (``pmod(murmur3(v, seed 42), n)``, as ``repartition(n, col)`` does) sends to partition p."""
    slots: dict[int, int] = {}
    v = 0
    while len(slots) < n:
        slots.setdefault(_murmur3_int(v) % n, v)
        v += 1
    return [slots[p] for p in range(n)]


def _murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's ``hash`` of an int (Murmur3_x86_32.hashInt), as a signed 32-bit integer."""
    m = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    k1 = rotl((value & m) * 0xCC9E2D51 & m, 15) * 0x1B873593 & m
    h1 = (rotl(seed ^ k1, 13) * 5 + 0xE6546B64) & m
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & m
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & m
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def needs_plan(clusters: list[str], health_clusters: pd.DataFrame, requests: dict[str, dict]) -> list[str]:
    """Clusters to plan: every cluster with a request (anything but an empty one), and every unbalanced one (or
    one without a health row). Decided on the driver from the collected health: no Spark job."""
    balanced = {r["cluster"]: bool(r["balanced"]) for r in health_clusters[["cluster", "balanced"]].to_dict("records")}
    return [c for c in clusters if requests.get(c) or not balanced.get(c, False)]


__all__ = ["PLANNED", "plan_cluster", "plan_fleet", "planning_order", "needs_plan", "LONG"]
