"""``flowbalance frontier`` on the 1,000,000-replica Kafka-placed cluster (``python -m benchmarks.frontier [--out
DIR] [--budgets B,B,...]``): issue 16's measurement.

The cluster of docs/performance.md (``generate --brokers 1000 --topics 1000 --partitions 333-334 --rf 3 --layout
kafka --seed 1``, 1,000,425 replicas) with 20 brokers added (``--add 1000,...,1019``), the default budgets. The
command runs in its own process, as an operator runs it: total wall time, peak RSS of that process (its
``ru_maxrss``), the load average before and after (other work on the machine slows it), and per point its
moves, whether proven minimal, the per-topic and failover spreads and its time. Then ``report --html --frontier``
draws the saved result: its time and peak RSS.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GENERATE = ["--brokers", "1000", "--topics", "1000", "--partitions", "333-334", "--rf", "3", "--layout", "kafka",
            "--seed", "1", "--formats", "json,brokers"]
ADD = ",".join(str(b) for b in range(1000, 1020))


def _cli(*args: str, stdout=subprocess.DEVNULL) -> tuple[float, float]:
    """Run ``flowbalance ARGS`` in a child process: (wall seconds, that child's peak RSS in MiB)."""
    t = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "flowbalance_cli", *args], stdout=stdout)
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"flowbalance {args[0]} failed: exit {child.returncode}")
    return time.perf_counter() - t, usage.ru_maxrss / 1024


def _cluster(folder: Path) -> Path:
    if not (folder / "assignment.json").exists():
        _cli("generate", *GENERATE, "-o", str(folder))
    return folder


def run(folder: Path, budgets: str | None) -> dict:
    """Plan the frontier (and draw it with report); every number of the table below."""
    _cluster(folder)
    saved = folder / "frontier.json"
    extra = ["--budgets", budgets] if budgets else []
    load_before = os.getloadavg()
    with saved.open("w") as out:  # the JSON on stdout (-q would print nothing)
        wall, peak = _cli("frontier", str(folder / "assignment.json"), "--brokers", str(folder / "brokers.csv"),
                          "--add", ADD, *extra, "--json", stdout=out)
    load_after = os.getloadavg()
    report_wall, report_peak = _cli("report", str(folder / "assignment.json"), "--brokers", str(folder / "brokers.csv"),
                                    "--frontier", str(saved), "--html", str(folder / "report.html"))
    return {"data": json.loads(saved.read_text()), "wall": wall, "peak": peak, "load": (load_before, load_after),
            "report": (report_wall, report_peak)}


def table(r: dict) -> str:
    d = r["data"]
    lines = [f"frontier: {r['wall']:.1f} s wall ({d['seconds']:.1f} s planning), peak RSS {r['peak']:,.0f} MiB; "
             f"load average {r['load'][0][0]:.2f} before, {r['load'][1][0]:.2f} after (2 cores)",
             f"report --html --frontier: {r['report'][0]:.1f} s, peak RSS {r['report'][1]:,.0f} MiB", "",
             "| point | budget | moves | beyond the fewest | proven minimal | per-topic spread | failover spread | s |",
             "|---|---|---|---|---|---|---|---|"]
    for p in d["points"]:
        if not p["usable"]:
            lines.append(f"| {p['label']} | {p['budget_moves']} | not planned: {p['reason']} | | | | | |")
            continue
        budget = "-" if p["budget_moves"] is None else f"{p['budget_moves']:,}"
        spent = "-" if p["extra_moves_spent"] is None else f"{p['extra_moves_spent']:,}"
        lines.append(f"| {p['label']} | {budget} | {p['moves']:,} | {spent} | {'yes' if p['proven_optimal'] else 'no'}"
                     f" | {p['topic_spread']} | {p['failover_worst_spread']} | {p['seconds']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="folder for the cluster and the results (kept)")
    ap.add_argument("--budgets", default=None, help="budgets to plan (default: the command's)")
    args = ap.parse_args(argv)
    folder = args.out or Path(tempfile.mkdtemp(prefix="flowbalance-frontier-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(table(run(folder, args.budgets)))


if __name__ == "__main__":
    main()
