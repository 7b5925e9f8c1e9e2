"""The stage interface (``Stage``, ``Outcome``), the state they share (``Context``) and the loop (``run_chain``).

A stage has a ``name``, says whether it ``applies`` to the plan so far, and ``run`` returns one ``Outcome``: the
new replica matrix, its evidence for the certificate, its notes, and the invariants it establishes. After each
stage the loop checks what the stage may not change (replica sets for the reordering stages, leaders for the
followers stage) and every invariant an earlier stage established that this stage keeps. A violation is a bug
in a stage: ``ChainInvariantError`` is raised and nothing is written.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..metrics import StateMetrics
from ..model import ClusterState
from ..resolve import Resolved
from ..verify import PlanVerificationError

Progress = Callable[[int, int, str], None]  # (step, of, name)


class ChainInvariantError(PlanVerificationError):
    """A stage undid what an earlier stage established: a bug, never a plan."""


@dataclass(frozen=True)
class Invariant:
    """Something a stage established that later stages must keep (``holds`` of a state)."""

    name: str
    holds: Callable[[ClusterState], bool]


@dataclass(frozen=True, eq=False)
class Outcome:
    """What one stage returns: the new replicas, its evidence for the certificate, notes, invariants."""

    replicas: np.ndarray
    evidence: Any = None
    notes: tuple[str, ...] = ()
    establishes: tuple[Invariant, ...] = ()
    # the outcomes of the reordering stages after this one, already computed on these replicas in a scratch run
    # (``Context.replay``): the chain takes them instead of running those stages again
    replay: dict | None = None


@dataclass(eq=False)
class Context:
    """The request resolved for this cluster, the plan so far, and what the stages have said."""

    resolved: Resolved
    metrics_before: StateMetrics
    moves_bound: int  # max(M*, Σ per-topic M*): the bound stage 1's pruned attempt must reach
    current: ClusterState = None  # type: ignore[assignment]
    ran: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    evidence: dict[str, Any] = field(default_factory=dict)
    invariants: dict[str, Invariant] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    # solves shared by plans of the same state, request (but for its move budget) and held partitions: the
    # frontier plans one request at several budgets, and stage 1 and each budget slack solve the same network
    memo: dict[Any, Any] | None = None
    # outcomes of reordering stages by (stage, stages run before it, the replicas it started from): recorded by a
    # scratch run (a dict), replayed by the chain once a stage hands them on (``Outcome.replay``); None: neither
    replay: dict[Any, Outcome] | None = None

    def __post_init__(self) -> None:
        if self.current is None:
            self.current = self.resolved.before

    @property
    def request(self):
        return self.resolved.request

    def remembered(self, key: Any, solve: Callable[[], Any]) -> Any:
        """``solve()``, or its result from an earlier plan sharing this ``memo`` (``key`` names what was solved)."""
        if self.memo is None:
            return solve()
        full = (repr(self.request.with_changes(extra_moves=0)), key)
        if full not in self.memo:
            self.memo[full] = solve()
        return self.memo[full]


class Stage:
    """One step of the chain. Subclasses set the class attributes and implement ``applies`` and ``run``."""

    name = "stage"
    label = "stage"  # shown in progress
    changes_sets = True  # may change which brokers hold a partition
    changes_leaders = True  # may change the first replica
    keeps: tuple[str, ...] = ()  # invariants established earlier that this stage must keep

    def applies(self, ctx: Context) -> bool:
        raise NotImplementedError

    def run(self, ctx: Context) -> Outcome:
        raise NotImplementedError

    def kept(self, ctx: Context) -> tuple[str, ...]:
        """The invariants this run keeps (``keeps``; a stage whose promise depends on the request narrows it)."""
        return self.keeps


def _same_sets(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(np.sort(a, axis=1), np.sort(b, axis=1)))


def check_stage(stage: Stage, old: ClusterState, new: ClusterState, invariants: dict[str, Invariant],
                kept: Sequence[str] | None = None) -> None:
    """Raise ``ChainInvariantError`` when ``stage`` changed what it may not, or broke a kept invariant (``kept``:
    the names, ``stage.keeps`` when None)."""
    if not stage.changes_sets and not _same_sets(old.replicas, new.replicas):
        raise ChainInvariantError(f"stage {stage.name} changed replica sets (it may only reorder)")
    if not stage.changes_leaders and not np.array_equal(old.replicas[:, 0], new.replicas[:, 0]):
        raise ChainInvariantError(f"stage {stage.name} changed leaders (it may only reorder followers)")
    for name in stage.keeps if kept is None else kept:
        inv = invariants.get(name)
        if inv is not None and not inv.holds(new):
            raise ChainInvariantError(f"stage {stage.name} undid {name}, established by an earlier stage")


def run_chain(ctx: Context, stages: Sequence[Stage], progress: Progress, first_step: int, of: int) -> Context:
    """Run the stages that apply, in order, each timed and checked; ``progress`` gets (step, of, name)."""
    for i, stage in enumerate(stages):
        if not stage.applies(ctx):
            continue
        progress(first_step + i, of, stage.label)
        t = time.perf_counter()
        kept = stage.kept(ctx)
        out = _run(stage, ctx)
        new = ctx.current.with_replicas(out.replicas)
        check_stage(stage, ctx.current, new, ctx.invariants, kept)
        ctx.current = new
        ctx.seconds[stage.name] = ctx.seconds.get(stage.name, 0.0) + time.perf_counter() - t
        ctx.ran.append(stage.name)
        ctx.notes.extend(out.notes)
        if out.evidence is not None:
            ctx.evidence[stage.name] = out.evidence
        # what this stage does not keep, it may trade (the disk stage trades moves for disk balance): no longer
        # established for the stages after it
        ctx.invariants = {k: v for k, v in ctx.invariants.items() if k in kept}
        ctx.invariants.update((inv.name, inv) for inv in out.establishes)
        if out.replay is not None:
            ctx.replay = out.replay
    return ctx


def _run(stage: Stage, ctx: Context) -> Outcome:
    """``stage.run(ctx)``; for a reordering stage (its outcome depends only on the request and the replicas it
    starts from, after the same stages) recorded in, or replayed from, ``ctx.replay``."""
    if ctx.replay is None or stage.changes_sets:
        return stage.run(ctx)
    digest = hashlib.blake2b(np.ascontiguousarray(ctx.current.replicas).tobytes(), digest_size=16).digest()
    key = (stage.name, tuple(ctx.ran), ctx.current.replicas.shape, digest)
    if key not in ctx.replay:
        ctx.replay[key] = stage.run(ctx)
    return ctx.replay[key]
