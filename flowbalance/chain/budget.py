"""The move budget (``PlanRequest.extra_moves``): moves beyond the fewest, spent where they most lower the
worst per-topic imbalance.

A topic's **excess** on a broker is how far its replica count there lies outside the topic's strict interval
[⌊share⌋, ⌈share⌉]; a plan's excess is the largest over every (topic, broker) of the scope (0 is strict per-topic
balance; without broker weights a topic of excess a has a spread of at most 2a + 1). Stage 1 (per-topic spread)
leaves some excess a₀ with the fewest moves M. For a slack a < a₀, stage 1's network with every topic interval
widened by a (and ranked above the moves, as in strict mode) gives the fewest moves of any plan with excess at most
a, or shows that no plan under the request's rules has it. Those moves fall as a rises, so a binary search over
a = 0 … a₀ − 1 finds the smallest excess reachable within M + budget moves, in at most ⌈log₂ a₀⌉ + 1 solves.
Each answer is certified by its solve: the plan's moves are the fewest for its excess, and the next smaller excess
needs more moves than the budget allows (or is not reachable at all).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..certificate import count_targets, missed_targets, topic_excess
from ..errors import PlanningError
from ..metrics import compare, topic_spread
from ..stages.replicas import balance_replicas
from .base import Context, Outcome, Stage


@dataclass(frozen=True)
class BudgetEvidence:
    """What the budget bought, and why no better: excess and spread before and after, and the solves' evidence."""

    budget: int  # moves allowed beyond stage 1's
    fewest: int  # stage 1's moves
    moves: int  # the plan's moves (fewest + spent)
    excess_before: int
    excess_after: int
    spread_before: float
    spread_after: float
    next_excess_moves: int | None  # fewest moves for excess_after - 1 (None: not reachable, or nothing bought)
    solves: int
    unsolved: tuple[int, ...] = ()  # slacks too large to solve (stage 1's full network would not fit)

    @property
    def spent(self) -> int:
        return self.moves - self.fewest

    def text(self) -> str:
        head = f"move budget: {self.budget:,} extra moves allowed"
        if self.excess_after == self.excess_before:
            need = (f"needs {self.next_excess_moves:,} moves" if self.next_excess_moves is not None else
                    "could not be solved at this size" if self.excess_before - 1 in self.unsolved else
                    "is not reachable under the request's rules")
            return (f"{head}; none spent: per-topic excess {self.excess_before - 1} {need} "
                    f"({self.solves} solve{'s' if self.solves != 1 else ''})")
        why = ("" if self.excess_after == 0 else
               f"; excess {self.excess_after - 1} would need {self.next_excess_moves:,} moves"
               if self.next_excess_moves is not None else
               f"; excess {self.excess_after - 1} could not be solved at this size"
               if self.excess_after - 1 in self.unsolved else
               f"; excess {self.excess_after - 1} is not reachable under the request's rules")
        return (f"{head}; {self.spent:,} spent on per-topic balance: worst excess over a topic's share "
                f"{self.excess_before} → {self.excess_after}, per-topic spread {self.spread_before:g} → "
                f"{self.spread_after:g} (the fewest moves for that excess{why}; {self.solves} solve{'s' if self.solves != 1 else ''})")


class TopicBudget(Stage):
    """Spend the move budget on per-topic balance (replaces stage 1's plan by a costlier, more even one)."""

    name, label = "budget", "move budget: per-topic balance"
    keeps = ("count targets",)

    def applies(self, ctx: Context) -> bool:
        req = ctx.request
        return (req.topics_after_moves and ctx.ran == ["replicas"] and req.balance == "count"
                and req.objective == "moves" and req.extra_moves_for(scope_replicas(ctx)) > 0)

    def run(self, ctx: Context) -> Outcome:
        r = ctx.resolved
        fewest = compare(r.before, ctx.current).moves
        budget = ctx.request.extra_moves_for(scope_replicas(ctx))
        strict = count_targets(r.before, r.target_rf, r.movable, True)
        start = topic_excess(strict, ctx.current, r.movable)
        solved: dict[int, tuple[np.ndarray, int] | None] = {}
        unsolved: list[tuple[int, str]] = []

        def fewest_for(slack: int) -> tuple[np.ndarray, int] | None:
            """The plan with the fewest moves whose excess is at most ``slack``, and its moves (None: none)."""
            if slack not in solved:
                res = ctx.remembered(("budget slack", slack), lambda: _solve_slack(r, slack))
                if isinstance(res, PlanningError):  # too large to solve at this slack: no plan for it, said so
                    unsolved.append((slack, str(res)))
                    solved[slack] = None
                    return None
                after = r.before.with_replicas(res.replicas)
                ok = not missed_targets(count_targets(r.before, r.target_rf, r.movable, False), r.before, after,
                                        r.movable) and topic_excess(strict, after, r.movable) <= slack
                solved[slack] = (res.replicas, compare(r.before, after).moves) if ok else None
            return solved[slack]

        best = smallest_within(fewest_for, start, fewest + budget)
        replicas, moves = (ctx.current.replicas, fewest) if best == start else fewest_for(best)
        below = solved.get(best - 1) if best > 0 else None
        ev = BudgetEvidence(budget, fewest, moves, start, best, topic_spread(ctx.current).spread,
                            topic_spread(ctx.current.with_replicas(replicas)).spread,
                            below[1] if below is not None else None, len(solved), tuple(s for s, _ in unsolved))
        notes = (ev.text(),) + tuple(f"move budget: per-topic excess {s} was not solved ({why})" for s, why in unsolved)
        return Outcome(replicas, ev, notes)


def _solve_slack(r, slack: int):
    """Stage 1's network with every topic interval widened by ``slack``: its result, or the ``PlanningError``
    saying it is too large to solve (kept, so plans sharing a memo do not try again)."""
    try:
        return balance_replicas(r.before, r.target_rf, r.movable, per_topic=True, prefer=r.prefer, topic_slack=slack)
    except PlanningError as err:
        return err


def smallest_within(fewest_for, start: int, limit: int) -> int:
    """The smallest slack in 0 … start whose plan exists within ``limit`` moves (``start`` itself always
    qualifies: stage 1's plan). Fewer slack never needs fewer moves, so a binary search finds it."""
    lo, hi = 0, start
    while lo < hi:
        mid = (lo + hi) // 2
        got = fewest_for(mid)
        if got is not None and got[1] <= limit:
            hi = mid
        else:
            lo = mid + 1
    return lo


def scope_replicas(ctx: Context) -> int:
    """Replicas of the partitions that may move (what a percentage budget is a percentage of)."""
    return scope_of(ctx.resolved)


def scope_of(r) -> int:
    """``scope_replicas`` of a resolved request (``resolve.Resolved``)."""
    return int(np.asarray(r.target_rf)[r.movable].sum())
