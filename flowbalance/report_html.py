"""One self-contained HTML page of a report: tables plus inline SVG charts, no script, no network.

The page a reviewer attaches to a change ticket, from the dict of ``flowbalance.report.build_report``: the plan's
verdict (the same line ``plan`` and ``report`` print), its identity (version, time, input files with SHA-256, the
request), the moves (totals per broker pair, the largest partitions, every changed partition in a collapsed
``<details>``), a saved frontier (``flowbalance.frontier_file.read_frontier``) when given, warnings, spreads, load
per broker, the (leader, first follower) heat maps and the leaders when one broker or rack fails.

Colour means something: ``bad`` (red) only for a violation (a count off its target, replicas left on a removed
broker, bytes above a disk's capacity, a plan that misses its targets, a warning of the plan) or a value worse
than before; ``good`` (green) for a target met or a value better than before; no colour otherwise. Charts are
inline SVG at the container's full width (``width="100%"`` with a viewBox). Every text from input is escaped.
"""
from __future__ import annotations

from .frontier import bound_text, group_digits, strict_point
from .frontier_html import escape, frontier_section, request_text
from .summary import format_bytes

BEFORE = "#9aa5b1"
AFTER = "#2f6fdf"
TARGET = "#1f2933"
CHART_W = 1200  # viewBox width of the bar charts (drawn at the page's width)
MAX_PAIRS = 20  # broker pairs listed in the moves section

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px 32px;color:#1f2933;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:30px 0 8px;border-bottom:1px solid #e4e7eb;
padding-bottom:4px} h3{font-size:14px;margin:16px 0 2px;color:#323f4b}
.sub{color:#52606d;margin-bottom:14px} table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{padding:3px 10px;border-bottom:1px solid #eef0f2;text-align:right} th{background:#f5f7fa;font-weight:600}
td.l,th.l{text-align:left} .bad{color:#c81e1e;font-weight:600} .good{color:#1b7a3a;font-weight:600}
.worst{font-weight:600}
.verdict{font-size:17px;font-weight:600;padding:10px 14px;margin:10px 0 6px;border-radius:6px;
border-left:6px solid #9aa5b1;background:#f5f7fa}
.verdict.good{border-left-color:#1b7a3a;background:#eef8f1} .verdict.bad{border-left-color:#c81e1e;background:#fdf0f0}
.level{margin:2px 0 2px 20px;color:#323f4b}
.warn{background:#fff8e1;border-left:4px solid #f0b429;padding:6px 10px;margin:6px 0;font-size:13px}
.warn.bad{background:#fdf0f0;border-left-color:#c81e1e;color:#1f2933;font-weight:400}
.legend{font-size:12px;color:#52606d}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 14px;vertical-align:middle}
.kpi{display:inline-block;border:1px solid #e4e7eb;border-radius:6px;padding:8px 14px;margin:0 10px 10px 0}
.kpi b{display:block;font-size:20px} svg{display:block;margin:4px 0 12px} .na{color:#8a5a00}
.identity td{vertical-align:top} code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
.cols{display:flex;flex-wrap:wrap;gap:28px} .cols>div{flex:1 1 520px;min-width:0}
details{margin:8px 0} summary{cursor:pointer;font-weight:600}
.note{color:#52606d;font-size:13px}
"""


# ---- small pieces ----------------------------------------------------------------------------------------


def _table(head: list[str] | None, rows: list[list[str]], left: int = 1, cls: str = "") -> str:
    """A table; ``head`` (None: no header row) is escaped here, the cells are HTML already; the first ``left``
    columns left-aligned."""
    th = "".join(f'<th class="{"l" if i < left else ""}">{escape(h)}</th>' for i, h in enumerate(head or []))
    thead = f"<thead><tr>{th}</tr></thead>" if head else ""
    body = "".join("<tr>" + "".join(f'<td class="{"l" if i < left else ""}">{c}</td>' for i, c in enumerate(r))
                   + "</tr>" for r in rows)
    return f'<table class="{cls}">{thead}<tbody>{body}</tbody></table>'


def _span(text: str, tone: str) -> str:
    """``text`` (escaped) in a span of class ``tone`` ("bad", "good"), or plain when ``tone`` is empty."""
    return f'<span class="{tone}">{escape(text)}</span>' if tone else escape(text)


def _tone(before, after, ok: bool | None = None) -> str:
    """The class of an "after" value where lower is better: bad when it breaks its target (``ok`` False) or is worse
    than before, good when it is better than before (or meets a target the value before missed), else none."""
    if after is None:
        return ""
    if ok is False or (before is not None and after > before):
        return "bad"
    if before is not None and after < before:
        return "good"
    return ""


def _pair(p: list, fmt=str, tone: str = "") -> str:
    """``before → after`` (or the one value when they are equal), the after value in ``tone``."""
    a, b = p
    if a is None:
        return "-"
    if b is None or a == b:
        return _span(fmt(a), tone)
    return f"{escape(fmt(a))} → {_span(fmt(b), tone)}"


def _broker(b) -> str:
    return "new replica" if b is None else str(b)


# ---- charts ----------------------------------------------------------------------------------------------


def _axis(parts: list[str], top: float, fmt, base: int, span: int) -> None:
    """The base line, two grid lines and their labels of a bar chart."""
    parts.append(f'<line x1="70" y1="{base}" x2="{CHART_W}" y2="{base}" stroke="#cbd2d9"/>')
    for frac in (0.5, 1.0):
        y = base - frac * span
        parts.append(f'<line x1="70" y1="{y:.1f}" x2="{CHART_W}" y2="{y:.1f}" stroke="#eef0f2"/>')
        parts.append(f'<text x="64" y="{y + 4:.1f}" font-size="11" text-anchor="end" fill="#52606d">'
                     f'{escape(fmt(int(round(top * frac))))}</text>')


def _bars(title: str, labels: list[str], before: list, after: list | None, fmt=str,
          targets: list[tuple[int, int]] | None = None) -> str:
    """Grouped vertical bars per label (before grey, after blue) as one inline SVG at the page's width;
    ``targets``: a [lo, hi] band per label, drawn as a dark tick at each end."""
    n = len(labels)
    if n == 0:
        return ""
    vals = [v for v in before + (after or []) + [t[1] for t in targets or []] if v is not None]
    top = max(vals, default=0) or 1
    group = (CHART_W - 76) / n
    height, base, span = 200, 172, 156
    series = 2 if after is not None else 1
    bar = min(max(group * 0.84 / series, 0.6), 44)  # few labels: bars at most 44 units wide, centred
    parts = [f'<svg class="bars" role="img" aria-label="{escape(title)}" width="100%" '
             f'viewBox="0 0 {CHART_W} {height}" xmlns="http://www.w3.org/2000/svg">']
    _axis(parts, top, fmt, base, span)
    for i, lab in enumerate(labels):
        x = 74 + i * group + (group - series * bar) / 2
        for j, (v, colour) in enumerate([(before[i], BEFORE)] + ([(after[i], AFTER)] if after is not None else [])):
            if v is None:
                continue
            h = span * v / top
            parts.append(f'<rect x="{x + j * bar:.1f}" y="{base - h:.1f}" width="{max(bar - 1, 0.5):.1f}" '
                         f'height="{h:.1f}" fill="{colour}"><title>{escape(lab)}: {escape(fmt(v))}</title></rect>')
        for t in sorted(set(targets[i])) if targets else ():
            y = base - span * t / top
            parts.append(f'<line class="target" x1="{x - 1:.1f}" y1="{y:.1f}" x2="{x + series * bar:.1f}" '
                         f'y2="{y:.1f}" stroke="{TARGET}" stroke-width="1.5"/>')
        if n <= 60:
            parts.append(f'<text x="{x + series * bar / 2:.1f}" y="{base + 15}" font-size="11" '
                         f'text-anchor="middle" fill="#52606d">{escape(lab)}</text>')
    parts.append("</svg>")
    legend = (f'<div class="legend"><span style="background:{BEFORE}"></span>before'
              + (f'<span style="background:{AFTER}"></span>after' if after is not None else "")
              + (f'<span style="background:{TARGET};height:2px"></span>target' if targets else "") + "</div>")
    return f"<h3>{escape(title)}</h3>" + legend + "".join(parts)


def _heat(title: str, lp: dict, key: str, top: int) -> str:
    """One (leader, first follower) matrix as an SVG heat map: a cell per (row broker, column broker), the
    colour's intensity the count over ``top``, a ``<title>`` per cell; every cell of every listed row when all
    rows are listed, else only the non-zero cells (the rows are the worst failover brokers)."""
    rows, cols, mat = lp["rows"], lp["brokers"], lp[key]
    size, pad_l, pad_t = 560, 52, 40
    cw = (size - pad_l - 4) / len(cols)
    ch = cw if lp["all_rows"] else max(cw, 12)
    height = pad_t + ch * len(rows) + 6
    parts = [f'<svg class="heat" data-state="{key}" role="img" aria-label="{escape(title)}" width="100%" '
             f'viewBox="0 0 {size} {height:.0f}" xmlns="http://www.w3.org/2000/svg">',
             f'<rect x="{pad_l}" y="{pad_t}" width="{cw * len(cols):.1f}" height="{ch * len(rows):.1f}" '
             f'fill="#f5f7fa"/>']
    gap = 6 * max(len(str(b)) for b in cols) + 4  # units a column label needs at font size 9
    step = max(1, -(-len(cols) * gap // (size - pad_l)))  # a label every ``step`` columns
    for j, b in enumerate(cols):
        if j % step == 0:
            parts.append(f'<text x="{pad_l + (j + 0.5) * cw:.1f}" y="{pad_t - 6}" font-size="9" '
                         f'text-anchor="middle" fill="#52606d">{escape(b)}</text>')
    rstep = max(1, -(-len(rows) * 10 // int(ch * len(rows) or 1)))
    for i, leader in enumerate(rows):
        y = pad_t + i * ch
        if i % rstep == 0:
            parts.append(f'<text x="{pad_l - 5}" y="{y + ch / 2 + 3:.1f}" font-size="9" text-anchor="end" '
                         f'fill="#52606d">{escape(leader)}</text>')
        for j, b in enumerate(cols):
            v = mat[i][j]
            if v == 0 and not lp["all_rows"]:
                continue
            fill = f'fill="{AFTER}" fill-opacity="{0.1 + 0.9 * v / top:.3f}"' if v else 'fill="#f5f7fa"'
            parts.append(f'<rect class="cell" x="{pad_l + j * cw:.2f}" y="{y:.2f}" width="{cw:.2f}" '
                         f'height="{ch:.2f}" {fill} stroke="#fff" stroke-width="0.5"><title>leader {escape(leader)}, '
                         f'first follower {escape(b)}: {v:,} partitions</title></rect>')
    parts.append(f'<text x="{pad_l}" y="12" font-size="10" fill="#1f2933">first follower →</text>'
                 f'<text x="{pad_l - 7}" y="{pad_t - 6}" font-size="10" text-anchor="end" fill="#1f2933">leader ↓</text>'
                 "</svg>")
    return f"<div><h3>{escape(title)}</h3>{''.join(parts)}</div>"


def _heat_section(lp: dict, plan: bool) -> str:
    """The (leader, first follower) heat maps, before and after on one shared scale."""
    keys = ["before", "after"] if plan else ["before"]
    top = max((max(r, default=0) for k in keys for r in lp[k]), default=0) or 1
    which = ("every broker" if lp["all_rows"] else
             f"the {len(lp['rows'])} brokers whose failure leaves the worst spread (of {len(lp['brokers'])})")
    text = (f'<div class="note">Row L, column F: partitions led by L whose first follower is F. When L fails, '
            f"those leaderships go to F, so an even row means L's leaderships spread evenly. Rows: {which}; the "
            f"darkest cell is {top:,} partitions.</div>")
    maps = "".join(_heat(f"{'Before' if k == 'before' else 'After'}" if plan else "Now", lp, k, top) for k in keys)
    return f"<h2>(Leader, first follower) pairs</h2>{text}<div class=\"cols\">{maps}</div>"


# ---- sections --------------------------------------------------------------------------------------------


def _verdict(rep: dict) -> str:
    """The plan's verdict line (the certificate's, as ``plan`` and ``report`` print it) and its per-topic and
    failover levels: green when proven, red when the targets are missed, plain otherwise."""
    m = rep["moves"]
    tone = "good" if m["proven_optimal"] else ("" if m["targets_met"] else "bad")
    return f'<div class="verdict {tone}" id="verdict">{escape(rep["verdict"])}</div>'


def _levels(m: dict, strict: dict | None) -> str:
    """The per-topic and failover lines of the certificate (``strict``: a frontier's strict point on the page)."""
    level = m.get("per_topic")
    return ((f'<div class="level">Per-topic — {escape(bound_text(level, strict))}</div>' if level else "")
            + (f'<div class="level">Failover — {escape(group_digits(m["failover"]["text"]))}</div>'
               if m.get("failover") else ""))


def _identity(ident: dict | None) -> str:
    """Which plan the page describes: version, time, request, and every input file with its SHA-256."""
    if ident is None:
        return ""
    when = (f'{escape(ident["created"])} <span class="note">({escape(ident["created_from"])})</span>'
            if ident["created"] else '<span class="note">not recorded (no plan sidecar; SOURCE_DATE_EPOCH sets '
                                     'one)</span>')
    rows = [["tool", f'{escape(ident["tool"])} {escape(ident["version"])}'], ["time", when]]
    if ident["request"] is not None:
        req = escape(request_text(ident["request"]))
        rows.append(["request", f'{req} <span class="note">(from the {escape(ident["request_from"])})</span>'])
    files = [[escape(f["role"]), f'<code>{escape(f["path"])}</code>', f'{f["bytes"]:,}',
              f'<code class="sha256">{escape(f["sha256"])}</code>'] for f in ident["inputs"]]
    return ('<section class="identity"><h2>Identity</h2>' + _table(None, rows, left=2, cls="identity")
            + _table(["input", "path", "bytes", "sha256"], files, left=4, cls="inputs") + "</section>")


def _moves_kpis(m: dict) -> str:
    kpis = [("replica moves", f'{m["replica_moves"]:,}'), ("lower bound", f'{m["lower_bound"]:,}'),
            ("bytes to move", format_bytes(m["bytes_to_move"])), ("leader changes", f'{m["leader_changes"]:,}'),
            ("changed partitions", f'{m["changed_partitions"]:,}')]
    return ("".join(f'<div class="kpi">{escape(k)}<b>{escape(v)}</b></div>' for k, v in kpis)
            + f'<div class="note">{m["reorder_only_partitions"]:,} partitions reorder only, '
              f'{m["rf_changed_partitions"]:,} change RF</div>')


def _changed_rows(items: list[dict], sizes: bool, moves: bool = False) -> list[list[str]]:
    return [[escape(x["partition"])] + ([format_bytes(x["size_bytes"])] if sizes else [])
            + ([f'{x["moves"]:,}'] if moves else [])
            + [escape(", ".join(map(str, x["before"]))), escape(", ".join(map(str, x["after"])))] for x in items]


def _transfers(t: dict, sizes: bool) -> str:
    """Moves per (from → to) broker pair, the largest partitions moving, and every changed partition (collapsed)."""
    if not t["listed_of"]:
        return '<div class="note">No partition changes.</div>'
    pairs = t["pairs"]
    shown = pairs[:MAX_PAIRS]
    head = ["from", "to", "replicas"] + (["bytes"] if sizes else [])
    rows = [[escape(_broker(p["from"])), escape("dropped" if p["to"] is None else str(p["to"])), f'{p["replicas"]:,}']
            + ([format_bytes(p["bytes"])] if sizes else []) for p in shown]
    more = f" (the {MAX_PAIRS} busiest of {len(pairs):,})" if len(pairs) > MAX_PAIRS else ""
    by = "bytes copied" if sizes else "replicas moved"
    largest = _table(["partition"] + (["size"] if sizes else []) + ["moves", "before", "after"],
                     _changed_rows(t["largest"], sizes, moves=True), left=1, cls="largest")
    out = [f'<div class="cols"><div><h3>Replicas per broker pair (from → to){more}</h3>'
           f'{_table(head, rows, left=0, cls="pairs")}</div>'
           f"<div><h3>The largest partitions moving (by {by})</h3>{largest}</div></div>"]
    listed = len(t["partitions"])
    note = (f" (the first {listed:,} of {t['listed_of']:,}; the plan file lists all)" if listed < t["listed_of"]
            else "")
    out.append(f'<details class="changed"><summary>All {t["listed_of"]:,} changed partitions{note}</summary>'
               + _table(["partition"] + (["size"] if sizes else []) + ["before", "after"],
                        _changed_rows(t["partitions"], sizes), left=1) + "</details>")
    return "".join(out)


def _warnings(warnings: list[dict]) -> str:
    """Warnings of the plan (state "after": what the plan leaves) in red, of the current state in amber."""
    if not warnings:
        return ""
    out = ["<h2>Warnings</h2>"]
    for w in warnings:
        items = ", ".join(map(str, w["items"][:20]))
        cls = "warn bad" if w["state"] == "after" else "warn"
        out.append(f'<div class="{cls}">({escape(w["state"])}) {escape(w["message"])}: {escape(items)}</div>')
    return "".join(out)


def _spreads(s: dict, plan: bool) -> str:
    """Spreads before → after; the after value green when lower, red when higher."""
    def fmt(k, v):
        return format_bytes(v) if k == "bytes" else str(v)
    rows = [[escape(k.replace("_", " ")), escape(fmt(k, v[0]))] + ([_span(fmt(k, v[1]), _tone(*v))] if plan else [])
            for k, v in s.items() if v[0] is not None]
    return ("<h2>Spreads (max − min per broker)</h2>"
            + _table(["metric", "before"] + (["after"] if plan else []), rows, cls="spreads"))


def _broker_row(r: dict, plan: bool) -> list[str]:
    """One broker: replicas red when off target (or left on a removed broker), green when the plan brings them on
    target; bytes red above the disk's capacity."""
    lo, hi = r["target_replicas"]
    now = r["replicas"][1] if plan else r["replicas"][0]
    off = (lambda x: x is not None and (x > 0 if r["removed"] else not lo <= x <= hi))
    tone = "bad" if off(now) else ("good" if plan and off(r["replicas"][0]) else "")
    cap = r["capacity_bytes"]
    used = r["bytes"][1] if plan and r["bytes"][1] is not None else r["bytes"][0]
    full = "bad" if cap is not None and used is not None and used > cap else ""
    target = "0" if r["removed"] else (f"{lo}" if lo == hi else f"{lo}–{hi}")
    return [escape(str(r["broker"])) + (" (remove)" if r["removed"] else ""), escape(r["rack"] or "-"),
            _pair(r["replicas"], tone=tone), target, _pair(r["leaders"]), _pair(r["bytes"], format_bytes, full),
            format_bytes(cap)]


def _load(rep: dict, plan: bool) -> str:
    """Replicas (with each broker's target band), bytes and leaders per broker, then the per-broker table."""
    pb = rep["per_broker"]
    labels = [str(r["broker"]) for r in pb]
    side = (lambda key: [r[key][1] for r in pb]) if plan else (lambda key: None)
    targets = [(0, 0) if r["removed"] else tuple(r["target_replicas"]) for r in pb]
    out = ["<h2>Load per broker</h2>",
           _bars("Replicas", labels, [r["replicas"][0] for r in pb], side("replicas"), targets=targets)]
    if rep["cluster"]["sizes_known"]:
        out.append(_bars("Bytes", labels, [r["bytes"][0] for r in pb], side("bytes"), fmt=format_bytes))
    out.append(_bars("Leaders", labels, [r["leaders"][0] for r in pb], side("leaders")))
    out.append(_table(["broker", "rack", "replicas", "target", "leaders", "bytes", "capacity"],
                      [_broker_row(r, plan) for r in pb], left=2, cls="brokers"))
    return "".join(out)


def _failover_section(fo: dict | None, what: str, plan: bool) -> str:
    """Survivors' leader spread when each broker (rack) fails: chart and table; the worst row in bold, the after
    spread green when lower than before and red when higher."""
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
        worst = "worst" if r["failed"] == wb else ""
        cells = [escape(str(r["failed"])), f'{b["min"]}–{b["max"]}', _span(str(b["spread"]), worst)]
        if plan:
            a = r["after"]
            tone = "" if a is None else (_tone(b["spread"], a["spread"]) or ("worst" if r["failed"] == wa else ""))
            cells += (["-", "-"] if a is None else [f'{a["min"]}–{a["max"]}', _span(str(a["spread"]), tone)])
        trs.append(cells)
    head = [f"failed {what}", "before min–max", "spread"] + (["after min–max", "spread"] if plan else [])
    return (f"<h2>Leaders when one {escape(what)} fails</h2>" + chart
            + _table(head, trs, cls=f"failover-{'broker' if what == 'broker' else 'rack'}"))


def _frontier_match(d: dict, rep: dict) -> str:
    """Which of the frontier's points this plan is: the planned points with its moves, per-topic spread and worst
    failover spread (a plan made with that point's budget has exactly those)."""
    if rep["moves"] is None:
        return ""
    s = rep["spreads"]
    key = (rep["moves"]["replica_moves"], s["topics"][1], s["failover"][1])
    same = [p["label"] for p in d["points"]
            if p["usable"] and (p["moves"], p["topic_spread"], p["failover_worst_spread"]) == key]
    text = (f"This plan is the frontier's point {', '.join(same)} (the same moves and spreads)." if same else
            "This plan is none of the frontier's points (no point has its moves and spreads).")
    return f'<div class="note frontier-match">{escape(text)}</div>'


def render_html(rep: dict, title: str = "flowbalance report", *, frontier: dict | None = None) -> str:
    """The whole page as a string (UTF-8, no external resource); ``frontier``: a checked ``frontier --json`` dict
    to draw after the moves."""
    c = rep["cluster"]
    plan = rep["has_plan"]
    out = ["<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
           f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
           f"<h1>{escape(title)}</h1>",
           f'<div class="sub">{c["brokers"]:,} brokers ({c["live_brokers"]:,} live), {len(c["racks"]):,} racks, '
           f'{c["topics"]:,} topics, {c["partitions"]:,} partitions'
           + (f', removing {escape(", ".join(map(str, c["removed_brokers"])))}' if c["removed_brokers"] else "")
           + "</div>"]
    m = rep["moves"]
    if m is not None:
        out += [_verdict(rep), _levels(m, None if frontier is None else strict_point(frontier))]
    out.append(_identity(rep.get("identity")))
    if m is not None:
        out += ["<h2>Moves</h2>", _moves_kpis(m), _transfers(rep["transfers"], c["sizes_known"])]
    if frontier is not None:
        out += [frontier_section(frontier), _frontier_match(frontier, rep)]
    out += [_warnings(rep["warnings"]), _spreads(rep["spreads"], plan), _load(rep, plan),
            _heat_section(rep["leader_pairs"], plan), _failover_section(rep["failover"], "broker", plan),
            _failover_section(rep["rack_failover"], "rack", plan), "</body></html>\n"]
    return "".join(out)
