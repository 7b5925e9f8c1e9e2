"""Tables input (Parquet or CSV): read each table without letting a bad value throw, and find the bad values.

CSV is read as text (every column a string, so Spark's parser never fails on a value); Parquet with its own
types. Each column is then checked against what the pipeline needs (an integer 0 or more for ids, a positive
number for weights, a timestamp, ``live``/``removed`` ...) in one Spark pass per table, and converted with
``try_cast``. A bad value is reported per cluster, as one line naming the table file, the row, the column and
the value; the cluster then goes to the errors table and the others go on. A table that cannot be used at all (a
missing required column, a column of the wrong kind, an unreadable file) is an InputError: exit 2.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..errors import InputError
from . import rows

# per table: (column, check) in schema order; the check names what a value must be:
#   name: the cluster (checked on the driver by names.check_name); text: a non-empty string;
#   id: an integer 0 or more (int), count: an integer 0 or more (long); positive: a number above 0;
#   number: any number; time: a timestamp; state: live or removed. A trailing "?" allows an empty value.
CHECKS = {
    "brokers": [("cluster", "name"), ("broker", "id"), ("rack", "text?"), ("weight", "positive?"),
                ("capacity_bytes", "count?"), ("state", "state?")],
    "replicas": [("cluster", "name"), ("topic", "text"), ("partition", "id"), ("position", "id"), ("broker", "id")],
    "sizes": [("cluster", "name"), ("topic", "text"), ("partition", "id"), ("bytes", "count")],
    "metrics": [("cluster", "name"), ("topic", "text"), ("partition", "id"), ("timestamp", "time"),
                ("bytes_in", "number?"), ("bytes_out", "number?")],
}
SCHEMAS = {"brokers": rows.BROKERS, "replicas": rows.REPLICAS, "sizes": rows.SIZES, "metrics": rows.METRICS}
OPTIONAL_COLUMNS = ("rack", "weight", "capacity_bytes", "state")  # may be absent from the brokers table
# the columns that say which row a bad value is on
ROW_KEYS = {"brokers": ("broker",), "replicas": ("topic", "partition", "position"), "sizes": ("topic", "partition"),
            "metrics": ("topic", "partition", "timestamp")}

MESSAGES = {
    "empty": "is empty",
    "integer": "expected an integer",
    "range": "is out of range",
    "negative": "must be 0 or more",
    "number": "expected a number",
    "positive": "must be a positive number",
    "time": "expected a timestamp",
    "state": "must be live or removed",
}
_INT_TEXT = r"^\s*[+-]?[0-9]+\s*$"
_NUMERIC = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.FloatType, T.DoubleType, T.DecimalType)
_TIME = (T.TimestampType, T.TimestampNTZType, T.DateType, T.StringType)


@dataclass
class RawTable:
    """One table as read: the DataFrame with the file's own column types, and a label for messages."""

    name: str
    label: str
    df: DataFrame


def read_raw(spark: SparkSession, root: str, name: str, fmt: str) -> RawTable | None:
    """``root/name.parquet`` (or folder ``root/name``), or ``root/name.csv`` (header, all text); None when absent.
    A file that exists but cannot be read, or lacks a required column, is an InputError."""
    base = root.rstrip("/")
    candidates = ([(f"{base}/{name}.parquet", f"{name}.parquet"), (f"{base}/{name}", f"{name}/")]
                  if fmt == "parquet" else [(f"{base}/{name}.csv", f"{name}.csv")])
    for path, label in candidates:
        try:
            if fmt == "parquet":
                df = spark.read.parquet(path)
            else:  # no schema: every column is text, so no value can make Spark's CSV parser throw
                df = spark.read.csv(path, header=True, inferSchema=False, mode="PERMISSIVE")
        except Exception as err:  # noqa: BLE001 - Spark raises AnalysisException (a Py4J wrapper)
            if "PATH_NOT_FOUND" in str(err) or "does not exist" in str(err):
                continue
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            raise InputError(label, "", f"cannot read the {name} table: {first[:300]}") from None
        _check_columns(RawTable(name, label, df))
        return RawTable(name, label, df)
    return None


def _check_columns(t: RawTable) -> None:
    """Every required column present, and of a kind that can hold its values (else the table is unusable)."""
    types = {f.name: f.dataType for f in t.df.schema.fields}
    for col, check in CHECKS[t.name]:
        if col not in types:
            if col in OPTIONAL_COLUMNS:
                continue
            raise InputError(t.label, "", f"the {t.name} table has no column {col} "
                                          f"(columns: {', '.join(t.df.columns) or 'none'})")
        kind, dtype = check.rstrip("?"), types[col]
        if kind in ("id", "count", "positive", "number"):
            ok = isinstance(dtype, (T.StringType, *_NUMERIC))
        elif kind == "time":
            ok = isinstance(dtype, _TIME)
        else:
            ok = isinstance(dtype, (T.StringType, *_NUMERIC))
        if not ok:
            raise InputError(t.label, f"column {col}", f"has type {dtype.simpleString()}, which cannot hold "
                                                       f"{'a timestamp' if kind == 'time' else 'these values'}")


