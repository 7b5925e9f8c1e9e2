"""Scale benchmark: nine clusters, each planned in its own process so that peak memory is that case's alone.

    python -m benchmarks scale [--out DIR] [--only NAME] [--modes default,strict,no-per-topic,bytes] [--series]

``--modes`` plans every case again in each request mode (``bytes``: ``--objective bytes`` with the case's
kafka-log-dirs sizes); ``--series`` runs the scaling series instead (the same
skewed layout at 100k / 300k / 1M / 3M replicas) and prints the fitted exponent of time and memory.

Each case's input is written once by ``flowbalance generate`` (cached in DIR). The worker then times every
step: read + parse + validate the assignment JSON, load (broker file), stage 1 / 2 / 3, verification, metrics and
certificate, and writing the plan JSON; it reports peak RSS, moves, M*, the bound the plan reached and why it is
optimal. Finally the headline case runs as one ``flowbalance plan`` process, timed end to end.

A run that compiled numba kernels (the first large plans after an install: numba caches each compiled kernel on
disk) is planned again and the second run reported, with the first run's plan time beside it (``_timed``).
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

# name: (generate arguments, plan keyword arguments, plan CLI arguments)
CASES = {
    "add-10-to-990": (
        ["--brokers", "990", "--topics", "1000", "--partitions", "333-334", "--rf", "3", "--layout", "balanced",
         "--seed", "1"],
        {"add": list(range(990, 1000))}, ["--add", ",".join(str(i) for i in range(990, 1000))]),
    "remove-10-of-1000": (
        ["--brokers", "1000", "--topics", "1000", "--partitions", "333-334", "--rf", "3", "--layout", "balanced",
         "--seed", "1"],
        {"remove": list(range(990, 1000))}, ["--remove", ",".join(str(i) for i in range(990, 1000))]),
    "skewed-1000": (
        ["--brokers", "1000", "--topics", "1000", "--partitions", "333-334", "--rf", "3", "--skew", "0.3",
         "--seed", "1"], {}, []),
    "1000-in-3-racks": (
        ["--brokers", "1000", "--racks", "3", "--rack-aware", "--topics", "1000", "--partitions", "333-334",
         "--rf", "3", "--skew", "0.2", "--seed", "1"], {}, []),
    "wix-40-brokers": (
        ["--brokers", "40", "--topics", "500", "--partitions", "60-140", "--rf", "3", "--skew", "0.12",
         "--seed", "7"], {}, []),
    # placed by Kafka's own assignment: add 2 % more brokers (issue 16's example), and a cluster grown in 4 waves
    "kafka-add-20-to-1000": (
        ["--brokers", "1000", "--topics", "1000", "--partitions", "333-334", "--rf", "3", "--layout", "kafka",
         "--seed", "1"],
        {"add": list(range(1000, 1020))}, ["--add", ",".join(str(i) for i in range(1000, 1020))]),
    "kafka-history-1000-in-3-racks": (
        ["--brokers", "1000", "--racks", "3", "--rack-aware", "--layout", "kafka", "--history", "4", "--topics",
         "1000", "--partitions", "333-334", "--rf", "3", "--seed", "1"], {}, []),
    # RF 3 -> 4 on every tenth topic (10 % of topics; the worker names them from the input)
    "rf-change-10pct-topics": (
        ["--brokers", "1000", "--topics", "1000", "--partitions", "333-334", "--rf", "3", "--layout", "balanced",
         "--seed", "1"], {"rf_every_tenth_topic": 4}, []),
    # a mid-size cluster, Kafka-placed and grown in 4 waves: 200 brokers, about 240,000 replicas (where the failover
    # stage's convex flows run: their work limit lets clusters this size take them, not 1,000,000-replica ones)
    "kafka-history-200-in-3-racks": (
        ["--brokers", "200", "--racks", "3", "--rack-aware", "--layout", "kafka", "--history", "4", "--topics", "400",
         "--partitions", "100-300", "--rf", "3", "--seed", "3"], {}, []),
}
HEADLINE = "add-10-to-990"
# the scaling series: the same layout (skewed, RF 3, about 1,000 replicas per broker) at four sizes
SERIES = {n: (["--brokers", str(n // 1000), "--topics", str(n // 1000), "--partitions", "333-334", "--rf", "3",
               "--skew", "0.3", "--seed", "1"], {}, []) for n in (100_000, 300_000, 1_000_000, 3_000_000)}
for _n, _case in SERIES.items():
    CASES[f"series-{_n // 1000}k"] = _case
# request modes, each case planned again in each (``--modes``): plan keyword arguments
MODES = {"default": {}, "strict": {"per_topic_mode": "strict"}, "no-per-topic": {"per_topic": False},
         "bytes": {"objective": "bytes"}}  # bytes: the sizes come from the case's kafka-log-dirs output


def _peak_mib() -> float:
    """This process's own peak RSS. ru_maxrss can report the parent's peak after fork + exec, so read the
    high-water mark of this address space from /proc when there is one."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _reset_peak() -> bool:
    """Reset this process's high-water RSS (Linux: write 5 to /proc/self/clear_refs); False when unsupported."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _watch_stages(peaks: dict) -> None:
    """Wrap the planner's stage functions so that each records its own peak RSS."""
    import flowbalance.chain.steps as planmod  # the stage objects call these by module-level name

    for stage, name in (("replicas", "balance_replicas"),
                        ("leaders", "balance_leaders"), ("followers", "balance_followers")):
        real = getattr(planmod, name)

        def wrapped(*a, _real=real, _stage=stage, **k):
            ok = _reset_peak()
            try:
                return _real(*a, **k)
            finally:
                if ok:
                    peaks[_stage] = round(_peak_mib())

        setattr(planmod, name, wrapped)


