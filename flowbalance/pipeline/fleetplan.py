"""Stage 4: plan every cluster that needs it, clusters in parallel (``mapInArrow`` over tasks of decreasing size,
the largest clusters first).

Each task rebuilds the cluster's state from its partitions, as the health stage gathered them (one row per
partition, its replicas as an array: ``rows.parts_state``; ``plan_cluster`` does the same from a cluster's rows in
the long schema, ``rows.rows_state``, for callers that hold those), calls the library planner with the
cluster's request, and returns the three files ``flowbalance plan`` writes (plan, rollback, election) as text,
byte for byte, the plan's sidecar (``plan.meta.json``: the assignment planned from and the request, so
``flowbalance status`` / ``plan --resume`` can track it), plus the figures of the fleet summary. A cluster that cannot be planned gets a reason instead.
"""
from __future__ import annotations

import json
import time

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from . import rows
from .ingest import HELD_KEY, LONG, Tables

PLANNED = ("cluster string, ok boolean, reason string, strategy string, plan_json string, rollback_json string, "
           "election_json string, meta_json string, empty boolean, moves long, min_moves long, lower_bound long, bound_for string, "
           "proven_optimal boolean, bytes_to_move long, leader_changes long, changed_partitions long, "
           "replica_spread_before double, replica_spread_after double, topic_spread_before double, "
           "topic_spread_after double, leader_spread_before double, leader_spread_after double, "
           "failover_spread_before double, failover_spread_after double, failover_bound double, seconds double, "
           "place_json string")
PLANNED_COLUMNS = [c.strip().split(" ")[0] for c in PLANNED.split(",")]


def plan_cluster(pdf: pd.DataFrame) -> pd.DataFrame:
    """One cluster's rows (long schema) → one row of PLANNED."""
    cluster = str(pdf["cluster"].iloc[0])
    meta = pdf[pdf.kind == "clusters"]
    had_dirs = bool(meta["had_log_dirs"].iloc[0]) if len(meta) else False
    request = meta["request"].iloc[0] if len(meta) else None
    return _planned(cluster, request, lambda: rows.rows_state(
        pdf[pdf.kind == "brokers"], pdf[pdf.kind == "replicas"], pdf[pdf.kind == "sizes"], had_log_dirs=had_dirs,
        dirs=pdf[pdf.kind == "dirs"]))


def _planned(cluster: str, request_json: str | None, build_state) -> pd.DataFrame:
    """One row of PLANNED: the cluster's request (JSON text, as ingest stored it) planned on the state
    ``build_state()`` makes (whose ValueError is the cluster's reason, as a bad request's is)."""
    from ..certificate import certificate_fields
    from ..errors import InputError, PlanningError, RequestError
    from ..planmeta import rows_sha256, sidecar_text
    from ..planner import plan, plan_files
    from ..request import PlanRequest

    out = {c: None for c in PLANNED_COLUMNS}
    out["cluster"] = cluster
    req = json.loads(request_json) if request_json else {}
    t0 = time.perf_counter()
    try:
        held = req.pop(HELD_KEY, None)
        request = PlanRequest.from_json(req, f"fleet.json: clusters.{cluster}")
        state = build_state()
        pinned = _held_rows(state, held["partitions"]) if held is not None else None
        p = plan(state, request, pinned=pinned, notes=held["notes"] if held is not None else ())
        placed = _placed(state, req.get("place"), request, cluster)
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
        meta_json=sidecar_text("plan.json", state, request, files.plan, current=f"{cluster} (fleet snapshot)",
                               plan_sha=rows_sha256(p.after, p.file_rows)),
        empty=p.is_empty, moves=c.moves, min_moves=cert["min_moves"], lower_bound=cert["lower_bound"],
        bound_for=cert["bound_for"], proven_optimal=cert["proven_optimal"], bytes_to_move=c.bytes_moved, leader_changes=c.leader_changes,
        changed_partitions=int(len(c.changed_rows)),
        replica_spread_before=float(mb.replica_spread), replica_spread_after=float(ma.replica_spread),
        topic_spread_before=float(mb.topic.spread), topic_spread_after=float(ma.topic.spread),
        leader_spread_before=float(mb.leader_spread), leader_spread_after=float(ma.leader_spread),
        failover_spread_before=float(mb.failover.worst[1]), failover_spread_after=float(ma.failover.worst[1]),
        failover_bound=None if cert["failover"] is None else float(cert["failover"]["bound"]),
        seconds=round(time.perf_counter() - t0, 4), place_json=placed,
    )
    return pd.DataFrame([out])


