"""Directory balance within each broker (JBOD): limits per log directory, the replicas that must change directory,
and the intra-broker moves of a plan.

A broker's directories get a limit each. Without ``balance`` the limit is the directory's capacity (when known;
none otherwise). With ``balance`` it is also ``tolerance`` times the directory's share of the bytes its broker
holds after the plan (shares equal, or by capacity when every open directory of the broker has one), rounded
down, but never below the broker's largest replica (some directory must hold it); a directory being emptied
(``emptied``) has the limit 0 either way.

Replicas that stay on their broker stay in their directory unless it is above its limit: then the fewest bytes
that bring it under are taken out (the smallest replica that covers the excess alone, else the largest ones first
until one does), and placed with the arriving replicas, largest first, each in the least used open directory of
its broker that stays within its limit (the least used open one when none does; ties to the first path). A
replica taken out that lands in another directory is an intra-broker move: a copy on the broker's own disks.

No placement within the limits moves fewer bytes between directories than the sum over directories of their
staying bytes above the limit (arrivals can go anywhere; a directory's own replicas must leave to bring it under):
the printed lower bound. It bounds the placements within the limits: when the greedy placement is not one
(``within_limits`` False: sizes that do not pack), the plan says so and its bytes are not compared with it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dirs import ReplicaDirs, replica_keys

_NO_LIMIT = np.iinfo(np.int64).max


@dataclass(frozen=True)
class DirMoves:
    """What the directory placement of a plan did within brokers."""

    rows: np.ndarray  # int64: partition row of each intra-broker move
    broker: np.ndarray  # int64: its broker id
    source: np.ndarray  # int64: directory before (index into the ReplicaDirs)
    target: np.ndarray  # int64: directory after
    size: np.ndarray  # int64: bytes
    lower_bound_bytes: int  # no placement within the limits moves fewer bytes between directories
    within_limits: bool  # every directory ends within its limit
    limit: np.ndarray  # int64 [D]: each directory's limit (-1: none)

    @property
    def bytes_moved(self) -> int:
        return int(np.maximum(self.size, 0).sum())

    def __len__(self) -> int:
        return len(self.rows)


def dir_limits(dirs: ReplicaDirs, broker_bytes: np.ndarray, *, balance: bool, tolerance: float,
               emptied: np.ndarray, largest: np.ndarray | None = None) -> np.ndarray:
    """int64 [D]: each directory's limit (-1: none); ``broker_bytes`` [D]: the bytes its broker holds after the
    plan (the same value for every directory of a broker); ``largest`` [D]: its largest replica, below which a
    balance limit is not set (some directory must hold it; a capacity still caps it)."""
    cap = dirs.capacity
    limit = np.where(cap >= 0, cap, -1).astype(np.int64)
    if balance:
        open_dir = ~emptied
        share = np.zeros(dirs.num_dirs)
        for b in np.unique(dirs.dir_broker).tolist():
            mine = dirs.dirs_of(b)
            op = mine[open_dir[mine]]
            if not len(op):
                continue
            caps = cap[op]
            share[op] = caps / caps.sum() if (caps > 0).all() else 1.0 / len(op)
        fair = np.floor(tolerance * broker_bytes * share + 1e-6).astype(np.int64)
        if largest is not None:
            fair = np.maximum(fair, largest)
        limit = np.where(open_dir, np.where(limit >= 0, np.minimum(limit, fair), fair), limit)
    return np.where(emptied, 0, limit)


def place(dirs: ReplicaDirs, after, *, balance: bool = False, tolerance: float = 1.1,
          emptied: np.ndarray | None = None) -> tuple[ReplicaDirs, DirMoves]:
    """Every replica of ``after`` in a directory under the limits (module docstring), and the intra-broker moves.
    Replicas on brokers of unknown directories have none (-1: the plan file says "any")."""
    emptied = np.zeros(dirs.num_dirs, dtype=bool) if emptied is None else np.asarray(emptied, dtype=bool)
    keys, rows, ids = replica_keys(after)
    order = np.argsort(keys, kind="stable")
    keys, rows, ids = keys[order], rows[order], ids[order]
    where, known = dirs.placed(keys)
    stay = where >= 0
    size = np.where(stay, known, np.asarray(after.size)[rows]).astype(np.int64)
    z = np.maximum(size, 0)
    lo = np.searchsorted(dirs.dir_broker, ids)
    hi = np.searchsorted(dirs.dir_broker, ids, side="right")
    has_dirs = hi > lo
    broker_total, largest = _broker_bytes(dirs, ids[has_dirs], z[has_dirs])
    limit = dir_limits(dirs, broker_total, balance=balance, tolerance=tolerance, emptied=emptied, largest=largest)
    used = np.bincount(where[stay], weights=z[stay], minlength=dirs.num_dirs).astype(np.int64)
    room = np.where(limit >= 0, limit, _NO_LIMIT)
    bound = int(np.maximum(used - room, 0).sum())
    shed = _shed(where, z, stay, used, room)
    original = where.copy()
    used -= np.bincount(where[shed], weights=z[shed], minlength=dirs.num_dirs).astype(np.int64)
    where[shed] = -1
    todo = np.flatnonzero((~stay | shed) & has_dirs)
    todo = todo[np.lexsort((rows[todo], -z[todo], ids[todo]))]  # broker, largest first, row
    for i, a, b, s in zip(todo.tolist(), lo[todo].tolist(), hi[todo].tolist(), z[todo].tolist()):
        choice = _least_used(used, room, emptied, a, b, s)
        where[i] = choice
        used[choice] += s
    moved = shed & (where != original)
    placed = ReplicaDirs(dir_broker=dirs.dir_broker, dir_path=dirs.dir_path, capacity=dirs.capacity, key=keys,
                         dir=where, size=size, future_key=dirs.future_key, future_dir=dirs.future_dir)
    moves = DirMoves(rows=rows[moved], broker=ids[moved], source=original[moved], target=where[moved],
                     size=size[moved], lower_bound_bytes=bound, within_limits=bool((used <= room).all()),
                     limit=limit)
    return placed, moves


def _broker_bytes(dirs: ReplicaDirs, ids: np.ndarray, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[D] each: the bytes of each directory's broker after the plan, and its largest replica."""
    brokers, inv = np.unique(dirs.dir_broker, return_inverse=True)
    per = np.zeros(len(brokers), dtype=np.float64)
    top = np.zeros(len(brokers), dtype=np.int64)
    at = np.searchsorted(brokers, ids)
    np.add.at(per, at, z.astype(np.float64))
    np.maximum.at(top, at, z)
    return per[inv], top[inv]


