"""Terminal rendering with rich: colours on a terminal, plain text when piped. Works from plain data dicts.

Every name read from input (racks, topics, partitions, cluster names, file paths, warnings, notes) goes through
:func:`safe_text` before it reaches a rich string, and through :func:`escape_controls` before a plain
``sys.stderr.write``: input can neither inject rich markup nor terminal escape sequences.
"""
from __future__ import annotations

import re
import sys
import unicodedata

import orjson
from rich.console import Console
from rich.table import Table

from flowbalance.frontier import format_number
from flowbalance.summary import format_bytes as _bytes

MAX_BROKER_ROWS = 16  # one screen with the rest of the view


# Unicode categories never shown raw: controls (C0, DEL, C1), format characters (bidi overrides, zero-width),
# lone surrogates (undecodable bytes in a path), line and paragraph separators.
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_NON_ASCII_OR_DEL = re.compile(r"[^\x00-\x7e]")


def _hidden(ch: str) -> bool:
    return not ch.isprintable() and unicodedata.category(ch) in _HIDDEN


def _escaped(ch: str) -> str:
    """``\\x1b``, ``\\u202e`` or ``\\U000e0001``: the character's code, as Python writes it."""
    n = ord(ch)
    if n < 0x100:
        return f"\\x{n:02x}"
    return f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def escape_controls(value: object) -> str:
    """``str(value)`` with every control, format (bidi), separator and surrogate character shown as its escape.

    For plain text written to a terminal (stderr warnings and errors): a name read from input must not move
    the cursor, clear the screen or reorder what the operator reads. Printable text is returned unchanged.
    """
    text = str(value)
    if text.isprintable():
        return text
    return "".join(_escaped(ch) if _hidden(ch) else ch for ch in text)


_BRACKET = re.compile(r"(\\*)(\[(?:[a-z#/@][^[]*?\])?)")


def _bracket_escape(m: re.Match) -> str:
    backslashes, bracket = m.group(1), m.group(2)
    if len(bracket) > 1:  # a tag: rich reads an odd run of backslashes as "escaped", halving the run
        return backslashes * 2 + "\\" + bracket
    return backslashes + "\\["  # plain text: rich turns each "\\[" into "[" and leaves other backslashes


def _markup_escape(text: str) -> str:
    """Every ``[`` escaped so rich shows it (rich's own ``escape`` skips brackets that are not tag-like, and
    ``\\[`` then loses its backslash), and a trailing run of backslashes doubled: the markup around the name may
    continue with a tag, and rich halves a run of backslashes before a tag (and an odd run escapes the tag)."""
    text = _BRACKET.sub(_bracket_escape, text)
    run = len(text) - len(text.rstrip("\\"))
    return text + "\\" * run


def safe_text(value: object) -> str:
    """``value`` ready to embed in a rich markup string: controls escaped (:func:`escape_controls`), then
    rich's markup escaped, so ``[/a]`` or ``[bold red]x[/bold red]`` shows literally instead of failing or styling."""
    return _markup_escape(escape_controls(value))


def warn(text: object) -> None:
    """One ``flowbalance: warning: ...`` line on stderr, controls escaped."""
    sys.stderr.write(f"flowbalance: warning: {escape_controls(text)}\n")


def json_text(data: object, *, sort_keys: bool = True) -> str:
    """Indented JSON for ``--json``, with a newline. orjson escapes C0 controls; DEL, C1, bidi and other format
    characters it writes raw, so they are written here as ``\\uXXXX`` too (the same JSON value, safe to view)."""
    opt = orjson.OPT_INDENT_2 | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    text = orjson.dumps(data, option=opt).decode()
    if not text.isascii() or "\x7f" in text:
        text = _NON_ASCII_OR_DEL.sub(_json_escape, text)
    return text + "\n"


