"""Track a running plan: where each of its partitions stands in a later dump, whether the plan is stale, and what
is left to plan again (``resume``).

For every partition a plan changes, with O its list when the plan was made (from the sidecar,
``flowbalance.planmeta``), N its planned list and C its list in the later dump (the ``Replicas`` a describe
prints: the union of old and new while a reassignment runs), the partition is

* **done** when C is N (same order) and no reassignment runs on it;
* **not started** when C is O and no reassignment runs on it;
* **in flight** when a reassignment runs toward the plan (a describe's ``Adding/Removing Replicas`` with C within
  O ∪ N and its target, ``Replicas`` minus ``Removing Replicas``, N or a list between O and N), or, with no
  reassignment shown (a JSON dump), when C lies between O and N: every broker of C in O ∪ N, every broker of
  O ∩ N in C, and C neither O's nor N's brokers (the union of old and new, or a completed step of
  ``batches --one-replica-per-partition``);
* **diverged** otherwise (changed by someone else, or gone from the dump).

A partition the plan does not change has **changed elsewhere** when its list is no longer O (a reassignment
running toward O, or, in a JSON dump, Kafka's union O + new, still counts as O), or when it is gone. The plan is
**stale** when any partition diverged or changed elsewhere. Partitions absent when the plan was made (new topics)
are counted, never stale. Without a sidecar O is unknown: partitions are done, in flight (a reassignment runs
toward N), diverged (one runs elsewhere, or the partition is gone) or not started, and staleness cannot be told.

Bytes are the partition size times the incoming replicas (brokers of N not in O); a copy counts as done once its
broker holds the partition outside a running reassignment. The estimate is the busiest broker's bytes left
(received, or sent by the partition's first replica) over the throttle, as ``batches`` estimates a batch.
Everything is vectorized over the partitions.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from .errors import InputError
from .formats.raw import RawAssignment
from .model import PAD, ClusterState
from .planfile import pad_to
from .planmeta import (PlanMeta, canonical, find_sidecar, plan_sha256, read_plan_raw, read_sidecar, sidecar_path)
from .request import PlanRequest
from .status import ClusterStatus, PlanInput, partition_names, plan_input

STATES = ("done", "in_flight", "not_started", "diverged")
DONE, IN_FLIGHT, NOT_STARTED, DIVERGED = range(4)
SHOWN = 5


class StalePlanError(InputError):
    """The plan no longer matches the dump it is used with (``force`` goes ahead anyway)."""


@dataclass(frozen=True, eq=False)
class Progress:
    """Where a plan's partitions stand in a later dump. Per planned partition (canonical order): the arrays below;
    ``row`` is its row in ``state`` (-1 when gone)."""

    plan_source: str
    current_source: str
    meta: PlanMeta | None
    state: ClusterState  # the later dump
    names: tuple[str, ...]  # topic names of the planned partitions and of ``elsewhere``
    topic: np.ndarray  # int32 [n] into names
    partition: np.ndarray  # int32 [n]
    row: np.ndarray  # int64 [n]
    code: np.ndarray  # int8 [n]: DONE, IN_FLIGHT, NOT_STARTED, DIVERGED
    running: np.ndarray  # bool [n]: a reassignment runs on it (describe)
    union: np.ndarray  # bool [n]: in flight, no reassignment shown, and the list is the union of old and new
    old: np.ndarray | None  # int32 [n, W]: the list when planned (None without a sidecar)
    new: np.ndarray  # int32 [n, W]: the planned list
    copies: np.ndarray  # int64 [n]: incoming replicas in all (without a sidecar: those still to copy)
    todo: np.ndarray  # int32 [n, W]: the brokers still to receive a copy (PAD padded; none for done and diverged)
    sender: np.ndarray  # int64 [n]: the broker that sends the copies (first replica now)
    size: np.ndarray  # int64 [n]: -1 unknown
    elsewhere_topic: np.ndarray  # int32 [m] into names: partitions the plan leaves alone, changed since
    elsewhere_partition: np.ndarray  # int32 [m]
    new_partitions: int  # partitions in the dump the sidecar does not know

    # ---- counts -----------------------------------------------------------------------------------------
    @property
    def checked(self) -> bool:
        """Staleness can be told (the plan has a sidecar)."""
        return self.meta is not None

    @property
    def diverged(self) -> int:
        return int((self.code == DIVERGED).sum())

    @property
    def changed_elsewhere(self) -> int:
        return len(self.elsewhere_topic)

    @property
    def stale(self) -> bool:
        return self.checked and (self.diverged > 0 or self.changed_elsewhere > 0)

    def counts(self) -> dict[str, int]:
        c = np.bincount(self.code.astype(np.int64), minlength=4)
        return {"planned": len(self.code), **{s: int(c[i]) for i, s in enumerate(STATES)},
                "changed_elsewhere": self.changed_elsewhere, "new_partitions": self.new_partitions}

    @property
    def remaining(self) -> np.ndarray:
        """int64 [n]: incoming replicas not copied yet."""
        return _count(self.todo).astype(np.int64)

    def bytes(self) -> dict[str, int | None]:
        """Bytes done and left (None without sizes; done also None without a sidecar), and the partitions with
        copies whose size is unknown."""
        if not self.state.has_sizes:
            return {"done": None, "left": None, "unknown_sizes": int(((self.copies > 0) & (self.code != DIVERGED)).sum())}
        ok = (self.size >= 0) & (self.code != DIVERGED)
        size = np.where(ok, self.size, 0)
        done = int((size * (self.copies - self.remaining)).sum()) if self.checked else None
        return {"done": done, "left": int((size * self.remaining).sum()),
                "unknown_sizes": int(((self.size < 0) & (self.code != DIVERGED) & (self.copies > 0)).sum())}

    def estimated_seconds(self, throttle: int | None) -> float | None:
        """The busiest broker's bytes left (received or sent) over ``throttle`` bytes/s; None without either."""
        if not throttle or not self.state.has_sizes:
            return None
        left = (self.remaining > 0) & (self.size >= 0)
        if not left.any():
            return 0.0
        rows = np.flatnonzero(left)
        size = self.size[rows]
        todo = self.todo[rows]
        incoming = todo != PAD
        recv_b = todo[incoming].astype(np.int64)
        recv_v = np.repeat(size, incoming.sum(axis=1))
        send_b = self.sender[rows]
        send_v = size * incoming.sum(axis=1)
        peak = 0
        for b, v in ((recv_b, recv_v), (send_b, send_v)):
            ids, inv = np.unique(b, return_inverse=True)
            peak = max(peak, int(np.bincount(inv, weights=v, minlength=len(ids)).max()) if len(ids) else 0)
        return peak / throttle

    def names_of(self, code: int | None = None, mask: np.ndarray | None = None, limit: int = SHOWN) -> str:
        m = (self.code == code) if mask is None else mask
        idx = np.flatnonzero(m)
        out = [f"{self.names[self.topic[i]]}-{int(self.partition[i])}" for i in idx[:limit].tolist()]
        return ", ".join(out) + (", ..." if len(idx) > limit else "")

    def elsewhere_names(self, limit: int = SHOWN) -> str:
        out = [f"{self.names[t]}-{int(p)}" for t, p in zip(self.elsewhere_topic[:limit].tolist(),
                                                           self.elsewhere_partition[:limit].tolist())]
        return ", ".join(out) + (", ..." if self.changed_elsewhere > limit else "")

    def notes(self) -> list[str]:
        """One line when the plan cannot be checked for staleness; one for new partitions."""
        out = []
        if self.meta is None:
            out.append(f"{self.plan_source}: no sidecar ({os.path.basename(sidecar_path(self.plan_source))}): the "
                       "plan cannot be checked for staleness (partitions changed by someone else count as not "
                       "started)")
        if self.new_partitions:
            out.append(f"{self.current_source}: {self.new_partitions} partitions are new since the plan was made "
                       "(the plan does not place them)")
        return out

    def stale_error(self) -> StalePlanError:
        return StalePlanError(self.plan_source, "", self.stale_message(), remedy=("force", True))

    def stale_message(self) -> str:
        parts = []
        if self.diverged:
            parts.append(f"{self.diverged} of its {len(self.code)} partitions diverged ({self.names_of(DIVERGED)})")
        if self.changed_elsewhere:
            parts.append(f"{self.changed_elsewhere} partitions it leaves alone changed ({self.elsewhere_names()})")
        return (f"stale: since it was made, {' and '.join(parts)} in {self.current_source}; plan again from "
                "this dump (or resume from it)")

    def summary(self, throttle: int | None = None, *, partitions: bool = True) -> dict[str, Any]:
        """The plain data ``status --json`` prints (deterministic: no clock)."""
        m = self.meta
        d: dict[str, Any] = {
            "plan": self.plan_source, "current": self.current_source,
            "sidecar": None if m is None else m.source, "checked": self.checked, "stale": self.stale,
            "made": None if m is None else {"created": m.created, "tool_version": m.tool_version, "current": m.current,
                                             "request": request_changes(m.request)},
            "totals": self.counts(), "bytes": self.bytes(), "throttle": throttle,
            "estimated_seconds": self.estimated_seconds(throttle), "notes": self.notes(),
        }
        if partitions:
            d["partitions"] = [{"topic": self.names[t], "partition": p, "state": STATES[c], "running": bool(r)}
                               for t, p, c, r in zip(self.topic.tolist(), self.partition.tolist(), self.code.tolist(),
                                                     self.running.tolist())]
            d["changed_elsewhere"] = [{"topic": self.names[t], "partition": p} for t, p in
                                      zip(self.elsewhere_topic.tolist(), self.elsewhere_partition.tolist())]
        return d


