"""Stage 1: read a fleet snapshot into normalized tables; a bad cluster becomes an error row, the others go on.

Two snapshot layouts (a local folder or any URI Spark can read):

* **dumps**: one folder per cluster with the files ``flowbalance plan`` reads (the current assignment as
  ``assignment.json``, ``describe.txt`` or ``generate.txt``; optionally ``brokers.csv``/``brokers.json`` and
  ``logdirs.txt``), plus ``fleet.json`` at the top saying per cluster what to do;
* **tables**: ``brokers``, ``replicas``, ``sizes`` and optionally ``metrics`` as Parquet (``NAME.parquet`` or a
  folder ``NAME/``) or CSV (``NAME.csv``) with the columns of ``rows.py``, and an optional ``fleet.json``.

Files are read through Spark (``binaryFile``) and parsed inside Spark tasks, one cluster per group, with the same
readers as the CLI.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..errors import InputError
from . import names, rows, tables

CURRENT_NAMES = ("assignment.json", "describe.txt", "generate.txt")
BROKER_NAMES = ("brokers.csv", "brokers.json")
SIZE_NAMES = ("logdirs.txt", "logdirs.json", "sizes.csv", "sizes.json")
TABLES = ("brokers", "replicas", "sizes", "metrics")

# one long schema for every table a parse task emits; ``kind`` says which table a row belongs to
LONG = ("kind string, cluster string, topic string, partition int, position int, broker int, rack string, "
        "weight double, capacity_bytes long, state string, bytes long, had_log_dirs boolean, request string, "
        "stage string, reason string, log_dir string")
LONG_COLUMNS = [c.strip().split(" ")[0] for c in LONG.split(",")]


@dataclass
class Tables:
    """The normalized fleet: one DataFrame per table (``metrics`` may be None)."""

    brokers: DataFrame
    replicas: DataFrame
    sizes: DataFrame
    clusters: DataFrame
    errors: DataFrame
    metrics: DataFrame | None = None
    dirs: DataFrame | None = None  # each replica's log directory (JBOD clusters of a dump snapshot), or None
    cached: list[DataFrame] = field(default_factory=list)  # cached here: unpersist when done (``release``)
    # of those, the ones only the replica and size rows come from (planning reads the health stage's partitions)
    rows_only: list[DataFrame] = field(default_factory=list)

    def release(self) -> None:
        """Drop the cached rows (after the last stage)."""
        for df in self.cached:
            df.unpersist()

    def release_rows(self) -> None:
        """Drop the cached replica and size rows (once the health stage has gathered them into partitions)."""
        for df in self.rows_only:
            df.unpersist()


def read_fleet_file(spark: SparkSession, root: str) -> dict[str, dict]:
    """``fleet.json`` at the snapshot root: {"clusters": {name: request}}; {} when there is none."""
    path = root.rstrip("/") + "/fleet.json"
    try:
        got = spark.read.format("binaryFile").load(path).select("content").collect()
    except Exception as err:  # noqa: BLE001 - Spark raises AnalysisException (a Py4J wrapper) for a missing path
        if "PATH_NOT_FOUND" in str(err) or "does not exist" in str(err):
            return {}
        raise
    if not got:
        return {}
    try:
        doc = json.loads(bytes(got[0].content).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise InputError(path, "", f"malformed JSON: {err}") from None
    clusters = doc.get("clusters") if isinstance(doc, dict) else None
    if not isinstance(clusters, dict) or not all(isinstance(v, dict) for v in clusters.values()):
        raise InputError(path, "clusters", "expected {\"clusters\": {\"name\": {request}, ...}}")
    return clusters


def _long(kind: str, df: pd.DataFrame) -> pd.DataFrame:
    out = pd.DataFrame({c: pd.Series([None] * len(df), dtype=object) for c in LONG_COLUMNS})
    for c in df.columns:
        out[c] = df[c].to_numpy(dtype=object) if len(df) else df[c]
    out["kind"] = kind
    return out


def _error(cluster: str, stage: str, reason: str) -> pd.DataFrame:
    return _long("error", pd.DataFrame({"cluster": [cluster], "stage": [stage], "reason": [reason]}))


def _pick(files: dict[str, bytes], wanted: str | None, names: tuple[str, ...], cluster: str, role: str):
    if wanted is not None:
        if wanted not in files:
            raise InputError(f"{cluster}/{wanted}", "", f"the fleet file names this {role} file, but it is missing")
        return wanted
    for n in names:
        if n in files:
            return n
    return None


def parse_cluster(pdf: pd.DataFrame, requests: dict[str, dict]) -> pd.DataFrame:
    """One cluster's files (name, content) → its rows in the long schema, or one error row."""
    from ..load import load_texts, mark_removed
    from ..status import plan_input
    from ..request import PlanRequest

    cluster = str(pdf["cluster"].iloc[0])
    bad_name = names.name_error(cluster, "snapshot folder")
    if bad_name is not None:  # checked first: a bad name must never reach a path
        return _error(cluster, "ingest", bad_name)
    files = {str(n): bytes(c) for n, c in zip(pdf["name"], pdf["content"])}
    req = requests.get(cluster, {})
    try:
        request = PlanRequest.from_json(req, f"fleet.json: clusters.{cluster}")
        cur = _pick(files, req.get("current"), CURRENT_NAMES, cluster, "current")
        if cur is None:
            raise InputError(cluster, "", "no current assignment (assignment.json, describe.txt or generate.txt)")
        brk = _pick(files, req.get("brokers"), BROKER_NAMES, cluster, "broker")
        siz = _pick(files, req.get("sizes"), SIZE_NAMES, cluster, "sizes")

        def text(name):
            if name is None:
                return None
            try:
                return (f"{cluster}/{name}", files[name].decode("utf-8-sig"))
            except UnicodeDecodeError:
                raise InputError(f"{cluster}/{name}", "", "not UTF-8 text") from None

        loaded = load_texts(text(cur), brokers=text(brk), sizes=text(siz), fmt=req.get("format"),
                            disable_rack_aware=bool(req.get("disable_rack_aware", False)))
        given = plan_input(loaded.state, loaded.status, f"{cluster}/{cur}",
                           from_target=bool(req.get("from_target", False)),
                           move_unhealthy=bool(req.get("move_unhealthy", False)))
        state = given.state
        if request.remove:
            state = mark_removed(state, list(request.remove), f"fleet.json: clusters.{cluster}.remove")
    except InputError as err:
        return _error(cluster, "ingest", err.line())
    except Exception as err:  # noqa: BLE001 - a bad cluster must not stop the fleet
        return _error(cluster, "ingest", f"{type(err).__name__}: {err}")
    t = rows.state_rows(cluster, state)
    meta = pd.DataFrame({"cluster": [cluster], "had_log_dirs": [bool(state.had_log_dirs)],
                         "request": [json.dumps(with_held(req, state, given), sort_keys=True)]})
    return pd.concat([_long("brokers", t["brokers"]), _long("replicas", t["replicas"]), _long("sizes", t["sizes"]),
                      _long("dirs", rows.dir_rows(cluster, state)), _long("clusters", meta)], ignore_index=True)


