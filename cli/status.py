"""``flowbalance status``: where a running plan stands in a later dump (registered by cli/app.py)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from flowbalance.batches import format_duration
from flowbalance.errors import InputError
from flowbalance.load import load_cluster
from flowbalance.summary import format_bytes as _bytes
from flowbalance.tracking import DIVERGED, IN_FLIGHT, NOT_STARTED, StalePlanError, fresh_notes, track

from . import options as o
from .render import console, json_text, safe_text, warn

ForceOpt = typer.Option(False, "--force", help="Go ahead with a stale plan: one whose partitions changed since it "
                                               "was made, not by it, in the current dump.")


def as_force_flag(err: StalePlanError) -> InputError:
    """The stale-plan error with its remedy named by the command line's flag."""
    return InputError(err.source, err.place, err.message + " (use --force to go ahead anyway)", err.value,
                      has_value=err.has_value)


def fresh(plan_file: Path, loaded, current: Path, force: bool) -> list[str]:
    """``batches`` and ``report --plan``: refuse a stale plan in one line unless ``--force``; the notes to show."""
    return fresh_progress(plan_file, loaded, current, force)[0]


def fresh_progress(plan_file: Path, loaded, current: Path, force: bool):
    """``fresh``, and the classified plan too (its ``meta`` is the sidecar, or None): (notes, progress)."""
    prog = track(plan_file, loaded.state, loaded.status, current_source=str(current))
    try:
        return fresh_notes(prog, force), prog
    except StalePlanError as err:
        raise as_force_flag(err) from None


def status(
    plan_file: Path = typer.Argument(..., metavar="PLAN", show_default=False,
                                     help="The reassignment JSON being executed (as flowbalance plan -o wrote it, "
                                          "with its sidecar: plan.json -> plan.meta.json)."),
    current: Path = typer.Option(..., "--current", show_default=False,
                                 help="A dump taken now: kafka-topics --describe text (shows the moves in flight), "
                                      "reassignment JSON or --generate output."),
    brokers: o.PathOpt = o.BrokersOpt,
    sizes: o.PathOpt = o.SizesOpt,
    format: Optional[str] = o.FormatOpt,
    throttle: Optional[int] = typer.Option(None, "--throttle", help="Replication throttle in bytes/s, for the "
                                                                    "estimate of the time left (needs --sizes)."),
    force: bool = ForceOpt,
    json_out: bool = o.JsonOpt,
    disable_rack_aware: bool = o.NoRackOpt,
) -> None:
    """Say for each partition of PLAN whether it is done, in flight, not started or diverged (changed by someone
    else) in --current, with totals, bytes done and left and the time left at --throttle. A stale plan is refused
    unless --force."""
    if throttle is not None and throttle < 1:
        raise InputError("--throttle", "", "must be at least 1 (bytes per second)", throttle)
    loaded = load_cluster(current, brokers=brokers, sizes=sizes, fmt=format, disable_rack_aware=disable_rack_aware)
    prog = track(plan_file, loaded.state, loaded.status, current_source=str(current))
    try:
        notes = fresh_notes(prog, force)
    except StalePlanError as err:
        raise as_force_flag(err) from None
    data = prog.summary(throttle)
    data["notes"] = notes
    data["forced"] = bool(force and prog.stale)
    warnings = [w for w in loaded.warnings if "being reassigned right now" not in w]  # that is what status shows
    for w in warnings + notes:
        warn(w)
    if json_out:
        sys.stdout.write(json_text(data, sort_keys=False))
        return
    render(data, prog, console())


def render(d: dict, prog, con) -> None:
    t, b = d["totals"], d["bytes"]
    made = d["made"]
    head = f"[bold]Plan[/bold] {safe_text(d['plan'])}: {t['planned']} partitions to change"
    if made is not None:
        req = ", ".join(f"{k} {v}" for k, v in made["request"].items()) or "defaults"
        head += f" (made {safe_text(made['created'])} from {safe_text(made['current'])}; request: {safe_text(req)})"
    con.print(head)
    tab = Table(title=f"Status in {safe_text(d['current'])}", title_justify="left")
    for col in ("state", "partitions", "names"):
        tab.add_column(col, justify="right" if col == "partitions" else "left")
    for label, key, code in (("done", "done", None), ("in flight", "in_flight", IN_FLIGHT),
                             ("not started", "not_started", NOT_STARTED), ("diverged", "diverged", DIVERGED)):
        names = prog.names_of(code) if code is not None and t[key] else ""
        tab.add_row(label, str(t[key]), safe_text(names))
    if t["changed_elsewhere"]:
        tab.add_row("changed elsewhere", str(t["changed_elsewhere"]), safe_text(prog.elsewhere_names()))
    con.print(tab)
    if b["left"] is not None:
        done = "unknown (no sidecar)" if b["done"] is None else _bytes(b["done"])
        line = f"Bytes: {done} done, {_bytes(b['left'])} left"
        if b["unknown_sizes"]:
            line += f" ({b['unknown_sizes']} partitions of unknown size not counted)"
        con.print(line)
    if d["throttle"]:
        secs = d["estimated_seconds"]
        con.print(f"Estimated time left at {d['throttle']:,} B/s: {format_duration(secs)}"
                  + ("" if secs is not None else " (partition sizes unknown: give --sizes)"))
    left = t["in_flight"] + t["not_started"]
    con.print("Stale: " + ("yes (forced)" if d["stale"] else "no" if d["checked"] else "not checked (no sidecar)")
              + f"; {left} partitions left" + (", all done" if left == 0 and t["diverged"] == 0 else ""))
