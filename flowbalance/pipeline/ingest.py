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
from dataclasses import dataclass

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..errors import InputError
from . import rows

CURRENT_NAMES = ("assignment.json", "describe.txt", "generate.txt")
BROKER_NAMES = ("brokers.csv", "brokers.json")
SIZE_NAMES = ("logdirs.txt", "logdirs.json", "sizes.csv", "sizes.json")
TABLES = ("brokers", "replicas", "sizes", "metrics")

# one long schema for every table a parse task emits; ``kind`` says which table a row belongs to
LONG = ("kind string, cluster string, topic string, partition int, position int, broker int, rack string, "
        "weight double, capacity_bytes long, state string, bytes long, had_log_dirs boolean, request string, "
        "stage string, reason string")
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
    from ..request import fleet_request

    cluster = str(pdf["cluster"].iloc[0])
    files = {str(n): bytes(c) for n, c in zip(pdf["name"], pdf["content"])}
    req = requests.get(cluster, {})
    try:
        kw = fleet_request(req, f"fleet.json: clusters.{cluster}")
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
        state = loaded.state
        if kw["remove"]:
            state = mark_removed(state, list(kw["remove"]))
    except InputError as err:
        return _error(cluster, "ingest", err.line())
    except Exception as err:  # noqa: BLE001 - a bad cluster must not stop the fleet
        return _error(cluster, "ingest", f"{type(err).__name__}: {err}")
    t = rows.state_rows(cluster, state)
    meta = pd.DataFrame({"cluster": [cluster], "had_log_dirs": [bool(state.had_log_dirs)],
                         "request": [json.dumps(req, sort_keys=True)]})
    return pd.concat([_long("brokers", t["brokers"]), _long("replicas", t["replicas"]), _long("sizes", t["sizes"]),
                      _long("clusters", meta)], ignore_index=True)


def _split(long: DataFrame, metrics: DataFrame | None = None) -> Tables:
    long = long.cache()

    def pick(kind: str, schema: str) -> DataFrame:
        cols = [c.strip().split(" ")[0] for c in schema.split(",")]
        return long.where(F.col("kind") == kind).select(*cols)

    return Tables(brokers=pick("brokers", rows.BROKERS), replicas=pick("replicas", rows.REPLICAS),
                  sizes=pick("sizes", rows.SIZES), clusters=pick("clusters", rows.CLUSTERS),
                  errors=pick("error", rows.ERRORS), metrics=metrics)


def ingest_dumps(spark: SparkSession, root: str, requests: dict[str, dict]) -> Tables:
    """Every cluster folder under ``root``, parsed in parallel (one Spark group per cluster)."""
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
    long = files.groupBy("cluster").applyInPandas(lambda pdf: parse_cluster(pdf, reqs), LONG)
    seen = {r.cluster for r in files.select("cluster").distinct().collect()}
    missing = sorted(set(reqs) - seen)
    if missing:
        extra = spark.createDataFrame(pd.concat([_error(c, "ingest", f"{c}: listed in fleet.json but there is no "
                                                                       "folder with its files") for c in missing]),
                                      LONG)
        long = long.unionByName(extra)
    return _split(long)


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def read_table(spark: SparkSession, root: str, name: str, fmt: str, schema: str) -> DataFrame | None:
    """``root/name.parquet`` (or folder ``root/name``), or ``root/name.csv`` with a header; None when absent."""
    base = root.rstrip("/")
    candidates = [f"{base}/{name}.parquet", f"{base}/{name}"] if fmt == "parquet" else [f"{base}/{name}.csv"]
    for path in candidates:
        try:
            if fmt == "parquet":
                df = spark.read.parquet(path)
            else:
                df = spark.read.csv(path, header=True, schema=schema, mode="FAILFAST")
        except Exception as err:  # noqa: BLE001
            if "PATH_NOT_FOUND" in str(err) or "does not exist" in str(err):
                continue
            raise InputError(path, "", f"cannot read the {name} table: {str(err).splitlines()[0]}") from None
        cols = [c.strip().split(" ") for c in schema.split(",")]
        missing = [c for c, _ in cols if c not in df.columns and c not in ("rack", "weight", "capacity_bytes", "state")]
        if missing:
            raise InputError(path, "", f"the {name} table has no column {missing[0]}")
        for c, t in cols:
            if c not in df.columns:
                df = df.withColumn(c, F.lit(None).cast(t))
        return df.select(*[F.col(c).cast(t) for c, t in cols])
    return None