def same_request(a: PlanRequest, b: PlanRequest) -> bool:
    """The same request, however its values were written (``extra_moves`` 0 or "0")."""
    from .planmeta import request_json
    from .request import parse_extra_moves

    da, db = request_json(a), request_json(b)
    da["extra_moves"], db["extra_moves"] = parse_extra_moves(a.extra_moves), parse_extra_moves(b.extra_moves)
    return da == db


def request_changes(req: PlanRequest) -> dict[str, Any]:
    """The request's fields that differ from the defaults (lists for tuples)."""
    from .planmeta import request_json

    from .request import parse_extra_moves

    plain, mine = request_json(PlanRequest()), request_json(req)
    out = {k: v for k, v in mine.items() if plain.get(k) != v and k != "extra_moves"}
    if parse_extra_moves(req.extra_moves) != parse_extra_moves(0):
        out["extra_moves"] = req.extra_moves
    return out


# ---- array helpers ---------------------------------------------------------------------------------------


def _isin(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """bool [n, Wa]: a[r, j] is a broker (not PAD) that row r of b holds."""
    if a.shape[0] == 0:
        return np.zeros(a.shape, dtype=bool)
    return (a[:, :, None] == b[:, None, :]).any(axis=2) & (a != PAD)


def _count(a: np.ndarray) -> np.ndarray:
    return (a != PAD).sum(axis=1)


def _same(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Rows equal as ordered lists (widths may differ)."""
    w = max(a.shape[1], b.shape[1])
    return (pad_to(a, w) == pad_to(b, w)).all(axis=1)


def _rows(mat: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``mat[rows]`` with PAD rows where ``rows`` is -1."""
    out = np.full((len(rows), mat.shape[1]), PAD, dtype=np.int32)
    ok = rows >= 0
    out[ok] = mat[rows[ok]]
    return out


def _lookup(keys: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Position of each query in the sorted ``keys``, or -1."""
    if not len(keys):
        return np.full(len(query), -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
    return np.where(keys[pos] == query, pos, -1).astype(np.int64)


def _keys(local: Sequence[str], tidx: np.ndarray, partition: np.ndarray, index: dict[str, int]) -> np.ndarray:
    remap = np.fromiter((index[t] for t in local), dtype=np.int64, count=len(local))
    if not len(tidx):
        return np.zeros(0, dtype=np.int64)
    return (remap[np.asarray(tidx, dtype=np.int64)] << 32) | np.asarray(partition, dtype=np.int64)


# ---- classification --------------------------------------------------------------------------------------


def classify(plan: RawAssignment | None, meta: PlanMeta | None, state: ClusterState, status: ClusterStatus | None,
             *, plan_source: str = "PLAN", current_source: str = "CURRENT") -> Progress:
    """Where each partition of ``plan`` (the plan file as read; None for an empty plan) stands in ``state`` (a
    later dump, with its describe ``status`` when it has one), against the sidecar ``meta`` (None: unknown)."""
    if plan is not None:
        ptopics, ptidx, ppart, preps = canonical(plan.topic_names, plan.partition, plan.replicas)
    else:
        ptopics, ptidx, ppart, preps = (), np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros((0, 1), np.int32)
    preps = np.asarray(preps, dtype=np.int32)
    vocab = sorted(set(ptopics) | set(state.topics) | (set(meta.topics) if meta is not None else set()))
    index = {t: i for i, t in enumerate(vocab)}
    skeys = _keys(state.topics, state.topic, state.partition, index)
    pkeys = _keys(ptopics, ptidx, ppart, index)
    row = _lookup(skeys, pkeys)
    cur = _rows(state.replicas, row)
    new = preps
    n = len(pkeys)
    if status is not None:
        running = np.where(row >= 0, status.in_flight[np.maximum(row, 0)], False) if n else np.zeros(0, bool)
        target = _rows(status.target_replicas(state), row)
        adding = _rows(status.adding, row)
    else:
        running = np.zeros(n, dtype=bool)
        target, adding = cur, np.full((n, 1), PAD, dtype=np.int32)
    gone = row < 0
    code = np.full(n, NOT_STARTED, dtype=np.int8)
    union = np.zeros(n, dtype=bool)
    settled = np.where(_isin(cur, adding), PAD, cur)  # a running reassignment's new copies are not done yet
    todo = np.where(_isin(new, settled), PAD, new)
    remaining = _count(todo).astype(np.int64)
    planned = np.ones(n, dtype=bool)
    old = None
    ekeys = np.zeros(0, dtype=np.int64)
    new_partitions = 0
    if meta is not None:
        mkeys = _keys(meta.topics, meta.topic, meta.partition, index)
        mrow = _lookup(mkeys, pkeys)
        if (mrow < 0).any():
            i = int(np.flatnonzero(mrow < 0)[0])
            raise InputError(meta.source, "assignment", f"does not hold a partition {plan_source} lists (the sidecar "
                             "belongs to another plan)", f"{vocab[pkeys[i] >> 32]}-{int(pkeys[i] & 0xFFFFFFFF)}")
        old = _rows(meta.replicas, mrow)
        planned = ~_same(old, new)
        code = _classify_known(old, new, cur, target, running, gone)
        n_old, n_new, n_cur = _count(old), _count(new), _count(cur)
        both = _isin(old, new).sum(axis=1)
        union = (code == IN_FLIGHT) & ~running & (n_cur == n_old + n_new - both) & (n_cur > n_new)
        copies = (n_new - both).astype(np.int64)
        # partitions the plan leaves alone (not listed, or listed with their old list)
        alone = np.ones(len(mkeys), dtype=bool)
        alone[mrow[planned]] = False
        arow = np.flatnonzero(alone)
        srow = _lookup(skeys, mkeys[arow])
        a_old = meta.replicas[arow]
        a_cur = _rows(state.replicas, srow)
        same = _same(a_cur, a_old)
        if status is not None:
            a_run = np.where(srow >= 0, status.in_flight[np.maximum(srow, 0)], False)
            a_tgt = _rows(status.target_replicas(state), srow)
            same = np.where(a_run, _same(a_tgt, a_old), same)
        else:  # Kafka's union while moving toward the recorded list: the recorded list first, then the leaving ones
            w = max(a_old.shape[1], a_cur.shape[1])
            po, pc = pad_to(a_old, w), pad_to(a_cur, w)
            same |= ((po == PAD) | (po == pc)).all(axis=1) & (_count(a_cur) > _count(a_old))
        changed = (srow < 0) | ~same
        ekeys = mkeys[arow[changed]]
        new_partitions = int((_lookup(mkeys, skeys) < 0).sum())
        keep = planned
    else:
        done = _same(cur, new) & ~running
        away = ((adding != PAD) & ~_isin(adding, new)).any(axis=1)  # adds a broker the plan does not place there
        code = np.where(done, DONE, NOT_STARTED).astype(np.int8)
        code[running & ~away] = IN_FLIGHT
        code[(running & away) | gone] = DIVERGED
        copies = np.where(code == DONE, 0, remaining).astype(np.int64)
        keep = planned
    todo[(code == DONE) | (code == DIVERGED)] = PAD
    size = np.where(row >= 0, state.size[np.maximum(row, 0)], -1) if n else np.zeros(0, np.int64)
    sender = np.where(cur[:, 0] != PAD, cur[:, 0], new[:, 0]).astype(np.int64) if n else np.zeros(0, np.int64)
    k = np.flatnonzero(keep)
    topic = (pkeys[k] >> 32).astype(np.int32)
    return Progress(
        plan_source=plan_source, current_source=current_source, meta=meta, state=state, names=tuple(vocab),
        topic=topic, partition=(pkeys[k] & 0xFFFFFFFF).astype(np.int32), row=row[k], code=code[k],
        running=running[k], union=union[k], old=None if old is None else old[k], new=new[k], copies=copies[k],
        todo=todo[k], sender=sender[k], size=size[k],
        elsewhere_topic=(ekeys >> 32).astype(np.int32), elsewhere_partition=(ekeys & 0xFFFFFFFF).astype(np.int32),
        new_partitions=new_partitions)


def _classify_known(old: np.ndarray, new: np.ndarray, cur: np.ndarray, target: np.ndarray, running: np.ndarray,
                    gone: np.ndarray) -> np.ndarray:
    """The state code of each partition from its old, planned and current lists (and a running reassignment's
    target): the rules in the module docstring, vectorized."""
    n_old, n_new = _count(old), _count(new)
    o_in_n = _isin(old, new)  # O ∩ N, as a mask over O

    def between(c: np.ndarray) -> np.ndarray:
        """c within O ∪ N, holding O ∩ N, and neither O's nor N's brokers."""
        n_c = _count(c)
        c_in_o, c_in_n = _isin(c, old), _isin(c, new)
        within = ((c == PAD) | c_in_o | c_in_n).all(axis=1)
        holds = (~o_in_n | _isin(old, c)).all(axis=1)
        set_o = ((c == PAD) | c_in_o).all(axis=1) & (n_c == n_old)
        set_n = ((c == PAD) | c_in_n).all(axis=1) & (n_c == n_new)
        return within & holds & ~set_o & ~set_n

    code = np.full(len(old), DIVERGED, dtype=np.int8)
    idle = ~running & ~gone
    code[idle & between(cur)] = IN_FLIGHT
    code[idle & _same(cur, old)] = NOT_STARTED
    code[idle & _same(cur, new)] = DONE
    cur_within = ((cur == PAD) | _isin(cur, old) | _isin(cur, new)).all(axis=1)
    toward = _same(target, new) | between(target)
    code[running & ~gone & cur_within & toward] = IN_FLIGHT
    return code


# ---- entry points ----------------------------------------------------------------------------------------


def track(plan_path: str | os.PathLike, state: ClusterState, status: ClusterStatus | None = None, *,
          current_source: str = "CURRENT") -> Progress:
    """Read the plan at ``plan_path`` and its sidecar (when there is one) and classify against ``state``."""
    from .load import read_text

    source = str(plan_path)
    raw = read_plan_raw(read_text(source), source)
    meta = None
    side = find_sidecar(source)
    if side is not None:
        from .planmeta import plan_text_sha256

        sha = plan_sha256(raw) if raw is not None else plan_text_sha256('{"partitions":[]}', source)
        meta = read_sidecar(side, sha, source)
    return classify(raw, meta, state, status, plan_source=source, current_source=current_source)


def check_fresh(plan_path: str | os.PathLike, state: ClusterState, status: ClusterStatus | None = None, *,
                current_source: str = "CURRENT", force: bool = False) -> list[str]:
    """Refuse (``StalePlanError``, one line) a plan that no longer matches ``state`` unless ``force``; the notes
    to show (no sidecar: not checked; new partitions; forced past staleness)."""
    prog = track(plan_path, state, status, current_source=current_source)
    return fresh_notes(prog, force)


def fresh_notes(prog: Progress, force: bool) -> list[str]:
    """``check_fresh`` on a classified plan."""
    if prog.stale and not force:
        raise prog.stale_error()
    notes = prog.notes()
    if prog.stale:
        notes.append(f"{prog.plan_source}: {prog.stale_message()} (forced)")
    return notes


@dataclass(frozen=True, eq=False)
class Resumed:
    """What ``plan`` plans from when resuming: the input (state, pinned partitions, notes) and the request."""

    input: PlanInput
    request: PlanRequest
    progress: Progress


def resume_input(plan_path: str | os.PathLike, state: ClusterState, status: ClusterStatus | None,
                 request: PlanRequest | None = None, *, current_source: str = "CURRENT", move_unhealthy: bool = False,
                 names: dict[str, str] | None = None) -> Resumed:
    """Resume the plan at ``plan_path`` from ``state`` (a later dump): what is done stays where it is (pinned),
    reassignments running now are left to finish (pinned at their target; a JSON dump's union of old and new at the
    planned list), and everything else is planned again from the dump. The request is the sidecar's unless
    ``request`` differs from the defaults (then ``request``). Unhealthy and Confluent-placed partitions are held as
    ``plan_input`` holds them."""
    prog = track(plan_path, state, status, current_source=current_source)
    given = request if request is not None else PlanRequest()
    req = given
    notes: list[str] = []
    if prog.meta is not None and same_request(given, PlanRequest()):
        req = prog.meta.request
    elif prog.meta is not None and not same_request(given, prog.meta.request):
        notes.append(f"the request given replaces the one {prog.plan_source} was made with")
    reps = state.replicas
    pinned = np.zeros(state.num_partitions, dtype=bool)
    if status is not None:
        flight = status.in_flight
        if flight.any():
            reps = np.where(flight[:, None], status.target_replicas(state), reps)
            pinned |= flight
        quiet = replace(status, adding=np.full_like(status.adding, PAD), removing=np.full_like(status.removing, PAD),
                        under_replicated=status.under_replicated & ~flight)
    else:
        quiet = None
    rows = prog.row
    union = rows[prog.union]
    if len(union):
        w = max(reps.shape[1], prog.new.shape[1])
        reps = pad_to(reps, w)
        reps[union] = pad_to(prog.new[prog.union], w)
    done = rows[prog.code == DONE]
    pinned[done] = True
    pinned[union] = True
    base = plan_input(state.with_replicas(reps), quiet, current_source, move_unhealthy=move_unhealthy, names=names)
    counts = prog.counts()
    running = int(status.in_flight.sum()) if status is not None else 0
    again = counts["not_started"] + counts["diverged"] + int(((prog.code == IN_FLIGHT) & ~prog.running & ~prog.union).sum())
    notes.insert(0, f"resumed {prog.plan_source}: {counts['done']} done partitions kept where they are, "
                    f"{running + len(union)} in flight left to finish, {again} planned again from {current_source} "
                    f"({counts['not_started']} not started, {counts['diverged']} diverged)")
    notes += [n for n in prog.notes() if "no sidecar" in n]
    return Resumed(PlanInput(base.state, base.pinned | pinned, tuple(notes) + base.notes), req, prog)