def _shed(where: np.ndarray, z: np.ndarray, stay: np.ndarray, used: np.ndarray, room: np.ndarray) -> np.ndarray:
    """bool: the staying replicas taken out of directories above their limit (the fewest bytes, greedily)."""
    out = np.zeros(len(where), dtype=bool)
    for d in np.flatnonzero(used > room).tolist():
        mine = np.flatnonzero(stay & (where == d))
        mine = mine[np.lexsort((mine, -z[mine]))]  # largest first, then replica order
        excess = int(used[d] - room[d])
        sizes = z[mine].tolist()
        taken = np.zeros(len(mine), dtype=bool)
        while excess > 0 and not taken.all():
            free = [k for k in range(len(mine)) if not taken[k]]
            covering = [k for k in free if sizes[k] >= excess]
            k = covering[-1] if covering else free[0]  # the smallest that covers it, else the largest
            taken[k] = True
            excess -= sizes[k]
        out[mine[taken]] = True
    return out


def _least_used(used: np.ndarray, room: np.ndarray, emptied: np.ndarray, a: int, b: int, size: int) -> int:
    """Of directories a..b-1 not being emptied, the least used that stays within its limit with ``size`` more
    bytes (the least used of them when none does; every directory when all are being emptied); ties to the
    first."""
    span = used[a:b]
    open_dir = ~emptied[a:b]
    if not open_dir.any():
        open_dir = np.ones(b - a, dtype=bool)
    fits = open_dir & (span + size <= room[a:b])
    pool = np.where(fits if fits.any() else open_dir, span, _NO_LIMIT)
    return a + int(np.argmin(pool))


def emptied_dirs(dirs: ReplicaDirs, items: tuple[str, ...]) -> np.ndarray:
    """bool [D]: the directories ``remove_log_dirs`` names (``"BROKER:PATH"``); one unknown to the cluster, or
    every directory of a broker, is a RequestError on ``remove_log_dirs``."""
    from .errors import RequestError
    from .request import parse_log_dir

    out = np.zeros(dirs.num_dirs, dtype=bool)
    for item in items:
        broker, path = parse_log_dir(item)
        mine = dirs.dirs_of(broker)
        hit = [int(d) for d in mine if dirs.dir_path[d] == path]
        if not hit:
            raise RequestError("remove_log_dirs", "no such log directory on that broker (from kafka-log-dirs)", item)
        out[hit[0]] = True
        if out[mine].all():
            raise RequestError("remove_log_dirs", "this would empty every log directory of the broker: remove the "
                                                  "broker instead", item)
    return out


def open_capacity(state, emptied: np.ndarray) -> np.ndarray:
    """int64 [N] over ``state.brokers``: the bytes a broker's directories that are not being emptied can hold, where
    every one of them has a capacity (-1 elsewhere): with a directory emptied, the broker as a whole holds no more,
    so what its other directories cannot take must leave the broker (the disk stage's capacity repair)."""
    b = state.brokers
    out = np.full(len(b), -1, dtype=np.int64)
    d = state.dirs
    if d is None or not emptied.any():
        return out
    for broker in np.unique(d.dir_broker[emptied]).tolist():
        mine = d.dirs_of(broker)
        rest = mine[~emptied[mine]]
        if len(rest) and (d.capacity[rest] >= 0).all():
            out[b.index_of(np.array([broker]))[0]] = int(d.capacity[rest].sum())
    return out
