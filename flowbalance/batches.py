"""Splits a planned reassignment into ordered batches for ``kafka-reassign-partitions``.

A partition's move from its current list O to its planned list N copies data to every broker of N−O
(incoming) and drops it from every broker of O−N (outgoing). A *step* is one such change of one partition;
each incoming or outgoing broker of a step *takes part* in it once. A batch respects the limits when

* no broker takes part in more than ``max_moves_per_broker`` steps, and
* the bytes copied (partition size × incoming replicas of the step) stay within ``max_bytes_per_batch``;
  a step larger than that on its own gets a batch of its own, which takes nothing else;

and the steps of one partition go into strictly increasing batches. First the batches are filled first-fit:
the steps in the chosen order (largest partitions first by default; the steps of one partition one after the
other), each into the earliest batch, after the batch of the partition's previous step, where it fits. When
that gives more batches than the lower bound (:func:`flowbalance.batch_rounds.lower_bound`: the busiest
broker's steps over the limit, the bytes over the limit, the longest partition), the fewest batches are
searched for (:func:`flowbalance.batch_rounds.fewest_rounds`: first fit in other orders, then emptying batches
and repairing by tabu search, exact by CP-SAT on small problems), and taken only when they are fewer; those
batches are put in order by the step of the chosen order each holds first, each partition's steps still in
increasing batches. ``fewest=False`` keeps first fit. The result says the bound, whether it is met, and whether
the count is proven the least.

Partitions that only change the order of their replicas copy nothing: they go into the first batch and count
against neither limit. With ``one_replica_per_partition`` a move with several incoming replicas is split into
steps that each add one: an outgoing broker is replaced in place by an incoming one (list positions kept), or
the incoming one is appended when the replication factor grows; the last step writes exactly the planned list,
so removals when the replication factor shrinks happen there.

Applying the batches in order to the current assignment gives exactly the planned one. Everything is
deterministic. The first-fit loop is plain Python over the steps (not over steps × batches): a union-find
per broker skips the batches where that broker is already full, and a vectorized scan skips batches without
room for the bytes. Reading the plan, building the steps, the bound and the per-batch figures are vectorized.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field, replace
from typing import Iterator

import numpy as np

from .batch_rounds import RoundBound, fewest_rounds, first_fit, lower_bound
from .errors import InputError, PlanningError
from .dirs import current_first, subset
from .model import PAD, ClusterState, trim_padding
from .planfile import pad_to

ORDERS = ("largest", "smallest", "as-is")
MAX_LISTED_WARNINGS = 10
SOURCE = "split_plan"  # the source of its option errors; the place is the parameter's name


# ---- the result -------------------------------------------------------------------------------------------


@dataclass
class Batch:
    """One batch: the partitions it changes (rows of the state, ascending) and their lists after it."""

    rows: np.ndarray  # int64 [n], rows of the current state, ascending
    replicas: np.ndarray  # int32 [n, W]: each row's replica list once this batch is done (PAD padded)
    steps: int  # rows whose replica set changes (the others only reorder)
    reorder_only: int
    copies: int  # incoming replicas
    bytes: int  # bytes copied (unknown sizes count 0)
    max_participation: int  # the most steps any one broker takes part in
    peak_broker_bytes: int  # max over brokers of max(bytes received, bytes sent)
    oversized: bool  # a single step above max_bytes_per_batch, alone in its batch
    finished: int  # rows that reach their planned list in this batch
    intra: bool = False  # only replicas moving between log directories of their brokers (JBOD; no network copy)

    @property
    def partitions(self) -> int:
        return len(self.rows)


@dataclass
class Batches:
    """The ordered batches of a plan, with what they change in total."""

    current: ClusterState
    final: ClusterState
    batches: list[Batch]
    changed_rows: np.ndarray  # rows whose list differs between current and final
    leader_changed_rows: np.ndarray  # rows whose first replica (preferred leader) differs
    reorder_only: int
    copies: int
    bytes: int
    sizes_known: bool  # at least one partition has a known size
    unknown_sizes: int  # changed partitions that copy data but have no size
    warnings: list[str] = field(default_factory=list)
    bound: RoundBound | None = None  # no split of these steps within the limits has fewer batches
    proven: bool = True  # no split has fewer batches than this one (the bound is met, or an exact search said so)
    method: str = "first fit"  # how the batches were found (see flowbalance.batch_rounds)

    @property
    def bound_met(self) -> bool:
        """The batches between brokers are as few as the lower bound (intra-broker batches are apart)."""
        return self.bound is not None and len(self.batches) - self.intra_batches <= self.bound.batches

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self) -> Iterator[Batch]:
        return iter(self.batches)

    def batch_state(self, i: int) -> ClusterState:
        """Only the partitions batch ``i`` changes, with their lists after it (what its reassignment JSON holds):
        in a batch between brokers a staying replica keeps its current log directory; an intra-broker batch
        moves it to the planned one."""
        b = self.batches[i]
        state = _rows_state(self.final, b.rows, b.replicas)
        if b.intra or self.final.dirs is None:
            return state
        return replace(state, dirs=subset(current_first(self.current.dirs, self.final.dirs), b.rows))

    @property
    def intra_batches(self) -> int:
        """Batches that only move replicas between log directories of their brokers (after the others)."""
        return sum(1 for b in self.batches if b.intra)

    def rollback_state(self) -> ClusterState:
        """The changed partitions with their current lists (the rollback file), in their current directories."""
        rows = self.changed_rows
        return replace(_rows_state(self.final, rows, self.current.replicas[rows]), dirs=subset(self.current.dirs, rows))

    def apply(self, replicas: np.ndarray, i: int) -> np.ndarray:
        """``replicas`` (a full matrix, rows of the state) with batch ``i`` applied; a new, possibly wider matrix."""
        b = self.batches[i]
        width = max(replicas.shape[1], b.replicas.shape[1])
        out = pad_to(replicas, width)
        out[b.rows] = pad_to(b.replicas, width)
        return out

    def replay(self) -> Iterator[np.ndarray]:
        """The full replica matrix after each batch in turn, starting from the current one."""
        reps = self.current.replicas
        for i in range(len(self.batches)):
            reps = self.apply(reps, i)
            yield reps

    def estimated_seconds(self, throttle: int | None) -> list[float | None]:
        """Per batch: the busiest broker's bytes (received or sent) over the throttle; None when unknown."""
        if not throttle or not self.sizes_known:
            return [None] * len(self.batches)
        return [b.peak_broker_bytes / throttle for b in self.batches]