HELD_KEY = "_held"  # in a cluster's stored request: partitions that stay in place, and the notes that say why


def with_held(req: dict, state, given) -> dict:
    """The request as stored in the clusters table, with the partitions ``plan_input`` holds in place
    ([[topic, partition], ...]) and its notes under ``HELD_KEY`` (the planning task gives them to ``plan``)."""
    if not given.pinned.any() and not given.notes:
        return req
    held = [[state.topics[state.topic[r]], int(state.partition[r])] for r in given.pinned.nonzero()[0].tolist()]
    return {**req, HELD_KEY: {"partitions": held, "notes": list(given.notes)}}


def _split(long: DataFrame, metrics: DataFrame | None = None) -> Tables:
    long = long.cache()

    def pick(kind: str, schema: str) -> DataFrame:
        cols = [c.strip().split(" ")[0] for c in schema.split(",")]
        return long.where(F.col("kind") == kind).select(*cols)

    return Tables(brokers=pick("brokers", rows.BROKERS), replicas=pick("replicas", rows.REPLICAS),
                  sizes=pick("sizes", rows.SIZES), clusters=pick("clusters", rows.CLUSTERS),
                  errors=pick("error", rows.ERRORS), metrics=metrics, cached=[long], dirs=pick("dirs", rows.DIRS))


