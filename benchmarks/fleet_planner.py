"""The planner alone over the fleet benchmark's 200 clusters (``python -m benchmarks fleet-planner``).

``benchmarks/fleet.py`` times the whole Spark job; most of its plan stage is the planner, and the planner's share
moves with every change to the failover stage, in time and in quality both. This runs the planner in-process on
the same clusters (the snapshot ``fleet.build`` writes; each cluster's state built from its rows by
``pipeline.rows.rows_state``, which tests hold equal to the plan tasks' ``rows.parts_state``), without Spark, the clusters split into two halves planned by two processes at
once (the two cores), and prints what an A/B comparison needs: CPU seconds, and the totals of what the failover
stage and the certificate decide (worst single-broker failover spreads, brokers at them, certificate bounds,
clusters at their bound, leader changes, moves), by the method that found each cluster's failover order.
``--json FILE`` writes one record per cluster (with a hash of its plan file) to compare two runs cluster by cluster.

CPU seconds are the processes' own (``time.process_time``), so they are less sensitive than wall time to other work
on the machine; still, only runs alternated on the same day compare (docs/performance.md).
"""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

HALVES = 2
_METHOD = re.compile(r"failover \(stage 4\):.*, by (.+?)(?:; no order|$)")


def plan_clusters(snap: Path, first: int, last: int) -> dict[str, dict]:
    """Plan clusters ``first`` .. ``last - 1`` (in name order) of the snapshot in this process: a record each."""
    import pandas as pd

    from flowbalance.certificate import certificate_fields
    from flowbalance.pipeline import rows
    from flowbalance.planner import plan, plan_files
    from flowbalance.request import PlanRequest

    brokers = pd.read_parquet(snap / "brokers.parquet")
    replicas = pd.read_parquet(snap / "replicas.parquet")
    sizes = pd.read_parquet(snap / "sizes.parquet")
    requests = json.loads((snap / "fleet.json").read_text())["clusters"]
    names = sorted(brokers.cluster.unique())[first:last]
    by = {k: dict(tuple(t.groupby("cluster"))) for k, t in
          (("brokers", brokers), ("replicas", replicas), ("sizes", sizes))}
    out = {}
    for name in names:
        state = rows.rows_state(by["brokers"][name], by["replicas"][name], by["sizes"].get(name, sizes.iloc[:0]))
        t = time.process_time()
        p = plan(state, PlanRequest.from_json(requests.get(name, {}), "fleet.json"))
        files = plan_files(p)
        fields = certificate_fields(p.certificate)
        cpu = time.process_time() - t
        fo = fields["failover"] or {}
        method = next((m.group(1) for n in p.certificate.notes if (m := _METHOD.search(n))), "no stage 4")
        out[name] = {"cpu": round(cpu, 3), "spread": fo.get("spread"), "at_worst": fo.get("brokers_at_worst"),
                     "bound": fo.get("bound"), "bound_met": fo.get("bound_met"),
                     "leader_changes": p.changes.leader_changes, "moves": p.changes.moves, "method": method,
                     "plan": hashlib.sha1(files.plan.encode()).hexdigest()[:12]}
    return out


def totals(records: dict[str, dict]) -> dict:
    """The sums an A/B comparison reads, and CPU seconds and clusters per failover method."""
    def total(key: str) -> float:
        return sum(r[key] or 0 for r in records.values())
    methods: dict[str, list] = {}
    for r in records.values():
        m = methods.setdefault(r["method"], [0, 0.0])
        m[0] += 1
        m[1] += r["cpu"]
    return {"clusters": len(records), "cpu": round(total("cpu"), 1), "spread": total("spread"),
            "at_worst": total("at_worst"), "bound": total("bound"),
            "bound_met": sum(bool(r["bound_met"]) for r in records.values()),
            "leader_changes": total("leader_changes"), "moves": total("moves"),
            "methods": {k: {"clusters": v[0], "cpu": round(v[1], 1)}
                        for k, v in sorted(methods.items(), key=lambda kv: -kv[1][1])}}


def plan_halves(snap: Path, clusters: int) -> tuple[dict[str, dict], float]:
    """The records of every cluster, planned by ``HALVES`` processes at once, and the wall seconds they took."""
    cut = [clusters * i // HALVES for i in range(HALVES + 1)]
    t = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "benchmarks.fleet_planner", str(snap), str(a), str(b)],
                              stdout=subprocess.PIPE, text=True) for a, b in zip(cut, cut[1:])]
    records: dict[str, dict] = {}
    for proc in procs:
        stdout, _ = proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"fleet-planner: a half failed ({proc.returncode})")
        records.update(json.loads(stdout))
    return records, time.perf_counter() - t


def bench_fleet_planner(root: Path, json_out: str | None = None) -> None:
    from .fleet import CLUSTERS, build

    records, wall = plan_halves(build(root), CLUSTERS)
    s = totals(records)
    print(f"planner over {s['clusters']} fleet clusters, {HALVES} processes: {wall:.1f} s wall, {s['cpu']:.1f} s CPU")
    print(f"failover: worst spreads {s['spread']:g}, brokers at them {s['at_worst']:,}, certificate bounds "
          f"{s['bound']:g}, clusters at their bound {s['bound_met']}; leader changes {s['leader_changes']:,}, "
          f"moves {s['moves']:,}")
    for method, m in s["methods"].items():
        print(f"  {method}: {m['clusters']} clusters, {m['cpu']:.1f} s CPU")
    if json_out:
        Path(json_out).write_text(json.dumps(records, indent=0, sort_keys=True))
        print(f"per cluster: {json_out}")


if __name__ == "__main__":  # one half: python -m benchmarks.fleet_planner SNAPSHOT FIRST LAST
    print(json.dumps(plan_clusters(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))))
