"""The demotion chain (``PlanRequest.demote``): leaderships off the demoted brokers (``stages.demote``), then stage 3
(first followers, never a leader). Reordering only: no replica moves, so it refuses a cluster whose broker file
removes brokers that still hold replicas (those must move)."""
from __future__ import annotations

import numpy as np

from ..errors import RequestError
from ..stages.demote import DemoteResult, demote_leaders
from .base import Context, Outcome, Stage
from .steps import Followers

FIRST = 5  # partitions named in the note


class Demote(Stage):
    """Every preferred leadership off the demoted brokers, the fewest changes among the most even leaders."""

    name, label = "demote", "demote leaders"
    changes_sets = False

    def applies(self, ctx: Context) -> bool:
        return True

    def run(self, ctx: Context) -> Outcome:
        r = ctx.resolved
        if r.must_change:
            raise RequestError("demote", "demote only reorders replica lists, but this cluster needs replica moves "
                               "(a removed broker in the broker file still holds replicas, or an RF change)",
                               ",".join(map(str, r.request.demote)))
        res = demote_leaders(ctx.current, r.movable, demoted_mask(ctx))
        return Outcome(res.replicas, res, (demote_note(ctx, res),))


def demoted_mask(ctx: Context) -> np.ndarray:
    b = ctx.current.brokers
    out = np.zeros(len(b), dtype=bool)
    out[b.index_of(np.asarray(ctx.request.demote, dtype=np.int64))] = True
    return out


def demote_note(ctx: Context, res: DemoteResult) -> str:
    ids = ",".join(map(str, ctx.request.demote))
    text = f"demote {ids}: {res.moved_off:,} leaderships moved off by reordering (no replica moves)"
    if not len(res.stuck):
        return text + "; every partition they led has another leader"
    return text + f"; {len(res.stuck):,} could not be demoted ({', '.join(stuck_names(ctx.current, res.stuck))})"


def stuck_names(state, rows: np.ndarray) -> list[str]:
    """The first partitions of ``rows`` as topic-partition, and how many more."""
    names = [f"{state.topics[state.topic[r]]}-{int(state.partition[r])}" for r in rows[:FIRST].tolist()]
    return names + ([f"{len(rows) - FIRST:,} more"] if len(rows) > FIRST else [])


def demote_chain() -> tuple[Stage, ...]:
    return (Demote(), Followers())