def ingest_dumps(spark: SparkSession, root: str, requests: dict[str, dict], counter=None) -> Tables:
    """Every cluster folder under ``root``, parsed in parallel (one Spark group per cluster). ``counter`` (a Spark
    accumulator, optional) counts the clusters parsed, for progress. No cluster folder is an InputError."""
    base = root.rstrip("/")
    files = (spark.read.format("binaryFile").option("recursiveFileLookup", "true").load(base)
             .select("path", "content"))
    # the cluster is the folder right under the root, the name the file's name inside it
    rel = F.regexp_replace(F.col("path"), r"^.*?" + _escape(base.split("://")[-1].rstrip("/")) + "/", "")
    files = (files.withColumn("rel", rel)
             .withColumn("cluster", F.split("rel", "/").getItem(0))
             .withColumn("name", F.element_at(F.split("rel", "/"), -1))
             .where(F.size(F.split("rel", "/")) == 2)
             .select("cluster", "name", "content"))
    reqs = dict(requests)

    def parse(pdf: pd.DataFrame) -> pd.DataFrame:
        out = parse_cluster(pdf, reqs)
        if counter is not None:
            counter.add(1)
        return out

    long = files.groupBy("cluster").applyInPandas(parse, LONG)
    seen = {r.cluster for r in files.select("cluster").distinct().collect()}
    if not seen:
        raise InputError(root, "", "no clusters found: no folder with files under the snapshot")
    missing = sorted(set(reqs) - seen)
    if missing:
        extra = spark.createDataFrame(pd.concat([_missing(c) for c in missing]), LONG)
        long = long.unionByName(extra)
    return _split(long)


def _missing(cluster: str) -> pd.DataFrame:
    """The error row of a fleet.json key without a folder (its name checked first, as every name is)."""
    reason = names.name_error(cluster, "fleet.json")
    return _error(cluster, "ingest", reason or f"{cluster}: listed in fleet.json but there is no folder with its files")


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def _validate(pdf: pd.DataFrame) -> pd.DataFrame:
    """Tables input: a cluster whose rows do not make a valid state becomes an error row (schema ERRORS), with
    ``rows.rows_state``'s reason. Run on the clusters ``_suspects`` cannot clear only."""
    cluster = str(pdf["cluster"].iloc[0])
    try:
        rows.rows_state(pdf[pdf.kind == "brokers"], pdf[pdf.kind == "replicas"], pdf[pdf.kind == "sizes"])
    except Exception as err:  # noqa: BLE001
        return pd.DataFrame({"cluster": [cluster], "stage": ["ingest"], "reason": [f"{cluster}: {err}"]})
    return pd.DataFrame({"cluster": pd.Series([], dtype=str), "stage": pd.Series([], dtype=str),
                         "reason": pd.Series([], dtype=str)})


