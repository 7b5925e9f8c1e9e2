"""``flowbalance plan``: plan a reassignment and write Kafka's files (plan, rollback, leader election)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from flowbalance.errors import InputError
from flowbalance.formats.writers import check_outputs, election_json, reassignment_json, write_atomic
from flowbalance.load import load_cluster
from flowbalance.plan import STAGES, plan
from flowbalance.report import build_report
from flowbalance.request import plan_request
from flowbalance.status import plan_input
from flowbalance.summary import plan_summary

from . import options as o
from .progress import Steps
from .render import console, json_text, render_plan, warn
from .report_view import render_report


def request(remove, add, replace, replication_factor, topic_rf, topics, exclude_topics, no_per_topic) -> dict:
    """The keyword arguments of ``flowbalance.plan.plan`` from the command-line request options."""
    return plan_request(remove, add, replace, replication_factor, topic_rf, topics, exclude_topics, no_per_topic)


def plan_command(
    current: Path = o.Current,
    out: Path = typer.Option(..., "-o", "--out", help="Where to write the reassignment JSON (for --execute)."),
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
    stages: str = typer.Option(",".join(STAGES), "--stages", help="Flow stages to run, in order: replicas,leaders,followers."),
    rollback: o.PathOpt = typer.Option(None, "--rollback", help="Write the current assignment of changed partitions here."),
    election: o.PathOpt = typer.Option(None, "--election", help="Write partitions whose leader changes (kafka-leader-election)."),
    all_partitions: bool = typer.Option(False, "--all", help="Write every partition, not only the changed ones."),
    format: Optional[str] = o.FormatOpt,
    json_out: bool = o.JsonOpt,
    disable_rack_aware: bool = o.NoRackOpt,
    from_target: bool = o.FromTargetOpt,
    move_unhealthy: bool = o.MoveUnhealthyOpt,
    quiet: bool = o.QuietOpt,
    verbose: bool = o.VerboseOpt,
) -> None:
    """Plan a reassignment of CURRENT with the fewest replica moves, and write it for kafka-reassign-partitions."""
    req = request(remove, add, replace, replication_factor, topic_rf, topics, exclude_topics, no_per_topic)
    outputs = [str(p) for p in (out, rollback, election) if p is not None]
    inputs = [str(p) for p in (current, brokers, sizes) if p is not None]
    check_outputs(outputs, inputs)
    stage_list = [s.strip() for s in stages.split(",") if s.strip()]
    if not stage_list:
        raise InputError("--stages", "", "no stage given", stages)
    with Steps(total=7, enabled=not quiet) as steps:
        steps.step("reading input")
        loaded = load_cluster(current, brokers=brokers, sizes=sizes, fmt=format, disable_rack_aware=disable_rack_aware)
        given = plan_input(loaded.state, loaded.status, str(current), from_target=from_target,
                           move_unhealthy=move_unhealthy)
        p = plan(given.state, stages=stage_list, strategy=strategy, progress=steps.step, objective=objective,
                 balance=balance, disk_tolerance=disk_tolerance, pinned=given.pinned, notes=given.notes, **req)
        steps.step("writing files")
        rows = None if all_partitions else p.changes.changed_rows
        files = {str(out): reassignment_json(p.after, rows)}
        if rollback is not None:
            files[str(rollback)] = reassignment_json(p.before, p.changes.changed_rows)
        if election is not None:
            files[str(election)] = election_json(p.after, p.changes.leader_changed_rows)
        write_atomic(files, inputs)
    for w in loaded.warnings:
        warn(w)
    data = plan_summary(p)
    data["files"] = sorted(files)
    if quiet:
        return
    if json_out:
        sys.stdout.write(json_text(data))
        return
    con = console()
    render_report(build_report(p.before, p.after, proven_optimal=p.certificate.proven_optimal,
                               lower_bound=p.certificate.lower_bound, metrics=(p.metrics_before, p.metrics_after),
                               changes=p.changes), con, summary=False)
    render_plan(data, con, verbose=verbose)
