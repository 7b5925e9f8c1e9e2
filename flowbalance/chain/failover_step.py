"""The failover stage in the chain: after stages 2 and 3, leaders and first followers chosen jointly for the most
even single-broker failover (``flowbalance.stages.failover``). It only reorders, keeps the count targets, the
fewest moves and the leader balance stage 2 established (per topic too when the request balances topics), and
hands back stage 3's order unchanged when it finds nothing better.
"""
from __future__ import annotations

from ..stages.failover import DETERMINISTIC_TIME, balance_failover
from .base import Context, Outcome, Stage


class Failover(Stage):
    """Stage 4: (leader, first follower) pairs chosen jointly, from stages 2 + 3's order.

    ``after_followers_only``: the template chain's use, run only when its stage 3 just ran.
    ``deterministic_time``: CP-SAT's budget on small clusters (deterministic seconds, the same on every run).
    ``topic_leaders``: keep every topic's leaders within their intervals too; None (the default) = when the
    request balances topics, as stage 2 does and as the "leader balance" invariant it establishes then checks.
    False gives far more even failover (see benchmarks/failover.py), but only a chain whose "leader balance"
    is the broker-level one may run it so."""

    name, label = "failover", "stage 4: failover"
    changes_sets = False
    keeps = ("count targets", "fewest moves", "leader balance")

    def __init__(self, after_followers_only: bool = False, deterministic_time: float = DETERMINISTIC_TIME,
                 topic_leaders: bool | None = None):
        self.after_followers_only = after_followers_only
        self.deterministic_time = deterministic_time
        self.topic_leaders = topic_leaders

    def applies(self, ctx: Context) -> bool:
        if self.after_followers_only:
            return bool(ctx.ran) and ctx.ran[-1] == "followers"
        stages = ctx.request.stages
        return "leaders" in stages and "followers" in stages

    def run(self, ctx: Context) -> Outcome:
        cur, per_topic = ctx.current, ctx.request.per_topic
        topics = per_topic if self.topic_leaders is None else self.topic_leaders
        # the order before stage 2 is gone from the context; changes are counted against stage 3's
        res = balance_failover(cur, ctx.resolved.movable, baseline=cur.replicas, topic_leaders=topics,
                               per_topic=per_topic, deterministic_time=self.deterministic_time)
        return Outcome(res.replicas, res, (res.note,))
