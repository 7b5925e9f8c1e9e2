"""``flowbalance check``: validate the input and report the metrics; exit 0 balanced, 1 not, 2 bad input."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from flowbalance.load import load_cluster, mark_removed, parse_broker_ids
from flowbalance.metrics import measure
from flowbalance.planner import request_targets
from flowbalance.request import PlanRequest
from flowbalance.reorder import reorder_gain
from flowbalance.summary import Thresholds, evaluate, metrics_dict

from . import options as o
from .render import console, json_text, render_check, warn


def check(
    current: Path = o.Current,
    brokers: o.PathOpt = o.BrokersOpt,
    sizes: o.PathOpt = o.SizesOpt,
    remove: Optional[str] = o.RemoveOpt,
    format: Optional[str] = o.FormatOpt,
    json_out: bool = o.JsonOpt,
    all_rows: bool = o.AllRowsOpt,
    disable_rack_aware: bool = o.NoRackOpt,
    max_replica_spread: int = typer.Option(1, "--max-replica-spread", min=1, help="Largest replica spread per broker that passes."),
    max_topic_spread: int = typer.Option(1, "--max-topic-spread", min=1, help="Largest per-topic spread that passes."),
    no_per_topic: bool = typer.Option(False, "--no-per-topic", help="Do not check per-topic balance."),
    max_leader_spread: int = typer.Option(1, "--max-leader-spread", min=1, help="Largest leader spread that passes."),
    max_failover_spread: Optional[int] = typer.Option(
        None, "--max-failover-spread", min=0, help="Largest single-broker failover spread that passes (default: not checked)."),
) -> None:
    """Validate CURRENT and print its balance metrics. Exit 0 when balanced, 1 when not, 2 on bad input."""
    loaded = load_cluster(current, brokers=brokers, sizes=sizes, fmt=format, disable_rack_aware=disable_rack_aware)
    state = loaded.state
    removed = parse_broker_ids(remove, "--remove") if remove else []
    if removed:
        state = mark_removed(state, removed, "--remove")
    m = measure(state)
    th = Thresholds(
        replica_spread=max_replica_spread,
        topic_spread=None if no_per_topic else max_topic_spread,
        leader_spread=max_leader_spread,
        failover_spread=max_failover_spread,
    )
    checks = evaluate(state, m, th)
    data = metrics_dict(state, m)
    targets = request_targets(loaded.state, PlanRequest(remove=tuple(removed), per_topic=not no_per_topic))
    if targets is not None:  # what a plan would aim at: within racks when the rack rule fixes their totals
        for row, lo, hi in zip(data["per_broker"], *targets):
            row["target_min"], row["target_max"] = int(lo), int(hi)
    gain = reorder_gain(state, per_topic=not no_per_topic)
    data["reorder_only"] = {"leader_spread": list(gain.leader_spread), "failover_worst_spread": list(gain.failover_worst),
                            "reordered_partitions": gain.reordered_partitions, "improves": gain.improves,
                            "text": gain.text() if gain.improves else None}
    for w in loaded.warnings:
        warn(w)
    if json_out:
        data["checks"] = checks
        data["balanced"] = all(checks.values())
        data["warnings"] = loaded.warnings
        sys.stdout.write(json_text(data))
    else:
        render_check(data, checks, console(), all_rows=all_rows)
    raise typer.Exit(0 if all(checks.values()) else 1)
