"""Stage 5: write the fleet's results into a local folder on the driver.

Per planned cluster, ``CLUSTER/plan.json``, ``rollback.json`` and ``election.json``: byte-identical to
``flowbalance plan CURRENT ... -o plan.json --rollback rollback.json --election election.json`` on that cluster
alone; and ``plan.meta.json``, the plan's sidecar (the same as that command's but for ``current`` and
``created``). Fleet-wide tables, each as Parquet and CSV: ``summary`` (one row per cluster: status, moves, M*, bytes,
spreads before and after, the certificate's failover bound, run time), ``health_clusters``, ``health_brokers``, ``errors`` and, with a metric
history, ``weights``. Everything is written atomically (temporary files renamed at the end).
"""
from __future__ import annotations

import io
import os
from pathlib import Path

import pandas as pd

from ..errors import InputError
from ..formats.writers import write_atomic
from . import names

SUMMARY_COLUMNS = ["cluster", "status", "reason", "strategy", "moves", "min_moves", "lower_bound", "bound_for", "proven_optimal",
                   "bytes_to_move", "leader_changes", "changed_partitions", "replica_spread_before",
                   "replica_spread_after", "topic_spread_before", "topic_spread_after", "leader_spread_before",
                   "leader_spread_after", "failover_spread_before", "failover_spread_after", "failover_bound",
                   "seconds"]


def summary_table(clusters: list[str], planned: pd.DataFrame, health: pd.DataFrame, errors: pd.DataFrame
                  ) -> pd.DataFrame:
    """One row per cluster: ``planned`` / ``nothing to do`` (an empty plan) / ``balanced`` (not planned) /
    ``error`` (with the reason, from ingest or from planning)."""
    rows = []
    pl = {r["cluster"]: r for r in planned.to_dict("records")}
    he = {r["cluster"]: r for r in health.to_dict("records")}
    er = {}
    for r in errors.to_dict("records"):
        er.setdefault(r["cluster"], f"{r['stage']}: {r['reason']}")
    for c in sorted(set(clusters) | set(er)):
        row = {k: None for k in SUMMARY_COLUMNS}
        row["cluster"] = c
        if c in er:
            row.update(status="error", reason=er[c])
        elif c in pl and not pl[c]["ok"]:
            row.update(status="error", reason=f"plan: {pl[c]['reason']}")
        elif c in pl:
            p = pl[c]
            row.update({k: p.get(k) for k in SUMMARY_COLUMNS if k in p and k not in ("status", "reason")})
            row["status"] = "nothing to do" if p["empty"] else "planned"
        else:
            row["status"] = "balanced"
            h = he.get(c, {})
            for k, hk in (("replica_spread", "replica_spread"), ("topic_spread", "topic_spread"),
                          ("leader_spread", "leader_spread"), ("failover_spread", "failover_worst_spread")):
                row[f"{k}_before"] = h.get(hk)
        rows.append(row)
    df = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    for col in ("moves", "min_moves", "lower_bound", "bytes_to_move", "leader_changes", "changed_partitions"):
        df[col] = df[col].astype("Int64")
    df["proven_optimal"] = df["proven_optimal"].astype("boolean")
    return df


def _table_files(name: str, df: pd.DataFrame, out: Path) -> dict[str, bytes]:
    """The table as Parquet (typed) and CSV (whole numbers written as such: a spread of 42 is ``42``, not
    ``42.0``, though the column is float because it also holds fractions or blanks)."""
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    return {str(out / f"{name}.parquet"): buf.getvalue(),
            str(out / f"{name}.csv"): _csv_numbers(df).to_csv(index=False, lineterminator="\n").encode("utf-8")}


def _csv_numbers(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each float column's whole values as integers (text), the others as pandas writes them."""
    out = df.copy()
    for col in df.columns:
        if df[col].dtype.kind == "f":
            out[col] = df[col].map(_number_text).astype(object)
    return out


def _number_text(value: float) -> str:
    if pd.isna(value):
        return ""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _under(root: Path, path: Path) -> bool:
    """Whether ``path`` resolves (symbolic links followed) to a place inside ``root``."""
    base = root.resolve()
    target = path.resolve()
    return target != base and target.is_relative_to(base)


def cluster_folder(root: str | os.PathLike, cluster: str) -> Path:
    """``root/cluster``, refused (InputError) unless the name is usable and the folder resolves inside ``root``
    (a folder that is a symbolic link to elsewhere is refused too)."""
    names.check_name(cluster, "output")
    folder = Path(root) / cluster
    if not _under(Path(root), folder):
        raise InputError("output", "", f"the folder of cluster {cluster!r} resolves outside the output folder",
                         str(folder.resolve()))
    return folder


def guard_outputs(root: str | os.PathLike, planned: pd.DataFrame) -> pd.DataFrame:
    """Planned clusters whose output folder would not be inside ``root`` become failed plans (with the reason)
    instead of being written: names are checked at ingest already, this is the check at the place of writing."""
    planned = planned.copy()
    for i, r in planned.iterrows():
        if not r["ok"]:
            continue
        try:
            cluster_folder(root, r["cluster"])
        except InputError as err:
            planned.loc[i, ["ok", "reason"]] = [False, err.line()]
    return planned


def write_outputs(out: str | os.PathLike, planned: pd.DataFrame, tables: dict[str, pd.DataFrame],
                  inputs: list[str] = ()) -> list[str]:
    """Write every file; returns their paths (sorted). Every path is checked to resolve inside ``out`` before
    anything is created (InputError otherwise)."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    files: dict[str, str | bytes] = {}
    folders = []
    for r in planned.to_dict("records"):
        if not r["ok"]:
            continue
        folder = cluster_folder(root, r["cluster"])
        folders.append(folder)
        files[str(folder / "plan.json")] = r["plan_json"]
        files[str(folder / "rollback.json")] = r["rollback_json"]
        files[str(folder / "election.json")] = r["election_json"]
        if r.get("meta_json"):
            files[str(folder / "plan.meta.json")] = r["meta_json"]
        if r.get("place_json"):
            files[str(folder / "place.json")] = r["place_json"]
    for name, df in tables.items():
        files.update(_table_files(name, df, root))
    for path in files:
        if not _under(root, Path(path)):
            raise InputError("output", "", "refusing to write outside the output folder", path)
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        if not _under(root, folder):  # created meanwhile as a link to elsewhere
            raise InputError("output", "", "refusing to write outside the output folder", str(folder))
    write_atomic(files, inputs)
    return sorted(files)
