"""``flowbalance fleet``: plan a fleet of clusters on Spark (local by default, any cluster with --master)."""
from __future__ import annotations

import sys
from typing import List, Optional

import orjson
import typer
from rich.table import Table

from flowbalance.errors import InputError, PlanningError

from . import options as o
from .render import console


def fleet(
    snapshot: str = typer.Argument(..., help="Fleet snapshot: a folder (or URI) of per-cluster dumps and fleet.json, "
                                             "or brokers/replicas/sizes/metrics tables (Parquet or CSV).",
                                   show_default=False),
    out: str = typer.Option(..., "-o", "--out", help="Local folder for the plans and the fleet tables."),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master: local[*] (default), spark://HOST:PORT, yarn, k8s://..."),
    input_format: str = typer.Option("auto", "--input", help="auto, dumps, parquet or csv."),
    metric: str = typer.Option("bytes_in", "--metric", help="Metric history column for partition weights: bytes_in or bytes_out."),
    quantile: float = typer.Option(0.95, "--quantile", help="Quantile of the metric over the window (weight)."),
    window_days: float = typer.Option(7.0, "--window-days", help="Days of history (back from each cluster's newest sample)."),
    sizes_from_metrics: str = typer.Option("none", "--sizes-from-metrics", help="Use weights as sizes: none, fill (where unknown) or replace."),
    plan_all: bool = typer.Option(False, "--all", help="Plan every cluster, also balanced ones without a request."),
    conf: Optional[List[str]] = typer.Option(None, "--conf", help="Spark setting KEY=VALUE (repeatable), e.g. spark.driver.memory=8g."),
    json_out: bool = o.JsonOpt,
) -> None:
    """Ingest, measure and plan every cluster of a fleet on Spark; write per-cluster plans and fleet tables."""
    try:
        from flowbalance.pipeline.run import run_fleet
    except ImportError as err:
        raise InputError("fleet", "", f"needs the spark extra (pip install 'flowbalance[spark]'): {err}") from None
    settings = {}
    for item in conf or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError("--conf", "", "expected KEY=VALUE", item)
        settings[key.strip()] = value.strip()
    try:
        res = run_fleet(snapshot, out, master=master, input_format=input_format, metric=metric, quantile=quantile,
                        window_days=window_days, sizes_from_metrics=sizes_from_metrics, plan_all=plan_all,
                        conf=settings)
    except (InputError, PlanningError):
        raise
    except Exception as err:  # noqa: BLE001 - a failed Spark job: one line, not a JVM stack trace
        if type(err).__module__.split(".")[0] not in ("pyspark", "py4j"):
            raise
        first = next((ln.strip() for ln in str(err).splitlines() if "Exception" in ln or "Error" in ln),
                     str(err).splitlines()[0] if str(err) else type(err).__name__)
        raise PlanningError(f"the Spark job failed: {first[:400]}") from None
    s = res.summary
    if json_out:
        data = {"master": res.master, "seconds": {k: round(v, 3) for k, v in res.seconds.items()},
                "clusters": orjson.loads(s.to_json(orient="records")), "files": res.files}
        sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")
        return
    t = Table(title=f"Fleet: {len(s)} clusters on {res.master}", title_justify="left")
    for col in ("cluster", "status", "moves", "lower bound", "replica spread", "failover spread", "s"):
        t.add_column(col, justify="left" if col in ("cluster", "status") else "right")

    def num(x):
        return "-" if x is None or x != x else (f"{x:g}" if isinstance(x, float) else str(x))

    for r in s.to_dict("records"):
        status = r["status"] if r["status"] != "error" else f"[red]error[/red]: {r['reason']}"
        t.add_row(r["cluster"], status, num(r["moves"]), num(r["lower_bound"]),
                  f"{num(r['replica_spread_before'])} → {num(r['replica_spread_after'])}",
                  f"{num(r['failover_spread_before'])} → {num(r['failover_spread_after'])}", num(r["seconds"]))
    con = console()
    con.print(t)
    con.print("Stages: " + ", ".join(f"{k} {v:.1f} s" for k, v in res.seconds.items()) + f"; wrote {len(res.files)} files to {out}")
