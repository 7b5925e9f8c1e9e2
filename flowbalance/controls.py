"""Operator controls of a request, worked out for one cluster: pinned partitions, brokers closed to new replicas.

* ``pin_mask``: the partitions a request's ``pin`` patterns name (a topic regex matched against whole names, or a
  ``topic:partition`` list). Topic names cannot hold ``:`` (Kafka allows letters, digits, ``.``, ``_``, ``-``), so
  a pattern with a ``:`` is a partition list and any other is a regex.
* ``closed_caps`` / ``topic_caps``: the ceilings of brokers closed to new replicas (``exclude_brokers``, or the
  broker file's state ``no-new-replicas``): at most what they hold now, overall and per topic. The targets of
  stage 1 and of the certificate are water-filled under these ceilings (``targets.capped_intervals``), so the
  closed-form bound and the flow bound are bounds over the plans that respect them.
* ``check_closed_feasible``: every partition that must gain replicas has enough open live brokers it is not on.
"""
from __future__ import annotations

import re

import numpy as np

from .errors import PlanningError, RequestError
from .model import ClusterState
from .racks import rack_bounds


def pin_mask(state: ClusterState, patterns: tuple[str, ...]) -> np.ndarray:
    """bool [P]: the partitions any of ``patterns`` names. A pattern (or a listed partition) naming nothing is a
    ``RequestError`` on ``pin`` with the pattern."""
    out = np.zeros(state.num_partitions, dtype=bool)
    for pattern in patterns:
        hit = _partitions_of(state, pattern) if ":" in pattern else _topic_rows(state, pattern)
        if not hit.any():
            raise RequestError("pin", "matches no partition", pattern)
        out |= hit
    return out


def _topic_rows(state: ClusterState, pattern: str) -> np.ndarray:
    try:
        rx = re.compile(pattern)
    except re.error as err:
        raise RequestError("pin", f"invalid regular expression: {err}", pattern) from None
    topics = np.array([rx.fullmatch(t) is not None for t in state.topics], dtype=bool)
    return topics[state.topic] if len(topics) else np.zeros(state.num_partitions, dtype=bool)


def _partitions_of(state: ClusterState, pattern: str) -> np.ndarray:
    """Rows of a ``topic:partition[,topic:partition...]`` list; each item must name a partition."""
    hit = np.zeros(state.num_partitions, dtype=bool)
    index = {t: i for i, t in enumerate(state.topics)}
    for item in (x.strip() for x in pattern.split(",")):
        topic, _, number = item.rpartition(":")
        if not topic or not (number.isascii() and number.isdigit()):
            raise RequestError("pin", "expected TOPIC:PARTITION[,TOPIC:PARTITION...] or a topic regex", pattern)
        rows = np.flatnonzero((state.topic == index.get(topic, -1)) & (state.partition == int(number)))
        if not len(rows):
            raise RequestError("pin", "matches no partition", item)
        hit[rows] = True
    return hit


def check_pins(state: ClusterState, pinned: np.ndarray, patterns: tuple[str, ...], on_removed: np.ndarray) -> None:
    """A pinned partition with a replica on a removed broker must move and may not: one error, naming it."""
    bad = pinned & on_removed
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        name = f"{state.topics[state.topic[r]]}:{int(state.partition[r])}"
        raise RequestError("pin", f"pinned partition {name} has a replica on a removed broker (remove/replace), so "
                           f"it must move; {int(bad.sum())} such partitions in all", ",".join(patterns))


def closed_caps(state: ClusterState) -> np.ndarray | None:
    """int64 [N]: each closed broker's replica count now (its ceiling), -1 for the others; None when none is
    closed (the targets are then exactly the uncapped ones)."""
    shut = state.brokers.no_new
    if not shut.any():
        return None
    idx = state.replica_index
    counts = np.bincount(idx[idx >= 0], minlength=len(shut)).astype(np.int64)
    return np.where(shut, counts, -1)


def topic_caps(state: ClusterState, live_idx: np.ndarray, c_tb: np.ndarray) -> np.ndarray | None:
    """[T, NL]: the (topic, live broker) counts ``c_tb`` of closed brokers (their ceilings), -1 elsewhere; None
    when no broker is closed."""
    shut = state.brokers.no_new[live_idx]
    if not shut.any():
        return None
    c = np.asarray(c_tb).reshape(-1, len(live_idx))
    return np.where(shut[None, :], c, -1)


