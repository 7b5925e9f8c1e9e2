"""Run the benchmarks and print a table: wall time and peak memory per step, moves vs M*.

    python -m benchmarks [load|scale|scenarios|strategies|bytes|fleet|fleet-planner|fleet-floor|all] [--out DIR]
                         [--only CASE] [--modes MODES] [--series] [--quick] [--json FILE]

``load``: generate a 1,000,000-replica cluster (1,000 brokers, RF 3) with ``flowbalance generate``, then time
reading it (stdlib json vs orjson) and computing every metric. ``scale``: the planner on seven clusters up to
1,000,000 replicas, each in its own process (see ``benchmarks/scale.py``). ``scenarios``: the planner on the cases of issue 3. ``strategies``: flow vs template on 6 to 48 brokers
(see ``benchmarks/strategies.py``). ``bytes``: the five bytes / disk-balance modes on clusters with heavy-tailed
partition sizes (``benchmarks/bytes.py``; ``--quick`` runs only the smallest cluster). ``fleet``: the Spark pipeline on 200 clusters, 2M replicas and 10M metric rows
(``benchmarks/fleet.py``). ``fleet-planner``: the planner alone on the same 200 clusters, in-process, with the totals an
A/B comparison of the failover stage reads (``benchmarks/fleet_planner.py``; ``--json FILE`` per cluster; not in ``all``).
``fleet-floor``: what the fleet benchmark cannot do without (a fresh Spark JVM reading the tables and the weights,
and the planner), its CPU seconds over the cores against the 60 s target (``benchmarks/fleet_floor.py``; not in
``all``).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _run(fn, *a, **k):
    t = time.perf_counter()
    out = fn(*a, **k)
    return out, time.perf_counter() - t


def bench_load(workdir: Path) -> None:
    from flowbalance.formats.reassignment import read_reassignment_json
    from flowbalance.load import load_cluster, read_text
    from flowbalance.metrics import measure

    d = workdir / "million"
    if not (d / "assignment.json").exists():
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "flowbalance_cli", "generate", "--brokers", "1000", "--topics", "1000",
                        "--partitions", "333", "--rf", "3", "--skew", "0.2", "--sizes", "--seed", "1",
                        "--formats", "json,brokers,logdirs", "-o", str(d)], check=True)
        print(f"generate (1,000 brokers, 333,000 partitions, 999,000 replicas): {time.perf_counter() - t:.2f} s")
    text = read_text(d / "assignment.json")
    print(f"assignment.json: {len(text) / 1e6:.1f} MB")
    _, t_std = _run(json.loads, text)
    import orjson

    _, t_or = _run(orjson.loads, text)
    print(f"parse only: stdlib json {t_std:.2f} s, orjson {t_or:.2f} s")
    _, t_read = _run(read_reassignment_json, text, "assignment.json")
    loaded, t_load = _run(load_cluster, d / "assignment.json", brokers=d / "brokers.csv")
    print(f"read + validate (reader): {t_read:.2f} s; load_cluster with broker file: {t_load:.2f} s")
    loaded_s, t_sizes = _run(load_cluster, d / "assignment.json", brokers=d / "brokers.csv", sizes=d / "logdirs.txt")
    print(f"load_cluster with kafka-log-dirs sizes: {t_sizes:.2f} s")
    state = loaded_s.state
    m, t_m = _run(measure, state)
    print(f"measure (all metrics, incl. failover table and per-topic spread): {t_m:.2f} s")
    print(f"  replicas {m.num_replicas}, replica spread {m.replica_spread}, topic spread {m.topic.spread}, "
          f"leader spread {m.leader_spread}, worst failover {m.failover.worst}, M* {m.min_moves}")
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "flowbalance_cli", "check", str(d / "assignment.json"), "--brokers",
                    str(d / "brokers.csv"), "--json"], stdout=subprocess.DEVNULL)
    print(f"flowbalance check --json (whole process): {time.perf_counter() - t:.2f} s")
    print(f"peak memory (this process): {_peak_mib():.0f} MiB")


def _state(**kw):
    from flowbalance.generate import generate_cluster

    return generate_cluster(**kw)


def scenarios():
    from flowbalance.load import load_cluster
    from flowbalance.metrics import measure

    root = Path(__file__).resolve().parent.parent
    seed = load_cluster(root / "testdata/seed/assignment.json", brokers=root / "testdata/seed/brokers.csv").state
    # Wix-like skew: 40 brokers, ~150k replicas, 4,821..7,341 per broker before
    wix = _state(brokers=40, topics=500, partitions=(60, 140), rf=3, skew=0.12, seed=7)
    racks = _state(brokers=30, racks=3, topics=60, partitions=(6, 30), rf=3, layout="balanced", rack_aware=True, seed=5)
    from flowbalance.model import Brokers

    b = racks.brokers
    racks_new = racks.with_brokers(Brokers.build(list(b.ids) + [30, 31, 32],
                                                 [b.rack_names[r] for r in b.rack] + ["r0", "r1", "r2"]))
    rf2 = _state(brokers=12, topics=20, partitions=(6, 24), rf=2, layout="balanced", seed=11)
    return [
        ("seed example, remove broker 19", seed, dict(remove=[19])),
        ("add 1 broker to a balanced 12-broker cluster (50 topics, RF 3)",
         _state(brokers=12, topics=50, partitions=(4, 24), rf=3, layout="balanced", seed=3), dict(add=[12])),
        ("remove 2 of 24 brokers", _state(brokers=24, topics=80, partitions=(6, 30), rf=3, skew=0.05, seed=9),
         dict(remove=[22, 23])),
        ("40-broker Wix-like skew (~150k replicas)", wix, {}),
        ("3 racks of 10 brokers + 1 new broker per rack", racks_new, {}),
        ("RF 2 -> 3 for 5 of 20 topics", rf2, dict(replication_factor={f"topic-{i:04d}": 3 for i in range(5)})),
        *kafka_scenarios(),
    ]


def kafka_scenarios():
    """Clusters placed by Kafka's own assignment (``layout="kafka"``), some grown in waves (``history``)."""
    kafka40 = _state(brokers=40, topics=40, partitions=(10, 80), rf=2, layout="kafka", seed=13)
    return [
        ("add 1 broker to a Kafka-placed 12-broker cluster (50 topics, RF 3)",
         _state(brokers=12, topics=50, partitions=(4, 24), rf=3, layout="kafka", seed=3), dict(add=[12])),
        ("Kafka-placed 40 brokers, 3 racks, grown in 4 waves",
         _state(brokers=40, racks=3, rack_aware=True, topics=300, partitions=(3, 60), rf=3, layout="kafka",
                history=4, seed=4), {}),
        ("remove 2 of 100 Kafka-placed brokers, 3 racks",
         _state(brokers=100, racks=3, rack_aware=True, topics=400, partitions=(6, 120), rf=3, layout="kafka",
                seed=12), dict(remove=[98, 99])),
        ("RF 2 -> 3 for 10 of 40 topics, Kafka-placed 40 brokers", kafka40,
         dict(replication_factor={f"topic-{i:04d}": 3 for i in range(10)})),
    ]


