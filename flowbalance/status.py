"""What a ``kafka-topics --describe`` says about partitions beyond their replica lists, in canonical row order.

A describe taken while a reassignment runs prints ``Replicas:`` as the temporary union of old and new replicas
with ``Adding Replicas:`` / ``Removing Replicas:`` beside it; a partition can be leaderless (``Leader: none`` or
``-1``), have offline replicas (``Offline:``) or be under-replicated (ISR shorter than the replicas); Confluent
Server adds observers and placement constraints. Planning must not override a move in progress, cannot complete a
move of a partition that is not healthy, and must not move what a placement constraint pins. This module holds
those facts as masks over the partitions of a ``ClusterState`` and turns them into the operator's warnings.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .errors import InputError
from .model import PAD, ClusterState

if TYPE_CHECKING:  # the describe reader's per-line status
    from .formats.raw import PartitionStatus

SHOWN = 5  # partitions named in a warning before "..."


@dataclass(frozen=True, eq=False)
class ClusterStatus:
    """Per-partition status masks (bool [P], canonical row order) and the in-flight lists (int32 [P, W])."""

    leaderless: np.ndarray
    offline: np.ndarray
    under_replicated: np.ndarray
    observers: np.ndarray  # bool [P]: the partition has observers (Confluent Server)
    constrained: np.ndarray  # bool [P]: its topic has confluent.placement.constraints
    adding: np.ndarray  # int32 [P, W], -1 padded
    removing: np.ndarray  # int32 [P, W], -1 padded

    @staticmethod
    def from_raw(status: PartitionStatus, topic_names, order: np.ndarray) -> "ClusterStatus":
        """Reorder a reader's per-line status into the rows of the ``ClusterState`` built from the same lines
        (``order`` is the permutation ``ClusterState.build`` applied)."""
        constrained = np.fromiter((t in status.constrained_topics for t in topic_names), dtype=bool,
                                  count=len(topic_names))
        return ClusterStatus(
            leaderless=np.asarray(status.leaderless, dtype=bool)[order],
            offline=np.asarray(status.offline, dtype=bool)[order],
            under_replicated=np.asarray(status.under_replicated, dtype=bool)[order],
            observers=(np.asarray(status.observers) != PAD).any(axis=1)[order],
            constrained=constrained[order],
            adding=np.asarray(status.adding, dtype=np.int32)[order],
            removing=np.asarray(status.removing, dtype=np.int32)[order],
        )

    @property
    def in_flight(self) -> np.ndarray:
        """Partitions a reassignment is moving right now (something being added or removed)."""
        return (self.adding != PAD).any(axis=1) | (self.removing != PAD).any(axis=1)

    @property
    def unhealthy(self) -> np.ndarray:
        """Partitions a move cannot complete for until they are back: leaderless, offline or under-replicated."""
        return self.leaderless | self.offline | (self.under_replicated & ~self.in_flight)

    @property
    def pinned_by_placement(self) -> np.ndarray:
        """Partitions Confluent Server places itself (placement constraints or observers): never moved here."""
        return self.constrained | self.observers

    def target_replicas(self, state: ClusterState) -> np.ndarray:
        """The in-flight reassignment's target: ``Replicas`` (the union) minus ``Removing Replicas``, order kept,
        as a -1 padded replica matrix over ``state``'s rows."""
        reps = state.replicas
        gone = np.zeros(reps.shape, dtype=bool)
        for c in range(self.removing.shape[1]):
            col = self.removing[:, c]
            gone |= (reps == col[:, None]) & (col[:, None] != PAD)
        keep = (reps != PAD) & ~gone
        out = np.full(reps.shape, PAD, dtype=np.int32)
        pos = np.cumsum(keep, axis=1) - 1
        rows, cols = np.nonzero(keep)
        out[rows, pos[rows, cols]] = reps[rows, cols]
        return out


def partition_names(state: ClusterState, mask: np.ndarray, limit: int = SHOWN) -> str:
    """``t-0, t-3, u-1`` for the first ``limit`` rows of ``mask`` (``, ...`` when there are more)."""
    rows = np.flatnonzero(mask)
    names = [f"{state.topics[state.topic[r]]}-{int(state.partition[r])}" for r in rows[:limit].tolist()]
    return ", ".join(names) + (", ..." if len(rows) > limit else "")