def _suspects(brokers: DataFrame, replicas: DataFrame, sizes: DataFrame) -> list[str]:
    """The clusters whose rows might not make a valid state (``rows.rows_state`` might raise), found with Spark
    SQL; every other cluster certainly makes one, so only these need ``_validate`` in Python (usually none). The
    rows are typed and their values checked already (ids 0 or more, weights positive, states live or removed).
    A cluster is cleared when it has brokers and replicas, no broker twice in the broker table, racks on all of
    its brokers or on none, every partition's positions exactly 0 .. k-1 (k below 63: one bit each), no broker
    twice in a partition, and no replica on a broker missing from the broker table."""
    # per (partition, broker), then per partition: grouped by (cluster, topic) and more, as the rows are spread
    # (no shuffle until the clusters' flags)
    known = brokers.select("cluster", "broker", F.lit(1).alias("_known"))
    per_broker = (replicas.join(F.broadcast(known), ["cluster", "broker"], "left")
                  .groupBy("cluster", "topic", "partition", "broker")
                  .agg(F.count(F.lit(1)).alias("n"), F.max("position").alias("top"),
                       F.bit_or(F.expr("shiftleft(1L, position)")).alias("mask"), F.count("_known").alias("known")))
    per_part = (per_broker.groupBy("cluster", "topic", "partition")
                .agg(F.sum("n").alias("k"), F.max("top").alias("top"), F.max("n").alias("most"),
                     F.bit_or("mask").alias("mask"), F.sum("known").alias("known"))
                .select("cluster", ((F.col("k") > 62) | (F.col("top") >= 62) | (F.col("most") > 1)
                                    | (F.col("known") < F.col("k"))
                                    | (F.col("mask") != F.expr("shiftleft(1L, CAST(k AS INT)) - 1"))).alias("bad")))
    reps = per_part.groupBy("cluster").agg(F.bool_or("bad").alias("bad_replicas"))
    bk = brokers.groupBy("cluster").agg(
        ((F.count(F.lit(1)) == F.countDistinct("broker"))
         & ((F.count("rack") == 0) | (F.count("rack") == F.count(F.lit(1))))).alias("brokers_ok"))
    every = (reps.join(bk, "cluster", "full")
             .join(sizes.select("cluster").distinct(), "cluster", "full"))
    suspects = every.where(F.col("bad_replicas").isNull() | F.col("bad_replicas")
                           | F.col("brokers_ok").isNull() | ~F.col("brokers_ok")).select("cluster")
    return sorted(r.cluster for r in suspects.collect())


def _table_names(root: str, raw: list[tables.RawTable], requests: dict[str, dict]) -> tuple[list[str], dict[str, str]]:
    """The clusters in the brokers and replicas tables (InputError when there are none), and a reason for each
    cluster whose name (in a table or a fleet.json key) is not usable."""
    bad: dict[str, str] = {}
    found: set[str] = set()
    for t in raw:
        col = F.coalesce(F.col("cluster").cast("string"), F.lit("")).alias("cluster")
        for r in t.df.select(col).distinct().collect():
            found.add(r.cluster)
            reason = names.name_error(r.cluster, t.label)
            if reason is not None:
                bad.setdefault(r.cluster, reason)
    if not found:
        raise InputError(root, "", "no clusters found: the brokers and replicas tables have no rows")
    for c in requests:
        reason = names.name_error(c, "fleet.json")
        if reason is not None:
            bad.setdefault(c, reason)
    return sorted(found), bad


