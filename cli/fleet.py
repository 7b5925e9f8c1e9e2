"""``flowbalance fleet``: plan a fleet of clusters on Spark (local by default, any cluster with --master).

Exit codes: 0 when every cluster was planned (or is balanced), 1 when any cluster failed (the summary and a last
stderr line name them), 2 when the snapshot is unusable or an option is bad (one ``flowbalance: error:`` line).
Java's and Spark's own output goes to OUT/spark.log, never to the terminal.
"""
from __future__ import annotations

import os
import sys
from typing import List, Optional

import orjson
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from flowbalance.errors import InputError, PlanningError

from . import options as o
from .render import console, escape_controls as _escape_controls, json_text, safe_text as _safe_text

MAX_NAMES = 20  # failed clusters named in the last stderr line
# run_fleet's parameter -> the flag that sets it (the library names parameters; the user typed flags)
FLAGS = {"out": "-o", "input_format": "--input", "metric": "--metric", "quantile": "--quantile",
         "window_days": "--window-days", "sizes_from_metrics": "--sizes-from-metrics"}
STAGES = {"start": "starting Spark", "ingest": "ingest", "weights": "weights", "health": "health", "plan": "plan",
          "write": "write"}


def _silence_root_logging() -> None:
    """py4j reports a Ctrl-C in the middle of a call with ``logging.exception`` on the root logger, which prints a
    traceback through logging's default set-up; this command prints its own one line (``flowbalance:
    interrupted``) instead, so the root logger gets a handler that drops records (only where none is set)."""
    import logging

    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def _cell(markup: str) -> Text:
    """A table cell from markup we wrote (names inside already through ``_safe_text``); no emoji codes."""
    return Text.from_markup(markup, emoji=False)


class _StageProgress:
    """The pipeline's progress callback shown on stderr: the stage and clusters done / total (a transient rich
    bar, gone when the command ends). Only when enabled (a terminal, not --json or --quiet)."""

    def __init__(self, enabled: bool, con: Console | None = None):
        self.progress: Progress | None = None
        if enabled:
            self.progress = Progress(TextColumn("{task.description:<14}"), BarColumn(),
                                     TextColumn("{task.fields[count]}"), TimeElapsedColumn(),
                                     console=con or _progress_console(), transient=True)
            self.task = self.progress.add_task("starting Spark", total=None, count="")

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.progress is None:
            return
        count = f"{done}/{total} clusters" if total else (f"{done} clusters" if done else "")
        self.progress.update(self.task, description=STAGES.get(stage, stage), completed=done,
                             total=total or None, count=count)
        self.progress.refresh()  # every stage shows, however short

    def __enter__(self) -> "_StageProgress":
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()


def _progress_console() -> Console:
    """Where progress goes: stderr (stdout holds the summary or the JSON)."""
    return Console(stderr=True)


def _progress_enabled(json_out: bool, quiet: bool) -> bool:
    """Progress only for a person watching: stderr is a terminal and the output is not --json or --quiet."""
    return not json_out and not quiet and sys.stderr.isatty()