def _json_escape(m: re.Match) -> str:
    ch = m.group(0)
    if not _hidden(ch):
        return ch
    n = ord(ch)
    if n < 0x10000:
        return f"\\u{n:04x}"
    n -= 0x10000
    return f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}"


PIPED_WIDTH = 10_000


def console() -> Console:
    """The stdout console: no highlighting and no emoji codes (``:smile:`` in a name stays text).

    On a terminal, rich fits tables to its width. Piped (a CI log, a file, ``less``), nothing is wrapped: tables
    keep their natural width and every row stays one line (rich would otherwise assume 80 columns and fold a cell
    like ``113.7 GiB → 105.4 GiB`` over four lines)."""
    con = Console(highlight=False, soft_wrap=True, emoji=False)
    if not con.is_terminal:
        con = Console(highlight=False, soft_wrap=True, emoji=False, width=PIPED_WIDTH)
    return con


def removing_text(ids: list) -> str:
    """``, removing broker 0`` or ``, removing brokers 0, 3`` (nothing when no broker leaves)."""
    if not ids:
        return ""
    return f", removing broker{'s' if len(ids) > 1 else ''} {', '.join(map(safe_text, ids))}"


def _mark(ok: bool | None) -> str:
    if ok is None:
        return ""
    return "[green]ok[/green]" if ok else "[bold red]FAIL[/bold red]"


def broker_table(rows: list[dict], title: str = "Brokers", *, all_rows: bool = False) -> Table:
    """Per broker: rack, replicas (target), leaders, bytes; the most and least loaded only on large clusters
    (unless ``all_rows``)."""
    show = rows
    note = ""
    if len(rows) > MAX_BROKER_ROWS and not all_rows:
        srt = sorted(rows, key=lambda r: (r["replicas"], r["broker"]))
        half = MAX_BROKER_ROWS // 2
        show = srt[:half] + srt[-half:]
        note = f" ({half} least and {half} most loaded of {len(rows)}; --all shows all)"
    t = Table(title=title + note, title_justify="left")
    t.add_column("broker", justify="right")
    t.add_column("rack")
    t.add_column("replicas", justify="right")
    t.add_column("target", justify="right")
    t.add_column("leaders", justify="right")
    has_bytes = any(r["bytes"] is not None for r in rows)
    if has_bytes:
        t.add_column("bytes", justify="right")
    for r in show:
        target = f"{r['target_min']}" if r["target_min"] == r["target_max"] else f"{r['target_min']}-{r['target_max']}"
        bad = r["replicas"] < r["target_min"] or r["replicas"] > r["target_max"]
        reps = f"[yellow]{r['replicas']}[/yellow]" if bad else str(r["replicas"])
        name = safe_text(r["broker"]) + (" [dim](remove)[/dim]" if r["removed"] else "")
        cells = [name, safe_text(r["rack"]) if r["rack"] else "-", reps, target, str(r["leaders"])]
        if has_bytes:
            cells.append(_bytes(r["bytes"]))
        t.add_row(*cells)
    return t


