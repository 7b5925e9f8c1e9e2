"""``flowbalance batches``: split a plan into ordered batch files for kafka-reassign-partitions (registered by cli/app.py)."""
from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from flowbalance.batches import SOURCE, Batches, check_options, format_duration, split_plan, verify_batches
from flowbalance.planfile import read_plan
from flowbalance.errors import InputError
from flowbalance.formats.writers import election_json, reassignment_json, write_atomic
from flowbalance.load import load_cluster

from . import options as o
from .progress import Steps
from flowbalance.summary import format_bytes as _bytes

from .render import console, json_text, safe_text, warn
from .status import ForceOpt, fresh

PLACEHOLDER = "$BOOTSTRAP"
MAX_TABLE_ROWS = 40
_HOST = re.compile(r"^[^\s'\"`;&|<>]+$")
# split_plan's parameter -> the flag that sets it (the library names parameters; the user typed flags)
FLAGS = {"max_moves_per_broker": "--max-moves-per-broker", "max_bytes_per_batch": "--max-bytes-per-batch",
         "order": "--order"}
# split_plan's warnings name its limits (snake_case, never a prose word) as words of their own; a topic-partition
# name (letters, digits and ._- only, then -P) that merely contains one is left alone
_PARAM = re.compile(r"(?<![\w.-])(" + "|".join(p for p in FLAGS if "_" in p) + r")(?![\w.-])")


def as_flags(err: InputError) -> InputError:
    """A split_plan option error under the flag that sets the option; any other error as it is."""
    if err.source != SOURCE:
        return err
    return InputError(FLAGS.get(err.place, err.place), "", err.message, err.value, has_value=err.has_value)


def batch_name(i: int, count: int) -> str:
    """``batch-001.json``; more digits when there are more than 999 batches."""
    return f"batch-{i + 1:0{max(3, len(str(count)))}d}.json"


def bound_verdict(res: Batches) -> str:
    """``lower bound 200: met``; ``lower bound 1000: not met, 23 above it``, with ``, proven the fewest`` when an
    exact search showed no split has fewer."""
    b = res.bound
    n = len(res) - res.intra_batches  # intra-broker batches are apart: the bound is for the moves between brokers
    intra = (f" (+ {res.intra_batches} intra-broker batch{'es' if res.intra_batches != 1 else ''})"
             if res.intra_batches else "")
    if b is None or n <= b.batches:
        return f"lower bound {n if b is None else b.batches}: met{intra}"
    return (f"lower bound {b.batches}: not met, {n - b.batches} above it" + (", proven the fewest" if res.proven else "")
            + intra)


def bound_formula(res: Batches) -> str:
    """What the bound is made of: ``Lower bound 200 = max(per broker ⌈1000 steps / 5⌉ = 200 (broker 990), bytes
    ⌈9.7 TiB / 1.0 TiB⌉ = 10, most steps of one partition 1)``, after the steps alone when there are any."""
    b = res.bound
    if b is None:
        return "Lower bound: none"
    terms = []
    if b.per_broker is not None:
        who = f" (broker {b.busiest_broker})" if b.busiest_broker is not None else ""
        terms.append(f"per broker ⌈{b.busiest} steps / {b.max_moves_per_broker}⌉ = {b.per_broker}{who}")
    if b.per_bytes is not None:
        by = f"⌈{_bytes(b.bytes)} / {_bytes(b.max_bytes_per_batch)}⌉"
        if b.halves:
            by = f"max({by}, {b.halves} steps above half the limit)"
        terms.append(f"bytes {by} = {b.per_bytes}")
    if b.clique is not None and b.clique > (b.per_broker or 0):
        terms.append(f"{b.clique} steps no two of which can share a batch")
    terms.append(f"most steps of one partition {b.longest}")
    core = f"max({', '.join(terms)})" if len(terms) > 1 else terms[0]
    if b.alone:
        core = f"{b.alone} step{'s' if b.alone != 1 else ''} alone (above --max-bytes-per-batch) + {core}"
    return f"Lower bound {b.batches} = {core}"


