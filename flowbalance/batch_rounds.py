"""Schedules the steps of a reassignment into the fewest batches (rounds) that respect the per-broker and byte limits.

The problem (see :mod:`flowbalance.batches` for steps): each step makes every broker it names *take part* once;
in one batch no broker takes part in more than ``K`` steps and the steps copy at most ``B`` bytes; a step above
``B`` on its own gets a batch of its own (it is *alone*); the steps of one partition go into strictly increasing
batches (a *chain*). Colouring a multigraph's edges is the case K = 1 with two brokers per step, so the fewest
batches is NP-hard in general; what is done here:

* :func:`lower_bound`: no schedule has fewer batches than ``alone + max(⌈Δ / K⌉, max(⌈bytes / B⌉, steps above
  B/2), longest chain, clique)``, Δ the most steps one broker takes part in, bytes and steps those of the steps
  that are not alone (steps above B/2 cannot share a batch with one another), and with K = 1 a clique: steps no
  two of which can share a batch (each pair has a broker, the partition, or both being above B/2 in common;
  found greedily). Each term counts batches a set of steps needs on its own; the alone steps need batches that
  hold nothing else.
* :func:`first_fit`: the steps in a given order, each into the earliest batch after its chain predecessor's
  where it fits (the schedule ``batches`` made before it looked for the fewest; still its first candidate).
* :func:`fewest_rounds`: the steps that are not alone, starting from the best of first fit in the caller's
  order and in two orders that take the steps of the busiest brokers first. While that is above the bound: on
  small problems (steps x batches up to EXACT_CELLS) CP-SAT (one worker, a fixed seed, a deterministic time
  limit), hinted with it, looks for fewer and can prove the count the least; then a descent removes one batch
  at a time (the one with the fewest steps), moves its steps to the batches where they break the least and
  repairs the rest by tabu search (a step of an over-full broker, byte total or chain moved to the batch where
  the cost, UNIT per participation above K or chain link out of order plus the bytes above B, falls the most),
  within a budget of moves; a removal it cannot repair is undone and ends the descent. Everything is
  deterministic (a seeded generator, no clock) and every candidate is a complete valid schedule, so the count
  returned is never above first fit's.

:mod:`flowbalance.batches` then puts each alone step in a batch of its own and orders the batches.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np

SEED = 20250118
EXACT_CELLS = 10_000  # CP-SAT when steps x batches is at most this
EXACT_TIME = 2.0  # its deterministic time limit (about seconds)
BASE_MOVES = 20_000  # tabu search budget: this many moves plus MOVES_PER_STEP per step,
MOVES_PER_STEP = 4
MAX_WORK = 20_000_000  # and at most MAX_WORK / (batches + 200) moves: a move looks at every batch (a few seconds)
MAX_TABLE = 50_000_000  # no tabu search when brokers x batches (its table of counts, int32) is larger


# ---- the bound --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoundBound:
    """The fewest batches any schedule of the steps can have, and the terms it is the largest of."""

    batches: int  # the lower bound: alone + max(per_broker, per_bytes, longest, clique), at least 1 when anything changes
    alone: int  # steps above max_bytes_per_batch: each needs a batch of its own
    busiest: int  # the most steps one broker takes part in (steps not alone)
    busiest_broker: int | None  # that broker's id (the lowest of those with that many)
    per_broker: int | None  # ⌈busiest / K⌉; None without a per-broker limit
    bytes: int  # bytes copied by the steps that are not alone
    halves: int  # of those, steps above half of max_bytes_per_batch (no two share a batch)
    per_bytes: int | None  # max(⌈bytes / B⌉, halves); None without a byte limit
    longest: int  # the most steps of one partition (not alone): they need that many batches
    max_moves_per_broker: int | None = None  # the limits the bound is for
    max_bytes_per_batch: int | None = None
    clique: int | None = None  # K = 1: steps (not alone) no two of which can share a batch; None for K > 1


def lower_bound(parts: np.ndarray, part_step: np.ndarray, chain: np.ndarray, nbytes: np.ndarray,
                broker_ids: np.ndarray, K: int | None, B: int | None, any_change: bool) -> RoundBound:
    """The bound over the moving steps: ``parts[i]`` is a broker (dense) taking part in step ``part_step[i]``;
    ``chain[s]`` the partition (any integer id) of step s; ``nbytes[s]`` what it copies."""
    n = len(nbytes)
    alone = (nbytes > B) if B is not None else np.zeros(n, dtype=bool)
    rest = ~alone
    keep = rest[part_step] if len(part_step) else np.zeros(0, dtype=bool)
    deg = np.bincount(parts[keep], minlength=len(broker_ids)) if len(broker_ids) else np.zeros(0, dtype=np.int64)
    busiest = int(deg.max(initial=0))
    who = int(broker_ids[int(np.argmax(deg))]) if busiest else None
    per_broker = -(-busiest // K) if K is not None else None
    total = int(nbytes[rest].sum())
    halves = int((nbytes[rest] * 2 > B).sum()) if B is not None else 0
    per_bytes = max(-(-total // B), halves) if B is not None else None
    longest = int(np.unique(chain[rest], return_counts=True)[1].max(initial=0)) if rest.any() else 0
    n_alone = int(alone.sum())
    clique = _clique(parts[keep], part_step[keep], chain, nbytes, rest, deg, B) if K == 1 else None
    core = max(per_broker or 0, per_bytes or 0, longest, clique or 0)
    return RoundBound(batches=max(n_alone + core, 1 if any_change else 0), alone=n_alone, busiest=busiest,
                      busiest_broker=who, per_broker=per_broker, bytes=total, halves=halves, per_bytes=per_bytes,
                      longest=longest, max_moves_per_broker=K, max_bytes_per_batch=B, clique=clique)


CLIQUE_STARTS = 3  # the busiest brokers whose steps start a greedy clique each
CLIQUE_FILTER = 8  # candidates: steps with a key in common with each of this many first members


def _clique(parts: np.ndarray, part_step: np.ndarray, chain: np.ndarray, nbytes: np.ndarray, rest: np.ndarray,
            deg: np.ndarray, B: int | None) -> int:
    """K = 1: a set of steps (not alone) no two of which can share a batch, so as many batches. Two steps
    conflict when they have a *key* in common: a broker (K = 1), their partition (strictly increasing batches),
    or both copying more than B/2. Greedy, from each of the busiest brokers' steps (which pairwise share it):
    the steps that conflict with its first members, by their brokers' steps most first, each taken when it
    conflicts with every member so far (a bit per member: the OR of its keys' bits must be all of them)."""
    idx = np.flatnonzero(rest)
    if not len(idx):
        return 0
    n_b = len(deg)
    _, cid = np.unique(chain, return_inverse=True)
    # (step, key) pairs: brokers, then n_b + partition, then one key for the steps above B/2
    ks = [part_step, np.flatnonzero(rest)]
    kv = [parts, n_b + cid.ravel()[rest]]
    if B is not None:
        half = np.flatnonzero(rest & (nbytes * 2 > B))
        ks.append(half)
        kv.append(np.full(len(half), n_b + int(cid.max()) + 1, dtype=np.int64))
    key_step = np.concatenate(ks).astype(np.int64)
    key = np.concatenate(kv).astype(np.int64)
    o = np.lexsort((key_step, key))
    key_s, key_k = key_step[o], key[o]
    by_key = np.searchsorted(key_k, np.arange(int(key_k.max()) + 2))
    o2 = np.lexsort((key, key_step))
    step_keys = key[o2]
    step_at = np.searchsorted(key_step[o2], np.arange(len(nbytes) + 1))
    weight = np.zeros(len(nbytes), dtype=np.int64)
    np.add.at(weight, part_step, deg[parts])

    def keys_of(x: int) -> list[int]:
        return step_keys[step_at[x]:step_at[x + 1]].tolist()

    def neighbours(x: int) -> np.ndarray:
        return np.unique(np.concatenate([key_s[by_key[k]:by_key[k + 1]] for k in keys_of(x)]))

    best = 0
    starts = np.lexsort((np.arange(n_b), -deg))[:CLIQUE_STARTS]
    for v in [None] + [v for v in starts.tolist() if deg[v] > 0]:
        if v is None:  # no start: every step, heaviest first
            members, cand = [], idx
        else:
            members = key_s[by_key[v]:by_key[v + 1]].tolist()
            cand = None
            for c in members[:CLIQUE_FILTER]:
                nb = neighbours(c)
                cand = nb if cand is None else np.intersect1d(cand, nb, assume_unique=True)
            cand = cand[~np.isin(cand, members)]
        cand = cand[np.lexsort((cand, -weight[cand]))]
        mask: dict[int, int] = {}
        for i, c in enumerate(members):
            for k in keys_of(c):
                mask[k] = mask.get(k, 0) | (1 << i)
        full = (1 << len(members)) - 1
        for x in cand.tolist():
            kx = keys_of(x)
            cov = 0
            for k in kx:
                cov |= mask.get(k, 0)
            if cov == full:
                bit = full + 1
                for k in kx:
                    mask[k] = mask.get(k, 0) | bit
                full |= bit
                members.append(x)
        best = max(best, len(members))
    return best


# ---- first fit --------------------------------------------------------------------------------------------


def first_fit(seq: list[int], has_prev: list, parts: list[int], offs: list[int], nbytes: list[int],
              n_steps: int, n_brokers: int, K: int | None, B: int | None) -> tuple[list[int], list[bool]]:
    """The batch of each step (taken in ``seq`` order, a partition's steps one after the other), and whether each
    batch is closed (a step above ``B``, alone). A step with ``has_prev`` goes after the batch of the step taken
    just before it.

    ``full[b]`` is a union-find over batch numbers for broker b: a batch where b already takes part in K steps
    points to a later batch, so the earliest batch at or after c where b has room is found in near-constant
    time. Batches without room for the bytes are skipped by a vectorized scan of ``room``.
    """
    batch = [0] * n_steps
    n = max(n_brokers, 1)
    count: dict[int, int] = {}  # batch * n + broker -> steps the broker takes part in, in that batch
    full: list[dict] = [{} for _ in range(n_brokers)] if K is not None else []
    used: list[int] = []  # per batch: bytes
    closed: list[bool] = []
    cap = 64
    room = np.full(cap, -1, dtype=np.int64)  # per batch: B - bytes, -1 when closed (numpy, for the scan)
    nb = 0
    last = -1
    limit_k = K is not None
    limit_b = B is not None
    get = count.get
    for s in seq:
        p = parts[offs[s]:offs[s + 1]]
        sb = nbytes[s]
        if limit_b and sb > B:
            c = nb
        else:
            c = last + 1 if has_prev[s] else 0
            while c < nb:
                if limit_b and (closed[c] or used[c] + sb > B):
                    c += 1
                    if c < nb:
                        m = room[c:nb] >= sb
                        j = int(m.argmax())
                        c = c + j if m[j] else nb
                    continue
                if limit_k:
                    moved = False
                    for b in p:
                        d = full[b]
                        if c in d:
                            r = d[c]
                            while r in d:
                                r = d[r]
                            x = c
                            while x != r:  # path compression
                                nx = d[x]
                                d[x] = r
                                x = nx
                            c = r
                            moved = True
                    if moved:
                        continue
                break
        if c == nb:
            used.append(0)
            closed.append(limit_b and sb > B)
            if nb == cap:
                room = np.concatenate([room, np.full(cap, -1, dtype=np.int64)])
                cap *= 2
            nb += 1
        batch[s] = c
        last = c
        if limit_k:
            base = c * n
            for b in p:
                v = get(base + b, 0) + 1
                count[base + b] = v
                if v >= K:
                    full[b][c] = c + 1
        if limit_b:
            used[c] += sb
            room[c] = -1 if closed[c] else B - used[c]
    return batch, closed


# ---- fewest rounds ----------------------------------------------------------------------------------------


@dataclass
class Schedule:
    """Batches of the steps that are not alone (0, 1, ... without gaps) and how the count was reached."""

    batch: np.ndarray  # int64 [m]
    count: int
    method: str  # "first fit", "first fit, busiest brokers first", "repaired", "exact"
    proven: bool  # no schedule of these steps has fewer batches (the bound is met, or CP-SAT proved it)


def fewest_rounds(parts: np.ndarray, offs: np.ndarray, nbytes: np.ndarray, chain: np.ndarray, k: np.ndarray,
                  rank: np.ndarray, n_brokers: int, K: int | None, B: int | None, lower: int,
                  start: np.ndarray | None = None, budget: int | None = None) -> Schedule:
    """Schedule m steps (none above ``B``): ``parts[offs[s]:offs[s+1]]`` the brokers (dense) of step s,
    ``chain[s]`` its partition, ``k[s]`` its place among that partition's steps (0, 1, ...), ``rank[s]`` the
    caller's order (lower first), ``lower`` a lower bound on the count. ``start``: a valid schedule already
    known (the caller's first fit), used instead of first fit in ``rank`` order. ``budget``: tabu search moves
    (default from the size)."""
    m = len(nbytes)
    if m == 0:
        return Schedule(np.zeros(0, dtype=np.int64), 0, "first fit", True)
    parts_l, offs_l, bytes_l = parts.tolist(), offs.tolist(), nbytes.tolist()
    has_prev = (k > 0).tolist()
    step = np.repeat(np.arange(m, dtype=np.int64), np.diff(offs))
    deg = np.bincount(parts, minlength=n_brokers)
    maxdeg = np.zeros(m, dtype=np.int64)
    np.maximum.at(maxdeg, step, deg[parts])
    sumdeg = np.bincount(step, weights=deg[parts], minlength=m).astype(np.int64)
    nparts = np.diff(offs)
    orders = [("first fit, busiest brokers first", (rank, -nbytes, -nparts, -maxdeg)),
              ("first fit, busiest steps first", (rank, -nbytes, -sumdeg))]
    if start is None:
        orders.insert(0, ("first fit", (rank,)))
        best = None
    else:
        best = Schedule(start, int(start.max()) + 1, "first fit", int(start.max()) + 1 <= lower)
    for name, keys in orders:
        if best is not None and best.proven:
            return best
        seq = _chain_order(keys, chain, k)
        got, _ = first_fit(seq.tolist(), has_prev, parts_l, offs_l, bytes_l, m, n_brokers, K, B)
        got = np.asarray(got, dtype=np.int64)
        count = int(got.max()) + 1
        if best is None or count < best.count:
            best = Schedule(got, count, name, count <= lower)
    if best.proven:
        return best
    prev = _prev_steps(chain, k)
    if m * best.count <= EXACT_CELLS:
        best = _exact(parts, offs, nbytes, prev, n_brokers, K, B, best, lower)
        if best.proven:
            return best
    if budget is None:
        budget = min(BASE_MOVES + MOVES_PER_STEP * m, MAX_WORK // (best.count + 200))
    if n_brokers * best.count > MAX_TABLE:
        return best
    search = _Tabu(parts, offs, nbytes, prev, n_brokers, K, B, best.batch, best.count)
    got = search.descend(lower, budget)
    if got is not None and int(got.max()) + 1 < best.count:
        count = int(got.max()) + 1
        best = Schedule(got, count, "repaired", count <= lower)
    return best


def _chain_order(keys: tuple, chain: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Steps sorted by ``keys`` (np.lexsort: the last is the primary), each partition at its best step's place
    with its steps together in chain order."""
    order = np.lexsort(keys)
    rk = np.empty(len(order), dtype=np.int64)
    rk[order] = np.arange(len(order), dtype=np.int64)
    _, inv = np.unique(chain, return_inverse=True)
    inv = inv.ravel()
    first = np.full(int(inv.max()) + 1, len(order), dtype=np.int64)
    np.minimum.at(first, inv, rk)
    return np.lexsort((k, inv, first[inv]))


def _prev_steps(chain: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The step of the same partition just before each step (-1 for the first)."""
    order = np.lexsort((k, chain))
    prev = np.full(len(chain), -1, dtype=np.int64)
    same = chain[order[1:]] == chain[order[:-1]]
    prev[order[1:][same]] = order[:-1][same]
    return prev


class _Indexed:
    """A set of ints with O(1) add, remove and random choice (deterministic given the RNG)."""

    __slots__ = ("items", "pos")

    def __init__(self) -> None:
        self.items: list[int] = []
        self.pos: dict[int, int] = {}

    def add(self, x: int) -> None:
        if x not in self.pos:
            self.pos[x] = len(self.items)
            self.items.append(x)

    def discard(self, x: int) -> None:
        i = self.pos.pop(x, None)
        if i is not None:
            last = self.items.pop()
            if i < len(self.items):
                self.items[i] = last
                self.pos[last] = i

    def __len__(self) -> int:
        return len(self.items)


UNIT = 1000  # cost of one step too many for a broker, or one chain out of order; bytes: UNIT per B over


class _Tabu:
    """Tabu search over complete assignments of steps to batches; cost = UNIT x (participations above K + chain
    links out of order) + ⌈UNIT x bytes above B / B⌉ per batch. Batches are removed one at a time (marked dead,
    never renumbered), each removal repaired to cost 0 or undone."""

    def __init__(self, parts, offs, nbytes, prev, n_brokers, K, B, batch, count) -> None:
        m = len(nbytes)
        self.m, self.T = m, count
        self.K = K if K is not None else m + 1
        self.B = B
        self.rng = random.Random(SEED)
        self.parts = [parts[offs[s]:offs[s + 1]] for s in range(m)]
        self.parts_l = [p.tolist() for p in self.parts]
        self.w = nbytes.tolist()
        self.prev = prev.tolist()
        nxt = np.full(m, -1, dtype=np.int64)
        has = prev >= 0
        nxt[prev[has]] = np.flatnonzero(has)
        self.next = nxt.tolist()
        self.batch = batch.tolist()
        T = count
        self.L = np.zeros((max(n_brokers, 1), T), dtype=np.int32)  # steps per broker and batch
        step = np.repeat(np.arange(m, dtype=np.int64), np.diff(offs))
        np.add.at(self.L, (parts, batch[step]), 1)
        self.W = None  # bytes per batch
        if B is not None:
            self.W = np.zeros(T, dtype=np.int64)
            np.add.at(self.W, batch, nbytes)
            self.Wc = self._bytes_cost(self.W)  # each batch's share of the cost (0 in a valid start)
        self.alive = np.ones(T, dtype=bool)
        self.members = [_Indexed() for _ in range(T)]
        for s, b in enumerate(self.batch):
            self.members[b].add(s)
        self.cell: dict[int, list[int]] = {}  # broker * T + batch -> the steps there the broker takes part in
        for s, (b, p) in enumerate(zip(self.batch, self.parts_l)):
            for v in p:
                self.cell.setdefault(v * T + b, []).append(s)
        self.over = _Indexed()  # cells above K
        self.heavy = _Indexed()  # batches above B
        self.bad = _Indexed()  # steps placed at or before their chain predecessor
        self.cost = 0

    # -- cost bookkeeping

    def _bytes_cost(self, w: np.ndarray) -> np.ndarray:
        B = self.B
        return np.where(w > B, np.ceil((w - B) * (UNIT / B)), 0.0)

    def _one_cost(self, w: int) -> float:
        """_bytes_cost of one batch (the same float arithmetic)."""
        return float(math.ceil((w - self.B) * (UNIT / self.B))) if w > self.B else 0.0

    def _link_bad(self, s: int) -> bool:
        p = self.prev[s]
        return p >= 0 and self.batch[s] <= self.batch[p]

    def _move(self, s: int, c: int) -> None:
        a = self.batch[s]
        K, T = self.K, self.T
        p = self.parts[s]
        self.members[a].discard(s)
        self.members[c].add(s)
        for v in self.parts_l[s]:
            ka, kc = v * T + a, v * T + c
            self.cell[ka].remove(s)
            self.cell.setdefault(kc, []).append(s)
            if self.L[v, a] > K:
                self.cost -= UNIT
                if self.L[v, a] == K + 1:
                    self.over.discard(ka)
            if self.L[v, c] >= K:
                self.cost += UNIT
                if self.L[v, c] == K:
                    self.over.add(kc)
        self.L[p, a] -= 1
        self.L[p, c] += 1
        if self.B is not None:
            w = self.w[s]
            for b, by in ((a, -w), (c, w)):
                now = int(self.W[b]) + by
                cost = self._one_cost(now)
                self.cost += int(cost - self.Wc[b])
                self.W[b] = now
                self.Wc[b] = cost
                if now > self.B:
                    self.heavy.add(b)
                else:
                    self.heavy.discard(b)
        # the chain links that end at s (from its predecessor) and start at s (to its successor)
        links = ([s] if self.prev[s] >= 0 else []) + ([self.next[s]] if self.next[s] >= 0 else [])
        for x in links:
            if self._link_bad(x):
                self.cost -= UNIT
                self.bad.discard(x)
        self.batch[s] = c
        for x in links:
            if self._link_bad(x):
                self.cost += UNIT
                self.bad.add(x)

    def _delta(self, s: int) -> np.ndarray:
        """The change of cost if step s moved to each batch (inf where it cannot or is now)."""
        a = self.batch[s]
        p = self.parts[s]
        K = self.K
        Lp = self.L[p]
        d = (Lp >= K).sum(axis=0) * float(UNIT)
        d -= float(UNIT) * int((Lp[:, a] > K).sum())
        if self.B is not None:
            w = self.w[s]
            W = self.W
            d += self._bytes_cost(W + w) - self.Wc
            d -= self.Wc[a] - self._one_cost(int(W[a]) - w)
        pr, nx = self.prev[s], self.next[s]
        if pr >= 0:
            bp = self.batch[pr]
            d[: bp + 1] += UNIT
            if a <= bp:
                d -= UNIT
        if nx >= 0:
            bn = self.batch[nx]
            d[bn:] += UNIT
            if a >= bn:
                d -= UNIT
        d[~self.alive] = np.inf
        d[a] = np.inf
        return d

    def _pick(self) -> int:
        """A step in a conflict, at random."""
        rng = self.rng
        n_over, n_heavy, n_bad = len(self.over), len(self.heavy), len(self.bad)
        r = rng.randrange(n_over + n_heavy + n_bad)
        if r < n_over:
            got = self.cell[self.over.items[r]]
            return got[rng.randrange(len(got))]
        r -= n_over
        if r < n_heavy:
            mem = self.members[self.heavy.items[r]].items
            return mem[rng.randrange(len(mem))]
        s = self.bad.items[r - n_heavy]
        return s if rng.random() < 0.5 else self.prev[s]

    # -- the search

    def descend(self, lower: int, budget: int) -> np.ndarray | None:
        """Remove batches down to ``lower`` while each removal can be repaired; the best valid assignment
        (compressed to 0, 1, ...), or None when not even one batch could be removed."""
        saved = None
        left = budget
        rng = self.rng
        tabu: dict[int, dict[int, int]] = {}
        it = 0
        self.levels: list[int] = []  # moves spent on each removal repaired (diagnostics)
        while int(self.alive.sum()) > lower and left > 0:
            spent = left
            sizes = np.array([len(x) if a else np.iinfo(np.int64).max for x, a in zip(self.members, self.alive)])
            j = int(len(sizes) - 1 - np.argmin(sizes[::-1]))  # the fewest steps; the last of those
            keep = (list(self.batch), self.alive.copy())
            self.alive[j] = False
            for s in sorted(self.members[j].items):
                d = self._delta(s)
                self._move(s, int(np.argmin(d)))
            best = self.cost
            while self.cost > 0 and left > 0:
                left -= 1
                it += 1
                s = self._pick()
                d = self._delta(s)
                for c, until in tabu.get(s, {}).items():
                    if until >= it and self.cost + d[c] >= best:
                        d[c] = np.inf
                lo = d.min()
                if not np.isfinite(lo):
                    continue
                ties = np.flatnonzero(d == lo)
                c = int(ties[rng.randrange(len(ties))])
                a = self.batch[s]
                self._move(s, c)
                n_conf = len(self.over) + len(self.heavy) + len(self.bad)
                tabu.setdefault(s, {})[a] = it + 10 + rng.randrange(10) + int(0.6 * n_conf)
                best = min(best, self.cost)
            if self.cost > 0:  # not repaired: back to the last valid assignment
                for s, b in enumerate(keep[0]):
                    if self.batch[s] != b:
                        self._move(s, b)
                self.alive = keep[1]
                break
            saved = list(self.batch)
            self.levels.append(spent - left)
            tabu.clear()
        if saved is None:
            return None
        got = np.asarray(saved, dtype=np.int64)
        _, dense = np.unique(got, return_inverse=True)
        return dense.ravel().astype(np.int64)


def _exact(parts, offs, nbytes, prev, n_brokers, K, B, best: Schedule, lower: int) -> Schedule:
    """CP-SAT over the batch of each step, at most ``best.count`` batches, fewest batches; hinted with ``best``."""
    from ortools.sat.python import cp_model

    m, T = len(nbytes), best.count
    model = cp_model.CpModel()
    x = [[model.new_bool_var("") for _ in range(T)] for _ in range(m)]
    z = [model.new_int_var(0, T - 1, "") for _ in range(m)]
    used = model.new_int_var(max(lower, 1), T, "")
    for s in range(m):
        model.add_exactly_one(x[s])
        model.add(z[s] == sum(b * x[s][b] for b in range(1, T)))
        model.add(used >= z[s] + 1)
        if prev[s] >= 0:
            model.add(z[s] >= z[int(prev[s])] + 1)
        for b in range(T):
            model.add_hint(x[s][b], int(best.batch[s] == b))
        model.add_hint(z[s], int(best.batch[s]))
    model.add_hint(used, T)
    if K is not None:
        by: dict[int, list[int]] = {}
        for s in range(m):
            for v in parts[offs[s]:offs[s + 1]].tolist():
                by.setdefault(v, []).append(s)
        for v, steps in by.items():
            if len(steps) > K:
                for b in range(T):
                    model.add(sum(x[s][b] for s in steps) <= K)
    if B is not None and int(nbytes.sum()) > B:
        w = nbytes.tolist()
        for b in range(T):
            model.add(sum(w[s] * x[s][b] for s in range(m) if w[s]) <= B)
    model.minimize(used)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = SEED
    solver.parameters.max_deterministic_time = EXACT_TIME
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return best
    got = np.array([solver.value(v) for v in z], dtype=np.int64)
    _, dense = np.unique(got, return_inverse=True)
    dense = dense.ravel().astype(np.int64)
    count = int(dense.max()) + 1
    proven = status == cp_model.OPTIMAL
    if count < best.count:
        return Schedule(dense, count, "exact", proven or count <= lower)
    return Schedule(best.batch, best.count, best.method, best.proven or proven)