def render_check(data: dict, checks: dict[str, bool], con: Console, *, all_rows: bool = False) -> None:
    c = data["cluster"]
    con.print(
        f"[bold]Cluster[/bold]: {c['brokers']:,} brokers ({c['live_brokers']:,} live{removing_text(c['removed_brokers'])}), "
        f"{len(c['racks'])} racks, {c['topics']:,} topics, {c['partitions']:,} partitions, {c['replicas']:,} replicas"
    )
    con.print(broker_table(data["per_broker"], all_rows=all_rows))
    t = Table(show_header=True, title="Balance", title_justify="left")
    t.add_column("metric")
    t.add_column("value")
    t.add_column("check")
    r = data["replicas"]
    extra = f", {r['on_removed_brokers']} on removed brokers" if r["on_removed_brokers"] else ""
    t.add_row("replicas per broker", f"spread {r['spread']} (min {r['min']}, max {r['max']}){extra}",
              _mark(checks.get("replicas") and checks.get("removed_brokers_empty")))
    tp = data["topics"]
    t.add_row("per-topic spread", f"{tp['worst_spread']} (worst: {safe_text(tp['worst_topic'])}; "
                                  f"{tp['unbalanced_topics']} topics off ±1)",
              _mark(checks.get("topics")))
    ld = data["leaders"]
    t.add_row("leaders per broker", f"spread {ld['spread']} (min {ld['min']}, max {ld['max']})", _mark(checks.get("leaders")))
    if data["bytes"] is not None:
        by = data["bytes"]
        t.add_row("bytes per broker", f"max/mean {by['max_over_mean']}, total {_bytes(by['total'])}", "")
    if data.get("log_dirs"):
        t.add_row("bytes per log directory", dirs_text(data["log_dirs"]), "")
    fo = data["failover"]
    t.add_row("failover, one broker down", f"worst spread {fo['worst_spread']} (when broker {safe_text(fo['worst_broker'])} fails)",
              _mark(checks.get("failover")))
    rf = data["rack_failover"]
    if rf["table"]:
        t.add_row("failover, one rack down", f"worst spread {rf['worst_spread']} (when rack {safe_text(rf['worst_rack'])} fails)", "")
    rv = data["rack_violations"]
    listed = (f" ({', '.join(map(safe_text, rv['partitions'][:5]))}{', ...' if rv['count'] > 5 else ''})"
              if rv["count"] else "")
    t.add_row("rack violations", f"{rv['count']}{listed}", _mark(checks.get("racks")))
    t.add_row("M* (fewest moves to balance)", str(data["min_moves"]), "")
    con.print(t)
    ro = data.get("reorder_only")
    if ro and ro["improves"]:
        con.print(f"[bold]Hint[/bold]: {safe_text(ro['text'])}; `flowbalance plan` proposes it when the replica "
                  "counts are at their targets")
    failed = [k for k, v in checks.items() if not v]
    if failed:
        con.print(f"[bold red]Not balanced[/bold red]: {', '.join(map(safe_text, failed))}")
    else:
        con.print("[bold green]Balanced[/bold green]: every check passes")


def log_dirs_line(ld: dict) -> str:
    """A plan's log directories in one line: intra-broker moves and bytes against their lower bound, and the worst
    spread within a broker before → after."""
    sp = ld["worst_spread_bytes"]
    spread = (f"; worst spread within a broker {_bytes(sp[0])} → {_bytes(sp[1])} (no placement goes below "
              f"{_bytes(ld['spread_lower_bound_bytes'])})" if sp[0] is not None else "")
    limits = "" if ld["within_limits"] else " [yellow](some directory stays above its limit: sizes that do not pack)[/yellow]"
    what = (f"balanced within {ld['tolerance']:g}× each directory's share" if ld["balance"] else
            "each replica placed where its broker's directories stay most even")
    if ld["removed_dirs"]:
        what += "; emptying " + ", ".join(safe_text(x) for x in ld["removed_dirs"])
    bound = (f" (lower bound {_bytes(ld['bytes_lower_bound'])})" if ld["within_limits"] else
             f" (no placement within the limits moves fewer than {_bytes(ld['bytes_lower_bound'])})")
    return (f"Log directories — {what}: {ld['intra_broker_moves']:,} intra-broker moves, "
            f"{_bytes(ld['bytes_moved'])}{bound}{spread}{limits}")


def dirs_text(d: dict) -> str:
    """The log directories in one line: the worst spread within a broker, and moves between them in flight."""
    flight = f"; {d['future_replicas']} intra-broker moves in flight" if d["future_replicas"] else ""
    ratio = f", max/mean {d['worst_max_over_mean']}" if d["worst_max_over_mean"] is not None else ""
    return (f"worst spread {_bytes(d['worst_spread_bytes'])} within broker {safe_text(d['worst_broker'])}{ratio} "
            f"({d['directories']} directories){flight}")