def bound_dict(res: Batches) -> dict:
    b = res.bound
    d = {"batches": None if b is None else b.batches, "met": res.bound_met, "proven_fewest": res.proven,
         "method": res.method, "verdict": bound_verdict(res), "formula": bound_formula(res)}
    if b is not None:
        d.update({"alone": b.alone, "busiest_broker": b.busiest_broker, "busiest_broker_steps": b.busiest,
                  "per_broker": b.per_broker, "bytes": b.bytes, "steps_above_half": b.halves, "per_bytes": b.per_bytes,
                  "longest_partition": b.longest, "clique": b.clique})
    return d


def steps_text(res: Batches, folder: str, names: list[str], bootstrap: str, throttle: int | None,
               seconds: list[float | None]) -> str:
    """The commands to run, in order: each batch's --execute and --verify, then the preferred leader election."""
    def path(name: str) -> str:
        # quoted for the shell: the commands are meant to be pasted, whatever the folder is called
        return shlex.quote(str(Path(folder) / name))

    bs = bootstrap
    n = len(res)
    lines = [
        f"# flowbalance batches: {n} batch{'es' if n != 1 else ''} for {len(res.changed_rows)} changed partitions "
        f"({res.copies} replica copies); {bound_verdict(res)}",
        f"# {bound_formula(res)}",
        "# Run the batches in order; start a batch only when --verify reports every partition of the previous one complete.",
    ]
    if bs == PLACEHOLDER:
        lines.append("# Set BOOTSTRAP first, for example: BOOTSTRAP=broker1:9092")
    lines += [
        "#",
        "# To roll back (the current assignment of every partition the plan changes); if a batch is still in",
        "# progress, cancel it first with --cancel and that batch's file:",
        f"#   kafka-reassign-partitions --bootstrap-server {bs} --reassignment-json-file {path('batch-NNN.json')} --cancel",
        f"#   kafka-reassign-partitions --bootstrap-server {bs} --reassignment-json-file {path('rollback.json')} --execute",
        "",
    ]
    if n == 0:
        lines += ["# nothing to do: the plan changes no partition", ""]
    throttle_arg = f" --throttle {throttle}" if throttle else ""
    for i, (b, name) in enumerate(zip(res.batches, names)):
        size = f", {_bytes(b.bytes)}" if res.sizes_known else ""
        est = ""
        if throttle:
            est = f", estimated copy time {format_duration(seconds[i])}" + ("" if seconds[i] is not None else " (no sizes)")
        if b.intra:
            lines.append(f"# batch {i + 1} of {n}: {b.partitions} partitions move replicas between log directories of "
                         f"their brokers (JBOD){size}: a copy on the broker's own disks, throttled by")
            lines.append("# --replica-alter-log-dirs-throttle (bytes/s, per broker), not by --throttle")
            lines.append(f"kafka-reassign-partitions --bootstrap-server {bs} --reassignment-json-file {path(name)} "
                         f"--execute{throttle_arg}"
                         + (f" --replica-alter-log-dirs-throttle {throttle}" if throttle else ""))
        else:
            lines.append(f"# batch {i + 1} of {n}: {b.partitions} partitions, {b.copies} replica copies{size}{est}"
                         + (" (one step above --max-bytes-per-batch)" if b.oversized else ""))
            lines.append(f"kafka-reassign-partitions --bootstrap-server {bs} --reassignment-json-file {path(name)} "
                         f"--execute{throttle_arg}")
        lines.append("# repeat until every partition is complete; --verify also removes the throttle once the batch is done")
        lines.append(f"kafka-reassign-partitions --bootstrap-server {bs} --reassignment-json-file {path(name)} --verify")
        lines.append("")
    if len(res.leader_changed_rows):
        lines.append(f"# preferred leader election: {len(res.leader_changed_rows)} partitions whose first replica changes")
        lines.append(f"kafka-leader-election --bootstrap-server {bs} --election-type preferred "
                     f"--path-to-json-file {path('election.json')}")
    else:
        lines.append("# no preferred leader changes: no leader election needed")
    return "\n".join(lines) + "\n"


