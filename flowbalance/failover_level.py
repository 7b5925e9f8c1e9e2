"""The failover level of the certificate: the plan's worst single-broker failover spread, and a lower bound on it
for the plan's replica sets.

When live broker f fails, each partition it leads passes to its first follower (Kafka elects the first live
replica in assignment order), so survivor b then leads ``L_b + M[f, b]``. The spread of f's row is the largest
minus the smallest of those loads over the survivors, each less its weighted share (``metrics.broker_failover``);
the plan's worst failover spread is the largest row spread, the number every command prints.

The bound (``stages.failover_lp.proven_bound``: counting bounds per failed broker and per block of brokers that
share many partitions, and on clusters of up to about 150 brokers an LP relaxation proven by a min-cost flow on its
duals) holds for every order of the plan's replica sets that keeps every broker's leaders within its interval
(widened to the plan's own count where the plan misses one) and leaves the partitions that may not move as they
are. So it says how much of the worst spread is the reordering's doing (none when the bound is met) and how much is
the placement's: only moving replicas can go below it. It is computed from the plan alone, deterministically, so
``plan``, ``report --plan``, ``compare`` and the fleet print the same figure for the same plan:

    failover spread 4 (3 brokers at it); no order of these replica sets goes below 1
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .metrics import broker_failover
from .model import ClusterState
from .stages.failover_bound import in_leaders
from .stages.failover_lp import proven_bound
from .stages.failover_problem import build_problem

TOLERANCE = 1e-9


@dataclass(frozen=True)
class FailoverLevel:
    """Single-broker failover in a certificate (see the module docstring)."""

    spread: float  # the plan's worst single-broker failover spread (metrics.broker_failover)
    worst_broker: int | None  # a failed broker (id) whose row has it
    at_worst: int  # failed brokers whose row has it
    bound: float  # no order of these replica sets (leaders within their intervals) has a smaller worst spread
    rf2: bool  # every reorderable partition has two live replicas: the order only picks which one leads

    @property
    def met(self) -> bool:
        """The worst spread equals the bound: no reordering of these replica sets does better."""
        return self.spread <= self.bound + TOLERANCE

    def text(self) -> str:
        """One line for the summary; the same words in every command."""
        n = self.at_worst
        value = f"failover spread {_num(self.spread)} ({n:,} broker{'s' if n != 1 else ''} at it)"
        if self.worst_broker is None:
            return f"{value}: fewer than two live brokers"
        if self.met:
            return f"{value}: no order of these replica sets goes below it"
        return f"{value}; no order of these replica sets goes below {_num(self.bound)}"


def failover_level(after: ClusterState, movable: np.ndarray) -> FailoverLevel:
    """The failover level of the plan ``after``; ``movable``: the partitions the plan may reorder."""
    fo = broker_failover(after)
    if not len(fo.spread):
        return FailoverLevel(0.0, None, 0, 0.0, False)
    worst = float(fo.spread.max())
    at = int((fo.spread >= worst - TOLERANCE).sum())
    built = build_problem(after, after, movable, False)
    if built is None:  # nothing to reorder: the plan's order is the only one
        return FailoverLevel(worst, fo.worst[0], at, worst, False)
    prob, start = built
    bound = min(in_leaders(prob, proven_bound(prob, start)), worst)
    rf2 = bool((prob.members >= 0).sum(axis=1).max() <= 2)
    return FailoverLevel(worst, fo.worst[0], at, bound, rf2)


def failover_fields(level: FailoverLevel) -> dict:
    """The level as plain data (``plan --json``, ``report --json``, ``compare --json``, the fleet)."""
    return {"spread": _plain(level.spread), "worst_broker": level.worst_broker, "brokers_at_worst": level.at_worst,
            "bound": _plain(level.bound), "bound_met": level.met, "text": level.text()}


def _num(x: float) -> str:
    return f"{x:g}" if float(x).is_integer() else f"{x:.2f}"


def _plain(x: float) -> int | float:
    return int(x) if float(x).is_integer() else round(float(x), 6)