def _arrow(pair) -> str:
    a, b = pair
    return f"{format_number(a)} → {format_number(b)}"


def moves_line(d: dict) -> str:
    """The plan's verdict line, the certificate's moves verdict as ``--json`` and the HTML page give it (the same
    text: green when proven minimal, yellow when a target is missed), with M* as context."""
    tone = "green" if d["proven_optimal"] else ("" if d["targets_met"] else "yellow")
    verdict = f"[{tone}]{safe_text(d['verdict'])}[/{tone}]" if tone else safe_text(d["verdict"])
    context = f"closed-form bound {d['closed_form_bound']:,}, " if d["bound_by_flow"] else ""
    return (f"[bold]Replica moves[/bold] — {verdict} "
            f"[dim]({context}M* {d['min_moves']:,} for cluster-wide count balance: context, not the bound)[/dim]")


def topics_line(d: dict) -> str:
    """The certificate's per-topic level in one line (plan and report print the same)."""
    return f"[bold]Per-topic[/bold] — {safe_text(d['per_topic']['text'])}"


def failover_line(d: dict) -> str:
    """The certificate's failover level in one line (plan and report print the same)."""
    return f"[bold]Failover[/bold] — {safe_text(d['failover']['text'])}"


def before_after_line(d: dict) -> str:
    """The plan's spreads before → after in one line (replicas on removed brokers only when there were any)."""
    items = [("replica spread", d["replica_spread"])]
    if any(d["replicas_on_removed_brokers"]):
        items.append(("replicas on removed brokers", d["replicas_on_removed_brokers"]))
    items += [("per-topic spread (worst)", d["topic_spread"]), ("leader spread", d["leader_spread"]),
              ("failover spread (worst broker down)", d["failover_worst_spread"]),
              ("rack violations", d["rack_violations"])]
    return "[bold]Before → after[/bold]: " + ", ".join(f"{label} {_arrow(pair)}" for label, pair in items)


def render_plan(d: dict, con: Console, *, verbose: bool = False) -> None:
    """The short plan summary: moves vs M*, bytes, spreads before → after, failover, time."""
    if d["empty"]:
        why = ("the cluster already meets every target (pre-check)" if d["skipped_by_precheck"] else
               "no change improves the cluster (see the notes)")
        con.print(f"[bold green]Nothing to do[/bold green]: {why}.")
    con.print(moves_line(d))
    if d.get("per_topic"):
        con.print(topics_line(d))
    if d.get("failover"):
        con.print(failover_line(d))
    if d["bytes_to_move"] is not None:
        con.print(f"Bytes to move: {_bytes(d['bytes_to_move'])}")
    bo = d.get("bytes_objective")
    if bo:
        how = "exact" if bo["exact"] else f"within {_bytes(bo['quantum_bytes'] * bo['moves'])} (size quantum {bo['quantum_bytes']} B)"
        then = "; the disk stage then changes it" if d.get("disk") else ""
        con.print(f"Objective bytes: stage 1's {bo['moves']} moves copy {_bytes(bo['bytes_moved'])}, the least of any "
                  f"plan with that many moves and balance (lower bound {_bytes(bo['lower_bound'])}, {how}){then}")
    dk = d.get("disk")
    if dk:
        mm = dk["max_over_mean"]
        ok = "[green]within[/green]" if dk["within_tolerance"] else "[yellow]not within[/yellow]"
        gap = "" if dk["gap"] is None else f", gap {dk['gap'] * 100:.1f} %"
        con.print(f"Disk ({safe_text(dk['balance'])}): max/mean {mm[0]:.3f} → {mm[1]:.3f}, {ok} tolerance {dk['tolerance']:.3f}; "
                  f"bytes {_bytes(dk['bytes_moved'])} against a lower bound of {_bytes(dk['bytes_lower_bound'])}{gap} "
                  f"({safe_text(dk['method'])})")
        if dk["limit_raised_brokers"]:
            con.print(f"[dim]note:[/dim] {dk['limit_raised_brokers']} broker(s) hold a partition larger than the "
                      "tolerance allows; their limit is that partition")
    elif d.get("disk_max_over_mean") and not d.get("disk_warning"):
        mm = d["disk_max_over_mean"]
        con.print(f"Disk max/mean: {mm[0]:.3f} → {mm[1]:.3f} (replica counts balanced; --balance count+bytes balances disk too)")
    if d.get("disk_warning"):
        con.print(f"[yellow]warning[/yellow]: {safe_text(d['disk_warning']['message'])}")
    ld = d.get("log_dirs")
    if ld:
        con.print(log_dirs_line(ld))
    con.print(f"Changed partitions: {d['changed_partitions']:,} ({d['reorder_only_partitions']:,} reorder only, "
              f"{d['rf_changed_partitions']:,} RF changes); leader changes: {d['leader_changes']:,} "
              f"(lower bound {d['leader_lower_bound']:,})")
    con.print(before_after_line(d))
    for n in d["notes"]:
        con.print(f"[dim]note:[/dim] {safe_text(n)}")
    secs = d["seconds"]
    if verbose:
        con.print("[dim]time per step:[/dim] " + ", ".join(f"{safe_text(k)} {v:.3f} s" for k, v in secs.items()))
    stages = ", ".join(map(safe_text, d["stages"])) or "none"
    con.print(f"Strategy: {safe_text(d.get('strategy', 'flow'))}; stages: {stages}; time {secs.get('total', 0):.2f} s; "
              f"wrote {', '.join(map(safe_text, d['files']))}")


