"""The frontier as HTML: an inline SVG chart (replica moves on x; per-topic spread and worst failover spread on y,
one marker group per planned point) and a table, as a section or as one self-contained page (no script, no
network). Everything comes from ``flowbalance.frontier.frontier_summary``; every text is escaped.
"""
from __future__ import annotations

import html
import math
import re

from .frontier import format_number as _fmt, point_text, strict_point
from .summary import format_bytes

TOPIC = "#2f6fdf"
FAILOVER = "#e07b00"
W, H = 680, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 24, 18, 46

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1f2933;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:24px 0 8px} .sub{color:#52606d;margin-bottom:12px}
table{border-collapse:collapse;font-size:13px;margin:6px 0} th,td{padding:3px 10px;border-bottom:1px solid #eef0f2;
text-align:right} th{background:#f5f7fa;font-weight:600} td.l,th.l{text-align:left} .na{color:#8a5a00}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 14px;vertical-align:middle}
"""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escape(text: object) -> str:
    """Text for HTML: markup escaped (quotes too) and control characters, such as a terminal escape from a saved
    file, shown as ``\\x1b`` rather than passed on."""
    return html.escape(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text)))


def _scale(lo: float, hi: float, a: float, b: float):
    """The linear map of [lo, hi] onto [a, b] (a constant map when lo == hi)."""
    span = hi - lo
    return (lambda v: (a + b) / 2) if span <= 0 else (lambda v: a + (v - lo) * (b - a) / span)


def _ticks(vmax: float) -> list[float]:
    """Round tick values from 0 to at least ``vmax``: a step of 1, 2 or 5 × 10^k, about four steps."""
    raw = max(float(vmax), 1.0) / 4
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    step = max(step, 1.0)
    return [i * step for i in range(int(math.ceil(vmax / step - 1e-9)) + 1)] or [0.0, step]


def _axes(x, y, xticks: list[float], yticks: list[float]) -> list[str]:
    """Axis lines, ticks and labels: moves (x, from 0) and spread (y, from 0)."""
    base, right = H - BOTTOM, W - RIGHT
    out = [f'<line x1="{LEFT}" y1="{base}" x2="{right}" y2="{base}" stroke="#9aa5b1"/>',
           f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}" stroke="#9aa5b1"/>']
    for xv in xticks:
        out.append(f'<text x="{x(xv):.1f}" y="{base + 14}" font-size="10" text-anchor="middle" fill="#52606d">'
                   f'{int(xv):,}</text>')
    for yv in yticks:
        out.append(f'<line x1="{LEFT}" y1="{y(yv):.1f}" x2="{right}" y2="{y(yv):.1f}" stroke="#eef0f2"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y(yv) + 4:.1f}" font-size="10" text-anchor="end" fill="#52606d">'
                   f'{_fmt(yv)}</text>')
    out.append(f'<text x="{(LEFT + right) / 2:.0f}" y="{H - 8}" font-size="11" text-anchor="middle" '
               f'fill="#1f2933">replica moves</text>')
    out.append(f'<text x="14" y="{(TOP + base) / 2:.0f}" font-size="11" text-anchor="middle" fill="#1f2933" '
               f'transform="rotate(-90 14 {(TOP + base) / 2:.0f})">spread</text>')
    return out


def frontier_chart(d: dict) -> str:
    """The SVG: per planned point one ``<g class="point">`` with a circle (per-topic spread) and a square (worst
    failover spread) at its moves, each series joined in budget order; budget labels above the points."""
    pts = [p for p in d["points"] if p["usable"]]
    if not pts:
        return ""
    xticks = _ticks(max(p["moves"] for p in pts))
    yticks = _ticks(max([p["topic_spread"] for p in pts] + [p["failover_worst_spread"] for p in pts]) * 1.15)
    x = _scale(0, xticks[-1], LEFT, W - RIGHT)
    y = _scale(0, yticks[-1], H - BOTTOM, TOP)
    parts = [f'<svg class="frontier" role="img" aria-label="moves against per-topic and failover spread" '
             f'width="{W}" height="{H}" viewBox="0 0 {W} {H}" xmlns="http://www.w3.org/2000/svg">']
    parts += _axes(x, y, xticks, yticks)
    for key, colour in (("topic_spread", TOPIC), ("failover_worst_spread", FAILOVER)):
        line = " ".join(f"{x(p['moves']):.1f},{y(p[key]):.1f}" for p in pts)
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="1.5" opacity="0.6"/>')
    labels: dict[float, list[str]] = {}
    for p in pts:
        cx, ty, fy = x(p["moves"]), y(p["topic_spread"]), y(p["failover_worst_spread"])
        labels.setdefault(round(cx), []).append(p["label"])
        tip = (f"{p['label']}: {_fmt(p['moves'])} moves, per-topic spread {_fmt(p['topic_spread'])}, "
               f"worst failover spread {_fmt(p['failover_worst_spread'])}")
        parts.append(f'<g class="point" data-label="{escape(p["label"])}"><title>{escape(tip)}</title>'
                     f'<circle class="topic" cx="{cx:.1f}" cy="{ty:.1f}" r="5" fill="{TOPIC}"/>'
                     f'<rect class="failover" x="{cx - 4:.1f}" y="{fy - 4:.1f}" width="8" height="8" '
                     f'fill="{FAILOVER}"/></g>')
    for cx, names in labels.items():
        top = min(min(y(p["topic_spread"]), y(p["failover_worst_spread"])) for p in pts if round(x(p["moves"])) == cx)
        parts.append(f'<text class="budget" x="{cx}" y="{max(top - 9, TOP + 8):.1f}" font-size="10" '
                     f'text-anchor="middle" fill="#1f2933">{escape(", ".join(names))}</text>')
    parts.append("</svg>")
    legend = (f'<div class="legend"><span style="background:{TOPIC};border-radius:6px"></span>per-topic spread '
              f'(worst topic)<span style="background:{FAILOVER}"></span>failover spread (worst broker down)</div>')
    return legend + "".join(parts)


def frontier_table(d: dict) -> str:
    """One row per point: budget, moves, bytes, spreads, the worst topic, time, and the verdict with the per-topic
    level as the terminal prints it (``point_text``: strict priced by the strict point), or the reason."""
    head = ["point", "budget (moves)", "replica moves", "beyond the fewest", "bytes to move", "per-topic spread",
            "worst topic", "failover spread", "rack failover spread", "time (s)", "verdict"]
    rows = []
    strict = strict_point(d)
    for p in d["points"]:
        name = escape(p["label"])
        if not p["usable"]:
            rows.append(f'<tr><td class="l">{name}</td><td>{escape(_fmt(p["budget_moves"]))}</td>'
                        f'<td class="l na" colspan="{len(head) - 2}">not planned: {escape(p["reason"])}</td></tr>')
            continue
        worst = p["per_topic"]["worst_topic"] if p["per_topic"] else None
        cells = [_fmt(p["budget_moves"]), _fmt(p["moves"]), _fmt(p["extra_moves_spent"]),
                 format_bytes(p["bytes_to_move"]), _fmt(p["topic_spread"]), _fmt(worst),
                 _fmt(p["failover_worst_spread"]), _fmt(p["rack_failover_worst_spread"]), f'{p["seconds"]:,.2f}']
        rows.append(f'<tr><td class="l">{name}</td>' + "".join(f"<td>{escape(c)}</td>" for c in cells[:5])
                    + f'<td class="l">{escape(cells[5])}</td>' + "".join(f"<td>{escape(c)}</td>" for c in cells[6:])
                    + f'<td class="l verdict">{escape(point_text(p, strict))}</td></tr>')
    left = ("point", "worst topic", "verdict")
    th = "".join(f'<th class="{"l" if h in left else ""}">{escape(h)}</th>' for h in head)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _runs(ids: list) -> str:
    """Broker ids with consecutive runs of three or more shown as ranges: [1, 2, 3, 4, 9] → "1–4, 9"."""
    out: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out += [f"{ids[i]}–{ids[j]}"] if j - i >= 2 else [str(x) for x in ids[i:j + 1]]
        i = j + 1
    return ", ".join(out)


def request_text(req: dict) -> str:
    """The request a frontier was planned for, in one line, pairs as the command line writes them: "add 15–17;
    replace 7:31; topic rf orders=3; topics orders.*" (not escaped)."""
    def value(key: str, v) -> str:
        if not isinstance(v, list):
            return str(v)
        if all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            return _runs(v)
        joint = "=" if key == "topic_rf" else ":"
        return ", ".join(joint.join(map(str, x)) if isinstance(x, list) else str(x) for x in v)
    return "; ".join(f"{k.replace('_', ' ')} {value(k, v)}" for k, v in req.items()) or "no request options"


def frontier_section(d: dict) -> str:
    """The chart and the table under one heading, for a page of its own or inside another report."""
    c = d["current"]
    sub = (f'<div class="sub">Planned for: {escape(request_text(d["request"]))}. {_fmt(c["brokers"])} brokers '
           f'after the request, {_fmt(c["partitions"])} partitions, {_fmt(d["scope_replicas"])} replicas in scope; '
           f'now per-topic spread {_fmt(c["topic_spread"])}, worst failover spread '
           f'{_fmt(c["failover_worst_spread"])}</div>')
    return ('<section class="frontier"><h2>Moves against balance: the frontier</h2>' + sub + frontier_chart(d)
            + frontier_table(d) + "</section>")


def render_frontier_html(d: dict, title: str = "flowbalance frontier") -> str:
    """The whole page as a string (UTF-8, no external resource)."""
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{_CSS}</style></head><body><h1>{escape(title)}</h1>{frontier_section(d)}</body></html>\n")
