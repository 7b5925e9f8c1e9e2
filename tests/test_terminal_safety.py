"""Nothing read from input is interpreted by the terminal: rack, topic, file and cluster names cannot inject rich
markup (``[/a]`` used to crash with a MarkupError, ``[bold red]x[/bold red]`` used to style), terminal escape
sequences (``ESC[2J`` cleared the screen) or bidi overrides; JSON stays the same data with those characters
escaped; the HTML page escapes every name.

Names go in through broker files (racks can be anything there) and, since the readers refuse odd topic names,
through ClusterStates built directly for topics.
"""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import unicodedata

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from flowbalance.metrics import measure
from flowbalance.model import Brokers, ClusterState
from flowbalance.planner import plan
from flowbalance.request import STRATEGIES
from flowbalance.report import build_report
from flowbalance.report_html import render_html
from flowbalance.summary import Thresholds, compare_summary, evaluate, metrics_dict, plan_summary
from flowbalance_cli.render import escape_controls, json_text, render_check, render_compare, render_plan, safe_text
from flowbalance_cli.report_view import render_report

from .conftest import ROOT, TESTDATA
from .test_bad_input import assert_one_line

K = TESTDATA / "kafka"
HIDDEN = {"Cc", "Cf", "Cs", "Zl", "Zp"}
# (name as given, what the operator must see instead)
NASTY = [
    ("[/a]", "[/a]"),
    ("[bold red]x[/bold red]", "[bold red]x[/bold red]"),
    ("\x1b[2J", "\\x1b[2J"),
    ("\u202eevil", "\\u202eevil"),
    ("c1\x9bz", "c1\\x9bz"),
    (":thumbs_up:", ":thumbs_up:"),
]
RAW_FORBIDDEN = ("\x1b", "\u202e", "\x9b")
SGR = re.compile(r"\x1b\[[0-9;]*m")  # rich's own colour codes, allowed on a terminal


def _no_hidden(text: str, allowed: str = "") -> bool:
    return not any(unicodedata.category(ch) in HIDDEN and ch not in allowed for ch in text)


# ---- the functions ----------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text())
@example("\\[")
@example("\\[bold]x")
@example("a\\\\[1]")
@example("\\\\")
@example("x\\\\\\")
def test_safe_text_renders_as_the_escaped_text_and_hides_nothing(s):
    shown = escape_controls(s)
    assert _no_hidden(shown)
    # markup never interpreted, never fails, also right before a closing tag
    assert Text.from_markup(f"[bold]{safe_text(s)}[/bold]", emoji=False).plain == shown
    # at the very end of a markup string a trailing run of backslashes shows doubled (it must stay literal
    # before a tag, where rich halves it); nothing else differs
    run = len(shown) - len(shown.rstrip("\\"))
    assert Text.from_markup(safe_text(s), emoji=False).plain == shown + "\\" * run
    if s.isprintable():
        assert shown == s  # ordinary names are untouched


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(blacklist_categories=["Cs"])))
def test_escape_controls_can_be_read_back(s):
    """Every escape is Python's own spelling of the character, so the original can be recovered."""
    shown = escape_controls(s)
    if "\\" not in s:
        assert re.sub(r"\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})",
                      lambda m: chr(int(m.group(0)[2:], 16)), shown) == s


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(st.characters(blacklist_categories=["Cs"])),
                       st.text(st.characters(blacklist_categories=["Cs"]))))
def test_json_text_is_the_same_data_without_raw_controls(d):
    text = json_text(d)
    assert json.loads(text) == d
    assert _no_hidden(text, allowed="\n")  # the indentation's newlines only


def test_safe_text_examples():
    for given_, seen in NASTY:
        assert escape_controls(given_) == seen
        assert Text.from_markup(safe_text(given_), emoji=False).plain == seen
    assert escape_controls("\U000e0001tag\u2028") == "\\U000e0001tag\\u2028"
    assert escape_controls("tab\there") == "tab\\x09here"


# ---- renderers on states built directly (topic names the readers would refuse) -----------------------------


def _state(topics: list[str], racks: list[str]) -> ClusterState:
    """Six brokers on the given racks, every topic 4 partitions, skewed onto brokers 0-2 (so plans move)."""
    brokers = Brokers.build(list(range(6)), racks)
    names, parts, reps = [], [], []
    for t in topics:
        for p in range(4):
            names.append(t)
            parts.append(p)
            reps.append([p % 3, (p + 1) % 3])
    return ClusterState.build(brokers, names, parts, np.array(reps))


def _render(fn, *args, terminal: bool = False, **kw) -> str:
    buf = io.StringIO()
    con = Console(file=buf, width=250, highlight=False, soft_wrap=True, emoji=False, force_terminal=terminal,
                  color_system="truecolor" if terminal else None)
    fn(*args, con, **kw)
    return buf.getvalue()


def _assert_safe(out: str, *visible: str) -> None:
    for v in visible:
        assert v in out, (v, out)
    bare = SGR.sub("", out)
    for ch in RAW_FORBIDDEN:
        assert ch not in bare, (ch, out)


