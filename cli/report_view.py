"""The rich terminal view of a report (``flowbalance report``, and the end of ``flowbalance plan``).

Works from the plain dict of ``flowbalance.report.build_report``; colours only on a terminal (rich turns them
off when output is piped).
"""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from flowbalance.summary import format_bytes as _bytes

from .render import dirs_text, failover_line, moves_line, removing_text, safe_text, topics_line

MAX_ROWS = 16  # brokers shown by default: the least and the most loaded beyond this (one screen in all)
FAILOVER_ROWS = 5  # rows of the failover tables shown by default, the worst first
LIST_ITEMS = 8
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


def _pick_rows(rows: list[dict], all_rows: bool, more: str) -> tuple[list[dict], str]:
    """Every broker when they fit one screen (or ``all_rows``); else the least and the most loaded (after the
    plan), with a note saying how to see the rest."""
    if all_rows or len(rows) <= MAX_ROWS:
        return rows, ""
    key = lambda r: (r["replicas"][1] if r["replicas"][1] is not None else r["replicas"][0], r["broker"])  # noqa: E731
    srt = sorted(rows, key=key)
    half = MAX_ROWS // 2
    return srt[:half] + srt[-half:], f" ({half} least and {half} most loaded of {len(rows)}; {more} shows all)"


def broker_view(rep: dict, *, all_rows: bool = False, more: str = "--all") -> Table:
    """Per broker: rack, replicas with a bar, the target the plan used, leaders, bytes and disk use."""
    plan = rep["has_plan"]
    rows, note = _pick_rows(rep["per_broker"], all_rows, more)
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


def broker_list(names: list) -> str:
    """Failed brokers (or racks) in one cell: runs of consecutive ids as ``0-3``, at most ``LIST_ITEMS`` items
    and then how many in all (``0-3, 5, 9, … (14 brokers)``)."""
    items: list[str] = []
    ints = all(isinstance(x, int) for x in names)
    i = 0
    while i < len(names):
        j = i
        while ints and j + 1 < len(names) and names[j + 1] == names[j] + 1:
            j += 1
        items.append(safe_text(names[i]) if j - i < 2 else f"{names[i]}-{names[j]}")
        i = j + 1 if j - i >= 2 else i + 1
    if len(items) > LIST_ITEMS:
        return ", ".join(items[:LIST_ITEMS]) + f", … ({len(names)})"
    return ", ".join(items)


def failover_groups(rows: list[dict]) -> list[tuple[list, dict, dict | None]]:
    """Rows with the same leader counts before and after (min, max, spread) as one group of failed brokers,
    the worst first: by the spread after the plan (when there is one), then before, then the first broker."""
    groups: dict[tuple, list] = {}
    for r in rows:
        b, a = r["before"], r["after"]
        key = (b["min"], b["max"], b["spread"]) + ((a["min"], a["max"], a["spread"]) if a else (None,) * 3)
        groups.setdefault(key, []).append(r)
    out = [([r["failed"] for r in rs], rs[0]["before"], rs[0]["after"]) for rs in groups.values()]

    def worst(g):
        after = g[2]["spread"] if g[2] is not None else -1
        return (-after, -g[1]["spread"], str(g[0][0]))
    return sorted(out, key=worst)


def _after_cell(b: dict, a: dict) -> str:
    """The spread after the plan: green when better than before, red when worse, plain when the same."""
    if a["spread"] < b["spread"]:
        return f"[green]{a['spread']}[/green]"
    if a["spread"] > b["spread"]:
        return f"[bold red]{a['spread']}[/bold red]"
    return str(a["spread"])


def failover_view(rep: dict, key: str = "failover", title: str = "broker", *, all_rows: bool = False,
                  more: str = "--all") -> Table | None:
    """Survivors' leader counts when each broker (or rack) fails: min, max, spread. Failures with the same counts
    share a row, the worst first; at most ``FAILOVER_ROWS`` rows unless ``all_rows`` (``more`` says how to see
    the rest)."""
    fo = rep.get(key)
    if not fo or not fo["table"]:
        return None
    plan = rep["has_plan"]
    groups = failover_groups(fo["table"])
    shown = groups if all_rows else groups[:FAILOVER_ROWS]
    note = f" (the worst {len(shown)} of {len(groups)} rows; {more} shows all)" if len(shown) < len(groups) else ""
    t = Table(title=f"Leaders when one {title} fails, worst first{note}", title_justify="left")
    t.add_column(f"failed {title}", justify="right")
    t.add_column("before min-max", justify="right")
    t.add_column("spread", justify="right")
    if plan:
        t.add_column("after min-max", justify="right")
        t.add_column("spread", justify="right")
    for failed, b, a in shown:
        cells = [broker_list(failed), f"{b['min']}-{b['max']}", str(b["spread"])]
        if plan:
            cells += ["-", "-"] if a is None else [f"{a['min']}-{a['max']}", _after_cell(b, a)]
        t.add_row(*cells)
    return t


def render_report(rep: dict, con: Console, *, summary: bool = True, all_rows: bool = False,
                  more: str = "--all") -> None:
    """The whole report; ``summary=False`` shows only the broker and failover tables (``plan`` prints its own
    summary after them). Long tables are cut to one screen unless ``all_rows``; ``more`` names what shows all."""
    c = rep["cluster"]
    con.print(f"[bold]Cluster[/bold]: {c['brokers']:,} brokers ({c['live_brokers']:,} live"
              f"{removing_text(c['removed_brokers'])}), {len(c['racks'])} racks, {c['topics']:,} topics, "
              f"{c['partitions']:,} partitions")
    con.print(broker_view(rep, all_rows=all_rows, more=more))
    for key, title in (("failover", "broker"), ("rack_failover", "rack")):
        t = failover_view(rep, key, title, all_rows=all_rows, more=more)
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
        con.print(f"  {m['changed_partitions']:,} partitions change ({m['reorder_only_partitions']:,} reorder only, "
                  f"{m['rf_changed_partitions']:,} RF changes); {m['leader_changes']:,} leader changes")
    for w in rep["warnings"]:
        items = ", ".join(map(safe_text, w["items"][:8])) + (", ..." if len(w["items"]) > 8 else "")
        con.print(f"[yellow]warning[/yellow] ({safe_text(w['state'])}): {safe_text(w['message'])}: {items}")