def status_warnings(state: ClusterState, status: ClusterStatus | None, source: str) -> list[str]:
    """The lines ``check`` and ``report`` print about partitions in flight, unhealthy or placed by Confluent."""
    if status is None:
        return []
    out = []
    for mask, what in (
        (status.in_flight, "being reassigned right now (Adding/Removing Replicas); Replicas shows the temporary union"),
        (status.leaderless, "without a leader (Leader: none or -1)"),
        (status.offline & ~status.leaderless, "with offline replicas (Offline:)"),
        (status.under_replicated & ~status.offline & ~status.leaderless & ~status.in_flight,
         "under-replicated (ISR smaller than the replicas)"),
        (status.pinned_by_placement, "placed by Confluent placement constraints or with observers (never moved)"),
    ):
        n = int(mask.sum())
        if n:
            out.append(f"{source}: {n} partition{'s' if n != 1 else ''} {what}: {partition_names(state, mask)}")
    return out


@dataclass(frozen=True, eq=False)
class PlanInput:
    """What to plan from: the state (in-flight partitions at their target when asked), the partitions that stay
    exactly in place, and the notes that say why."""

    state: ClusterState
    pinned: np.ndarray  # bool [P]
    notes: tuple[str, ...]


def plan_input(state: ClusterState, status: ClusterStatus | None, source: str, *, from_target: bool = False,
               move_unhealthy: bool = False, names: dict[str, str] | None = None) -> PlanInput:
    """Apply a describe's status to a planning request.

    A reassignment in progress is refused (a new plan would override it) unless ``from_target``: then those
    partitions are planned from the reassignment's target (``Replicas`` minus ``Removing Replicas``). Leaderless,
    offline and under-replicated partitions stay in place unless ``move_unhealthy`` (their moves cannot complete
    until they are back). Partitions placed by Confluent placement constraints or with observers always stay."""
    name = {"from_target": "from_target", "move_unhealthy": "move_unhealthy", **(names or {})}
    pinned = np.zeros(state.num_partitions, dtype=bool)
    if status is None:
        return PlanInput(state, pinned, ())
    notes: list[str] = []
    flight = status.in_flight
    n = int(flight.sum())
    if n and not from_target:
        raise InputError(source, "Adding/Removing Replicas",
                         f"{n} partition{'s are' if n != 1 else ' is'} being reassigned right now "
                         f"({partition_names(state, flight)}); a new plan would override the move in progress: "
                         f"wait until it completes, or plan from its target ({name['from_target']})")
    if n:
        state = state.with_replicas(np.where(flight[:, None], status.target_replicas(state), state.replicas))
        notes.append(f"planned {n} partition{'s' if n != 1 else ''} in flight from the reassignment's target "
                     f"(Replicas minus Removing Replicas): {partition_names(state, flight)}")
    placed = status.pinned_by_placement
    if placed.any():
        pinned |= placed
        notes.append(f"{int(placed.sum())} partitions placed by Confluent placement constraints or with observers "
                     f"are left in place: {partition_names(state, placed)}")
    sick = status.unhealthy & ~placed
    if sick.any() and not move_unhealthy:
        pinned |= sick
        notes.append(f"{int(sick.sum())} leaderless, offline or under-replicated partitions are left in place "
                     f"(moving them cannot complete until they are back; {name['move_unhealthy']} plans "
                     f"them anyway): {partition_names(state, sick)}")
    elif sick.any():
        notes.append(f"{int(sick.sum())} leaderless, offline or under-replicated partitions are planned as asked; "
                     f"their moves cannot complete until they are back: {partition_names(state, sick)}")
    return PlanInput(state, pinned, tuple(notes))



def held_rows(status: ClusterStatus | None, *, move_unhealthy: bool = False) -> np.ndarray | None:
    """bool [P]: the partitions ``plan_input`` holds in place (placed by Confluent; unhealthy unless
    ``move_unhealthy``), or None without a status. ``report --plan`` certifies a plan file with the same."""
    if status is None:
        return None
    placed = status.pinned_by_placement
    return placed if move_unhealthy else placed | status.unhealthy