def ensure_input(root: Path, name: str) -> Path:
    d = root / name
    if not (d / "assignment.json").exists():
        gen_args = CASES[name][0]
        subprocess.run([sys.executable, "-m", "flowbalance_cli", "generate", *gen_args, "--formats",
                        "json,brokers", "-o", str(d)], check=True, stdout=subprocess.DEVNULL)
    return d


def ensure_sizes(d: Path, name: str) -> Path:
    """The case's cluster generated again with partition sizes (``--sizes``: the same placement, heavy-tailed
    sizes), written as kafka-log-dirs output beside it: the bytes mode's input."""
    sized = d / "sized"
    if not (sized / "logdirs.txt").exists():
        subprocess.run([sys.executable, "-m", "flowbalance_cli", "generate", *CASES[name][0], "--sizes",
                        "--formats", "json,brokers,logdirs", "-o", str(sized)], check=True,
                       stdout=subprocess.DEVNULL)
    return sized


def _plan_kwargs(name: str, state) -> dict:
    """The case's plan keyword arguments, with ``rf_every_tenth_topic`` turned into a topic -> RF map."""
    kw = dict(CASES[name][1])
    rf = kw.pop("rf_every_tenth_topic", None)
    if rf is not None:
        kw["replication_factor"] = {t: rf for t in state.topics[::10]}
    return kw


