"""Stage 4: plan every cluster that needs it, clusters in parallel (``groupBy(cluster).applyInPandas``).

Each task rebuilds the cluster's state from its rows (``rows.rows_state``), calls the library planner with the
cluster's request, and returns the three files ``flowbalance plan`` writes (plan, rollback, election) as text,
byte for byte, plus the figures of the fleet summary. A cluster that cannot be planned gets a reason instead.
"""
from __future__ import annotations

import json
import time

import pandas as pd
from pyspark.sql import DataFrame

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


def plan_fleet(tables: Tables, clusters: DataFrame | None = None, counter=None) -> DataFrame:
    """PLANNED rows for the clusters in ``clusters`` (a DataFrame with a ``cluster`` column; all when None).
    ``counter`` (a Spark accumulator, optional) counts the clusters planned, for progress."""
    meta = tables.clusters
    if clusters is not None:
        meta = meta.join(clusters.select("cluster").distinct(), "cluster", "left_semi")
    keep = meta.select("cluster")
    long = (as_long(tables.brokers.join(keep, "cluster", "left_semi"), "brokers")
            .unionByName(as_long(tables.replicas.join(keep, "cluster", "left_semi"), "replicas"))
            .unionByName(as_long(tables.sizes.join(keep, "cluster", "left_semi"), "sizes"))
            .unionByName(as_long(meta, "clusters")))
    assert long.columns == LONG_COLUMNS

    def one(pdf: pd.DataFrame) -> pd.DataFrame:
        out = plan_cluster(pdf)
        if counter is not None:
            counter.add(1)
        return out

    return long.groupBy("cluster").applyInPandas(one, PLANNED)


def needs_plan(clusters: list[str], health_clusters: pd.DataFrame, requests: dict[str, dict]) -> list[str]:
    """Clusters to plan: every cluster with a request (anything but an empty one), and every unbalanced one (or
    one without a health row). Decided on the driver from the collected health: no Spark job."""
    balanced = {r["cluster"]: bool(r["balanced"]) for r in health_clusters[["cluster", "balanced"]].to_dict("records")}
    return [c for c in clusters if requests.get(c) or not balanced.get(c, False)]


__all__ = ["PLANNED", "plan_cluster", "plan_fleet", "needs_plan", "LONG"]