def _placed(state, items, request, cluster: str) -> str | None:
    """The cluster's ``place`` request placed on its current state (as ``flowbalance place`` would, with the
    plan request's ``exclude_brokers``): the text of ``CLUSTER/place.json``; None without one."""
    if items is None:
        return None
    from ..errors import RequestError
    from ..place import PlaceRequest, items_from_json, place, place_text

    source = f"fleet.json: clusters.{cluster}.place"
    try:
        return place_text(place(state, PlaceRequest(items_from_json(items, source), request.exclude_brokers)))
    except RequestError as err:
        raise err.under(source) from None


def _held_rows(state, partitions: list) -> "np.ndarray":
    """Mask over ``state``'s rows of the (topic, partition) pairs ingest held in place."""
    import numpy as np

    mask = np.zeros(state.num_partitions, dtype=bool)
    for topic, part in partitions:
        mask[state.find(topic, part)] = True
    return mask


# what a planning task reads, one row per broker, partition, cluster (its request) or JBOD replica (``kind``):
# a partition's replicas come as one array, in position order
PLAN_INPUT = ("kind string, cluster string, topic string, partition int, replicas array<int>, broker int, "
              "rack string, weight double, capacity_bytes long, state string, bytes long, had_log_dirs boolean, "
              "request string, log_dir string")
PLAN_INPUT_TYPES = dict(c.strip().split(" ") for c in PLAN_INPUT.split(","))
PLAN_INPUT_COLUMNS = list(PLAN_INPUT_TYPES)


def plan_fleet(tables: Tables, parts: DataFrame, clusters: DataFrame | None = None, counter=None,
               work: dict[str, float] | None = None) -> DataFrame:
    """PLANNED rows for the clusters in ``clusters`` (a DataFrame with a ``cluster`` column; all when None).
    ``parts``: one row per partition (``cluster, topic, partition``, ``reps`` its replicas in position order as
    structs with a ``broker`` field, ``size`` or null): the health stage's (``health.health_and_parts``), so that
    a task gets each partition once, not a row per replica and one per size. ``counter`` (a Spark accumulator,
    optional) counts the clusters planned, for progress.

    ``work`` estimates each cluster's planning time (``planning_work``; missing: 0). The clusters, the most work
    first, go into tasks of decreasing size (``guided_tasks``), task i into shuffle partition i, and Spark starts
    a stage's tasks in partition order: the largest clusters are planned first and the last tasks are small, so
    the cores finish together (hashing the names into a few partitions, which adaptive execution may merge by
    data size, leaves the cores waiting on whichever large task came last), without a task per cluster (each task
    costs its Python worker about 0.1 s to set up). The number of partitions is set here, so adaptive execution
    keeps it."""
    meta = tables.clusters
    if clusters is not None:
        meta = meta.join(clusters.select("cluster").distinct(), "cluster", "left_semi")
    names = sorted(r.cluster for r in meta.select("cluster").collect())
    spark = meta.sparkSession
    if not names:
        return spark.createDataFrame([], PLANNED)
    work = {c: float((work or {}).get(c) or 0.0) for c in names}
    ranked = sorted(names, key=lambda c: (-work[c], c))
    tasks = guided_tasks([work[c] for c in ranked], spark.sparkContext.defaultParallelism)
    slots = hash_slots(len(tasks))
    task_of = [i for i, size in enumerate(tasks) for _ in range(size)]
    plan_rows = spark.createDataFrame([(c, i, slots[task_of[i]]) for i, c in enumerate(ranked)],
                                      "cluster string, _rank int, _slot int")
    keep = F.broadcast(plan_rows)
    chosen = F.broadcast(plan_rows.select("cluster"))
    partitions = (parts.join(chosen, "cluster", "left_semi")
                  .select("cluster", "topic", "partition", F.col("reps.broker").alias("replicas"),
                          F.col("size").alias("bytes")))
    inputs = (_plan_input(tables.brokers.join(chosen, "cluster", "left_semi"), "brokers")
              .unionByName(_plan_input(partitions, "parts"))
              .unionByName(_plan_input(meta, "clusters")))
    if tables.dirs is not None:
        inputs = inputs.unionByName(_plan_input(tables.dirs.join(chosen, "cluster", "left_semi"), "dirs"))
    inputs = inputs.join(keep, "cluster").repartition(len(tasks), "_slot")
    schema = _arrow_schema(PLANNED)

    def run(batches):
        for out in plan_batches(batches, counter):
            yield pa_batch(out, schema)

    return inputs.mapInArrow(run, PLANNED)