def worker(name: str, d: Path, mode: str = "default") -> dict:
    """Plan one case in this process (in one request mode); return the figures."""
    from flowbalance.formats.reassignment import read_reassignment_json
    from flowbalance.formats.writers import reassignment_json, write_atomic
    from flowbalance.load import load_cluster, read_text
    from flowbalance.planner import plan

    out: dict = {"case": name, "mode": mode}
    sizes = None
    if mode == "bytes":  # the same cluster with partition sizes (generated once, before any timing)
        d = ensure_sizes(d, name)
        sizes = d / "logdirs.txt"
    t = time.perf_counter()
    text = read_text(d / "assignment.json")
    read_reassignment_json(text, "assignment.json")
    out["parse_s"] = time.perf_counter() - t
    t = time.perf_counter()
    state = load_cluster(d / "assignment.json", brokers=d / "brokers.csv", sizes=sizes).state
    out["load_s"] = time.perf_counter() - t
    out["load_peak_mib"] = round(_peak_mib())
    out["replicas"] = state.num_replicas
    out["brokers"] = len(state.brokers)
    stage_peaks: dict = {}
    _watch_stages(stage_peaks)
    t = time.perf_counter()
    p = plan(state, **_plan_kwargs(name, state), **MODES[mode])
    out["plan_s"] = time.perf_counter() - t
    out["stage_peak_mib"] = stage_peaks
    out["stages_s"] = {k: round(v, 3) for k, v in p.seconds.items()}
    t = time.perf_counter()
    body = reassignment_json(p.after, p.changes.changed_rows)
    write_atomic({str(d / "plan.json"): body}, [str(d / "assignment.json")])
    out["write_s"] = time.perf_counter() - t
    c = p.certificate
    out.update(moves=p.changes.moves, m_star=c.min_moves, topic_bound=c.topic_min_moves, lower_bound=c.lower_bound,
               proven=c.proven_optimal, reason=c.reason, notes=c.notes,
               spreads_before=[p.metrics_before.replica_spread, p.metrics_before.topic.spread,
                               p.metrics_before.leader_spread],
               spreads_after=[p.metrics_after.replica_spread, p.metrics_after.topic.spread,
                              p.metrics_after.leader_spread],
               failover_worst=[p.metrics_before.failover.worst[1], p.metrics_after.failover.worst[1]],
               peak_mib=max([round(_peak_mib()), *stage_peaks.values(), out["load_peak_mib"]]),
               stage1=_stage1_network(c.notes),
               fallback=any("full keep network" in n for n in c.notes))
    out["total_s"] = out["load_s"] + out["plan_s"] + out["write_s"]  # load includes the parse
    return out


def _stage1_network(notes) -> str:
    """Which stage-1 network the plan's notes name (split, pooled, full keep), or "-"."""
    for n in notes:
        for net in ("split", "pooled", "full keep"):
            if n.startswith(f"stage 1: {net} network"):
                return net
    return "-"


def bench_scale(root: Path, only: str | None = None, modes: tuple[str, ...] = ("default",),
                series: bool = False) -> list[dict]:
    rows = []
    names = [n for n in CASES if not n.startswith("series-")] if not series else []
    names += [n for n in CASES if n.startswith("series-")] if (series or only) else []
    for name in names:
        if only and name != only:
            continue
        d = ensure_input(root, name)
        for mode in modes:
            rows.append(_timed(name, d, mode))
            _print_row(rows[-1])
    _print_table(rows)
    if series:
        _print_exponents([r for r in rows if r["case"].startswith("series-") and r["mode"] == "default"])
    if only in (None, HEADLINE) and not series:
        _end_to_end(root)
    return rows


def _timed(name: str, d: Path, mode: str) -> dict:
    """One case planned in its own process (``worker``); planned again when that run compiled numba kernels (new
    ones in the on-disk cache, ``_kernel_cache``): compiling is a one-time cost per install (about 6.5 s over
    the first three 1,000,000-replica cases of a fresh install), not the plan's. The row keeps the first run's
    plan time as ``compiled_plan_s``."""
    def run() -> dict:
        r = subprocess.run([sys.executable, "-m", "benchmarks.scale", name, str(d), mode], check=True,
                           capture_output=True, text=True)
        return json.loads(r.stdout.strip().splitlines()[-1])

    before = _kernel_cache()
    res = run()
    if _kernel_cache() != before:
        first = res["plan_s"]
        res = run()
        res["compiled_plan_s"] = first
    return res


def _kernel_cache() -> frozenset[str]:
    """The compiled kernels numba has cached beside flowbalance's modules (``*.nbc`` files in its
    ``__pycache__`` folders: one per function and argument types; numba's default place for a writable
    install)."""
    import importlib.util

    spec = importlib.util.find_spec("flowbalance")
    if spec is None or spec.origin is None:
        return frozenset()
    return frozenset(str(p) for p in Path(spec.origin).parent.rglob("*.nbc"))


