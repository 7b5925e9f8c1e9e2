"""``flowbalance frontier``: plan one request at several move budgets and in strict per-topic mode, side by side."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.table import Table

from flowbalance.errors import RequestError
from flowbalance.formats.writers import check_outputs, write_atomic
from flowbalance.frontier import (DEFAULT_BUDGETS, format_number, frontier, frontier_summary, group_digits,
                                  parse_budgets, point_text, strict_point)
from flowbalance.frontier_html import render_frontier_html
from flowbalance.load import load_cluster
from flowbalance.request import STAGES
from flowbalance.status import plan_input
from flowbalance.summary import format_bytes

from . import options as o
from .plan import request
from .progress import Steps
from .render import console, json_text, safe_text, warn

BudgetsOpt = typer.Option(",".join(DEFAULT_BUDGETS), "--budgets", metavar="B,B,...",
                          help="Move budgets beyond the fewest moves, each a number of moves or a percentage of the "
                               "replicas in scope; 0 and strict per-topic balance are always planned too.")
HtmlOpt = typer.Option(None, "--html", help="Also write the frontier as one self-contained HTML page with a chart.")


def frontier_command(
    current: Path = o.Current,
    brokers: o.PathOpt = o.BrokersOpt,
    sizes: o.PathOpt = o.SizesOpt,
    remove: Optional[str] = o.RemoveOpt,
    add: Optional[str] = o.AddOpt,
    replace: Optional[str] = o.ReplaceOpt,
    replication_factor: Optional[int] = o.RFOpt,
    topic_rf: Optional[List[str]] = o.TopicRFOpt,
    topics: Optional[str] = o.TopicsOpt,
    exclude_topics: Optional[str] = o.ExcludeOpt,
    no_per_topic: bool = o.NoPerTopicOpt,
    strategy: str = o.StrategyOpt,
    objective: str = o.ObjectiveOpt,
    balance: str = o.BalanceOpt,
    disk_tolerance: float = o.DiskToleranceOpt,
    stages: str = typer.Option(",".join(STAGES), "--stages",
                               help="Flow stages to run, of replicas,leaders,followers (always run in that order)."),
    exclude_brokers: Optional[str] = o.ExcludeBrokersOpt,
    pin: Optional[List[str]] = o.PinOpt,
    budgets: str = BudgetsOpt,
    html: o.PathOpt = HtmlOpt,
    format: Optional[str] = o.FormatOpt,
    json_out: bool = o.JsonOpt,
    disable_rack_aware: bool = o.NoRackOpt,
    from_target: bool = o.FromTargetOpt,
    move_unhealthy: bool = o.MoveUnhealthyOpt,
    quiet: bool = o.QuietOpt,
) -> None:
    """Plan CURRENT at move budgets 0, 1%, 2%, 5%, 10% and with strict per-topic balance; compare moves, bytes,
    per-topic and failover spreads and time (writes only --html)."""
    req = request(remove, add, replace, replication_factor, topic_rf, topics, exclude_topics, no_per_topic,
                  strategy=strategy, objective=objective, balance=balance, disk_tolerance=disk_tolerance,
                  stages=stages, exclude_brokers=exclude_brokers, pin=pin)
    try:
        labels = parse_budgets(budgets)
    except RequestError as err:
        raise err.as_flags({"budgets": "--budgets"}) from None
    inputs = [str(p) for p in (current, brokers, sizes) if p is not None]
    if html is not None:
        check_outputs([str(html)], inputs)
    with Steps(total=1 + 8 * (len(labels) + 1), enabled=not quiet) as steps:
        steps.step("reading input")
        loaded = load_cluster(current, brokers=brokers, sizes=sizes, fmt=format, disable_rack_aware=disable_rack_aware)
        given = plan_input(loaded.state, loaded.status, str(current), from_target=from_target,
                           move_unhealthy=move_unhealthy, names=o.STATUS_FLAGS)
        f = frontier(given.state, req, labels, pinned=given.pinned, notes=given.notes,
                     progress=lambda step, of, name: steps.step(name), read_as=loaded.state)
        data = frontier_summary(f)
        if html is not None:
            steps.step("writing the page")
            write_atomic({str(html): render_frontier_html(data, title=f"flowbalance frontier: {current.name}")}, inputs)
    for w in loaded.warnings:
        warn(w)
    if quiet:
        return
    if json_out:
        sys.stdout.write(json_text(data))
    else:
        render_frontier(data, console())


def render_frontier(d: dict, con: Console) -> None:
    """One column per point (and the current state): budget, moves, bytes, spreads, time; then each point's
    verdict and why a point could not be planned."""
    pts = d["points"]
    t = Table(title=f"Frontier: {d['scope_replicas']:,} replicas in scope", title_justify="left")
    t.add_column("")
    t.add_column("current", justify="right")
    for p in pts:
        t.add_column(safe_text(p["label"]), justify="right")
    cur = d["current"]

    def row(label: str, key: str, fmt=format_number, now: bool = False) -> None:
        cells = ["-" if p[key] is None else fmt(p[key]) for p in pts]
        t.add_row(label, format_number(cur[key]) if now else "", *cells)

    row("budget (moves)", "budget_moves")
    row("replica moves", "moves")
    row("beyond the fewest", "extra_moves_spent")
    row("proven optimal", "proven_optimal", fmt=lambda v: "yes" if v else "no")
    if any(p["bytes_to_move"] is not None for p in pts):
        row("bytes to move", "bytes_to_move", fmt=format_bytes)
    row("per-topic spread", "topic_spread", now=True)
    row("failover spread, broker down", "failover_worst_spread", now=True)
    if cur["rack_failover_worst_spread"] is not None:
        row("failover spread, rack down", "rack_failover_worst_spread", now=True)
    row("replica spread", "replica_spread", now=True)
    row("leader spread", "leader_spread", now=True)
    row("time (s)", "seconds", fmt=lambda v: f"{v:,.2f}")
    con.print(t)
    _render_verdicts(d, con)


def _render_verdicts(d: dict, con: Console) -> None:
    """Each point's verdict (strict priced once: by the strict column), its budget note, or why it was not
    planned; then the total time."""
    pts = d["points"]
    strict = strict_point(d)
    for p in pts:
        name = f"[bold]{safe_text(p['label'])}[/bold]"
        if p["usable"]:
            con.print(f"{name}: {safe_text(point_text(p, strict))}")
            if p["budget_note"]:
                con.print(f"  [dim]{safe_text(group_digits(p['budget_note']))}[/dim]")
        else:
            con.print(f"{name}: [yellow]not planned[/yellow]: {safe_text(p['reason'])}")
    con.print(f"Time {d['seconds']:,.2f} s for {sum(p['usable'] for p in pts)} plans, each verified and certified.")