def _rows_state(final: ClusterState, rows: np.ndarray, reps: np.ndarray) -> ClusterState:
    rows = np.asarray(rows, dtype=np.int64)
    mat = np.asarray(reps, dtype=np.int32)
    if mat.ndim != 2 or mat.shape[1] == 0:
        mat = np.full((len(rows), 1), PAD, dtype=np.int32)
    return replace(final, topic=final.topic[rows], partition=final.partition[rows], replicas=trim_padding(mat),
                   size=final.size[rows], dirs=subset(final.dirs, rows))


# ---- options ----------------------------------------------------------------------------------------------


def check_options(max_moves_per_broker: int | None, max_bytes_per_batch: int | None, order: str) -> None:
    """One-line InputErrors ``split_plan: PARAMETER: ...`` for limits below 1 and an unknown order (the command
    line shows them under its flags)."""
    if max_moves_per_broker is not None and (not _is_int(max_moves_per_broker) or max_moves_per_broker < 1):
        raise InputError(SOURCE, "max_moves_per_broker", "must be at least 1", max_moves_per_broker)
    if max_bytes_per_batch is not None and (not _is_int(max_bytes_per_batch) or max_bytes_per_batch < 1):
        raise InputError(SOURCE, "max_bytes_per_batch", "must be at least 1", max_bytes_per_batch)
    if order not in ORDERS:
        raise InputError(SOURCE, "order", f"unknown order (choose from {', '.join(ORDERS)})", order)


def _is_int(x: object) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


# ---- steps ------------------------------------------------------------------------------------------------


@dataclass
class _Steps:
    row: np.ndarray  # int64 [S]: index into the changed rows
    k: np.ndarray  # int64 [S]: step number within its partition (0, 1, ...)
    last: np.ndarray  # bool [S]: the step writes the planned list
    lists: np.ndarray  # int32 [S, W]: the list after the step
    n_in: np.ndarray  # int64 [S]: incoming replicas
    sender: np.ndarray  # int64 [S]: dense index of the preferred leader before the step (the copy source)
    in_step: np.ndarray  # int64 [E]: step of each incoming (step, broker) pair
    in_broker: np.ndarray  # int64 [E]
    out_step: np.ndarray  # int64 [F]: step of each outgoing (step, broker) pair
    out_broker: np.ndarray  # int64 [F]