def bench_scenarios() -> None:
    from flowbalance.planner import plan

    rows = []
    for name, state, kw in scenarios():
        p, secs = _run(plan, state, **kw)
        mb, ma, c = p.metrics_before, p.metrics_after, p.certificate
        rows.append((name, state.num_replicas, p.changes.moves, c.min_moves, c.lower_bound, c.proven_optimal,
                     f"{mb.replica_spread:g}->{ma.replica_spread:g}", f"{mb.topic.spread:g}->{ma.topic.spread:g}",
                     f"{mb.leader_spread:g}->{ma.leader_spread:g}",
                     f"{mb.failover.worst[1]:g}->{ma.failover.worst[1]:g}", f"{secs:.2f}"))
        print(f"{name}: {c.reason}", flush=True)
    head = ("scenario", "replicas", "moves", "M*", "bound", "optimal", "replica spread", "topic spread",
            "leader spread", "worst failover", "seconds")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print(f"peak memory (this process): {_peak_mib():.0f} MiB")


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks")
    ap.add_argument("what", nargs="?", default="all", choices=["load", "scale", "scenarios", "strategies", "bytes", "fleet", "fleet-planner", "fleet-floor", "all"])
    from .scale import CASES

    ap.add_argument("--only", default=None, choices=sorted(CASES), help="with scale: run one case")
    ap.add_argument("--modes", default="default", help="with scale: request modes, comma list of default, "
                    "strict, no-per-topic, bytes")
    ap.add_argument("--series", action="store_true", help="with scale: the scaling series 100k..3M instead")
    ap.add_argument("--quick", action="store_true", default=bool(os.environ.get("FLOWBALANCE_BENCH_QUICK")),
                    help="with bytes: only the smallest cluster (a smoke test; or FLOWBALANCE_BENCH_QUICK=1)")
    ap.add_argument("--json", default=None, help="with fleet-planner: write one record per cluster to this file")
    ap.add_argument("--out", default=os.environ.get("FLOWBALANCE_BENCH_DIR", str(Path(tempfile.gettempdir()) / "flowbalance-bench")))
    args = ap.parse_args()
    if args.json is not None:
        if args.what != "fleet-planner":
            ap.error("--json: only with fleet-planner")
        if not Path(args.json).resolve().parent.is_dir():
            ap.error(f"--json: the folder does not exist ({Path(args.json).resolve().parent})")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from .machine import describe

    print(f"machine: {os.cpu_count()} cores, python {sys.version.split()[0]}, {describe()}")
    if args.what in ("load", "all"):
        bench_load(out)
    if args.what in ("scale", "all"):
        from .scale import bench_scale

        from .scale import MODES

        modes = tuple(m.strip() for m in args.modes.split(","))
        bad = [m for m in modes if m not in MODES]
        if bad:
            ap.error(f"--modes: unknown mode {bad[0]!r} (choose from {', '.join(MODES)})")
        bench_scale(out, args.only, modes, args.series)
    if args.what in ("scenarios", "all"):
        bench_scenarios()
    if args.what in ("strategies", "all"):
        from .strategies import bench_strategies

        bench_strategies()
    if args.what in ("bytes", "all"):
        from .bytes import bench_bytes

        bench_bytes(args.quick)
    if args.what in ("fleet", "all"):
        from .fleet import bench_fleet

        bench_fleet(out)
    if args.what == "fleet-planner":
        from .fleet_planner import bench_fleet_planner

        bench_fleet_planner(out, args.json)
    if args.what == "fleet-floor":
        from .fleet_floor import bench_fleet_floor

        bench_fleet_floor(out)


if __name__ == "__main__":
    main()
