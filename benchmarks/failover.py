"""Failover stage benchmark: Kafka-placed clusters of 12 to 1,000 brokers, each planned by stages 1-3 and then
reordered by the failover stage, in its own process (so the peak memory is that case's alone).

    python -m benchmarks.failover [--only NAME] [--quick] [--oracle-seconds S]

Per case: the worst single-broker failover spread after stages 2 + 3 (the baseline), after the failover stage with
broker leader intervals only (the default chain's) and with per-topic leader intervals too (what the chain keeps
when the request balances topics strictly), the stage's lower bound and what proved it (failed brokers' rows,
blocks of brokers, the linear relaxation, CP-SAT), whether it is met, the method that found the order, the
stage's seconds (wall and CPU: others may share the machine) and peak RSS. On clusters of up to 40 brokers an
independent CP-SAT model (``tests/failover_oracle.py``, ``--oracle-seconds`` deterministic seconds) gives the
optimum for broker intervals, or its best and bound. ``--quick`` skips the 1,000-broker cases.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

# name: (generate_cluster keywords, PlanRequest fields)
_K = {"layout": "kafka", "seed": 1}
CASES = {
    "k12": ({"brokers": 12, "topics": 40, "partitions": (3, 24), "rf": 3, **_K}, {}),
    "k12-racks-remove": ({"brokers": 12, "racks": 3, "rack_aware": True, "topics": 40, "partitions": (3, 24), "rf": 3,
                          **_K}, {"remove": (11,)}),
    "k12-rf2": ({"brokers": 12, "topics": 40, "partitions": (3, 24), "rf": 2, **_K}, {}),
    "k40-add": ({"brokers": 40, "topics": 200, "partitions": (6, 60), "rf": 3, **_K}, {"add": (40, 41)}),
    "k40-racks": ({"brokers": 40, "racks": 4, "rack_aware": True, "topics": 200, "partitions": (6, 60), "rf": 3, **_K},
                  {}),
    "k40-rf2-remove": ({"brokers": 40, "topics": 200, "partitions": (6, 60), "rf": 2, **_K}, {"remove": (7,)}),
    "k100": ({"brokers": 100, "topics": 500, "partitions": (10, 100), "rf": 3, **_K}, {}),
    "k100-racks-remove": ({"brokers": 100, "racks": 5, "rack_aware": True, "topics": 500, "partitions": (10, 100),
                           "rf": 3, **_K}, {"remove": (98, 99)}),
    "k100-history": ({"brokers": 100, "topics": 500, "partitions": (10, 100), "rf": 3, "history": 4, **_K}, {}),
    "k1000-100k": ({"brokers": 1000, "topics": 100, "partitions": (333, 334), "rf": 3, **_K}, {}),
    "k1000-100k-racks": ({"brokers": 1000, "racks": 3, "rack_aware": True, "topics": 100, "partitions": (333, 334),
                          "rf": 3, **_K}, {}),
    "k1000-1M": ({"brokers": 1000, "topics": 1000, "partitions": (333, 334), "rf": 3, **_K}, {}),
    "k1000-1M-add-20": ({"brokers": 1000, "topics": 1000, "partitions": (333, 334), "rf": 3, **_K},
                        {"add": tuple(range(1000, 1020))}),
    "k1000-1M-history-racks": ({"brokers": 1000, "racks": 3, "rack_aware": True, "topics": 1000,
                                "partitions": (333, 334), "rf": 3, "history": 4, **_K}, {}),
}
ORACLE_MAX_BROKERS = 40


def _peak_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def stages_1_3(name: str):
    """The cluster of ``name`` planned by the flow chain without the failover stages (the move budget's failover
    part included): (state, movable)."""
    from flowbalance.chain.base import Context, run_chain
    from flowbalance.chain.steps import flow_chain
    from flowbalance.generate import generate_cluster
    from flowbalance.metrics import measure
    from flowbalance.request import PlanRequest
    from flowbalance.resolve import resolve

    gen, req = CASES[name]
    r = resolve(generate_cluster(**gen), PlanRequest(**req))
    mb = measure(r.before, target_rf=r.target_rf)
    ctx = Context(r, mb, mb.min_moves)
    run_chain(ctx, [s for s in flow_chain() if not s.name.startswith("failover")], lambda *a: None, 1, 6)
    return ctx.current, r.movable


def _stage(state, movable, topic_leaders: bool) -> dict:
    from flowbalance.stages.failover import balance_failover

    _reset_peak()
    t, cpu = time.perf_counter(), time.process_time()
    res = balance_failover(state, movable, baseline=state.replicas, topic_leaders=topic_leaders)
    return {"worst": res.worst, "at_worst": res.at_worst, "bound": res.bound, "bound_by": res.bound_by,
            "exact": res.exact, "method": res.method, "seconds": round(time.perf_counter() - t, 2),
            "cpu": round(time.process_time() - cpu, 2), "peak_mib": round(_peak_mib()),
            "leader_changes": res.leader_changes, "baseline": res.baseline_worst}


def _oracle(state, movable, seconds: float) -> dict:
    """The independent CP-SAT model of tests/failover_oracle.py (broker leader intervals)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests import failover_oracle as oracle

    b = state.brokers
    case = oracle.Case(ids=tuple(int(x) for x in b.ids), weight=tuple(1 for _ in b.ids),
                       removed=tuple(bool(x) for x in b.removed), topic=tuple(int(t) for t in state.topic),
                       start=tuple(tuple(int(x) for x in row if x >= 0) for row in state.replicas),
                       movable=tuple(bool(m) for m in movable))
    t = time.perf_counter()
    o = oracle.cpsat_optimum(case, False, seconds=seconds)
    return {"best": o.worst, "lower": o.lower, "proven": o.proven, "seconds": round(time.perf_counter() - t, 1)}