def _in_other(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """mask[r, j]: a[r, j] is a broker (not PAD) that is not in row r of b."""
    present = (a[:, :, None] == b[:, None, :]).any(axis=2)
    return (a != PAD) & ~present


def _make_steps(old: np.ndarray, new: np.ndarray, dense, one_replica: bool) -> tuple[_Steps, np.ndarray]:
    """Steps of the changed rows (old → new, both [n, W]); also each row's reorder-only flag."""
    n, width = old.shape
    inc = _in_other(new, old)
    out = _in_other(old, new)
    n_in = inc.sum(axis=1)
    reorder = (n_in == 0) & (out.sum(axis=1) == 0)
    split = (n_in >= 2) if one_replica else np.zeros(n, dtype=bool)
    single = np.flatnonzero(~split)

    # one step per row that is not split: old -> new
    s_rows = [single]
    s_k = [np.zeros(len(single), dtype=np.int64)]
    s_last = [np.ones(len(single), dtype=bool)]
    s_lists = [new[single]]
    s_in = [n_in[single].astype(np.int64)]
    s_sender = [old[single, 0].astype(np.int64)]
    ir, ic = np.nonzero(inc[single])
    orr, oc = np.nonzero(out[single])
    in_step = [ir.astype(np.int64)]
    in_b = [new[single][ir, ic].astype(np.int64)]
    out_step = [orr.astype(np.int64)]
    out_b = [old[single][orr, oc].astype(np.int64)]

    multi = np.flatnonzero(split)
    if len(multi):
        # one incoming replica per step, vectorized over the split rows, step j of every row at once
        mo, mn = old[multi], new[multi]
        a_in = n_in[multi]
        x_out = out[multi].sum(axis=1)
        rf_old = (mo != PAD).sum(axis=1)
        inc_ids = np.take_along_axis(mn, np.argsort(~inc[multi], axis=1, kind="stable"), axis=1)  # I, new order
        out_pos = np.argsort(~out[multi], axis=1, kind="stable")  # positions in old of X, old order
        cur = mo.copy()
        base = len(single)
        for j in range(int(a_in.max())):
            act = np.flatnonzero(a_in > j)
            fin = a_in[act] == j + 1
            prev = cur[act]
            ids_j = base + np.arange(len(act), dtype=np.int64)
            base += len(act)
            # not the last step: replace the next outgoing broker in place, or append when RF grows
            nl = act[~fin]
            rep = j < x_out[nl]
            col = np.where(rep, out_pos[nl, j], rf_old[nl] + j - x_out[nl])
            gone = cur[nl, col]
            cur[nl, col] = inc_ids[nl, j]
            lists = np.empty((len(act), width), dtype=np.int32)
            lists[~fin] = cur[nl]
            lists[fin] = mn[act[fin]]
            s_rows.append(multi[act].astype(np.int64))
            s_k.append(np.full(len(act), j, dtype=np.int64))
            s_last.append(fin)
            s_lists.append(lists)
            s_in.append(np.ones(len(act), dtype=np.int64))
            s_sender.append(prev[:, 0].astype(np.int64))
            in_step.append(ids_j)
            in_b.append(inc_ids[act, j].astype(np.int64))
            # outgoing: the replaced broker; in the last step, whatever is left that the plan drops
            out_step.append(ids_j[~fin][rep])
            out_b.append(gone[rep].astype(np.int64))
            lr, lc = np.nonzero(_in_other(prev[fin], mn[act[fin]]))
            out_step.append(ids_j[fin][lr])
            out_b.append(prev[fin][lr, lc].astype(np.int64))

    steps = _Steps(
        row=np.concatenate(s_rows).astype(np.int64),
        k=np.concatenate(s_k),
        last=np.concatenate(s_last),
        lists=np.concatenate(s_lists).astype(np.int32),
        n_in=np.concatenate(s_in),
        sender=dense(np.concatenate(s_sender)),
        in_step=np.concatenate(in_step),
        in_broker=dense(np.concatenate(in_b)),
        out_step=np.concatenate(out_step),
        out_broker=dense(np.concatenate(out_b)),
    )
    return steps, reorder


# ---- split_plan -------------------------------------------------------------------------------------------


def split_plan(
    current: ClusterState,
    final: ClusterState,
    *,
    max_moves_per_broker: int | None = None,
    max_bytes_per_batch: int | None = None,
    one_replica_per_partition: bool = False,
    order: str = "largest",
    rank: np.ndarray | None = None,
    fewest: bool = True,
) -> Batches:
    """Ordered batches that take ``current`` to ``final`` (same partitions, same row order).

    ``order``: ``largest`` / ``smallest`` partition size first (ties by topic, partition), or ``as-is``: by
    ``rank`` (for example the position in the plan file, see :class:`PlanFile`; row order when None).
    ``fewest``: look for fewer batches than first fit gives when it is above the lower bound (False: first fit).
    """
    check_options(max_moves_per_broker, max_bytes_per_batch, order)
    if current.num_partitions != final.num_partitions or not (
        np.array_equal(current.topic, final.topic) and np.array_equal(current.partition, final.partition)
    ):
        raise ValueError("current and final must hold the same partitions")
    K = None if max_moves_per_broker is None else int(max_moves_per_broker)
    B = None if max_bytes_per_batch is None else int(max_bytes_per_batch)
    width = max(current.replicas.shape[1], final.replicas.shape[1])
    cur = pad_to(current.replicas, width)
    fin = pad_to(final.replicas, width)
    changed = np.flatnonzero((cur != fin).any(axis=1))
    leader_changed = np.flatnonzero(cur[:, 0] != fin[:, 0])
    size = np.maximum(current.size, 0).astype(np.int64)
    sizes_known = current.has_sizes

    ids = np.unique(np.concatenate([cur[changed].ravel(), fin[changed].ravel()]))
    ids = ids[ids != PAD]

    def dense(x: np.ndarray) -> np.ndarray:
        return np.searchsorted(ids, x).astype(np.int64)

    old, new = cur[changed], fin[changed]
    steps, reorder = _make_steps(old, new, dense, one_replica_per_partition)
    n_steps = len(steps.row)
    step_size = size[changed][steps.row]
    step_bytes = step_size * steps.n_in
    moving = ~reorder[steps.row]

    # the order steps are considered: partitions by the chosen key, the steps of one partition in turn
    rows_of = changed[steps.row]
    if order == "largest":
        key = -size[rows_of]
    elif order == "smallest":
        key = size[rows_of]
    else:
        key = (np.arange(current.num_partitions, dtype=np.int64) if rank is None else np.asarray(rank))[rows_of]
    seq = np.lexsort((steps.k, rows_of, key))
    seq = seq[moving[seq]]

    pstep = np.concatenate([steps.in_step, steps.out_step])
    pb = np.concatenate([steps.in_broker, steps.out_broker])
    mv = np.flatnonzero(moving)
    inv = np.full(n_steps, -1, dtype=np.int64)
    inv[mv] = np.arange(len(mv), dtype=np.int64)
    keep = moving[pstep]
    bound = lower_bound(pb[keep], inv[pstep[keep]], steps.row[mv], step_bytes[mv], ids, K, B, len(changed) > 0)
    method, proven = "first fit", True
    if K is None and B is None:
        method = "no limits"  # each partition's steps in batches 1, 2, ...: the longest partition is the bound
        batch = steps.k.copy()
        closed = [False] * (int(batch.max()) + 1 if n_steps else 0)
    else:
        by = np.argsort(pstep, kind="stable")
        offs = np.zeros(n_steps + 1, dtype=np.int64)
        np.cumsum(np.bincount(pstep, minlength=n_steps), out=offs[1:])
        got, closed = first_fit(seq.tolist(), steps.k.tolist(), pb[by].tolist(), offs.tolist(),
                                step_bytes.tolist(), n_steps, len(ids), K, B)
        batch = np.asarray(got, dtype=np.int64)
        if n_steps and not len(closed):
            closed = [False]
        proven = len(closed) <= bound.batches
        if fewest and not proven:
            better = _fewest(steps, seq, moving, step_bytes, pb[by], offs, len(ids), K, B, bound, batch, closed)
            if better is not None and len(better[1]) < len(closed):
                batch, closed, method, proven = better
            elif better is not None:
                proven = better[3] and len(better[1]) == len(closed)
        batch[~moving] = 0  # reorder-only rows go into the first batch
    nb = len(closed)
    batch_list = _assemble(changed, steps, batch, nb, reorder, step_bytes, closed, len(ids))
    batch_list += _intra_batches(current, final, fin, changed, K)

    warnings: list[str] = []
    copying = _in_other(new, old).any(axis=1)
    unknown = int(((current.size[changed] < 0) & copying).sum())
    if B is not None and not sizes_known and n_steps:
        warnings.append("max_bytes_per_batch: partition sizes are unknown (the current state has none), so every "
                        "partition counts as 0 bytes and the byte limit does not split the plan")
    elif sizes_known and unknown:
        warnings.append(f"{unknown} of {int(copying.sum())} partitions that copy data have no size: they count as 0 bytes "
                        "(bytes and time estimates are low)")
    over = np.flatnonzero(step_bytes > B) if B is not None else np.empty(0, dtype=np.int64)
    if len(over):
        over = over[np.lexsort((steps.k[over], rows_of[over], batch[over]))]
        for s in over[:MAX_LISTED_WARNINGS].tolist():
            r = int(rows_of[s])
            what = f"{current.topics[current.topic[r]]}-{int(current.partition[r])}"
            if one_replica_per_partition and (steps.row == steps.row[s]).sum() > 1:
                what += f" (step {int(steps.k[s]) + 1})"
            warnings.append(f"batch {int(batch[s]) + 1}: {what} copies {int(step_bytes[s])} bytes, more than "
                            f"max_bytes_per_batch {B}: it is in a batch of its own")
        if len(over) > MAX_LISTED_WARNINGS:
            warnings.append(f"... and {len(over) - MAX_LISTED_WARNINGS} more steps above max_bytes_per_batch, "
                            "each in a batch of its own")

    return Batches(
        current=current, final=final, batches=batch_list, changed_rows=changed, leader_changed_rows=leader_changed,
        reorder_only=int(reorder.sum()), copies=int(steps.n_in.sum()), bytes=int(step_bytes.sum()),
        sizes_known=sizes_known, unknown_sizes=unknown, warnings=warnings, bound=bound, proven=proven, method=method,
    )


def _intra_batches(current: ClusterState, final: ClusterState, fin: np.ndarray, changed: np.ndarray,
                   K: int | None) -> list[Batch]:
    """Batches of the partitions whose lists stay but whose replicas change log directory (JBOD), after the
    others: Kafka copies them on the broker's own disks under its own throttle
    (``--replica-alter-log-dirs-throttle``). At most ``K`` of them per broker per batch (first fit, largest
    first)."""
    from .dirs import dir_changed_rows, replica_keys

    rows = dir_changed_rows(current, final)
    if current.dirs is None:  # not known: the rows a plan names directories for, whose lists stay
        rows = np.setdiff1d(rows, changed)
    if not len(rows):
        return []
    _, r, ids = replica_keys(final)
    pick = np.isin(r, rows)
    moved_at = final.dirs.lookup(r[pick], ids[pick])
    before_at = current.dirs.lookup(r[pick], ids[pick]) if current.dirs is not None else np.full(pick.sum(), -1)
    brokers_of: dict[int, list[int]] = {}
    known = current.dirs is not None
    for row, b, f, c in zip(r[pick].tolist(), ids[pick].tolist(), moved_at.tolist(), before_at.tolist()):
        if f >= 0 and (not known or (c >= 0 and final.dirs.dir_path[f] != current.dirs.dir_path[c])):
            brokers_of.setdefault(row, []).append(b)
    size = np.maximum(current.size, 0)
    order = sorted(brokers_of, key=lambda row: (-int(size[row]), row))
    groups: list[list[int]] = []
    loads: list[dict[int, int]] = []
    for row in order:
        for g, load in zip(groups, loads):
            if K is None or all(load.get(b, 0) < K for b in brokers_of[row]):
                break
        else:
            groups.append([])
            loads.append({})
            g, load = groups[-1], loads[-1]
        g.append(row)
        for b in brokers_of[row]:
            load[b] = load.get(b, 0) + 1
    out = []
    for g, load in zip(groups, loads):
        rs = np.sort(np.asarray(g, dtype=np.int64))
        out.append(Batch(rows=rs, replicas=fin[rs], steps=0, reorder_only=0, copies=0,
                         bytes=int(sum(int(size[x]) * len(brokers_of[x]) for x in g)),
                         max_participation=max(load.values()), peak_broker_bytes=0, oversized=False,
                         finished=len(rs), intra=True))
    return out


def _fewest(steps: _Steps, seq: np.ndarray, moving: np.ndarray, step_bytes: np.ndarray, parts: np.ndarray,
            offs: np.ndarray, n_brokers: int, K: int | None, B: int | None, bound: RoundBound,
            ff_batch: np.ndarray, ff_closed: list[bool]) -> tuple[np.ndarray, list[bool], str, bool] | None:
    """The moving steps into the fewest batches (flowbalance.batch_rounds.fewest_rounds) for the steps that are
    not alone, then each alone step in a batch of its own; the batches put in order: each partition's steps in
    increasing batches, and otherwise the batch holding the step that comes first in ``seq`` first. Returns the
    batch of every step (reorder-only ones unset), closed flags, the method, whether the count is proven least."""
    n_steps = len(steps.row)
    alone = moving & (step_bytes > B) if B is not None else np.zeros(n_steps, dtype=bool)
    normal = np.flatnonzero(moving & ~alone)
    pos = np.full(n_steps, n_steps, dtype=np.int64)
    pos[seq] = np.arange(len(seq), dtype=np.int64)
    # the normal steps renumbered, their brokers (CSR) and their place among the partition's normal steps
    lens = offs[normal + 1] - offs[normal]
    sub_offs = np.zeros(len(normal) + 1, dtype=np.int64)
    np.cumsum(lens, out=sub_offs[1:])
    take = np.repeat(offs[normal] - sub_offs[:-1], lens) + np.arange(int(sub_offs[-1]), dtype=np.int64)
    sub_parts = parts[take]
    chain = steps.row[normal]
    o = np.lexsort((steps.k[normal], chain))
    first = np.ones(len(o), dtype=bool)
    first[1:] = chain[o[1:]] != chain[o[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(o)), 0))
    kk = np.empty(len(o), dtype=np.int64)
    kk[o] = np.arange(len(o)) - start
    # first fit's batches without its closed ones: a valid schedule of the normal steps to start from
    open_at = np.cumsum(~np.asarray(ff_closed, dtype=bool)) - 1
    start = open_at[ff_batch[normal]] if len(normal) else None
    sched = fewest_rounds(sub_parts, sub_offs, step_bytes[normal], chain, kk, pos[normal], n_brokers, K, B,
                          bound.batches - bound.alone, start=start)
    total = sched.count + bound.alone
    # groups: the normal batches, then one per alone step; precedence along each partition's steps
    group = np.full(n_steps, -1, dtype=np.int64)
    group[normal] = sched.batch
    lone = np.flatnonzero(alone)
    group[lone] = sched.count + np.arange(len(lone), dtype=np.int64)
    mv = np.flatnonzero(moving)
    mv = mv[np.lexsort((steps.k[mv], steps.row[mv]))]
    link = steps.row[mv[1:]] == steps.row[mv[:-1]]
    src, dst = group[mv[:-1]][link], group[mv[1:]][link]
    key = np.full(total, n_steps, dtype=np.int64)
    np.minimum.at(key, group[mv], pos[mv])
    order = _topological(total, src, dst, key)
    where = np.empty(total, dtype=np.int64)
    where[order] = np.arange(total, dtype=np.int64)
    batch = np.zeros(n_steps, dtype=np.int64)
    batch[mv] = where[group[mv]]
    closed = [False] * total
    for g in range(sched.count, total):
        closed[int(where[g])] = True
    proven = sched.proven
    return batch, closed, sched.method, proven


