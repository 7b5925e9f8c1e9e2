"""One self-contained HTML page of a report: tables plus inline SVG charts, no script, no network.

Charts: replicas (and bytes, when known) per broker before and after, and the failover spread for each failed
broker before and after. Everything comes from the dict of ``flowbalance.report.build_report``; a saved frontier
(``flowbalance.frontier_file.read_frontier``) adds its chart and table after the moves.
"""
from __future__ import annotations

from html import escape

from .frontier import bound_text, group_digits, strict_point
from .frontier_html import frontier_section
from .summary import format_bytes

BEFORE = "#9aa5b1"
AFTER = "#2f6fdf"
BAD = "#d64545"

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1f2933;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e4e7eb;padding-bottom:4px}
.sub{color:#52606d;margin-bottom:16px} table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{padding:3px 10px;border-bottom:1px solid #eef0f2;text-align:right} th{background:#f5f7fa;font-weight:600}
td.l,th.l{text-align:left} .bad{color:#d64545;font-weight:600} .good{color:#207a3c;font-weight:600}
.warn{background:#fff8e1;border-left:4px solid #f0b429;padding:6px 10px;margin:6px 0;font-size:13px}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 14px;vertical-align:middle}
.kpi{display:inline-block;border:1px solid #e4e7eb;border-radius:6px;padding:8px 14px;margin:0 10px 10px 0}
.kpi b{display:block;font-size:20px} svg{display:block;margin:4px 0 10px} .na{color:#8a5a00}
"""


def _bars(title: str, labels: list[str], before: list, after: list | None, fmt=str) -> str:
    """Grouped vertical bars per label (before grey, after blue) as one inline SVG."""
    n = len(labels)
    if n == 0:
        return ""
    vals = [v for v in before + (after or []) if v is not None]
    top = max(vals) if vals else 0
    top = top or 1
    group = max(6, min(40, 1100 // n))
    width = 80 + n * group
    height, base = 220, 190
    bar = max(2, (group - 4) // (2 if after is not None else 1))
    parts = [f'<svg role="img" aria-label="{escape(title)}" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">']
    parts.append(f'<line x1="70" y1="{base}" x2="{width}" y2="{base}" stroke="#cbd2d9"/>')
    for frac in (0.5, 1.0):
        y = base - frac * 170
        parts.append(f'<line x1="70" y1="{y:.1f}" x2="{width}" y2="{y:.1f}" stroke="#eef0f2"/>')
        parts.append(f'<text x="66" y="{y + 4:.1f}" font-size="10" text-anchor="end" fill="#52606d">'
                     f'{escape(fmt(int(round(top * frac))))}</text>')
    for i, lab in enumerate(labels):
        x = 72 + i * group
        series = [(before[i], BEFORE)] + ([(after[i], AFTER)] if after is not None else [])
        for j, (v, colour) in enumerate(series):
            if v is None:
                continue
            h = 170 * v / top
            parts.append(f'<rect x="{x + j * bar}" y="{base - h:.1f}" width="{bar - 1}" height="{h:.1f}" '
                         f'fill="{colour}"><title>{escape(lab)}: {escape(fmt(v))}</title></rect>')
        if n <= 60:
            parts.append(f'<text x="{x + group / 2 - 2:.1f}" y="{base + 13}" font-size="9" text-anchor="middle" '
                         f'fill="#52606d">{escape(lab)}</text>')
    parts.append("</svg>")
    legend = (f'<div class="legend"><span style="background:{BEFORE}"></span>before'
              + (f'<span style="background:{AFTER}"></span>after' if after is not None else "") + "</div>")
    return f"<h3>{escape(title)}</h3>" + legend + "".join(parts)


def _table(head: list[str], rows: list[list[str]], left: int = 1) -> str:
    th = "".join(f'<th class="{"l" if i < left else ""}">{escape(h)}</th>' for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{c}</td>' for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _pair(p: list, fmt=str) -> str:
    a, b = p
    if a is None:
        return "-"
    return escape(fmt(a)) if b is None or a == b else f"{escape(fmt(a))} → {escape(fmt(b))}"


def _failover_section(fo: dict | None, what: str, plan: bool) -> str:
    if not fo or not fo["table"]:
        return ""
    rows = fo["table"]
    labels = [str(r["failed"]) for r in rows]
    before = [r["before"]["spread"] for r in rows]
    after = [r["after"]["spread"] if r["after"] else None for r in rows] if plan else None
    chart = _bars(f"Leader spread of the survivors when one {what} fails", labels, before, after)
    wb = fo["worst_before"]["failed"]
    wa = fo["worst_after"]["failed"] if fo["worst_after"] else None
    trs = []
    for r in rows:
        b = r["before"]
        cells = [escape(str(r["failed"])), f'{b["min"]}–{b["max"]}',
                 f'<span class="bad">{b["spread"]}</span>' if r["failed"] == wb else str(b["spread"])]
        if plan:
            a = r["after"]
            cells += (["-", "-"] if a is None else
                      [f'{a["min"]}–{a["max"]}',
                       f'<span class="bad">{a["spread"]}</span>' if r["failed"] == wa else
                       f'<span class="good">{a["spread"]}</span>'])
        trs.append(cells)
    head = [f"failed {what}", "before min–max", "spread"] + (["after min–max", "spread"] if plan else [])
    return f"<h2>Leaders when one {escape(what)} fails</h2>" + chart + _table(head, trs)


def _moves_section(m: dict, strict: dict | None) -> str:
    """The plan's moves, bound, verdict, per-topic and failover levels; ``strict``: the strict point of the frontier
    drawn on the same page (the per-topic line then names its closed-form strict figure a lower bound, beside that
    plan)."""
    proof = ('<span class="good">proven optimal</span>' if m["proven_optimal"] else
             '<span class="bad">not proven optimal</span>') + f": {escape(group_digits(m['verdict']))}"
    kpis = [("replica moves", f'{m["replica_moves"]:,}'), ("lower bound", f'{m["lower_bound"]:,}'),
            ("bytes to move", format_bytes(m["bytes_to_move"])), ("leader changes", f'{m["leader_changes"]:,}'),
            ("changed partitions", f'{m["changed_partitions"]:,}')]
    level = m.get("per_topic")
    return ("<h2>Moves</h2>" + "".join(f'<div class="kpi">{escape(k)}<b>{escape(v)}</b></div>' for k, v in kpis)
            + f"<div>{proof}; {m['reorder_only_partitions']:,} partitions reorder only, "
              f"{m['rf_changed_partitions']:,} change RF</div>"
            + (f"<div>{escape(bound_text(level, strict))}</div>" if level else "")
            + (f"<div>{escape(group_digits(m['failover']['text']))}</div>" if m.get("failover") else ""))


def render_html(rep: dict, title: str = "flowbalance report", *, frontier: dict | None = None) -> str:
    """The whole page as a string (UTF-8, no external resource); ``frontier``: a checked ``frontier --json`` dict
    to draw after the moves."""
    c = rep["cluster"]
    plan = rep["has_plan"]
    pb = rep["per_broker"]
    labels = [str(r["broker"]) for r in pb]
    out = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
           f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
           f"<h1>{escape(title)}</h1>",
           f'<div class="sub">{c["brokers"]:,} brokers ({c["live_brokers"]:,} live), {len(c["racks"]):,} racks, '
           f'{c["topics"]:,} topics, {c["partitions"]:,} partitions'
           + (f', removing {escape(", ".join(map(str, c["removed_brokers"])))}' if c["removed_brokers"] else "")
           + "</div>"]
    if rep["moves"] is not None:
        out.append(_moves_section(rep["moves"], None if frontier is None else strict_point(frontier)))
    if frontier is not None:
        out.append(frontier_section(frontier))
    if rep["warnings"]:
        out.append("<h2>Warnings</h2>")
        for w in rep["warnings"]:
            items = ", ".join(map(str, w["items"][:20]))
            out.append(f'<div class="warn">({escape(w["state"])}) {escape(w["message"])}: {escape(items)}</div>')
    s = rep["spreads"]
    out.append("<h2>Spreads (max − min per broker)</h2>")
    out.append(_table(["metric", "before"] + (["after"] if plan else []),
                      [[escape(k.replace("_", " ")), escape(str(format_bytes(v[0]) if k == "bytes" else v[0]))]
                       + ([escape(str(format_bytes(v[1]) if k == "bytes" else v[1]))] if plan else [])
                       for k, v in s.items() if v[0] is not None]))
    out.append("<h2>Load per broker</h2>")
    out.append(_bars("Replicas per broker", labels, [r["replicas"][0] for r in pb],
                     [r["replicas"][1] for r in pb] if plan else None))
    if c["sizes_known"]:
        out.append(_bars("Bytes per broker", labels, [r["bytes"][0] for r in pb],
                         [r["bytes"][1] for r in pb] if plan else None, fmt=format_bytes))
    out.append(_bars("Leaders per broker", labels, [r["leaders"][0] for r in pb],
                     [r["leaders"][1] for r in pb] if plan else None))
    rows = []
    for r in pb:
        lo, hi = r["target_replicas"]
        rows.append([escape(str(r["broker"])) + (" (remove)" if r["removed"] else ""), escape(r["rack"] or "-"),
                     _pair(r["replicas"]), f"{lo}" if lo == hi else f"{lo}–{hi}", _pair(r["leaders"]),
                     _pair(r["bytes"], format_bytes), format_bytes(r["capacity_bytes"])])
    out.append(_table(["broker", "rack", "replicas", "target", "leaders", "bytes", "capacity"], rows, left=2))
    out.append(_failover_section(rep["failover"], "broker", plan))
    out.append(_failover_section(rep["rack_failover"], "rack", plan))
    out.append("</body></html>\n")
    return "".join(out)
