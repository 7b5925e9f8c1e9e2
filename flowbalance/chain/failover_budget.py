"""The move budget's failover part: what ``TopicBudget`` left of ``--extra-moves`` is spent on replica swaps that let
the failover stage reach a lower worst single-broker failover spread (``flowbalance.stages.failover_moves``).

Reordering alone cannot spread a failed broker's leaderships over brokers that share none of its partitions; with
RF 2 only placement can change failover at all. The stage asks the chain's own later stages what they reach:

1. run the stages after it (leaders, followers, failover: the true test) on a scratch copy of the plan so far:
   the worst spread ``a``, the failover stage's lower bound ``c`` for these replica sets, and its order;
2. swap replicas on that order where the worst rows need it (``spread_by_swaps``), within the moves left: the
   swaps that lower the order's worst spread level by level;
3. run the later stages again on the swapped placement; keep it only when their worst spread is lower (or, for a
   round that adds no moves, the brokers at it fewer). A swap keeps every leader, so the swapped order is still a
   balanced one: first the failover stage alone starts from it (``order_kept``: the plan keeps that order and
   stages 2 and 3 skip), else stages 2-4 run afresh. When neither follows, or the lean swaps stop at a row they
   cannot help, try once more with every row at the worst lowered that can be (``thorough``: more moves, more
   slack for the reordering). A kept round starts another from there; else the plan stays as the last kept round
   left it (nothing spent when none was).

The later stages are deterministic, so the chain reaches exactly the figures measured here; the note says what the
moves bought (``a → b``, bound ``c → d``) and, with racks and RF at most the racks, the counting floor no placement
goes below (``rack_failover_floor``). Hard rules: broker counts (the "count targets" invariant), racks, RF, removed
brokers, partitions that may not move, per-topic excess against the strict targets, and the budget (moves against
the original assignment) are all checked on the result; a miss is a bug (``ChainInvariantError``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..certificate import count_targets, topic_excess
from ..metrics import compare, rack_violations
from ..model import ClusterState
from ..stages.failover_moves import rack_failover_floor, spread_by_swaps, topic_cells
from .base import ChainInvariantError, Context, Invariant, Outcome, Stage, run_chain
from .budget import scope_replicas
from .precheck import leaders_balanced

MAX_ROUNDS = 8  # swap rounds, each checked by the later stages (stopped at the first that does not help)
ROUND_REPLICAS = 4_000_000  # rounds = this // replicas, within 1 .. MAX_ROUNDS (4 at 1,000,000 replicas)


@dataclass(frozen=True)
class FailoverBudgetEvidence:
    """What the failover part of the budget bought, as the later stages measured it."""

    budget: int  # the whole --extra-moves budget, in moves
    remaining: int  # what the per-topic part left
    spent: int  # moves added by this stage (against the original assignment)
    swaps: int
    same_topic: int  # swaps inside one topic
    worst_before: float  # worst single-broker failover spread the chain reaches without this stage
    worst_after: float  # and with it
    at_worst_before: int
    at_worst_after: int
    bound_before: float  # the failover stage's lower bound for the replica sets, before and after
    bound_after: float
    rack_floor: int | None  # no placement under the rack rule goes below this (None: not applicable)
    checks: int  # runs of the later stages
    tried: int  # swaps tried in rounds the later stages did not confirm
    order_kept: bool = False  # the plan keeps the swapped order: stages 2 and 3 do not run again (``order_kept``)

    @property
    def at_floor(self) -> bool:
        return self.rack_floor is not None and self.worst_before <= self.rack_floor

    def text(self) -> str:
        floor = ("" if not self.rack_floor or self.rack_floor < 2 else
                 f"; no placement under the rack rule goes below {self.rack_floor} (counting bound)")
        if self.remaining <= 0:
            return "move budget: no moves left for failover after per-topic balance" + floor
        head = f"move budget: {{}} of the remaining {self.remaining:,} moves spent on failover: worst spread "
        if self.spent == 0 and self.swaps == 0:
            if self.at_floor:
                return (head.format("none") + f"{self.worst_before:g} (bound {self.bound_before:g}), the rack "
                        "rule's floor: no placement goes below it (counting bound)")
            why = (f"{self.tried:,} swaps tried did not lower what the failover stage reaches" if self.tried else
                   "no swap lowers the worst rows")
            return head.format("none") + f"{self.worst_before:g} (bound {self.bound_before:g}); {why}" + floor
        return (head.format(f"{self.spent:,}") + f"{self.worst_before:g} → {self.worst_after:g} (bound "
                f"{self.bound_before:g} → {self.bound_after:g}); {self.swaps:,} replica swaps, {self.same_topic:,} "
                f"inside a topic, brokers at the worst {self.at_worst_before} → {self.at_worst_after}" + floor)


class FailoverBudget(Stage):
    """Spend what the per-topic part of the move budget left on placements with a lower reachable failover."""

    name, label = "failover_budget", "move budget: failover"
    keeps = ("count targets",)

    def applies(self, ctx: Context) -> bool:
        req = ctx.request
        return (req.strategy == "flow" and req.balance == "count" and req.objective == "moves"
                and all(s in req.stages for s in ("replicas", "leaders", "followers"))
                and bool(ctx.ran) and ctx.ran[-1] in ("replicas", "budget")
                and req.extra_moves_for(scope_replicas(ctx)) > 0)

    def run(self, ctx: Context) -> Outcome:
        r = ctx.resolved
        budget = ctx.request.extra_moves_for(scope_replicas(ctx))
        moves_now = compare(r.before, ctx.current).moves
        topic_ev = ctx.evidence.get("budget")
        fewest = topic_ev.fewest if topic_ev is not None else moves_now
        limit = fewest + budget
        floor = rack_failover_floor(r.before, r.target_rf, r.movable)
        if limit - moves_now <= 0:
            ev = FailoverBudgetEvidence(budget, limit - moves_now, 0, 0, 0, 0, 0, 0, 0, 0, 0, floor, 0, 0)
            return Outcome(ctx.current.replicas, ev, (ev.text(),))
        best, ev, replay = self._search(ctx, limit, moves_now, floor, budget)
        self._verify(ctx, best, limit)
        kept = ()
        if ev.order_kept and leaders_balanced(best, False):  # the swaps keep the failover stage's leaders
            kept = (Invariant("leader balance", lambda s: leaders_balanced(s, False)),)
        return Outcome(best.replicas, ev, (ev.text(),), kept, replay)

    def _search(self, ctx: Context, limit: int, moves_now: int, floor: int | None, budget: int):
        """Rounds of swaps, each kept only when the later stages reach a lower (worst, brokers at it)."""
        r = ctx.resolved
        strict = count_targets(r.before, r.target_rf, r.movable, True)
        placed, (ordered, res0, replay) = ctx.current, self._later(ctx, ctx.current, False)
        res, checks, swaps, same, tried, order_kept = res0, 1, 0, 0, 0, False
        rounds = max(1, min(MAX_ROUNDS, ROUND_REPLICAS // max(ctx.current.num_replicas, 1)))
        if floor is not None and res0.worst <= floor:
            rounds = 0  # at the counting floor: no placement has a lower worst
        for _ in range(rounds):
            left = limit - compare(r.before, placed).moves
            cells = topic_cells(ordered, r.movable, strict.topic_lo, strict.topic_hi)
            step, lean = None, 0
            for thorough in (False, True):
                found = spread_by_swaps(ordered, r.before, r.movable, left, cells, thorough=thorough)
                if not found.swaps or found.swaps == lean:
                    continue  # nothing lowers the order's worst this way (or nothing more than the lean search)
                lean = found.swaps
                cand = ordered.with_replicas(found.replicas)
                for keep_order in (True, False):
                    cand_ordered, cand_res, cand_replay = self._later(ctx, cand, keep_order)
                    checks += 1
                    if _bought(res, cand_res, found.moves):
                        step = (cand, cand_ordered, cand_res, found, keep_order, cand_replay)
                        break
                if step is not None:
                    break
                tried += found.swaps
            if step is None:
                break
            placed, ordered, res, found, order_kept, replay = step
            swaps, same = swaps + found.swaps, same + found.same_topic
        spent = compare(r.before, placed).moves - moves_now
        ev = FailoverBudgetEvidence(budget, limit - moves_now, spent, swaps, same, res0.worst, res.worst,
                                    res0.at_worst, res.at_worst, res0.bound, res.bound, floor, checks, tried,
                                    order_kept)
        return placed, ev, replay

    def _later(self, ctx: Context, state: ClusterState, keep_order: bool):
        """The chain's stages after this one, run on a scratch copy of the context as the chain would run them:
        (their final state, the failover stage's ``FailoverResult``, their outcomes for the chain to replay if
        this placement is kept). ``keep_order``: the swaps were made on the failover stage's own order, which keeps
        every leader; without stages 2 and 3, stage 4 starts from it."""
        from .steps import flow_chain  # the chain module imports this one

        later = _after(flow_chain(), self.name)
        scratch = Context(ctx.resolved, ctx.metrics_before, ctx.moves_bound, current=state,
                          ran=list(ctx.ran) + [self.name], evidence=dict(ctx.evidence),
                          invariants={k: v for k, v in ctx.invariants.items() if k in self.keeps}, replay={})
        if keep_order:
            scratch.evidence[self.name] = _Kept()  # as the chain will see this stage's evidence
        run_chain(scratch, later, lambda *a: None, 1, len(later))
        return scratch.current, scratch.evidence["failover"], scratch.replay

    def _verify(self, ctx: Context, after: ClusterState, limit: int) -> None:
        """The hard rules, checked on the result (a miss is a bug in the swaps)."""
        r = ctx.resolved
        if after is ctx.current:
            return
        strict = count_targets(r.before, r.target_rf, r.movable, True)
        problems = []
        if compare(r.before, after).moves > limit:
            problems.append("the move budget")
        if topic_excess(strict, after, r.movable) > topic_excess(strict, ctx.current, r.movable):
            problems.append("per-topic excess")
        if not np.array_equal(after.rf, ctx.current.rf):
            problems.append("RF")
        if len(np.setdiff1d(rack_violations(after), rack_violations(ctx.current))):
            problems.append("the rack rule")
        fixed = ~r.movable
        if not np.array_equal(_sorted_rows(after, fixed), _sorted_rows(ctx.current, fixed)):
            problems.append("partitions that may not move")
        counts = lambda s: np.bincount(s.replica_index[s.replica_index >= 0], minlength=len(s.brokers))  # noqa
        if not np.array_equal(counts(after), counts(ctx.current)):
            problems.append("broker counts")
        if problems:
            raise ChainInvariantError(f"stage {self.name} broke {', '.join(problems)}")


@dataclass(frozen=True)
class _Kept:
    """Scratch evidence while a kept order is measured: what ``order_kept`` reads."""

    order_kept: bool = True


def order_kept(ctx: Context) -> bool:
    """Whether the failover part of the budget kept the order its swaps were made on (stages 2 and 3 skip then,
    so the failover stage starts from that order, as the budget measured it)."""
    return bool(getattr(ctx.evidence.get(FailoverBudget.name), "order_kept", False))


def _bought(old, new, moves: int) -> bool:
    """Whether a round is worth its moves: a lower worst spread, or (free rounds only) fewer brokers at it."""
    if new.worst < old.worst - 1e-9:
        return True
    return moves <= 0 and abs(new.worst - old.worst) <= 1e-9 and new.at_worst < old.at_worst


def _after(stages, name: str) -> list[Stage]:
    """The stages of a chain after the per-topic budget (where this stage runs), without this stage."""
    names = [s.name for s in stages]
    at = names.index("budget") + 1 if "budget" in names else 1
    return [s for s in stages[at:] if s.name != name]


def _sorted_rows(state: ClusterState, rows: np.ndarray) -> np.ndarray:
    return np.sort(state.replicas[rows], axis=1)