def summary(res: Batches, names: list[str], folder: str, seconds: list[float | None], throttle: int | None,
            limits: dict, files: list[str], warnings: list[str]) -> dict:
    known = res.sizes_known
    per = []
    for i, (b, name) in enumerate(zip(res.batches, names)):
        per.append({
            "batch": i + 1,
            "file": str(Path(folder) / name),
            "partitions": b.partitions,
            "steps": b.steps,
            "reorder_only": b.reorder_only,
            "finished": b.finished,
            "copies": b.copies,
            "bytes": b.bytes if known else None,
            "max_broker_participation": b.max_participation,
            "oversized": b.oversized,
            "intra_broker": b.intra,
            "estimated_seconds": seconds[i],
        })
    total = sum(s for s in seconds if s is not None) if throttle and known else None
    return {
        "batches": len(res),
        "lower_bound": bound_dict(res),
        "per_batch": per,
        "totals": {
            "changed_partitions": len(res.changed_rows),
            "reorder_only_partitions": res.reorder_only,
            "steps": sum(b.steps for b in res.batches),
            "copies": res.copies,
            "bytes": res.bytes if known else None,
            "max_broker_participation": max((b.max_participation for b in res.batches), default=0),
            "leader_changes": len(res.leader_changed_rows),
            "estimated_seconds": total,
        },
        "limits": limits,
        "warnings": warnings,
        "files": files,
    }


def render(d: dict, con) -> None:
    t = d["totals"]
    lim = d["limits"]
    parts = []
    if lim["max_moves_per_broker"] is not None:
        parts.append(f"at most {lim['max_moves_per_broker']} per broker")
    if lim["max_bytes_per_batch"] is not None:
        parts.append(f"at most {_bytes(lim['max_bytes_per_batch'])} per batch")
    if lim["one_replica_per_partition"]:
        parts.append("one new replica per partition per batch")
    parts.append(f"order {lim['order']}")
    con.print(f"[bold]Batches[/bold]: {d['batches']} ({safe_text(d['lower_bound']['verdict'])}) for "
              f"{t['changed_partitions']} changed partitions ({t['reorder_only_partitions']} reorder only), "
              f"{t['copies']} replica copies" + (f", {_bytes(t['bytes'])}" if t["bytes"] is not None else "")
              + f"; {', '.join(parts)}")
    con.print(safe_text(d["lower_bound"]["formula"]))
    rows = d["per_batch"]
    if rows:
        note = f" (first {MAX_TABLE_ROWS} of {len(rows)}; --json lists all)" if len(rows) > MAX_TABLE_ROWS else ""
        tab = Table(title="Batches" + note, title_justify="left")
        for col in ("batch", "partitions", "copies", "bytes", "max per broker", "est. time"):
            tab.add_column(col, justify="right")
        throttle = lim["throttle"]
        for r in rows[:MAX_TABLE_ROWS]:
            est = format_duration(r["estimated_seconds"]) if throttle else "-"
            tab.add_row(str(r["batch"]) + (" [yellow]*[/yellow]" if r["oversized"] else ""), str(r["partitions"]),
                        str(r["copies"]), _bytes(r["bytes"]), str(r["max_broker_participation"]), est)
        con.print(tab)
    if lim["throttle"] and rows:
        con.print(f"Estimated copy time at {lim['throttle']:,} B/s: {format_duration(t['estimated_seconds'])}"
                  + ("" if t["estimated_seconds"] is not None else " (partition sizes unknown: give --sizes)"))
    con.print(f"Leader changes: {t['leader_changes']}; wrote {len(d['files'])} files: "
              f"{', '.join(safe_text(Path(f).name) for f in d['files'][:6])}{', ...' if len(d['files']) > 6 else ''}")


