"""The move budget's failover part (issue 16): ``--extra-moves 2%`` on Kafka-placed RF-3 clusters, with and without
the ``FailoverBudget`` stage, each case in its own process (so the peak memory is that case's alone).

    python -m benchmarks.failover_budget [--only NAME] [--quick] [--objectives] [--budget 2%] [--check]

Cases: the RF-3 cases of ``benchmarks/failover.py`` (12 to 1,000 brokers; racks, additions, removals, history);
``--objectives`` adds ``benchmarks/objectives.py``'s clusters (grown in three waves) with its four requests. Per case:
the worst single-broker failover spread the chain ends with without the stage and with it (brokers at it), the
failover stage's lower bound for the replica sets before → after, the rack rule's counting floor (when racks keep a
partition's replicas apart), the moves the per-topic part spent and what this stage spent of what was left, the
stage's seconds (it runs the later stages once per round to check them) and the whole plan's, and peak RSS.

"without" is the plan from ``flow_chain()`` without the stage, planned separately, on clusters below 1,000 brokers
or with ``--check`` (the stage's own first measure is the same computation; the two are compared). On larger
clusters "without" is the stage's own first measure. ``--quick`` skips the 1,000-broker cases.
"""
from __future__ import annotations

import argparse
import json
import time

from .failover import CASES, _peak_mib, _reset_peak, run_cases

LARGE = 1000


def _chain(with_stage: bool):
    """flow_chain() (the stage after the per-topic budget), or without the stage."""
    from flowbalance.chain.failover_budget import FailoverBudget
    from flowbalance.chain.steps import flow_chain

    return [s for s in flow_chain() if with_stage or s.name != FailoverBudget.name]


def _cases(objectives: bool) -> list[str]:
    """The case names: failover.py's RF-3 cases, then (``objectives``) objectives.py's clusters x requests."""
    names = [name for name, (gen, _) in CASES.items() if gen["rf"] == 3]
    if objectives:
        from . import objectives as ob

        names += [f"obj:{i}:{k}" for i in range(len(ob.CLUSTERS)) for k in range(4)]
    return names


def _request(name: str, budget: str):
    """(cluster, PlanRequest) of a case name."""
    from flowbalance.generate import generate_cluster
    from flowbalance.request import PlanRequest

    if name.startswith("obj:"):
        from . import objectives as ob

        _, i, k = name.split(":")
        _, state, fields = ob._requests(ob._cluster(*ob.CLUSTERS[int(i)]))[int(k)]
        return state, PlanRequest(**fields, extra_moves=budget)
    gen, fields = CASES[name]
    return generate_cluster(**gen), PlanRequest(**fields, extra_moves=budget)


def _label(name: str) -> str:
    if not name.startswith("obj:"):
        return name
    from . import objectives as ob

    _, i, k = name.split(":")
    n, racks = ob.CLUSTERS[int(i)][:2]
    return f"{n} brokers{f', {racks} racks' if racks else ''}, history 3: " + ("add", "remove 1", "RF 4 on 10 %",
                                                                                "rebalance")[int(k)]


def _plan(state, req, with_stage: bool):
    from flowbalance.chain.base import Context, run_chain
    from flowbalance.metrics import measure
    from flowbalance.resolve import resolve

    r = resolve(state, req)
    mb = measure(r.before, target_rf=r.target_rf)
    ctx = Context(r, mb, mb.min_moves)
    stages = _chain(with_stage)
    t = time.perf_counter()
    run_chain(ctx, stages, lambda *a: None, 1, len(stages))
    return ctx, time.perf_counter() - t


def worker(name: str, budget: str, check: bool) -> dict:
    from flowbalance.metrics import broker_failover, compare

    state, req = _request(name, budget)
    _reset_peak()
    ctx, secs = _plan(state, req, True)
    ev, fo, topic = ctx.evidence.get("failover_budget"), ctx.evidence["failover"], ctx.evidence.get("budget")
    out = {"case": _label(name), "brokers": int(ctx.current.brokers.live.sum()), "replicas": ctx.current.num_replicas,
           "moves": compare(ctx.resolved.before, ctx.current).moves, "plan_s": round(secs, 1),
           "stage_s": round(ctx.seconds.get("failover_budget", 0.0), 1), "peak_mib": round(_peak_mib()),
           "with": fo.worst, "with_at": fo.at_worst, "topic_spent": topic.spent if topic else 0,
           "budget": req.extra_moves_for(int(ctx.resolved.target_rf[ctx.resolved.movable].sum())),
           "note": ev.text() if ev else "(stage did not apply)"}
    if ev is not None:
        out.update(without=ev.worst_before, without_at=ev.at_worst_before, bound=(ev.bound_before, ev.bound_after),
                   floor=ev.rack_floor, spent=ev.spent, remaining=ev.remaining, checks=ev.checks)
    measured = float(broker_failover(ctx.current).spread.max())
    assert abs(measured - fo.worst) < 1e-6, (measured, fo.worst)
    if check or out["brokers"] < LARGE:
        base, _ = _plan(state, req, False)
        w = base.evidence["failover"]
        out["without_planned"] = (w.worst, w.at_worst)
        if ev is not None:
            assert (w.worst, w.at_worst) == (ev.worst_before, ev.at_worst_before), (w.worst, ev.worst_before)
    return out


def _big_objectives() -> str:
    """The index of objectives.py's 1,000-broker cluster (skipped by --quick)."""
    from . import objectives as ob

    return str(next(i for i, c in enumerate(ob.CLUSTERS) if c[0] >= LARGE))


def _row(r: dict) -> str:
    b = r.get("bound")
    cells = (r["case"], f"{r['replicas']:,}", f"{r.get('without', '-'):g} ({r.get('without_at', '-')})"
             if "without" in r else "-", f"{r['with']:g} ({r['with_at']})",
             f"{b[0]:g} → {b[1]:g}" if b else "-", "-" if r.get("floor") is None else r["floor"],
             f"{r['budget']:,}", f"{r['topic_spent']:,}", f"{r.get('spent', 0):,} of {r.get('remaining', 0):,}",
             f"{r['stage_s']:.1f} ({r.get('checks', 0)})", f"{r['plan_s']:.1f}", f"{r['peak_mib']:,}",
             "yes" if "without_planned" in r else "no")
    return "| " + " | ".join(str(c) for c in cells) + " |"


HEAD = ("cluster", "replicas", "worst without (at it)", "worst with (at it)", "bound before → after", "rack floor",
        "budget", "per-topic spent", "failover spent of left", "stage s (checks)", "plan s", "peak MiB",
        "without planned")


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.failover_budget")
    ap.add_argument("--only")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--objectives", action="store_true")
    ap.add_argument("--budget", default="2%")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.budget, args.check)))
        return []
    big = ("k1000", f"obj:{_big_objectives()}")
    names = [name for name in _cases(args.objectives)
             if (not args.only or name == args.only) and not (args.quick and name.startswith(big))]
    worker_args = ["--budget", args.budget] + ["--check"] * args.check
    return run_cases("benchmarks.failover_budget", names, worker_args, _row, HEAD, note=lambda r: r["note"])

if __name__ == "__main__":
    main()
