"""The objective order on Kafka-placed clusters (``python -m benchmarks.objectives [--large]``): issue 16's
figures.

Clusters laid out by Kafka's own assignment (``generate --layout kafka``), grown in waves (``--history 3``), of 12,
40, 100 and 1,000 brokers, with and without racks; per cluster four requests: add 2 % brokers, remove one broker,
RF 3 → 4 on 10 % of the topics, and a plain rebalance. Per request: the default plan's moves against its bound
(proven or not), its per-topic spread and floor, what strict per-topic balance needs (its bound), the worst
single-broker failover spread before → after, and the time. ``--large`` adds 1,000 brokers with ~1,000,000
replicas (minutes).
"""
from __future__ import annotations

import sys
import time

import numpy as np

CLUSTERS = (  # (brokers, racks, topics, partitions)
    (12, 0, 40, (3, 24)),
    (40, 0, 300, (4, 40)),
    (40, 4, 300, (4, 40)),
    (100, 0, 600, (10, 80)),
    (100, 5, 600, (10, 80)),
    (1000, 0, 3000, (10, 60)),
)
LARGE = ((1000, 0, 10000, (10, 56)),)


def _cluster(brokers: int, racks: int, topics: int, partitions: tuple[int, int]):
    from flowbalance.generate import generate_cluster

    return generate_cluster(brokers=brokers, racks=racks, rack_aware=racks > 0, topics=topics,
                            partitions=partitions, rf=3, layout="kafka", history=3, seed=brokers + racks)


def _requests(state) -> list[tuple[str, object, dict]]:
    """(name, state, request fields): new brokers join the racks round-robin, as the broker file would say."""
    b = state.brokers
    ids = [int(x) for x in b.ids]
    n = len(ids)
    new = list(range(max(ids) + 1, max(ids) + 1 + max(1, n // 50)))
    grown = b
    for i, x in enumerate(new):
        grown = grown.with_added([x], rack=b.rack_names[i % len(b.rack_names)] if b.rack_names else None)
    topics = state.topics
    step = max(1, len(topics) // 10)
    return [
        (f"add {len(new)}", state.with_brokers(grown), dict(add=tuple(new))),
        ("remove 1", state, dict(remove=(ids[n // 2],))),
        ("RF 4 on 10 % of topics", state, dict(topic_rf=tuple((t, 4) for t in topics[::step]))),
        ("rebalance", state, dict()),
    ]


def run(large: bool = False) -> list[tuple]:
    from flowbalance.planner import plan
    from flowbalance.request import PlanRequest

    rows = []
    for spec in CLUSTERS + (LARGE if large else ()):
        state = _cluster(*spec)
        for name, given, fields in _requests(state):
            t = time.perf_counter()
            p = plan(given, PlanRequest(**fields))
            secs = time.perf_counter() - t
            c, tl = p.certificate, p.certificate.topics
            rows.append((f"{spec[0]} brokers{f', {spec[1]} racks' if spec[1] else ''}", f"{state.num_replicas:,}",
                         name, p.changes.moves, c.lower_bound, "yes" if c.proven_optimal else "no",
                         f"{tl.spread:g} (floor {tl.floor:g})", f"{tl.strict_moves:,}",
                         f"{p.metrics_before.failover.worst[1]:g} → {p.metrics_after.failover.worst[1]:g}",
                         f"{secs:.1f}"))
            print("  " + " | ".join(map(str, rows[-1])), flush=True)
    return rows


HEAD = ("cluster", "replicas", "request", "moves", "bound", "proven", "per-topic spread", "strict needs",
        "failover worst", "seconds")


def main(argv: list[str]) -> None:
    rows = run(large="--large" in argv)
    print("| " + " | ".join(HEAD) + " |")
    print("|" + "---|" * len(HEAD))
    for r in rows:
        print("| " + " | ".join(map(str, r)) + " |")
    print(f"proven optimal: {sum(r[5] == 'yes' for r in rows)} of {len(rows)}")


if __name__ == "__main__":
    main(sys.argv[1:])
