"""What reordering alone (no data moves) would do for a cluster: stages 2, 3 and 4 (leaders, first followers,
failover) of the flow chain run on its current replica sets, as ``plan`` runs them on a cluster whose replica
counts are already at their targets.

``check`` prints it ("failover could improve by reordering only: worst spread 7 → 2, no data moves"), so check and
plan agree: the numbers are the ones ``plan`` reaches when it moves nothing.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .metrics import broker_failover, leader_counts, spread
from .model import ClusterState
from .stages.failover import balance_failover
from .stages.followers import balance_followers
from .stages.leaders import balance_leaders


@dataclass(frozen=True)
class ReorderGain:
    """Leader spread and worst single-broker failover spread now and after reordering only."""

    leader_spread: tuple[float, float]
    failover_worst: tuple[float, float]
    reordered_partitions: int

    @property
    def improves(self) -> bool:
        return self.leader_spread[1] < self.leader_spread[0] or self.failover_worst[1] < self.failover_worst[0]

    def text(self) -> str:
        parts = [f"{name} {a:g} → {b:g}" for name, (a, b) in (("leader spread", self.leader_spread),
                                                                ("worst failover spread", self.failover_worst))
                 if b < a]
        return (f"reordering only (no data moves) would lower {', '.join(parts)} "
                f"({self.reordered_partitions} partitions reordered)")


def reorder_gain(state: ClusterState, *, per_topic: bool = True, topic_leaders: bool = False) -> ReorderGain:
    """Run stage 2 (leaders), stage 3 (first followers) and stage 4 (failover) on every partition of ``state``
    and measure. ``per_topic``: stage 2 balances every topic's leaders too; ``topic_leaders``: stage 4 keeps
    them (``plan`` does with ``per_topic_mode="strict"``)."""
    movable = np.ones(state.num_partitions, dtype=bool)
    led = balance_leaders(state, state.replicas[:, 0].copy(), movable, per_topic=per_topic)
    ordered = balance_followers(state.with_replicas(led), movable)
    res = balance_failover(state, movable, baseline=ordered, topic_leaders=topic_leaders,
                           per_topic=per_topic)
    after = state.with_replicas(res.replicas)
    changed = int((after.replicas != state.replicas).any(axis=1).sum())
    return ReorderGain((_leader_spread(state), _leader_spread(after)),
                       (broker_failover(state).worst[1], broker_failover(after).worst[1]), changed)


def _leader_spread(state: ClusterState) -> float:
    """The leader spread as ``measure`` gives it."""
    b = state.brokers
    return spread(leader_counts(state), b.weight, b.live)