def _target_types(name: str) -> dict[str, str]:
    return dict(c.strip().split(" ") for c in SCHEMAS[name].split(","))


def _value_problems(t: RawTable) -> list[tuple[str, str, Column]]:
    """(column, message key, condition true on a bad value), in the order they are reported."""
    types = {f.name: f.dataType for f in t.df.schema.fields}
    target = _target_types(t.name)
    out: list[tuple[str, str, Column]] = []
    for col, check in CHECKS[t.name]:
        if col not in types or check == "name":
            continue
        kind, nullable = check.rstrip("?"), check.endswith("?")
        raw = F.col(col)
        text = isinstance(types[col], T.StringType)
        if not nullable:
            empty = raw.isNull() | (F.trim(raw) == "") if text else raw.isNull()
            out.append((col, "empty", empty))
        present = raw.isNotNull() & (F.trim(raw) != "") if text else raw.isNotNull()
        if kind in ("id", "count"):
            value = raw.try_cast(target[col])
            if text:
                out.append((col, "integer", present & ~raw.rlike(_INT_TEXT)))
                out.append((col, "range", present & value.isNull()))
            else:  # a numeric column: whole numbers only (1.0 is fine, 1.5 and NaN are not), in range
                as_double = raw.try_cast("double")
                out.append((col, "integer", present & (F.isnan(as_double) | (as_double != F.floor(as_double)))))
                out.append((col, "range", present & value.isNull()))
            out.append((col, "negative", present & (value < 0)))
        elif kind in ("positive", "number"):
            value = raw.try_cast("double")
            out.append((col, "number", present & value.isNull()))
            if kind == "positive":
                out.append((col, "positive", present & (F.isnan(value) | (F.abs(value) == float("inf"))
                                                        | (value <= 0))))
        elif kind == "time":
            out.append((col, "time", present & raw.try_cast("timestamp").isNull()))
        elif kind == "state":
            out.append((col, "state", present & ~F.trim(raw.cast("string")).isin("live", "removed")))
    return out


def typed(t: RawTable) -> DataFrame:
    """The table with the pipeline's columns and types (absent optional columns as nulls; values that fail their
    check become nulls too, and their clusters are dropped by the caller). ``cluster`` is never null."""
    types = {f.name: f.dataType for f in t.df.schema.fields}
    cols = []
    for col, typ in _target_types(t.name).items():
        if col not in types:
            cols.append(F.lit(None).cast(typ).alias(col))
        elif col == "cluster":
            cols.append(F.coalesce(F.col(col).cast("string"), F.lit("")).alias(col))
        elif typ == "string" and isinstance(types[col], T.StringType):
            cols.append(F.trim(F.col(col)).alias(col) if col == "state" else F.col(col))
        elif isinstance(types[col], T.StringType):
            cols.append(F.trim(F.col(col)).try_cast(typ).alias(col))
        else:
            cols.append(F.col(col).try_cast(typ).alias(col))
    return t.df.select(*cols)


def first_bad_values(t: RawTable) -> dict[str, str]:
    """Per cluster with a bad value in this table: one line naming the table file, the row, the column and the
    value (the first bad value in a fixed order), and how many more rows are bad."""
    problems = _value_problems(t)
    if not problems:
        return {}
    code = F.coalesce(*[F.when(cond, F.lit(i)) for i, (_, _, cond) in enumerate(problems)])
    shown = [c for c in t.df.columns if c in dict(CHECKS[t.name]) and c != "cluster"]
    bad = (t.df.select(F.coalesce(F.col("cluster").cast("string"), F.lit("")).alias("cluster"),
                       code.alias("_code"), *[F.col(c).cast("string").alias(c) for c in shown])
           .where(F.col("_code").isNotNull()))
    first = (bad.groupBy("cluster")
             .agg(F.min(F.struct("_code", *shown)).alias("_first"), F.count(F.lit(1)).alias("_n"))
             .collect())
    out = {}
    for r in first:
        f = r["_first"].asDict()
        col, key, _ = problems[f["_code"]]
        value = f.get(col)
        keys = [f"{k} {f[k]}" for k in ROW_KEYS[t.name] if k != col and f.get(k) is not None]
        place = (f"row with {', '.join(keys)}, " if keys else "") + f"column {col}"
        line = InputError(t.label, place, MESSAGES[key], value, has_value=value is not None and key != "empty").line()
        if r["_n"] > 1:
            line += f"; {r['_n'] - 1} more bad rows"
        out[r["cluster"]] = line
    return out