def render_compare(d: dict, con: Console) -> None:
    """One column per strategy (and the current state): moves and bytes, then every spread after the plan."""
    names = list(d["strategies"])
    S = d["strategies"]
    bounds = sorted({f"{S[n]['lower_bound']} ({safe_text(S[n]['bound_for'])})" for n in names})
    t = Table(title=f"Strategies compared (bound: {', '.join(bounds)})", title_justify="left")
    t.add_column("")
    t.add_column("current", justify="right")
    for n in names:
        t.add_column(safe_text(n), justify="right")
    S = d["strategies"]

    def best(key: str) -> list[str]:
        vals = [S[n][key] for n in names]
        ok = [v for v in vals if v is not None]
        low = min(ok) if ok else None
        return [("-" if v is None else (f"[bold green]{v}[/bold green]" if v == low and len(set(ok)) > 1 else str(v)))
                for v in vals]

    t.add_row("replica moves", "", *best("moves"))
    t.add_row("lower bound", "", *[str(S[n]["lower_bound"]) for n in names])
    t.add_row("proven optimal", "", *["yes" if S[n]["proven_optimal"] else "no" for n in names])
    if any(S[n]["bytes_to_move"] is not None for n in names):
        t.add_row("bytes to move", "", *[_bytes(S[n]["bytes_to_move"]) for n in names])
    t.add_row("leader changes", "", *best("leader_changes"))
    rows = [("replica spread", "replica_spread"), ("per-topic spread (worst)", "topic_spread"),
            ("leader spread", "leader_spread"), ("failover spread (worst broker down)", "failover_worst_spread"),
            ("failover spread (worst rack down)", "rack_failover_worst_spread"), ("rack violations", "rack_violations"),
            ("replicas on removed brokers", "replicas_on_removed_brokers")]
    for label, key in rows:
        if key == "rack_failover_worst_spread" and d["current"][key] is None:
            continue
        if key == "replicas_on_removed_brokers" and not d["current"][key]:
            continue
        t.add_row(label, str(d["current"][key]), *best(key))
    t.add_row("time (s)", "", *[f"{S[n]['seconds']:.2f}" for n in names])
    con.print(t)
