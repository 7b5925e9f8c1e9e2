"""``flowbalance report``: the operator's view of a cluster, or of a plan before → after (terminal, JSON, HTML)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from flowbalance.formats.writers import check_outputs, write_atomic
from flowbalance.errors import InputError
from flowbalance.frontier_file import read_frontier
from flowbalance.load import load_cluster, mark_removed, parse_broker_ids
from flowbalance.planfile import read_plan
from flowbalance.planner import certify_plan
from flowbalance.status import held_rows
from flowbalance.report import build_report
from flowbalance.report_html import render_html

from . import options as o
from .plan import request
from .render import console, json_text, safe_text, warn
from .report_view import render_report
from .status import ForceOpt, fresh


def report(
    current: Path = o.Current,
    plan_file: o.PathOpt = typer.Option(None, "--plan", help="A reassignment JSON to show before → after."),
    brokers: o.PathOpt = o.BrokersOpt,
    sizes: o.PathOpt = o.SizesOpt,
    remove: Optional[str] = o.RemoveOpt,
    topics: Optional[str] = o.TopicsOpt,
    exclude_topics: Optional[str] = o.ExcludeOpt,
    no_per_topic: bool = o.NoPerTopicOpt,
    per_topic: str = o.PerTopicOpt,
    move_unhealthy: bool = o.MoveUnhealthyOpt,
    format: Optional[str] = o.FormatOpt,
    json_out: bool = o.JsonOpt,
    html: o.PathOpt = typer.Option(None, "--html", help="Also write one self-contained HTML page here."),
    frontier_file: o.PathOpt = typer.Option(None, "--frontier", help="Draw this frontier (what `flowbalance "
                                            "frontier --json` printed for CURRENT) in the --html page."),
    disable_rack_aware: bool = o.NoRackOpt,
    force: bool = ForceOpt,
) -> None:
    """Per broker load, leaders when any one broker or rack fails, the moves, and warnings; before → after with
    --plan.

    With --plan, give the --remove, --topics, --exclude-topics, --no-per-topic, --per-topic and --move-unhealthy
    the plan was made with: the moves are certified against the same targets, so the bound and verdict are the
    ones `plan` printed.

    With --frontier, the page also draws that frontier (moves against per-topic and failover spread), read as it
    was saved: nothing is planned again. It must have been made for CURRENT."""
    inputs = [str(p) for p in (current, plan_file, brokers, sizes, frontier_file) if p is not None]
    if frontier_file is not None and html is None:
        raise InputError("--frontier", "", "the frontier is drawn in the HTML page: give --html too",
                         str(frontier_file))
    if html is not None:
        check_outputs([str(html)], inputs)
    loaded = load_cluster(current, brokers=brokers, sizes=sizes, fmt=format, disable_rack_aware=disable_rack_aware)
    state = loaded.state
    saved = None if frontier_file is None else read_frontier(frontier_file, state, current_source=str(current))
    after = None
    notes: list[str] = []
    if plan_file is not None:
        notes = fresh(plan_file, loaded, current, force)  # a stale plan is refused unless --force
        pf = read_plan(plan_file, state, current_source=str(current))
        if pf.new_brokers and state.brokers.has_racks:
            raise InputError(str(plan_file), "", "racks are in use: list the plan's new brokers (with their racks) "
                                                 "in the broker file", list(pf.new_brokers[:10]))
        after = pf.final
        state = state.with_brokers(after.brokers)
    if remove:
        ids = parse_broker_ids(remove, "--remove")
        state = mark_removed(state, ids, "--remove")
        after = after.with_brokers(state.brokers) if after is not None else None
    cert = None
    if after is not None:
        req = request(topics=topics, exclude_topics=exclude_topics, no_per_topic=no_per_topic,
                      per_topic_mode=per_topic)
        cert = certify_plan(state, after, req, pinned=held_rows(loaded.status, move_unhealthy=move_unhealthy))
    rep = build_report(state, after, certificate=cert, status=loaded.status)
    for w in loaded.warnings + notes:
        warn(w)
    if html is not None:
        title = f"flowbalance report: {Path(current).name}" + (f" + {Path(plan_file).name}" if plan_file else "")
        write_atomic({str(html): render_html(rep, title, frontier=saved)}, inputs)
    if json_out:
        sys.stdout.write(json_text(rep))
    else:
        render_report(rep, console())
        if html is not None:
            console().print(f"wrote {safe_text(html)}")