def ingest_tables(spark: SparkSession, root: str, fmt: str, requests: dict[str, dict]) -> Tables:
    """Parquet or CSV tables; clusters with a bad name, a bad value or invalid rows go to the errors table and
    out of the others. A table that cannot be used at all is an InputError."""
    raw_brokers = tables.read_raw(spark, root, "brokers", fmt)
    raw_replicas = tables.read_raw(spark, root, "replicas", fmt)
    if raw_brokers is None or raw_replicas is None:
        raise InputError(root, "", f"a {fmt} snapshot needs the brokers and replicas tables")
    raw_sizes = tables.read_raw(spark, root, "sizes", fmt)
    raw_metrics = tables.read_raw(spark, root, "metrics", fmt)
    found, bad = _table_names(root, [raw_brokers, raw_replicas], requests)
    known = set(found)
    for t in (raw_brokers, raw_replicas, raw_sizes, raw_metrics):
        if t is not None:
            for c, reason in tables.first_bad_values(t).items():
                if c in known:  # a cluster only in sizes or metrics is not planned: its rows are ignored
                    bad.setdefault(c, reason)
    early_df = spark.createDataFrame([(c, "ingest", reason) for c, reason in sorted(bad.items())], rows.ERRORS)
    drop = F.broadcast(early_df.select("cluster"))  # small: a sort-merge join would shuffle every row of the tables

    def keep(t: tables.RawTable | None) -> DataFrame | None:
        return tables.typed(t).join(drop, "cluster", "left_anti") if t is not None else None

    brokers, replicas, sizes, metrics = keep(raw_brokers), keep(raw_replicas), keep(raw_sizes), keep(raw_metrics)
    if sizes is None:
        sizes = spark.createDataFrame([], rows.SIZES)
    brokers = brokers.withColumn("weight", F.coalesce("weight", F.lit(1.0))).withColumn(
        "state", F.coalesce("state", F.lit("live")))
    good_requests = {c: r for c, r in requests.items() if c not in bad}
    brokers = _mark_removals(spark, brokers, good_requests)
    # the typed rows, read once: validation, health and planning all use them. Spread over the shuffle
    # partitions by (cluster, topic), so that a small file (one task) does not leave the cores idle and the
    # aggregations per partition or per topic need no shuffle of their own.
    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    replicas = replicas.repartition(n, "cluster", "topic").cache()
    sizes = sizes.repartition(n, "cluster", "topic").cache()
    brokers = brokers.cache()
    suspects = _suspects(brokers, replicas, sizes)
    invalid = pd.DataFrame({c: pd.Series([], dtype=object) for c in ("cluster", "stage", "reason")})
    if suspects:
        long = (as_long(brokers, "brokers").unionByName(as_long(replicas, "replicas"))
                .unionByName(as_long(sizes, "sizes")).where(F.col("cluster").isin(suspects)))
        invalid = long.groupBy("cluster").applyInPandas(_validate, rows.ERRORS).toPandas()
    errors = spark.createDataFrame(
        [(c, "ingest", reason) for c, reason in sorted(bad.items())]
        + [(r.cluster, r.stage, r.reason) for r in invalid.itertuples()], rows.ERRORS)
    gone = F.broadcast(errors.select("cluster"))
    names_df = spark.createDataFrame([(c,) for c in found if c not in bad], "cluster string").join(
        gone, "cluster", "left_anti")
    reqs = spark.createDataFrame([(c, json.dumps(r, sort_keys=True)) for c, r in good_requests.items()],
                                 "cluster string, request string")
    clusters = (names_df.join(reqs, "cluster", "left")
                .select("cluster", F.lit(False).alias("had_log_dirs"),
                        F.coalesce("request", F.lit("{}")).alias("request")))
    return Tables(brokers=brokers.join(gone, "cluster", "left_anti"),
                  replicas=replicas.join(gone, "cluster", "left_anti"),
                  sizes=sizes.join(gone, "cluster", "left_anti"), clusters=clusters, errors=errors,
                  metrics=metrics.join(gone, "cluster", "left_anti") if metrics is not None else None,
                  cached=[replicas, sizes, brokers], rows_only=[replicas, sizes])


def _mark_removals(spark: SparkSession, brokers: DataFrame, requests: dict[str, dict]) -> DataFrame:
    """Brokers a cluster's request removes get state ``removed`` (as the dumps path does with the same request)."""
    from ..request import PlanRequest

    pairs = []
    for c, req in requests.items():
        try:
            pairs += [(c, int(b)) for b in PlanRequest.from_json(req, f"fleet.json: clusters.{c}").remove]
        except InputError:
            continue  # reported when the cluster is planned
    if not pairs:
        return brokers
    gone = spark.createDataFrame(pd.DataFrame(pairs, columns=["cluster", "broker"]), "cluster string, broker int")
    gone = gone.withColumn("_gone", F.lit(True))
    return (brokers.join(gone, ["cluster", "broker"], "left")
            .withColumn("state", F.when(F.col("_gone"), F.lit("removed")).otherwise(F.col("state")))
            .drop("_gone"))


def as_long(df: DataFrame, kind: str) -> DataFrame:
    """``df`` (one table of the snapshot) in the long schema every table shares for one groupBy: missing columns
    null, ``kind`` naming the table."""
    cols = []
    types = dict(c.strip().split(" ") for c in LONG.split(","))
    for c in LONG_COLUMNS:
        if c == "kind":
            cols.append(F.lit(kind).alias("kind"))
        elif c in df.columns:
            cols.append(F.col(c).cast(types[c]).alias(c))
        else:
            cols.append(F.lit(None).cast(types[c]).alias(c))
    return df.select(*cols)
