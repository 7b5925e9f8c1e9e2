"""``resolve(state, request)``: what a ``PlanRequest`` means for one cluster, worked out once.

The broker changes applied to the brokers (removed brokers marked, new ones added, a replacement in the rack of
the broker it replaces, excluded ones closed to new replicas), the partitions that may move (topic scope, less the
held and pinned ones: ``controls.pin_mask``), and the target RF of every partition. Every check that needs the cluster is here, with errors naming the request's fields.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from .controls import check_closed_feasible, check_pins, pin_mask
from .errors import PlanningError, RequestError
from .model import ClusterState
from .request import PlanRequest


@dataclass(frozen=True, eq=False)
class Resolved:
    """A request applied to a cluster: the state to plan from and what may change in it."""

    request: PlanRequest
    before: ClusterState  # the current assignment with the broker changes applied
    movable: np.ndarray  # bool [P]: partitions the plan may move or reorder
    target_rf: np.ndarray  # int64 [P]
    prefer: dict[int, int]  # old → new broker: a replacement takes its broker's replicas where balance allows

    @property
    def must_change(self) -> bool:
        """RF changes and replicas on removed brokers must be fixed whatever the spreads say."""
        return bool(not np.array_equal(self.target_rf, self.before.rf) or rows_on_removed(self.before).any())


def resolve(state: ClusterState, request: PlanRequest, pinned: np.ndarray | None = None) -> Resolved:
    """Apply ``request`` (validated here) to ``state``; ``pinned`` (bool per partition) are held in place."""
    request.validate()
    before = apply_broker_changes(state, request)
    pinned = pinned_rows(before, request, pinned)
    movable = movable_rows(before, request, pinned)
    target_rf = target_rfs(before, request, movable)
    check_feasible(before, target_rf)
    check_closed(before, request)
    check_closed_feasible(before, target_rf, movable)
    check_sizes(before, request)
    check_capacity(before, target_rf)
    return Resolved(request, before, movable, target_rf, request.replacements)


def pinned_rows(state: ClusterState, request: PlanRequest, held: np.ndarray | None) -> np.ndarray | None:
    """``held`` (in flight, unhealthy, placed by Confluent) with the request's ``pin`` patterns added; a pinned
    partition with a replica on a removed broker is a ``RequestError`` on ``pin``."""
    if not request.pin:
        return held
    pins = pin_mask(state, request.pin)
    check_pins(state, pins, request.pin, rows_on_removed(state))
    return pins if held is None else pins | np.asarray(held, dtype=bool)


def check_closed(state: ClusterState, request: PlanRequest) -> None:
    """Brokers closed to new replicas are kept by the flow strategy's count and swap stages; the template strategy
    and disk balance place without that rule, so they are refused with closed brokers."""
    if not state.brokers.no_new.any():
        return
    for name, value, ok in (("strategy", request.strategy, "flow"), ("balance", request.balance, "count")):
        if value != ok:
            raise RequestError(("exclude_brokers", name), f"brokers closed to new replicas are planned with {name} "
                               f"{ok} only (got {name} {value})", ",".join(map(str, request.exclude_brokers)) or
                               "the broker file's state no-new-replicas")


def rows_on_removed(state: ClusterState) -> np.ndarray:
    """bool [P]: partitions with a replica on a removed broker."""
    idx = state.replica_index
    rem = state.brokers.removed
    return ((idx >= 0) & rem[np.maximum(idx, 0)]).any(axis=1)


def _holding(state: ClusterState, broker: int) -> bool:
    b = state.brokers
    if not b.contains(broker):
        return False
    idx = state.replica_index
    return bool((idx == b.index_of([broker])[0]).any())


def check_broker_changes(state: ClusterState, request: PlanRequest) -> None:
    """Broker changes that contradict the cluster: unknown brokers, or "new" brokers that hold replicas."""
    b = state.brokers
    for old, new in request.replace:
        if not b.contains(old):
            raise RequestError("replace", "unknown broker to replace", f"{old}:{new}")
        if _holding(state, new):
            raise RequestError("replace", f"the new broker {new} already holds replicas: a replacement must be a new "
                               f"(empty) broker; to move {old}'s replicas onto the others, remove {old} instead",
                               f"{old}:{new}")
    for x in request.add:
        if _holding(state, x):
            raise RequestError("add", f"broker {x} already exists and holds replicas: add names new brokers", x)
    for name in ("remove", "exclude_brokers", "demote"):
        for x in getattr(request, name):
            if not b.contains(x):
                raise RequestError(name, "unknown broker (not in the broker file or the assignment)", x)


def apply_broker_changes(state: ClusterState, request: PlanRequest) -> ClusterState:
    """The state with new brokers added (a replacement in its old broker's rack) and removed ones marked."""
    check_broker_changes(state, request)
    b = state.brokers
    replace = request.replacements
    new_ids = [x for x in request.add if not b.contains(x)] + [n for n in replace.values() if not b.contains(n)]
    if new_ids and b.has_racks:
        inherit = {n: o for o, n in replace.items()}
        by_rack: dict[str | None, list[int]] = {}
        for n in new_ids:
            if n not in inherit:
                raise RequestError("add", "racks are in use: list the new broker with its rack in the broker file", n)
            r = int(b.rack[b.index_of([inherit[n]])[0]])
            by_rack.setdefault(b.rack_names[r], []).append(n)
        for rack, ids in by_rack.items():
            b = b.with_added(ids, rack=rack)
    elif new_ids:
        b = b.with_added(new_ids)
    gone = list(request.remove) + list(replace)
    if gone:
        b = b.with_removed(gone)
    b = b.with_closed(request.exclude_brokers)
    if not b.live.any():
        raise RequestError("remove", "this would remove every broker", ",".join(map(str, gone)))
    return state.with_brokers(b)


def _topic_scope(state: ClusterState, request: PlanRequest) -> np.ndarray:
    """bool per topic: named by ``topics`` (all when unset) and not by ``exclude_topics``."""
    ok = np.ones(len(state.topics), dtype=bool)
    for name, pattern, want in (("topics", request.topics, True), ("exclude_topics", request.exclude_topics, False)):
        if pattern is None:
            continue
        try:
            rx = re.compile(pattern)
        except re.error as err:
            raise RequestError(name, f"invalid regular expression: {err}", pattern) from None
        hit = np.array([rx.fullmatch(t) is not None for t in state.topics], dtype=bool)
        ok &= hit if want else ~hit
        if want and not hit.any():
            raise RequestError(name, "matches no topic", pattern)
    return ok


def movable_rows(state: ClusterState, request: PlanRequest, pinned: np.ndarray | None = None) -> np.ndarray:
    """bool [P]: partitions of topics in scope, less the held ones. A held or excluded partition with a
    replica on a removed broker is a contradiction (it must move and may not)."""
    movable = _topic_scope(state, request)[state.topic]
    on_removed = rows_on_removed(state)
    if pinned is not None:
        held = np.asarray(pinned, dtype=bool) & on_removed
        if held.any():
            r = int(np.flatnonzero(held)[0])
            raise PlanningError(
                f"partition {state.topics[state.topic[r]]}-{int(state.partition[r])} must stay in place (in flight, "
                f"unhealthy or placed by Confluent) but has a replica on a removed broker; {int(held.sum())} such "
                "partitions in all")
        movable &= ~np.asarray(pinned, dtype=bool)
    stuck = on_removed & ~movable
    if stuck.any():
        r = int(np.flatnonzero(stuck)[0])
        raise PlanningError(
            f"topic {state.topics[state.topic[r]]} is excluded but has replicas on a removed broker; include it")
    return movable


def target_rfs(state: ClusterState, request: PlanRequest, movable: np.ndarray) -> np.ndarray:
    """int64 [P]: the requested RF of every movable partition (one for all, or per topic), the current one else."""
    target = state.rf.astype(np.int64).copy()
    if request.replication_factor is not None:
        target[movable] = request.replication_factor
        return target
    for topic, k in request.topic_rf:
        if topic not in state.topics:
            raise RequestError("topic_rf", "unknown topic", topic)
        rows = state.topic == state.topics.index(topic)
        if not movable[rows].all():
            raise RequestError("topic_rf", "topic is outside the topic scope (topics / exclude_topics), or some of "
                               "its partitions must stay in place", topic)
        target[rows] = k
    return target


def check_feasible(state: ClusterState, target_rf: np.ndarray) -> None:
    """Every target RF fits on distinct live brokers."""
    n_live = int(state.brokers.live.sum())
    big = np.flatnonzero(target_rf > n_live)
    if len(big):
        r = int(big[0])
        raise PlanningError(
            f"replication factor {int(target_rf[r])} of {state.topics[state.topic[r]]}-{int(state.partition[r])} "
            f"is above the number of live brokers ({n_live})")


def check_sizes(state: ClusterState, request: PlanRequest) -> None:
    """The bytes objective and disk balance need partition sizes."""
    if (request.objective == "bytes" or request.disk_balance) and not state.has_sizes:
        name = "objective" if request.objective == "bytes" else "balance"
        raise RequestError(name, "needs partition sizes (kafka-log-dirs output or a topic,partition,bytes table)",
                           getattr(request, name))


def check_capacity(state: ClusterState, target_rf: np.ndarray) -> None:
    """When every live broker has a disk capacity, the bytes to place must fit in their sum."""
    b = state.brokers
    cap = b.capacity[b.live]
    if not state.has_sizes or not len(cap) or (cap < 0).any():
        return
    need = int((np.maximum(state.size, 0) * target_rf).sum())
    if need > int(cap.sum()):
        from .summary import format_bytes
        raise PlanningError(f"disk capacity cannot be met: the partitions need {format_bytes(need)} "
                            f"({need} bytes) and the live brokers' capacities add up to {format_bytes(int(cap.sum()))}")