def _print_exponents(rows: list[dict]) -> None:
    """Least-squares exponent of time and of peak memory against replicas (log-log): 1 means linear."""
    import math

    if len(rows) < 2:
        return
    x = [math.log(r["replicas"]) for r in rows]
    for key, label in (("plan_s", "plan time"), ("peak_mib", "peak memory")):
        y = [math.log(max(r[key], 1e-6)) for r in rows]
        mx, my = sum(x) / len(x), sum(y) / len(y)
        slope = sum((a - mx) * (b - my) for a, b in zip(x, y)) / sum((a - mx) ** 2 for a in x)
        # step by step too: one slow small case (a stage that spends a fixed budget) hides the growth at the top
        k = [f"{round(r['replicas'], -3) // 1000:,}k" for r in rows]
        steps = ", ".join(f"{k[i]} -> {k[i + 1]} {(y[i + 1] - y[i]) / (x[i + 1] - x[i]):.2f}"
                          for i in range(len(rows) - 1))
        print(f"scaling exponent of {label} in replicas: {slope:.2f} (least squares); per step: {steps}",
              flush=True)


def _print_row(res: dict) -> None:
    s = res["stages_s"]
    print(f"{res['case']} [{res['mode']}]: {res['replicas']:,} replicas on {res['brokers']:,} brokers | parse "
          f"{res['parse_s']:.2f} s, load {res['load_s']:.2f} s, stages {s} | plan total {res['plan_s']:.2f} s, write "
          f"{res['write_s']:.2f} s | total {res['total_s']:.2f} s, peak {res['peak_mib']:,} MiB (load "
          f"{res['load_peak_mib']:,}, stages {res['stage_peak_mib']}) | stage 1: {res['stage1']} network"
          f"{' (FALLBACK)' if res['fallback'] else ''} | moves {res['moves']:,}, M* {res['m_star']:,}, bound "
          f"{res['lower_bound']:,}, proven {res['proven']} ({res['reason']})"
          + (f" | the first run compiled numba kernels (once per install; plan {res['compiled_plan_s']:.2f} s): "
             "timed again" if "compiled_plan_s" in res else ""), flush=True)


def _print_table(rows: list[dict]) -> None:
    head = ("case", "mode", "replicas", "load s (parse)", "stage 1 s", "stage 2 s", "stage 3 s", "failover s",
            "other stages s", "plan s", "total s", "peak MiB", "stage 1 network", "moves", "bound", "proven")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        s = r["stages_s"]
        print("| " + " | ".join(str(x) for x in (
            r["case"], r["mode"], f"{r['replicas']:,}", f"{r['load_s']:.2f} ({r['parse_s']:.2f})",
            f"{s.get('replicas', 0):.2f}", f"{s.get('leaders', 0):.2f}", f"{s.get('followers', 0):.2f}",
            f"{s.get('failover', 0):.2f}", f"{_other_stages(s):.2f}", f"{r['plan_s']:.2f}", f"{r['total_s']:.2f}", f"{r['peak_mib']:,}",
            r["stage1"] + (" (fallback)" if r["fallback"] else ""), f"{r['moves']:,}", f"{r['lower_bound']:,}",
            "yes" if r["proven"] else "no")) + " |")
    fallbacks = sum(r["fallback"] for r in rows)
    print(f"fallbacks to the full keep network: {fallbacks} of {len(rows)} plans", flush=True)
    again = [r["case"] for r in rows if "compiled_plan_s" in r]
    if again:
        print(f"timed again after their first run compiled numba kernels: {', '.join(again)}", flush=True)


def _other_stages(stages: dict) -> float:
    """Seconds of the stages the table has no column for (fewest bytes, disk, move budget)."""
    shown = ("replicas", "leaders", "followers", "failover", "verify", "total")
    return sum(v for k, v in stages.items() if k not in shown)


def _end_to_end(root: Path) -> None:
    """The headline case as one ``flowbalance plan`` process: parse, plan, verify, write."""
    d = ensure_input(root, HEADLINE)
    cmd = [sys.executable, "-m", "flowbalance_cli", "plan", str(d / "assignment.json"), "--brokers",
           str(d / "brokers.csv"), *CASES[HEADLINE][2], "-o", str(d / "plan-cli.json"), "--json"]
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    print(f"end to end, one process: flowbalance plan ({HEADLINE}) {time.perf_counter() - t:.2f} s", flush=True)


if __name__ == "__main__":
    print(json.dumps(worker(sys.argv[1], Path(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "default")))
