"""``flowbalance report``: the operator's view of a cluster, or of a plan before → after (terminal, JSON, HTML)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import orjson
import typer

from flowbalance.formats.writers import check_outputs, write_atomic
from flowbalance.load import apply_plan, load_cluster, mark_removed, parse_broker_ids
from flowbalance.report import build_report
from flowbalance.report_html import render_html

from . import options as o
from .render import console
from .report_view import render_report


def report(
    current: Path = o.Current,
    plan_file: o.PathOpt = typer.Option(None, "--plan", help="A reassignment JSON to show before → after."),
    brokers: o.PathOpt = o.BrokersOpt,
    sizes: o.PathOpt = o.SizesOpt,
    remove: Optional[str] = o.RemoveOpt,
    format: Optional[str] = o.FormatOpt,
    json_out: bool = o.JsonOpt,
    html: o.PathOpt = typer.Option(None, "--html", help="Also write one self-contained HTML page here."),
    disable_rack_aware: bool = o.NoRackOpt,
) -> None:
    """Per broker load, leaders when any one broker or rack fails, the moves, and warnings; before → after with --plan."""
    inputs = [str(p) for p in (current, plan_file, brokers, sizes) if p is not None]
    if html is not None:
        check_outputs([str(html)], inputs)
    loaded = load_cluster(current, brokers=brokers, sizes=sizes, fmt=format, disable_rack_aware=disable_rack_aware)
    state = loaded.state
    after = None
    if plan_file is not None:
        state, after = apply_plan(state, plan_file)
    if remove:
        ids = parse_broker_ids(remove, "--remove")
        state = mark_removed(state, ids)
        after = after.with_brokers(state.brokers) if after is not None else None
    rep = build_report(state, after)
    for w in loaded.warnings:
        sys.stderr.write(f"flowbalance: warning: {w}\n")
    if html is not None:
        title = f"flowbalance report: {Path(current).name}" + (f" + {Path(plan_file).name}" if plan_file else "")
        write_atomic({str(html): render_html(rep, title)}, inputs)
    if json_out:
        sys.stdout.write(orjson.dumps(rep, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")
    else:
        render_report(rep, console())
        if html is not None:
            console().print(f"wrote {html}")
