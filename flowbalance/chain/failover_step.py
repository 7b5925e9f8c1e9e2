"""The failover stage in the chain: after stages 2 and 3, leaders and first followers chosen jointly for the most
even single-broker failover (``flowbalance.stages.failover``). It only reorders, keeps the count targets, the
fewest moves and every broker's leader balance stage 2 established, and hands back stage 3's order unchanged when
it finds nothing better.

Per-topic leader balance is kept only when the request balances topics strictly (``per_topic_mode="strict"``).
By default the objective order is moves, then per-topic replica spread, then failover: every topic's leaders
within ±1 of their share would cap failover far above what the replica sets allow (benchmarks/failover.py:
a 100-broker Kafka-placed cluster 7 → 7 with topic leader intervals, 7 → 4 without).
"""
from __future__ import annotations

import numpy as np

from ..metrics import broker_failover
from ..model import ClusterState
from ..stages.failover import DETERMINISTIC_TIME, balance_failover
from .precheck import leaders_balanced
from .base import Context, Outcome, Stage


class Failover(Stage):
    """Stage 4: (leader, first follower) pairs chosen jointly, from stages 2 + 3's order.

    ``after_followers_only``: the template chain's use, run only when its stage 3 just ran.
    ``deterministic_time``: CP-SAT's budget on small clusters (deterministic seconds, the same on every run).
    ``topic_leaders``: keep every topic's leaders within their intervals too; None (the default) = when the
    request balances topics strictly. With it the stage keeps stage 2's "topic leader balance" invariant,
    without it only "leader balance" (every broker's)."""

    name, label = "failover", "stage 4: failover"
    changes_sets = False
    keeps = ("count targets", "fewest moves", "leader balance", "topic leader balance")

    def __init__(self, after_followers_only: bool = False, deterministic_time: float = DETERMINISTIC_TIME,
                 topic_leaders: bool | None = None):
        self.after_followers_only = after_followers_only
        self.deterministic_time = deterministic_time
        self.topic_leaders = topic_leaders

    def topics_kept(self, ctx: Context) -> bool:
        """Whether this run keeps every topic's leaders within their intervals."""
        return ctx.request.strict_per_topic if self.topic_leaders is None else self.topic_leaders

    def kept(self, ctx: Context) -> tuple[str, ...]:
        return self.keeps if self.topics_kept(ctx) else tuple(k for k in self.keeps if k != "topic leader balance")

    def applies(self, ctx: Context) -> bool:
        if self.after_followers_only:
            return bool(ctx.ran) and ctx.ran[-1] == "followers"
        stages = ctx.request.stages
        return "leaders" in stages and "followers" in stages

    def run(self, ctx: Context) -> Outcome:
        cur, per_topic = ctx.current, ctx.request.per_topic
        topics = self.topics_kept(ctx)
        ref = cur.with_replicas(input_order(ctx.resolved.before.replicas, cur.replicas))
        start = ref if _no_worse(ref, cur, topics) else cur
        # changes are counted against the input's order (stage 3's where the stages changed a set)
        res = balance_failover(ref, ctx.resolved.movable, baseline=start.replicas, topic_leaders=topics,
                               per_topic=per_topic, deterministic_time=self.deterministic_time)
        return Outcome(res.replicas, res, (res.note,))


def input_order(before: np.ndarray, current: np.ndarray) -> np.ndarray:
    """``current`` with every row whose replica set is unchanged back in the input's order."""
    width = max(before.shape[1], current.shape[1])
    b, c = _pad(before, width), _pad(current, width)
    same = (np.sort(b, axis=1) == np.sort(c, axis=1)).all(axis=1)
    return np.where(same[:, None], b, c)


def _pad(a: np.ndarray, width: int) -> np.ndarray:
    return np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=-1)


def _no_worse(ref: ClusterState, cur: ClusterState, topics: bool) -> bool:
    """The input's order as the stage's start: when it keeps the leader intervals stage 2 keeps, and its failover
    (worst spread, brokers at it) is no worse than stage 3's. Then a plan applied and planned again starts from
    where the first one ended, and changes nothing unless it finds better."""
    for per_topic in (False, True) if topics else (False,):
        if leaders_balanced(cur, per_topic) and not leaders_balanced(ref, per_topic):
            return False
    a, b = broker_failover(ref), broker_failover(cur)
    if not len(a.spread):
        return True
    wa, wb = float(a.spread.max()), float(b.spread.max())
    na, nb = int((a.spread >= wa - 1e-9).sum()), int((b.spread >= wb - 1e-9).sum())
    if abs(wa - wb) > 1e-9:
        return wa < wb
    return na <= nb