def open_positions(state: ClusterState, live_idx: np.ndarray) -> np.ndarray:
    """bool [NL]: live brokers open to new replicas."""
    return ~state.brokers.no_new[live_idx]


def check_closed_feasible(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray) -> None:
    """Every movable partition that must gain replicas (RF up, replicas on removed brokers) has enough open live
    brokers it does not hold yet."""
    b = state.brokers
    shut = b.no_new
    if not shut.any():
        return
    idx = state.replica_index
    ok = idx >= 0
    safe = np.maximum(idx, 0)
    live_held = (ok & b.live[safe]).sum(axis=1)
    open_held = (ok & b.live[safe] & ~shut[safe]).sum(axis=1)
    n_open = int((b.live & ~shut).sum())
    need = np.asarray(target_rf) - live_held
    bad = np.flatnonzero(movable & (need > n_open - open_held))
    if not len(bad) and b.has_racks:
        short = _rack_short(state, np.asarray(target_rf), movable)
        if len(short):
            r = int(short[0])
            raise PlanningError(
                f"partition {state.topics[state.topic[r]]}-{int(state.partition[r])} needs a replica in a rack "
                "(the rack rule) where every broker it could take is closed to new replicas (exclude_brokers or "
                "the broker file's state no-new-replicas)")
    if len(bad):
        r = int(bad[0])
        raise PlanningError(
            f"partition {state.topics[state.topic[r]]}-{int(state.partition[r])} needs {int(need[r])} new "
            f"replica(s) but only {n_open - int(open_held[r])} open broker(s) can take one (the others are closed "
            "to new replicas: exclude_brokers or the broker file's state no-new-replicas)")


def _rack_short(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray) -> np.ndarray:
    """Rows of ``movable`` partitions that the rack rule needs in a rack with too few brokers there they hold or
    can receive on (open ones)."""
    b = state.brokers
    live_idx = np.flatnonzero(b.live)
    _, rack_of = np.unique(b.rack[live_idx], return_inverse=True)
    K = int(rack_of.max()) + 1 if len(live_idx) else 1
    low, _ = rack_bounds(target_rf, np.bincount(rack_of, minlength=K))
    rack = np.full(len(b), -1, dtype=np.int64)
    rack[live_idx] = rack_of
    idx = state.replica_index
    ok = idx >= 0
    r_idx = np.where(ok, rack[np.maximum(idx, 0)], -1)
    rows = np.repeat(np.arange(len(idx)), idx.shape[1])
    held = r_idx.ravel() >= 0
    held_r = np.bincount(rows[held] * K + r_idx.ravel()[held], minlength=len(idx) * K).reshape(-1, K)
    shut = b.no_new
    held_open = (ok & ~shut[np.maximum(idx, 0)]).ravel() & held
    held_open_r = np.bincount(rows[held_open] * K + r_idx.ravel()[held_open], minlength=len(idx) * K).reshape(-1, K)
    open_r = np.bincount(rack_of[~shut[live_idx]], minlength=K)
    room = held_r + open_r[None, :] - held_open_r
    return np.flatnonzero(np.asarray(movable, bool) & (room < low).any(axis=1))


def demote_fields(before: ClusterState, after: ClusterState, demote: tuple[int, ...], first: int = 5) -> dict:
    """What a demotion did, as plain data: leaderships moved off the demoted brokers, and the partitions still led
    by one (every replica demoted, the others offline or removed, or held in place), the first few by name."""
    b = before.brokers
    demoted = np.zeros(len(b), dtype=bool)
    demoted[b.index_of(np.asarray(demote, dtype=np.int64))] = True
    led_before = demoted[np.maximum(before.replica_index[:, 0], 0)] & (before.replica_index[:, 0] >= 0)
    led_after = demoted[np.maximum(after.replica_index[:, 0], 0)] & (after.replica_index[:, 0] >= 0)
    rows = np.flatnonzero(led_after)
    names = [f"{after.topics[after.topic[r]]}-{int(after.partition[r])}" for r in rows[:first].tolist()]
    return {"brokers": list(demote), "moved_off": int((led_before & ~led_after).sum()),
            "not_demoted": int(len(rows)), "not_demoted_partitions": names}