def _validate(pdf: pd.DataFrame) -> pd.DataFrame:
    """Tables input: a cluster whose rows do not make a valid state becomes an error row (schema ERRORS)."""
    cluster = str(pdf["cluster"].iloc[0])
    try:
        rows.rows_state(pdf[pdf.kind == "brokers"], pdf[pdf.kind == "replicas"], pdf[pdf.kind == "sizes"])
    except Exception as err:  # noqa: BLE001
        return pd.DataFrame({"cluster": [cluster], "stage": ["ingest"], "reason": [f"{cluster}: {err}"]})
    return pd.DataFrame({"cluster": pd.Series([], dtype=str), "stage": pd.Series([], dtype=str),
                         "reason": pd.Series([], dtype=str)})


def ingest_tables(spark: SparkSession, root: str, fmt: str, requests: dict[str, dict]) -> Tables:
    """Parquet or CSV tables; clusters with invalid rows go to the errors table and out of the others."""
    brokers = read_table(spark, root, "brokers", fmt, rows.BROKERS)
    replicas = read_table(spark, root, "replicas", fmt, rows.REPLICAS)
    if brokers is None or replicas is None:
        raise InputError(root, "", f"a {fmt} snapshot needs the brokers and replicas tables")
    sizes = read_table(spark, root, "sizes", fmt, rows.SIZES)
    if sizes is None:
        sizes = spark.createDataFrame([], rows.SIZES)
    metrics = read_table(spark, root, "metrics", fmt, rows.METRICS)
    brokers = brokers.withColumn("weight", F.coalesce("weight", F.lit(1.0))).withColumn(
        "state", F.coalesce("state", F.lit("live")))
    brokers = _mark_removals(spark, brokers, requests)
    long = (_as_long(brokers, "brokers").unionByName(_as_long(replicas, "replicas"))
            .unionByName(_as_long(sizes, "sizes")))
    errors = long.groupBy("cluster").applyInPandas(_validate, rows.ERRORS).cache()
    bad = errors.select("cluster")
    names = brokers.select("cluster").union(replicas.select("cluster")).distinct().join(bad, "cluster", "left_anti")
    reqs = spark.createDataFrame(pd.DataFrame({"cluster": list(requests),
                                               "request": [json.dumps(requests[c], sort_keys=True) for c in requests]}),
                                 "cluster string, request string")
    clusters = (names.join(reqs, "cluster", "left")
                .select("cluster", F.lit(False).alias("had_log_dirs"),
                        F.coalesce("request", F.lit("{}")).alias("request")))
    return Tables(brokers=brokers.join(bad, "cluster", "left_anti"),
                  replicas=replicas.join(bad, "cluster", "left_anti"),
                  sizes=sizes.join(bad, "cluster", "left_anti"), clusters=clusters, errors=errors,
                  metrics=metrics.join(bad, "cluster", "left_anti") if metrics is not None else None)


def _mark_removals(spark: SparkSession, brokers: DataFrame, requests: dict[str, dict]) -> DataFrame:
    """Brokers a cluster's request removes get state ``removed`` (as the dumps path does with the same request)."""
    from ..request import fleet_request

    pairs = []
    for c, req in requests.items():
        try:
            pairs += [(c, int(b)) for b in fleet_request(req, f"fleet.json: clusters.{c}")["remove"]]
        except InputError:
            continue  # reported when the cluster is planned
    if not pairs:
        return brokers
    gone = spark.createDataFrame(pd.DataFrame(pairs, columns=["cluster", "broker"]), "cluster string, broker int")
    gone = gone.withColumn("_gone", F.lit(True))
    return (brokers.join(gone, ["cluster", "broker"], "left")
            .withColumn("state", F.when(F.col("_gone"), F.lit("removed")).otherwise(F.col("state")))
            .drop("_gone"))


def _as_long(df: DataFrame, kind: str) -> DataFrame:
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