def _topological(n: int, src: np.ndarray, dst: np.ndarray, key: np.ndarray) -> list[int]:
    """Nodes 0..n-1 in an order where every src comes before its dst (the edges form no cycle), the smallest
    key first among those ready (ties by node)."""
    pairs = np.unique(np.stack([src, dst], axis=1), axis=0) if len(src) else np.zeros((0, 2), dtype=np.int64)
    indeg = np.bincount(pairs[:, 1], minlength=n).tolist() if len(pairs) else [0] * n
    out: list[list[int]] = [[] for _ in range(n)]
    for a, b in pairs.tolist():
        out[a].append(b)
    keys = key.tolist()
    ready = [(keys[i], i) for i in range(n) if indeg[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for j in out[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                heapq.heappush(ready, (keys[j], j))
    if len(order) != n:
        raise BatchCheckError("batches: self-check failed, nothing written: the order of the batches has a cycle")
    return order


def _assemble(changed: np.ndarray, steps: _Steps, batch: np.ndarray, nb: int, reorder: np.ndarray,
              step_bytes: np.ndarray, closed: list[bool], n_brokers: int) -> list[Batch]:
    """Group the steps by batch and compute each batch's figures (vectorized)."""
    if nb == 0:
        return []
    srt = np.lexsort((steps.row, batch))
    bounds = np.searchsorted(batch[srt], np.arange(nb + 1))
    reo = reorder[steps.row].astype(np.int64)
    copies = _sum_by(batch, steps.n_in, nb)
    nbytes = _sum_by(batch, step_bytes, nb)
    n_reorder = _sum_by(batch, reo, nb)
    finished = _sum_by(batch, steps.last.astype(np.int64), nb)

    # participation: (batch, broker) pairs over incoming and outgoing brokers
    pstep = np.concatenate([steps.in_step, steps.out_step])
    pb = np.concatenate([steps.in_broker, steps.out_broker])
    width = max(n_brokers, 1)
    part = np.zeros(nb, dtype=np.int64)
    if len(pstep):
        keys, cnt = np.unique(batch[pstep] * width + pb, return_counts=True)
        np.maximum.at(part, keys // width, cnt)

    # traffic: received (incoming brokers) and sent (the preferred leader before the step, the copy source)
    size = step_bytes // np.maximum(steps.n_in, 1)
    rk = batch[steps.in_step] * width + steps.in_broker
    rv = size[steps.in_step]
    has = steps.n_in > 0
    sk = batch[has] * width + steps.sender[has]
    sv = step_bytes[has]
    peak = np.zeros(nb, dtype=np.int64)
    if len(rk) or len(sk):
        keys, inv = np.unique(np.concatenate([rk, sk]), return_inverse=True)
        inv = inv.ravel()
        recv = np.zeros(len(keys), dtype=np.int64)
        sent = np.zeros(len(keys), dtype=np.int64)
        np.add.at(recv, inv[: len(rk)], rv)
        np.add.at(sent, inv[len(rk):], sv)
        np.maximum.at(peak, keys // width, np.maximum(recv, sent))

    out = []
    for i in range(nb):
        sel = srt[bounds[i]:bounds[i + 1]]
        out.append(Batch(
            rows=changed[steps.row[sel]].astype(np.int64),
            replicas=steps.lists[sel],
            steps=int(len(sel) - n_reorder[i]),
            reorder_only=int(n_reorder[i]),
            copies=int(copies[i]),
            bytes=int(nbytes[i]),
            max_participation=int(part[i]),
            peak_broker_bytes=int(peak[i]),
            oversized=bool(closed[i]),
            finished=int(finished[i]),
        ))
    return out


def _sum_by(group: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    out = np.zeros(n, dtype=np.int64)
    np.add.at(out, group, np.asarray(values, dtype=np.int64))
    return out


# ---- self-check -------------------------------------------------------------------------------------------


class BatchCheckError(PlanningError):
    """The batches would not do exactly what the plan says (a bug, or a plan no batch can carry out safely).

    Raised before anything is written; the CLI shows it as one line, exit code 2."""


def verify_batches(res: Batches) -> None:
    """Check every batch file, and the rollback, as they will be written; raise BatchCheckError on the first fault.

    Independent of how the batches were made. The files hold each list without padding, so the lists are
    checked in that form. For every partition a batch lists: the replication factor stays between
    min(current, plan) and max(current, plan), where the plan's RF counts every entry the plan gives (a
    hole such as ``[-1, 4, 5]`` is not a smaller RF); every broker is known (CURRENT, the broker file, or
    added by the plan), one of the partition's current or planned brokers, never a broker marked removed
    unless the partition already has it; no broker twice; no partition twice in one batch. Applying the
    batches in order to the current lists must give the plan's lists exactly, and the rollback applied to
    those must give the current lists back.
    """
    cur_state, fin_state = res.current, res.final
    width = max(cur_state.replicas.shape[1], fin_state.replicas.shape[1],
                *(b.replicas.shape[1] for b in res.batches))
    cur = pad_to(cur_state.replicas, width)
    fin = pad_to(fin_state.replicas, width)
    cur_rf = (cur != PAD).sum(axis=1)
    plan_rf = _written_width(fin)
    lo, hi = np.minimum(cur_rf, plan_rf), np.maximum(cur_rf, plan_rf)
    known = np.union1d(cur_state.brokers.ids, fin_state.brokers.ids)
    removed = np.union1d(cur_state.brokers.ids[cur_state.brokers.removed], fin_state.brokers.ids[fin_state.brokers.removed])

    def fail(what: str, row: int, batch: str, got: np.ndarray | None = None) -> None:
        name = f"{cur_state.topics[cur_state.topic[row]]}-{int(cur_state.partition[row])}"
        shown = "" if got is None else f" ({[int(b) for b in got if b != PAD]})"
        raise BatchCheckError(f"batches: self-check failed, nothing written: {batch}: {name}{shown}: {what}")

    state = _compact(cur)
    for i in range(len(res.batches)):
        label = f"batch {i + 1}"
        part = res.batch_state(i)
        rows = np.asarray(res.batches[i].rows, dtype=np.int64)
        _check_names(part, cur_state, rows, label)
        if len(np.unique(rows)) != len(rows):
            raise BatchCheckError(f"batches: self-check failed, nothing written: {label}: a partition is listed twice")
        got = _compact(pad_to(part.replicas, width))
        _check_lists(got, rows, cur, fin, lo, hi, known, removed, lambda what, j: fail(what, int(rows[j]), label, got[j]))
        state[rows] = got
    off = np.flatnonzero((state != fin).any(axis=1))
    if len(off):
        r = int(off[0])
        fail(f"the batches end at this list, the plan gives {[int(b) for b in fin[r]]}", r, "after the last batch",
             state[r])
    back = res.rollback_state()
    rows = np.asarray(res.changed_rows, dtype=np.int64)
    _check_names(back, cur_state, rows, "rollback")
    state[rows] = _compact(pad_to(back.replicas, width))
    off = np.flatnonzero((state != cur).any(axis=1))
    if len(off):
        r = int(off[0])
        fail(f"the rollback leaves this list, the current one is {[int(b) for b in cur[r] if b != PAD]}", r,
             "rollback", state[r])


def _check_names(part: ClusterState, cur: ClusterState, rows: np.ndarray, label: str) -> None:
    """The file names the partitions of ``rows`` (same topic names and partition numbers as CURRENT)."""
    if len(part.partition) != len(rows):
        same = False
    elif part.topics is cur.topics or part.topics == cur.topics:
        same = np.array_equal(part.topic, cur.topic[rows]) and np.array_equal(part.partition, cur.partition[rows])
    else:  # other topic tables: compare the names
        same = ([part.topics[t] for t in part.topic.tolist()] == [cur.topics[t] for t in cur.topic[rows].tolist()]
                and np.array_equal(part.partition, cur.partition[rows]))
    if not same:
        raise BatchCheckError(f"batches: self-check failed, nothing written: {label}: "
                              "the file does not name the partitions it changes")


def _check_lists(got: np.ndarray, rows: np.ndarray, cur: np.ndarray, fin: np.ndarray, lo: np.ndarray,
                 hi: np.ndarray, known: np.ndarray, removed: np.ndarray, fail) -> None:
    """Per listed partition (vectorized): RF bounds, known brokers, each broker current or planned, not a
    removed broker it does not already have, no broker twice; ``fail(what, j)`` for the first fault."""
    present = got != PAD
    rf = present.sum(axis=1)
    in_cur = (got[:, :, None] == cur[rows][:, None, :]).any(axis=2)
    in_fin = (got[:, :, None] == fin[rows][:, None, :]).any(axis=2)
    srt = np.sort(np.where(present, got, np.iinfo(np.int32).min), axis=1)
    dup = ((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] != np.iinfo(np.int32).min)).any(axis=1)
    checks = [
        (rf == 0, lambda j: "no replica at all"),
        (rf < lo[rows], lambda j: f"{int(rf[j])} replicas, fewer than both the current list ({int((cur[rows[j]] != PAD).sum())}) "
                                  f"and the plan ({int(_written_width(fin[rows[j]][None])[0])}) have"),
        (rf > hi[rows], lambda j: f"{int(rf[j])} replicas, more than both the current list and the plan have"),
        ((present & ~np.isin(got, known)).any(axis=1), lambda j: "a broker that is neither in CURRENT, the broker "
                                                                 "file nor the plan"),
        ((present & ~in_cur & ~in_fin).any(axis=1), lambda j: "a broker that is neither a current nor a planned "
                                                              "replica of this partition"),
        ((present & ~in_cur & np.isin(got, removed)).any(axis=1), lambda j: "a new replica on a broker marked removed"),
        (dup, lambda j: "a broker twice"),
    ]
    for bad, what in checks:
        hit = np.flatnonzero(bad)
        if len(hit):
            fail(what(int(hit[0])), int(hit[0]))


def _compact(mat: np.ndarray) -> np.ndarray:
    """Each row's brokers moved to the front in order, padding after: the list as a file writes it."""
    order = np.argsort(mat == PAD, axis=1, kind="stable")
    return np.take_along_axis(mat, order, axis=1)


def _written_width(mat: np.ndarray) -> np.ndarray:
    """Entries each row gives up to its last broker (holes count): the RF a list in the plan file asks for."""
    present = mat != PAD
    last = mat.shape[1] - np.argmax(present[:, ::-1], axis=1)
    return np.where(present.any(axis=1), last, 0)


# ---- text -------------------------------------------------------------------------------------------------


def format_duration(seconds: float | None) -> str:
    """``~ 40 s``, ``~ 12 min``, ``~ 3 h 05 min``; ``unknown`` for None."""
    if seconds is None:
        return "unknown"
    if seconds < 59.5:
        return f"~ {max(1, round(seconds))} s" if seconds > 0 else "~ 0 s"
    minutes = int(math.floor(seconds / 60 + 0.5))
    if minutes < 60:
        return f"~ {minutes} min"
    return f"~ {minutes // 60} h {minutes % 60:02d} min"
