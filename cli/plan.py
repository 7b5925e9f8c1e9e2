"""``flowbalance plan``: plan a reassignment and write Kafka's files (plan, rollback, leader election)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

import typer

from flowbalance.formats.writers import check_outputs, write_atomic
from flowbalance.load import load_cluster
from flowbalance.planner import plan, plan_files
from flowbalance.report import build_report
from flowbalance.errors import RequestError
from flowbalance.request import STAGES, PlanRequest, parse_broker_ids, parse_replace, parse_topic_rf
from flowbalance.planmeta import rows_sha256, sidecar_files, sidecar_path
from flowbalance.status import plan_input
from flowbalance.summary import plan_summary
from flowbalance.tracking import resume_input

from . import options as o
from .progress import Steps
from .render import console, json_text, render_plan, warn
from .report_view import render_report


def request(remove=None, add=None, replace=None, replication_factor=None, topic_rf=None, topics=None,
            exclude_topics=None, no_per_topic=False, **choices) -> PlanRequest:
    """The ``PlanRequest`` of the command-line request options (texts as typed; ``choices``: strategy, objective,
    balance, disk_tolerance, stages, exclude_brokers, pin, demote). Validated: a bad value is a ``RequestError``
    shown under its flag."""
    if "stages" in choices:
        choices["stages"] = tuple(s.strip() for s in choices["stages"].split(",") if s.strip())
    for name in ("exclude_brokers", "demote"):
        if choices.get(name) is not None:
            choices[name] = tuple(parse_broker_ids(choices[name], name))
        else:
            choices.pop(name, None)
    choices["pin"] = pin_patterns(choices.get("pin") or ())
    return PlanRequest(
        remove=tuple(parse_broker_ids(remove, "remove")) if remove else (),
        add=tuple(parse_broker_ids(add, "add")) if add else (),
        replace=parse_replace(replace),
        replication_factor=replication_factor,
        topic_rf=parse_topic_rf(topic_rf) if topic_rf else (),
        topics=topics, exclude_topics=exclude_topics, per_topic=not no_per_topic, **choices,
    ).validate()


def pin_patterns(items) -> tuple[str, ...]:
    """``--pin`` values as patterns: ``@FILE`` is read, one pattern per line (blank lines and ``#`` comments
    skipped); an unreadable or empty file is a ``RequestError`` on ``pin``."""
    out: list[str] = []
    for item in items:
        if not item.startswith("@"):
            out.append(item)
            continue
        try:
            text = Path(item[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise RequestError("pin", f"cannot read the pattern file ({type(err).__name__})", item) from None
        lines = [x.strip() for x in text.splitlines() if x.strip() and not x.strip().startswith("#")]
        if not lines:
            raise RequestError("pin", "the pattern file has no pattern", item)
        out.extend(lines)
    return tuple(out)


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
    per_topic: str = o.PerTopicOpt,
    strategy: str = o.StrategyOpt,
    objective: str = o.ObjectiveOpt,
    balance: str = o.BalanceOpt,
    disk_tolerance: float = o.DiskToleranceOpt,
    stages: str = typer.Option(",".join(STAGES), "--stages", help="Flow stages to run, of replicas,leaders,followers (always run in that order)."),
    extra_moves: str = o.ExtraMovesOpt,
    exclude_brokers: Optional[str] = o.ExcludeBrokersOpt,
    pin: Optional[List[str]] = o.PinOpt,
    demote: Optional[str] = o.DemoteOpt,
    balance_dirs: bool = o.BalanceDirsOpt,
    dir_tolerance: float = o.DirToleranceOpt,
    remove_log_dir: Optional[List[str]] = o.RemoveLogDirOpt,
    rollback: o.PathOpt = typer.Option(None, "--rollback", help="Write the current assignment of changed partitions here."),
    election: o.PathOpt = typer.Option(None, "--election", help="Write partitions whose leader changes (kafka-leader-election)."),
    all_partitions: bool = typer.Option(False, "--all", help="Write every partition, not only the changed ones."),
    format: Optional[str] = o.FormatOpt,
    json_out: bool = o.JsonOpt,
    disable_rack_aware: bool = o.NoRackOpt,
    from_target: bool = o.FromTargetOpt,
    move_unhealthy: bool = o.MoveUnhealthyOpt,
    resume: o.PathOpt = typer.Option(None, "--resume", help="CURRENT is a later dump: plan again what this plan has "
                                     "not done (done partitions stay, moves in flight finish; its request unless "
                                     "request options are given)."),
    quiet: bool = o.QuietOpt,
    verbose: bool = o.VerboseOpt,
) -> None:
    """Plan a reassignment of CURRENT with the fewest replica moves, and write it for kafka-reassign-partitions."""
    req = request(remove, add, replace, replication_factor, topic_rf, topics, exclude_topics, no_per_topic,
                  per_topic_mode=per_topic, strategy=strategy, objective=objective, balance=balance,
                  disk_tolerance=disk_tolerance, stages=stages, extra_moves=extra_moves,
                  exclude_brokers=exclude_brokers, pin=pin, demote=demote, balance_dirs=balance_dirs,
                  dir_tolerance=dir_tolerance, remove_log_dirs=tuple(remove_log_dir or ()))
    outputs = [str(p) for p in (out, rollback, election) if p is not None] + [sidecar_path(out)]
    inputs = [str(p) for p in (current, brokers, sizes, resume) if p is not None]
    inputs += [sidecar_path(resume)] if resume is not None else []
    check_outputs(outputs, inputs)
    with Steps(total=9, enabled=not quiet) as steps:
        steps.step("reading input")
        loaded = load_cluster(current, brokers=brokers, sizes=sizes, fmt=format, disable_rack_aware=disable_rack_aware)
        if resume is not None:
            resumed = resume_input(resume, loaded.state, loaded.status, req, current_source=str(current),
                                   move_unhealthy=move_unhealthy, names=o.STATUS_FLAGS)
            given, req = resumed.input, resumed.request
        else:
            given = plan_input(loaded.state, loaded.status, str(current), from_target=from_target,
                               move_unhealthy=move_unhealthy, names=o.STATUS_FLAGS)
        p = plan(given.state, req, pinned=given.pinned, notes=given.notes,
                 progress=lambda step, of, name: steps.step(name))
        steps.step("writing files")
        texts = plan_files(p, all_partitions=all_partitions)
        sha = rows_sha256(p.after, None if all_partitions else p.file_rows)  # the plan file's digest
        files = {str(out): texts.plan, **sidecar_files(out, given.state, req, texts.plan, current=str(current),
                                                       plan_sha=sha)}
        if rollback is not None:
            files[str(rollback)] = texts.rollback
        if election is not None:
            files[str(election)] = texts.election
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
    render_report(build_report(p), con, summary=False, more="`flowbalance report --plan --all`")
    render_plan(data, con, verbose=verbose)
    if "demote" in data:
        d = data["demote"]
        con.print(f"Demote {','.join(map(str, d['brokers']))}: {d['moved_off']:,} leaderships moved off; "
                  f"{d['not_demoted']:,} partitions could not be demoted"
                  + (f" ({', '.join(d['not_demoted_partitions'])}{', …' if d['not_demoted'] > 5 else ''})"
                     if d["not_demoted"] else ""), highlight=False, markup=False)