def _plan_input(df: DataFrame, kind: str) -> DataFrame:
    """``df`` in the PLAN_INPUT schema (missing columns null, ``kind`` naming what the rows are)."""
    cols = [F.lit(kind).alias(c) if c == "kind" else
            (F.col(c) if c in df.columns else F.lit(None)).cast(t).alias(c) for c, t in PLAN_INPUT_TYPES.items()]
    return df.select(*cols)


def pa_batch(out: pd.DataFrame, schema):
    """A PLANNED row (pandas) as the Arrow batch ``mapInArrow`` returns."""
    import pyarrow as pa

    return pa.RecordBatch.from_pandas(out, schema=schema, preserve_index=False)


def plan_batches(batches, counter=None):
    """A planning task: its Arrow batches (PLAN_INPUT rows and ``_rank``) → a PLANNED row (pandas) per cluster,
    in ``_rank`` order. The rows are put in ``_rank`` order once (a stable sort: each cluster's rows stay in the
    order they came) and each cluster is a slice of them, read column by column from Arrow."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    batches = [b for b in batches if b.num_rows]
    if not batches:
        return
    table = pa.Table.from_batches(batches)
    table = table.take(pc.sort_indices(table, [("_rank", "ascending")]))
    rank = table.column("_rank").to_numpy()
    cut = np.flatnonzero(np.r_[True, rank[1:] != rank[:-1], True])
    for a, z in zip(cut[:-1].tolist(), cut[1:].tolist()):
        yield arrow_cluster(table.slice(a, z - a))
        if counter is not None:
            counter.add(1)


def arrow_cluster(table) -> pd.DataFrame:
    """One cluster's PLAN_INPUT rows (an Arrow table) planned: one row of PLANNED."""
    import pyarrow.compute as pc

    cluster = table.column("cluster")[0].as_py()
    kind = table.column("kind")

    def of(k: str, cols: list[str]):
        return table.filter(pc.equal(kind, k)).select(cols)

    meta = of("clusters", ["had_log_dirs", "request"]).to_pylist()
    had_dirs = bool(meta[0]["had_log_dirs"]) if meta else False

    def state():
        parts = of("parts", ["topic", "partition", "replicas", "bytes"])
        reps = parts.column("replicas").combine_chunks()
        dirs = of("dirs", ["topic", "partition", "broker", "log_dir", "bytes"]).to_pandas()
        return rows.parts_state(
            of("brokers", ["broker", "rack", "weight", "capacity_bytes", "state"]).to_pandas(),
            parts.column("topic").to_numpy(zero_copy_only=False), parts.column("partition").to_numpy(),
            reps.offsets.to_numpy(), reps.values.to_numpy(),
            parts.column("bytes").fill_null(-1).to_numpy(), had_log_dirs=had_dirs, dirs=dirs)

    return _planned(cluster, meta[0]["request"] if meta else None, state)


def _arrow_schema(ddl: str):
    """The Arrow schema of a Spark DDL schema (what ``mapInArrow`` must return)."""
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import _parse_datatype_string

    return to_arrow_schema(_parse_datatype_string(ddl))


def guided_tasks(work: list[float], cores: int) -> list[int]:
    """How many of the clusters (``work``: their estimates, largest first) each task takes, in order: a task
    closes once it holds a 2 x ``cores``-th of the work not yet in a task (guided self-scheduling), so tasks shrink
    from about a quarter of the whole (on 2 cores) to single small clusters at the end; with no estimate (all 0),
    one cluster per task."""
    remaining = sum(work)
    sizes, size, held = [], 0, 0.0
    for w in work:
        size, held = size + 1, held + w
        if held >= remaining / (2 * max(cores, 1)):
            sizes.append(size)
            remaining -= held
            size, held = 0, 0.0
    if size:
        sizes.append(size)
    return sizes


def planning_work(health_clusters: pd.DataFrame, clusters: list[str]) -> dict[str, float]:
    """Each cluster's planning work, estimated from the health table as replicas times live brokers (the failover
    stage, most of a plan's time, grows with both; correlation 0.74 with the measured time on the benchmark's 200
    clusters); 0 without a health row."""
    h = {r["cluster"]: r for r in health_clusters.to_dict("records")}
    return {c: float(h[c].get("replicas") or 0) * float(h[c].get("live_brokers") or 0) if c in h else 0.0
            for c in clusters}


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


__all__ = ["PLANNED", "plan_cluster", "plan_fleet", "planning_work", "needs_plan", "LONG"]