def fleet(
    snapshot: str = typer.Argument(..., help="Fleet snapshot: a folder (or URI) of per-cluster dumps and fleet.json, "
                                             "or brokers/replicas/sizes/metrics tables (Parquet or CSV).",
                                   show_default=False),
    out: str = typer.Option(..., "-o", "--out", help="Local folder for the plans and the fleet tables (and spark.log)."),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master: local[*] (default), spark://HOST:PORT, yarn, k8s://..."),
    input_format: str = typer.Option("auto", "--input", help="auto, dumps, parquet or csv."),
    metric: str = typer.Option("bytes_in", "--metric", help="Metric history column for partition weights: bytes_in or bytes_out."),
    quantile: float = typer.Option(0.95, "--quantile", help="Quantile of the metric over the window (weight)."),
    window_days: float = typer.Option(7.0, "--window-days", help="Days of history (back from each cluster's newest sample)."),
    sizes_from_metrics: str = typer.Option("none", "--sizes-from-metrics", help="Use weights as sizes: none, fill (where unknown) or replace."),
    plan_all: bool = typer.Option(False, "--all", help="Plan every cluster, also balanced ones without a request."),
    conf: Optional[List[str]] = typer.Option(None, "--conf", help="Spark setting KEY=VALUE (repeatable), e.g. spark.driver.memory=8g."),
    json_out: bool = o.JsonOpt,
    quiet: bool = o.QuietOpt,
) -> None:
    """Ingest, measure and plan every cluster of a fleet on Spark; write per-cluster plans and fleet tables.

    Exit 0 when every cluster was planned or is balanced, 1 when any cluster failed (named in the summary and on
    the last stderr line), 2 when the snapshot is unusable (missing folder, no clusters, bad fleet.json or table)
    or an option is bad. Spark's own log goes to OUT/spark.log.
    """
    try:
        from flowbalance.pipeline.run import SOURCE, run_fleet
    except ImportError as err:
        raise InputError("fleet", "", f"needs the spark extra (pip install 'flowbalance[spark]'): {err}") from None
    _silence_root_logging()
    settings = {}
    for item in conf or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError("--conf", "", "expected KEY=VALUE", item)
        settings[key.strip()] = value.strip()
    try:
        with _StageProgress(_progress_enabled(json_out, quiet)) as progress:
            res = run_fleet(snapshot, out, master=master, input_format=input_format, metric=metric,
                            quantile=quantile, window_days=window_days, sizes_from_metrics=sizes_from_metrics,
                            plan_all=plan_all, conf=settings, progress=progress)
    except InputError as err:
        if err.source != SOURCE:
            raise
        raise InputError(FLAGS.get(err.place, err.place), "", err.message, err.value, has_value=err.has_value) from None
    except PlanningError:
        raise
    except Exception as err:  # noqa: BLE001 - a failed Spark job: one line, not a JVM stack trace
        if type(err).__module__.split(".")[0] not in ("pyspark", "py4j"):
            raise
        first = next((ln.strip() for ln in str(err).splitlines() if "Exception" in ln or "Error" in ln),
                     str(err).splitlines()[0] if str(err) else type(err).__name__)
        raise PlanningError(f"the Spark job failed: {_escape_controls(first[:400])} (Spark's log: {out}/spark.log)"
                            ) from None
    if json_out:
        s = res.summary
        data = {"master": res.master, "seconds": {k: round(v, 3) for k, v in res.seconds.items()},
                "clusters": orjson.loads(s.to_json(orient="records")), "files": res.files,
                "failed": res.failed}
        sys.stdout.write(json_text(data))
    elif not quiet:
        _render(res, out, console())
    if res.failed:
        sys.stdout.flush()
        if not (json_out and _stderr_is_stdout()):  # the JSON's "failed" says which; stdout stays valid JSON
            sys.stderr.write(_failed_line(res.failed, len(res.summary)) + "\n")
        raise typer.Exit(1)


def _stderr_is_stdout() -> bool:
    """Whether stderr goes into the same file or pipe as stdout (not a terminal): spark-submit runs this script
    with its stderr merged into stdout."""
    try:
        if os.isatty(2):
            return False
        a, b = os.fstat(1), os.fstat(2)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _num(x) -> str:
    return "-" if x is None or x != x else (f"{x:g}" if isinstance(x, float) else str(x))


def _render(res, out: str, con: Console) -> None:
    """The summary table, then one line per failed cluster with its reason (not wrapped inside a cell)."""
    s = res.summary
    t = Table(title=f"Fleet: {len(s)} clusters on {_safe_text(res.master)}", title_justify="left")
    for col in ("cluster", "status", "moves", "lower bound", "replica spread", "failover spread", "s"):
        t.add_column(col, justify="left" if col in ("cluster", "status") else "right",
                     overflow="fold" if col == "cluster" else "ellipsis")  # a name is never cut short
    records = s.to_dict("records")
    for r in records:
        status = "[red]error[/red]" if r["status"] == "error" else _safe_text(r["status"])
        t.add_row(_cell(_safe_text(r["cluster"]) or "''"), _cell(status), _num(r["moves"]), _num(r["lower_bound"]),
                  f"{_num(r['replica_spread_before'])} → {_num(r['replica_spread_after'])}",
                  f"{_num(r['failover_spread_before'])} → {_num(r['failover_spread_after'])}", _num(r["seconds"]))
    con.print(t)
    for r in records:
        if r["status"] == "error":
            con.print(_cell(f"[red]{_safe_text(r['cluster']) or repr('')}[/red]: {_safe_text(r['reason'])}"))
    stages = ", ".join(f"{k} {v:.1f} s" for k, v in res.seconds.items())
    con.print(_cell(f"Stages: {stages}; wrote {len(res.files)} files to {_safe_text(out)}"))


def _failed_line(failed: list[str], total: int) -> str:
    """``flowbalance: 2 of 5 clusters failed: beta, delta`` (names escaped, at most MAX_NAMES of them)."""
    shown = ", ".join(_escape_controls(c) if c else "''" for c in failed[:MAX_NAMES])
    more = f" and {len(failed) - MAX_NAMES} more" if len(failed) > MAX_NAMES else ""
    return f"flowbalance: {len(failed)} of {total} clusters failed: {shown}{more}"
