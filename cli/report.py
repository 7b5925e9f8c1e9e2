"""``flowbalance report``: the operator's view of a cluster, or of a plan before → after (terminal, JSON, HTML)."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional

import typer

from flowbalance.formats.writers import check_outputs, write_atomic
from flowbalance.errors import InputError
from flowbalance.frontier_file import read_frontier
from flowbalance.identity import report_identity, source_date
from flowbalance.load import load_cluster, mark_removed
from flowbalance.planfile import read_plan
from flowbalance.planmeta import find_sidecar
from flowbalance.planner import certify_plan, request_targets
from flowbalance.status import held_rows
from flowbalance.report import build_report
from flowbalance.report_html import render_html
from flowbalance.request import PlanRequest
from flowbalance.tracking import same_request

from . import options as o
from .plan import request
from .render import console, json_text, safe_text, warn
from .report_view import render_report
from .status import ForceOpt, fresh_progress


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
    all_rows: bool = o.AllRowsOpt,
    html: o.PathOpt = typer.Option(None, "--html", help="Also write one self-contained HTML page here."),
    frontier_file: o.PathOpt = typer.Option(None, "--frontier", help="Draw this frontier (what `flowbalance "
                                            "frontier --json` printed for CURRENT) in the --html page."),
    disable_rack_aware: bool = o.NoRackOpt,
    exclude_brokers: Optional[str] = o.ExcludeBrokersOpt,
    pin: Optional[List[str]] = o.PinOpt,
    force: bool = ForceOpt,
) -> None:
    """Per broker load, leaders when any one broker or rack fails, the moves, and warnings; before → after with
    --plan.

    With --plan, the moves are certified for the request the plan was made with, so the bound and verdict are the
    ones `plan` printed: the request in the plan's sidecar (plan.meta.json) when no request flag is given, else
    the --remove, --exclude-brokers, --pin, --topics, --exclude-topics, --no-per-topic and --per-topic given
    (give --move-unhealthy as the plan was made).

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
    prog = None
    notes: list[str] = []
    req = request(remove=remove, topics=topics, exclude_topics=exclude_topics, no_per_topic=no_per_topic,
                  per_topic_mode=per_topic, exclude_brokers=exclude_brokers, pin=pin)
    if plan_file is None and (req.exclude_brokers or req.pin):
        flag = "--exclude-brokers" if req.exclude_brokers else "--pin"
        raise InputError(flag, "", "only with --plan (it says what the plan was made with)",
                         exclude_brokers if req.exclude_brokers else pin[0])
    if plan_file is not None:
        notes, prog = fresh_progress(plan_file, loaded, current, force)  # a stale plan is refused unless --force
        req = plan_request(req, prog, notes)
        pf = read_plan(plan_file, state, current_source=str(current))
        if pf.new_brokers and state.brokers.has_racks:
            raise InputError(str(plan_file), "", "racks are in use: list the plan's new brokers (with their racks) "
                                                 "in the broker file", list(pf.new_brokers[:10]))
        after = pf.final
        state = state.with_brokers(after.brokers)
    gone = list(req.remove) + [old for old, _ in req.replace]  # a replace in the plan's sidecar
    if gone:
        state = mark_removed(state, gone, "--remove")
        after = after.with_brokers(state.brokers) if after is not None else None
    cert = None
    held = held_rows(loaded.status, move_unhealthy=move_unhealthy)
    if after is not None:
        cert = certify_plan(state, after, req, pinned=held)
        targets = None
    else:  # the targets a plan of this request would aim at (within racks when the rack rule fixes their totals)
        targets = request_targets(loaded.state, req, pinned=held)
    ident = identity(current, plan_file, brokers, sizes, frontier_file, req, prog)
    rep = build_report(state, after, certificate=cert, status=loaded.status, targets=targets, identity=ident)
    for w in loaded.warnings + notes:
        warn(w)
    if html is not None:
        title = f"flowbalance report: {Path(current).name}" + (f" + {Path(plan_file).name}" if plan_file else "")
        write_atomic({str(html): render_html(rep, title, frontier=saved)}, inputs)
    if json_out:
        sys.stdout.write(json_text(rep))
    else:
        render_report(rep, console(), all_rows=all_rows)
        if html is not None:
            console().print(f"wrote {safe_text(html)}")


def identity(current, plan_file, brokers, sizes, frontier_file, req: PlanRequest, prog) -> dict:
    """The report's identity: the input files (the plan's sidecar too) with their SHA-256, the request the report
    was certified for and where it came from, and the plan's time from its sidecar (else SOURCE_DATE_EPOCH)."""
    sidecar = find_sidecar(plan_file) if plan_file is not None else None
    files = [(role, p) for role, p in (("current", current), ("plan", plan_file), ("plan sidecar", sidecar),
                                       ("brokers", brokers), ("sizes", sizes), ("frontier", frontier_file))
             if p is not None]
    meta = prog.meta if prog is not None else None
    created, created_from = ((meta.created, "plan sidecar") if meta is not None else
                             (source_date(os.environ), "SOURCE_DATE_EPOCH"))
    from_sidecar = meta is not None and req is meta.request
    return report_identity(files, request=req, request_from="plan sidecar" if from_sidecar else "options",
                           created=created, created_from=created_from)


def plan_request(given: PlanRequest, prog, notes: list[str]) -> PlanRequest:
    """The request to certify a plan for: the sidecar's when no request flag was given (a note says so), else the
    flags' (a note says when they differ from the sidecar's)."""
    meta = prog.meta
    if meta is None:
        return given
    if same_request(given, PlanRequest()):
        if certified_fields(meta.request) != certified_fields(PlanRequest()):
            notes.append(f"certified for the request {prog.plan_source} was made with (its sidecar)")
        return meta.request
    if certified_fields(given) != certified_fields(meta.request):
        notes.append(f"the request given replaces the one {prog.plan_source} was made with")
    return given


def certified_fields(req: PlanRequest) -> tuple:
    """What of a request the certificate of a plan read from a file depends on (``certify_plan``)."""
    return (req.remove, req.replace, req.exclude_brokers, req.pin, req.topics, req.exclude_topics, req.per_topic,
            req.per_topic_mode)