def batches(
    plan_file: Path = typer.Argument(..., metavar="PLAN", show_default=False,
                                     help="The reassignment JSON to split (as flowbalance plan -o writes)."),
    current: Path = typer.Option(..., "--current", show_default=False,
                                 help="Current assignment: reassignment JSON, --generate output or kafka-topics --describe text."),
    out: Path = typer.Option(..., "-o", "--out", show_default=False,
                             help="Folder for batch-NNN.json, rollback.json, election.json and steps.txt (created if missing)."),
    brokers: o.PathOpt = o.BrokersOpt,
    sizes: o.PathOpt = o.SizesOpt,
    format: Optional[str] = o.FormatOpt,
    max_moves_per_broker: Optional[int] = typer.Option(
        None, "--max-moves-per-broker", help="At most K partition moves per broker per batch; a broker takes part in a move when it gains or "
                                           "loses a replica (default: no limit)."),
    max_bytes_per_batch: Optional[int] = typer.Option(
        None, "--max-bytes-per-batch", help="At most B bytes copied per batch (a single larger step gets a batch of its own)."),
    one_replica_per_partition: bool = typer.Option(
        False, "--one-replica-per-partition", help="Add one new replica per partition per batch (moves in several steps)."),
    order: str = typer.Option("largest", "--order", help="Fill batches with partitions in this order: largest, smallest or as-is (plan file order)."),
    throttle: Optional[int] = typer.Option(None, "--throttle", help="Replication throttle in bytes/s for --execute (and the time estimate)."),
    bootstrap_server: Optional[str] = typer.Option(None, "--bootstrap-server", help="HOST:PORT for the commands in steps.txt (default: $BOOTSTRAP)."),
    json_out: bool = o.JsonOpt,
    disable_rack_aware: bool = o.NoRackOpt,
    force: bool = ForceOpt,
    quiet: bool = o.QuietOpt,
) -> None:
    """Split PLAN into ordered batches for kafka-reassign-partitions, with rollback, election and steps.txt: the
    fewest batches found within the limits, printed beside their lower bound."""
    try:
        check_options(max_moves_per_broker, max_bytes_per_batch, order)
    except InputError as err:
        raise as_flags(err) from None
    if throttle is not None and throttle < 1:
        raise InputError("--throttle", "", "must be at least 1 (bytes per second)", throttle)
    if bootstrap_server is not None and not _HOST.match(bootstrap_server):
        raise InputError("--bootstrap-server", "", "expected HOST:PORT[,HOST:PORT...] without spaces or shell characters",
                         bootstrap_server)
    if out.exists() and not out.is_dir():
        raise InputError("--out", "", "exists and is not a folder", str(out))
    with Steps(total=3, enabled=not quiet) as steps:
        steps.step("reading input")
        loaded = load_cluster(current, brokers=brokers, sizes=sizes, fmt=format, disable_rack_aware=disable_rack_aware)
        fresh_notes = fresh(plan_file, loaded, current, force)  # a stale plan is refused unless --force
        pf = read_plan(plan_file, loaded.state, current_source=str(current))
        steps.step("splitting into batches")
        res = split_plan(loaded.state, pf.final, max_moves_per_broker=max_moves_per_broker,
                         max_bytes_per_batch=max_bytes_per_batch, one_replica_per_partition=one_replica_per_partition,
                         order=order, rank=pf.rank)
        verify_batches(res)  # every batch file and the rollback, as written, before anything is written
        steps.step("writing files")
    warnings = list(loaded.warnings) + fresh_notes + [_PARAM.sub(lambda m: FLAGS[m.group(1)], w) for w in res.warnings]
    if throttle and not res.sizes_known and len(res):
        warnings.append("--throttle: partition sizes are unknown (give --sizes), so copy times cannot be estimated")

    folder = str(out)
    names = [batch_name(i, len(res)) for i in range(len(res))]
    log_dirs = pf.final.had_log_dirs
    files = {str(out / name): reassignment_json(res.batch_state(i), log_dirs=log_dirs) for i, name in enumerate(names)}
    files[str(out / "rollback.json")] = reassignment_json(res.rollback_state(), log_dirs=log_dirs)
    files[str(out / "election.json")] = election_json(pf.final, res.leader_changed_rows)
    seconds = res.estimated_seconds(throttle)
    files[str(out / "steps.txt")] = steps_text(res, folder, names, bootstrap_server or PLACEHOLDER, throttle, seconds)

    if out.is_dir():
        stale = sorted(str(p) for p in out.glob("batch-*.json") if str(p) not in files)
        if stale:
            warnings.append(f"{folder}: {len(stale)} batch files from an earlier run are not part of these steps "
                            f"(for example {Path(stale[0]).name}); steps.txt lists the current ones")
    inputs = [str(p) for p in (plan_file, current, brokers, sizes) if p is not None]
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError("--out", "", f"cannot create the folder: {err.strerror or err}", folder) from None
    write_atomic(files, inputs)

    for w in warnings:
        warn(w)
    limits = {
        "max_moves_per_broker": max_moves_per_broker,
        "max_bytes_per_batch": max_bytes_per_batch,
        "one_replica_per_partition": one_replica_per_partition,
        "order": order,
        "throttle": throttle,
        "bootstrap_server": bootstrap_server,
    }
    data = summary(res, names, folder, seconds, throttle, limits, sorted(files), warnings)
    if quiet:
        return
    if json_out:
        sys.stdout.write(json_text(data, sort_keys=False))
    else:
        render(data, console())