@pytest.mark.parametrize("terminal", [False, True])
def test_every_renderer_shows_names_literally(terminal):
    topics = [n for n, _ in NASTY]
    racks = ["[/a]", "[bold red]x[/bold red]", "\x1b[2J", "\u202eevil", "c1\x9bz", ":thumbs_up:"]
    state = _state(topics, racks)
    seen_racks = [s for _, s in NASTY]

    m = measure(state)
    checks = evaluate(state, m, Thresholds())
    _assert_safe(_render(render_check, metrics_dict(state, m), checks, terminal=terminal), *seen_racks)

    p = plan(state, remove=[5])
    rep = build_report(p)
    out = _render(render_report, rep, terminal=terminal)
    _assert_safe(out, *seen_racks)
    data = plan_summary(p)
    data["files"] = ["out/\x1b[2J[/a].json"]
    data["notes"] = list(data["notes"]) + ["note on [bold]t\x1b[31m[/bold]"]
    _assert_safe(_render(render_plan, data, terminal=terminal), "out/\\x1b[2J[/a].json", "note on [bold]t\\x1b[31m[/bold]")

    cmp = compare_summary({s: plan(state, strategy=s, remove=[5]) for s in STRATEGIES})
    _assert_safe(_render(render_compare, cmp, terminal=terminal), *STRATEGIES)


def test_report_warnings_list_topic_names_literally():
    """Rack violations name partitions (topic-partition) in the report's warnings."""
    state = _state(["[/x]\x1b[2J"], ["r", "r", "r", "s", "s", "s"])
    rep = build_report(state, None)
    assert any("[/x]\x1b[2J-0" in w["items"] for w in rep["warnings"])
    _assert_safe(_render(render_report, rep), "[/x]\\x1b[2J-0")


def test_html_escapes_every_name():
    topic = "<script>alert(1)</script>"
    rack = "<img src=x onerror=alert(2)>"
    state = _state([topic], [rack, rack, rack, "r&b", "r&b", '"q"'])
    p = plan(state, remove=[5])
    page = render_html(build_report(p.before, p.after), title=f"report {topic}")
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page and "r&amp;b" in page


# ---- the CLI, with racks from a broker file ----------------------------------------------------------------


@pytest.fixture
def nasty_brokers(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # no wrapping inside a name
    path = tmp_path / "brokers.json"
    path.write_text(json.dumps([{"id": i + 1, "rack": NASTY[i][0]} for i in range(6)]))
    return path


def _assert_cli_safe(code, out, err, ok=(0,)):
    assert code in ok, (code, out, err)
    assert "Traceback" not in out + err
    _assert_safe(out, *[s for _, s in NASTY])
    for ch in RAW_FORBIDDEN:
        assert ch not in err


def test_check_report_plan_compare_with_nasty_racks(tmp_path, run_cli, nasty_brokers):
    cur = K / "assignment.json"
    _assert_cli_safe(*run_cli("check", cur, "--brokers", nasty_brokers), ok=(0, 1))
    _assert_cli_safe(*run_cli("report", cur, "--brokers", nasty_brokers))
    _assert_cli_safe(*run_cli("plan", cur, "--brokers", nasty_brokers, "-o", tmp_path / "p.json"))
    code, out, err = run_cli("compare", cur, "--brokers", nasty_brokers)
    assert code == 0 and "Traceback" not in out + err and not any(ch in out + err for ch in RAW_FORBIDDEN)
    code, out, err = run_cli("report", cur, "--brokers", nasty_brokers, "--plan", tmp_path / "p.json",
                             "--html", tmp_path / "r.html")
    _assert_cli_safe(code, out, err)
    assert "[bold red]x[/bold red]" in (tmp_path / "r.html").read_text()


def test_json_outputs_keep_the_names_and_escape_them(tmp_path, run_cli, nasty_brokers):
    cur = K / "assignment.json"
    for args in (("check", cur, "--brokers", nasty_brokers, "--json"),
                 ("report", cur, "--brokers", nasty_brokers, "--json")):
        code, out, err = run_cli(*args)
        assert code in (0, 1), err
        for ch in RAW_FORBIDDEN:
            assert ch not in out
        doc = json.loads(out)
        racks = {r["rack"] for r in doc["per_broker"]}
        assert racks == {n for n, _ in NASTY}


def test_errors_and_paths_show_controls_escaped(tmp_path, run_cli):
    bad = tmp_path / "in\x1b[2J\u202e.json"
    code, out, err = run_cli("check", bad)
    line = assert_one_line(code, out, err)
    assert "\x1b" not in err and "\u202e" not in err
    assert "\\x1b[2J\\u202e" in line or "\\x1b" in line
    folder = tmp_path / "g\x1b[2J"
    code, out, err = run_cli("generate", "--brokers", "3", "--topics", "1", "--partitions", "1", "-o", folder)
    assert code == 0 and "\x1b" not in out and "g\\x1b[2J" in out


def test_forced_colour_terminal_shows_only_riches_own_escapes(tmp_path, nasty_brokers):
    """A real process with FORCE_COLOR: rich writes its colour codes, the input's sequences stay text."""
    env = dict(os.environ, FORCE_COLOR="1", COLUMNS="250", TERM="xterm-256color")
    env.pop("NO_COLOR", None)
    res = subprocess.run([sys.executable, "-m", "flowbalance_cli", "report", str(K / "assignment.json"),
                          "--brokers", str(nasty_brokers)], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert SGR.search(res.stdout), "rich should colour a forced terminal"
    _assert_safe(res.stdout, *[s for _, s in NASTY])