def worker(name: str, oracle_seconds: float) -> dict:
    t = time.perf_counter()
    state, movable = stages_1_3(name)
    out = {"case": name, "brokers": int(state.brokers.live.sum()), "replicas": state.num_replicas,
           "rf": int(state.rf.max()), "plan_s": round(time.perf_counter() - t, 1)}
    out["brokers_only"] = _stage(state, movable, False)
    out["topic_leaders"] = _stage(state, movable, True)
    if out["brokers"] <= ORACLE_MAX_BROKERS and oracle_seconds > 0:
        out["oracle"] = _oracle(state, movable, oracle_seconds)
    return out


def _row(r: dict) -> str:
    a, t = r["brokers_only"], r["topic_leaders"]
    o = r.get("oracle")
    oracle = ("" if o is None else f"{o['best']:g} (optimal)" if o["proven"]
              else f"{o['best']:g}, bound {o['lower']:g}")
    cells = (r["case"], f"{r['replicas']:,}", r["rf"], f"{a['baseline']:g}", f"{a['worst']:g} ({a['at_worst']})",
             f"{a['bound']:g}", a["bound_by"], "yes" if a["exact"] else "no", a["method"], f"{a['seconds']:.2f}",
             f"{a['cpu']:.2f}", f"{a['peak_mib']:,}", f"{t['worst']:g} ({t['at_worst']})", f"{t['bound']:g}",
             f"{t['seconds']:.2f}", oracle)
    return "| " + " | ".join(str(c) for c in cells) + " |"


HEAD = ("cluster", "replicas", "RF", "stages 2+3 worst", "stage worst (brokers at it)", "bound", "proved by",
        "= bound", "method", "s", "CPU s", "peak MiB", "with topic leaders", "bound", "s", "oracle (broker intervals)")


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.failover")
    ap.add_argument("--only")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--oracle-seconds", type=float, default=20.0)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.oracle_seconds)))
        return []
    names = [name for name, (gen, _) in CASES.items()
             if (not args.only or name == args.only) and not (args.quick and gen["brokers"] >= 1000)]
    return run_cases("benchmarks.failover", names, ["--oracle-seconds", str(args.oracle_seconds)], _row, HEAD)


def run_cases(module: str, names, worker_args: list[str], row, head, note=None) -> list[dict]:
    """Each case in its own process (``python -m MODULE --worker NAME ...``: its peak memory is its own); a row
    per case as it ends (and its ``note`` line), then the whole table."""
    rows = []
    for name in names:
        r = subprocess.run([sys.executable, "-m", module, "--worker", name, *worker_args], check=True,
                           capture_output=True, text=True)
        rows.append(json.loads(r.stdout.strip().splitlines()[-1]))
        print(row(rows[-1]), *(("\n   ", note(rows[-1])) if note else ()), flush=True)
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print(row(r))
    return rows


if __name__ == "__main__":
    main()
