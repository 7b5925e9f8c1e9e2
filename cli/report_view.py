"""The rich terminal view of a report (``flowbalance report``, and the end of ``flowbalance plan``).

Works from the plain dict of ``flowbalance.report.build_report``; colours only on a terminal (rich turns them
off when output is piped).
"""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from flowbalance.summary import format_bytes as _bytes

from .render import dirs_text, failover_line, moves_line, safe_text, topics_line

MAX_ROWS = 40
BAR = 16


def _bar(value: int | None, top: int) -> str:
    """A compact bar of eighth blocks, ``BAR`` cells at ``top``."""
    if value is None or top <= 0:
        return ""
    eighths = round(BAR * 8 * value / top)
    full, part = divmod(eighths, 8)
    return "█" * full + (" ▏▎▍▌▋▊▉"[part] if part else "")


def _ba(pair: list, fmt=str, plan: bool = True) -> str:
    a, b = pair
    if a is None:
        return "-"
    if not plan or b is None:
        return fmt(a)
    if a == b:
        return fmt(a)
    return f"{fmt(a)} → {fmt(b)}"


def _pick_rows(rows: list[dict]) -> tuple[list[dict], str]:
    if len(rows) <= MAX_ROWS:
        return rows, ""
    key = lambda r: (r["replicas"][1] if r["replicas"][1] is not None else r["replicas"][0], r["broker"])  # noqa: E731
    srt = sorted(rows, key=key)
    half = MAX_ROWS // 2
    return srt[:half] + srt[-half:], f" ({half} least and {half} most loaded of {len(rows)}; --json lists all)"


def broker_view(rep: dict) -> Table:
    plan = rep["has_plan"]
    rows, note = _pick_rows(rep["per_broker"])
    t = Table(title=("Brokers, before → after" if plan else "Brokers") + note, title_justify="left")
    for col, just in (("broker", "right"), ("rack", "left"), ("replicas", "right"), ("", "left"),
                      ("target", "right"), ("leaders", "right")):
        t.add_column(col, justify=just)
    has_bytes = rep["cluster"]["sizes_known"]
    if has_bytes:
        t.add_column("bytes", justify="right")
        t.add_column("disk", justify="right")
    top = max((max(x for x in r["replicas"] if x is not None) for r in rep["per_broker"]), default=0)
    for r in rows:
        now = r["replicas"][1] if plan else r["replicas"][0]
        lo, hi = r["target_replicas"]
        off = now is not None and not r["removed"] and not (lo <= now <= hi)
        bar = _bar(now, top)
        bar = f"[yellow]{bar}[/yellow]" if off else f"[cyan]{bar}[/cyan]"
        name = safe_text(r["broker"]) + (" [dim](remove)[/dim]" if r["removed"] else "")
        cells = [name, safe_text(r["rack"]) if r["rack"] else "-", _ba(r["replicas"], plan=plan), bar, f"{lo}" if lo == hi else f"{lo}-{hi}",
                 _ba(r["leaders"], plan=plan)]
        if has_bytes:
            cells.append(_ba(r["bytes"], _bytes, plan=plan))
            cap = r["capacity_bytes"]
            used = r["bytes"][1] if plan and r["bytes"][1] is not None else r["bytes"][0]
            if cap and used is not None:
                pct = 100 * used / cap
                cells.append(f"[bold red]{pct:.0f}%[/bold red]" if pct > 100 else f"{pct:.0f}%")
            else:
                cells.append("-")
        t.add_row(*cells)
    return t


def failover_view(rep: dict, key: str = "failover", title: str = "broker") -> Table | None:
    """Survivors' leader counts when each broker (or rack) fails: min, max, spread; the worst in red."""
    fo = rep.get(key)
    if not fo or not fo["table"]:
        return None
    plan = rep["has_plan"]
    rows = fo["table"]
    note = ""
    if len(rows) > MAX_ROWS:
        sort_key = (lambda r: -(r["after"] or r["before"])["spread"])
        rows = sorted(rows, key=sort_key)[:MAX_ROWS]
        note = f" (the {MAX_ROWS} worst of {len(fo['table'])})"
    wb = fo["worst_before"]["failed"]
    wa = fo["worst_after"]["failed"] if fo["worst_after"] else None
    t = Table(title=f"Leaders when one {title} fails{note}", title_justify="left")
    t.add_column(f"failed {title}", justify="right")
    t.add_column("before min-max", justify="right")
    t.add_column("spread", justify="right")
    if plan:
        t.add_column("after min-max", justify="right")
        t.add_column("spread", justify="right")
    for r in rows:
        b = r["before"]
        sb = f"[bold red]{b['spread']}[/bold red]" if r["failed"] == wb else str(b["spread"])
        cells = [safe_text(r["failed"]), f"{b['min']}-{b['max']}", sb]
        if plan:
            a = r["after"]
            if a is None:
                cells += ["-", "-"]
            else:
                sa = f"[bold red]{a['spread']}[/bold red]" if r["failed"] == wa else f"[green]{a['spread']}[/green]"
                cells += [f"{a['min']}-{a['max']}", sa]
        t.add_row(*cells)
    return t


def render_report(rep: dict, con: Console, *, summary: bool = True) -> None:
    """The whole report; ``summary=False`` shows only the broker and failover tables (``plan`` prints its own
    summary after them)."""
    c = rep["cluster"]
    removing = f", removing {','.join(map(str, c['removed_brokers']))}" if c["removed_brokers"] else ""
    con.print(f"[bold]Cluster[/bold]: {c['brokers']} brokers ({c['live_brokers']} live{removing}), {len(c['racks'])} racks, "
              f"{c['topics']} topics, {c['partitions']} partitions")
    con.print(broker_view(rep))
    for key, title in (("failover", "broker"), ("rack_failover", "rack")):
        t = failover_view(rep, key, title)
        if t is not None:
            con.print(t)
    if not summary:
        return
    s = rep["spreads"]
    plan = rep["has_plan"]
    line = ", ".join(f"{safe_text(k.replace('_', ' '))} {_ba(v, _bytes if k == 'bytes' else str, plan=plan)}"
                     for k, v in s.items() if v[0] is not None)
    con.print(f"[bold]Spreads[/bold] (max − min per broker): {line}")
    dirs = rep.get("log_dirs") or [None, None]
    if dirs[0] is not None:
        after = f" → {dirs_text(dirs[1])}" if dirs[1] is not None and plan else ""
        con.print(f"[bold]Log directories[/bold]: {dirs_text(dirs[0])}{after}")
    m = rep["moves"]
    if m is not None:
        con.print(moves_line(m))
        if m.get("per_topic"):
            con.print(topics_line(m))
        if m.get("failover"):
            con.print(failover_line(m))
        if m["bytes_to_move"] is not None:
            con.print(f"  bytes to move: {_bytes(m['bytes_to_move'])}")
        con.print(f"  {m['changed_partitions']} partitions change ({m['reorder_only_partitions']} reorder only, "
                  f"{m['rf_changed_partitions']} RF changes); {m['leader_changes']} leader changes")
    for w in rep["warnings"]:
        items = ", ".join(map(safe_text, w["items"][:8])) + (", ..." if len(w["items"]) > 8 else "")
        con.print(f"[yellow]warning[/yellow] ({safe_text(w['state'])}): {safe_text(w['message'])}: {items}")
