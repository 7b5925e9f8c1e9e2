"""``flowbalance compare``: plan the same input with every strategy and show the results side by side."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

from flowbalance.load import load_cluster
from flowbalance.planner import plan
from flowbalance.request import STRATEGIES
from flowbalance.status import plan_input
from flowbalance.summary import compare_summary

from . import options as o
from .plan import request
from .progress import Steps
from .render import console, json_text, render_compare, warn


def compare(
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
    per_topic: str = o.PerTopicOpt,
    exclude_brokers: Optional[str] = o.ExcludeBrokersOpt,
    pin: Optional[List[str]] = o.PinOpt,
    format: Optional[str] = o.FormatOpt,
    json_out: bool = o.JsonOpt,
    disable_rack_aware: bool = o.NoRackOpt,
    from_target: bool = o.FromTargetOpt,
    move_unhealthy: bool = o.MoveUnhealthyOpt,
) -> None:
    """Plan CURRENT with the flow and the template strategy and compare moves, bytes and spreads (writes nothing)."""
    req = request(remove, add, replace, replication_factor, topic_rf, topics, exclude_topics, no_per_topic,
                  per_topic_mode=per_topic, exclude_brokers=exclude_brokers, pin=pin)
    # the template strategy places by rotation templates and cannot keep brokers closed to new replicas
    strategies = [s for s in STRATEGIES if s == "flow" or not req.exclude_brokers]
    with Steps(total=1 + 7 * len(strategies)) as steps:
        steps.step("reading input")
        loaded = load_cluster(current, brokers=brokers, sizes=sizes, fmt=format, disable_rack_aware=disable_rack_aware)
        given = plan_input(loaded.state, loaded.status, str(current), from_target=from_target,
                           move_unhealthy=move_unhealthy, names=o.STATUS_FLAGS)
        plans = {s: plan(given.state, req.with_changes(strategy=s), pinned=given.pinned, notes=given.notes,
                         progress=lambda step, of, name, s=s: steps.step(f"{s}: {name}"))
                 for s in strategies}
    for w in loaded.warnings:
        warn(w)
    for s in STRATEGIES:
        if s not in strategies:
            warn(f"strategy {s} not compared: it plans no request with --exclude-brokers")
    data = compare_summary(plans)
    if json_out:
        sys.stdout.write(json_text(data))
    else:
        render_compare(data, console())
