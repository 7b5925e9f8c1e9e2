"""Flow vs template strategy on generated clusters of 6, 12, 24 and 48 brokers (``python -m benchmarks strategies``).

Two questions per cluster size, the figures in docs/strategies.md:

* rebalance: a skewed random cluster (RF 3, ``skew 0.5``) planned by each strategy: moves against the lower
  bound, and every spread after;
* grow: the cluster as each strategy laid it out, plus ``GROW`` new brokers, planned again by the same strategy:
  how many replicas each moves to fill the new brokers, and the failover spread it keeps.

Then the time of the template strategy on larger clusters (the dense matching per topic, and one topic large
enough for the candidate-pair matching).
"""
from __future__ import annotations

import time

import numpy as np

SIZES = (6, 12, 24, 48)
GROW = 1


def _cluster(n: int, seed: int):
    from flowbalance.generate import generate_cluster

    # about 10 partitions per broker per topic group, so the largest cluster still has every pair used
    return generate_cluster(brokers=n, topics=20, partitions=(n, 4 * n), rf=3, skew=0.5, seed=seed)


def _row(p) -> dict:
    ma, c = p.metrics_after, p.certificate
    return dict(moves=p.changes.moves, bound=c.lower_bound, replica=ma.replica_spread, topic=ma.topic.spread,
                leader=ma.leader_spread, failover=ma.failover.worst[1], seconds=p.seconds["total"])


def rebalance_and_grow() -> list[tuple]:
    from flowbalance.planner import plan

    rows = []
    for n in SIZES:
        state = _cluster(n, seed=n)
        for strategy in ("flow", "template"):
            p = plan(state, strategy=strategy)
            r = _row(p)
            laid = p.after
            grown = plan(laid, add=list(range(n, n + GROW)), strategy=strategy)
            g = _row(grown)
            rows.append((n, state.num_replicas, strategy, r["moves"], r["bound"], r["replica"], r["topic"],
                         r["leader"], f"{p.metrics_before.failover.worst[1]:g}->{r['failover']:g}",
                         g["moves"], g["bound"], f"{g['failover']:g}", f"{r['seconds'] + g['seconds']:.2f}"))
            print(f"  {n} brokers, {strategy}: done", flush=True)
    return rows


def template_scale() -> list[tuple]:
    from flowbalance.generate import generate_cluster
    from flowbalance.planner import plan

    cases = [
        ("100 brokers, 1,000 topics x 100 partitions (300k replicas)",
         dict(brokers=100, topics=1000, partitions=100, rf=3, skew=0.3, seed=1)),
        ("48 brokers, 1 topic of 20,000 partitions (candidate-pair matching)",
         dict(brokers=48, topics=1, partitions=20_000, rf=3, skew=0.3, seed=2)),
    ]
    rows = []
    for name, kw in cases:
        state = generate_cluster(**kw)
        out = {}
        for strategy in ("flow", "template"):
            t = time.perf_counter()
            p = plan(state, strategy=strategy)
            out[strategy] = (time.perf_counter() - t, p.changes.moves, p.metrics_after.failover.worst[1])
        lb = p.certificate.lower_bound
        rows.append((name, lb, *[f"{out[s][1]} moves, failover {out[s][2]:g}, {out[s][0]:.1f} s" for s in out]))
        print(f"  {name}: done", flush=True)
    return rows


def bench_strategies() -> None:
    rows = rebalance_and_grow()
    head = ("brokers", "replicas", "strategy", "moves", "bound", "replica spread", "topic spread", "leader spread",
            "failover", f"grow +{GROW}: moves", "grow bound", "grow failover", "seconds")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(f"{x:g}" if isinstance(x, (float, np.floating)) else str(x) for x in r) + " |")
    rows = template_scale()
    head = ("cluster", "lower bound", "flow", "template")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
