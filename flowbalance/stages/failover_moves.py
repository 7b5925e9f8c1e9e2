"""Failover by placement: swaps of replicas between partitions that spread a failed broker's leaderships.

Reordering (stages 2-4) can only choose each partition's leader and first follower among the brokers that hold
it. When the partitions broker f leads share their other replicas with few brokers (Kafka's placement puts
consecutive partitions' followers on the same brokers), no order spreads f's leaderships evenly: row f of the
failover matrix keeps a survivor b far above another survivor c. A **swap** fixes one unit of that:

    p (led by f, first follower b, c not in p):   b -> c      row f: V[f, b] - 1, V[f, c] + 1
    q (holds c, not b):                            c -> b

Every broker keeps its replica count (b and c each lose one replica and gain one), every leader stays, and when q
holds c behind its first follower no other (leader, first follower) pair changes, so no other row moves. When q's
first follower is c (the only choice with RF 2), q's leader x sees V[x, c] - 1, V[x, b] + 1; such a swap is taken
only when row x stays below the worst spread being lowered and Σ V² still falls.

V[f, b] = L_b + M[f, b] - share (``metrics.broker_failover``: leaders of b after f fails, less b's weighted share
of the row's total, which no swap changes). A swap is taken only when V[f, b] - V[f, c] >= 2, so Σ V² falls by at
least 2 per swap: the search ends. It attacks the rows at the worst spread, one swap at a time, level after level.
When a row at the worst cannot be helped (no swap, or not within the budget), that level cannot be cleared: the
swaps made since the worst last fell are taken back (they would only lower the number of brokers at it), so the
moves kept are the ones that lowered the worst spread of the order.

Hard rules kept by every swap: broker counts (unchanged), the rack rule (a replaced replica's rack checked against
the partition's per-rack bounds, ``racks.distinct_rack_bounds``), RF, live brokers only, movable partitions with
every replica live only, no arrival on a broker closed to new replicas (``Brokers.closed``). Per-topic counts: a
swap inside one topic keeps them; a swap across two topics changes
four (topic, broker) counts and is taken only when none of them ends farther outside its strict interval than it
was (so no topic's excess rises). Swaps inside a topic are preferred, then those that touch no other row, then
the fewest moves (against the original assignment: a replica put back where it was costs -1).

``rack_failover_floor``: with racks and every partition's RF at most the racks with live brokers, a failed broker's
leaderships all go to other racks; a counting bound over every placement then says how low the worst spread can go.
Vectorized where the cluster is large (indexes, candidate filters); the loop is per swap, never per replica.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..metrics import leader_counts, pair_matrix
from ..model import ClusterState
from ..racks import distinct_rack_bounds
from ..targets import intervals

EPS = 1e-9
MAX_C = 32  # survivors tried as the receiving broker c of a row, lowest value first
CROSS_PAIRS = 16  # (p, c) candidates tried across topics when no swap inside p's topic fits
CROSS_SCAN = 2_000  # replicas of c scanned per such candidate


@dataclass(frozen=True)
class Swap:
    """p (led by f, first follower b): b -> c; q: c -> b. x: q's leader when c was q's first follower, else -1."""

    f: int
    p: int
    q: int
    b: int
    c: int
    x: int
    cost: int  # moves added against the original assignment
    cross: bool  # p and q in different topics


@dataclass(frozen=True)
class SwapResult:
    """The new replica matrix (broker ids, the input's order with the swapped replicas in place) and its account."""

    replicas: np.ndarray  # int32 [P, K]
    swaps: int
    same_topic: int  # swaps inside one topic (per-topic counts untouched)
    side_rows: int  # swaps that also changed another row (q's first follower was c)
    moves: int  # moves added against the original (may be below 2 x swaps: replicas put back)
    worst_before: float  # worst single-broker failover spread of the input order
    worst_after: float  # and of the output order (same leaders, swapped replicas)
    stuck_at_worst: int  # rows at the output's worst that no swap could help


@dataclass(frozen=True)
class Cells:
    """Per-topic strict intervals over (movable topic, live broker), the counts of the movable rows there, and the
    positions of topics and brokers in them (-1: not a cell; a swap only touches movable topics, live brokers)."""

    lo: np.ndarray  # [T_m, NL]
    hi: np.ndarray
    count: np.ndarray
    tpos: np.ndarray  # [T] position of each topic among the movable ones
    lpos: np.ndarray  # [N] position of each broker among the live ones

    def copy(self) -> "Cells":
        return Cells(self.lo, self.hi, self.count.copy(), self.tpos, self.lpos)

    def add(self, topic, broker, delta) -> None:
        np.add.at(self.count, (self.tpos[topic], self.lpos[broker]), delta)

    def farther(self, topic, broker, delta) -> np.ndarray:
        """Whether adding ``delta`` puts each (topic, broker) count farther outside its interval."""
        t, b = self.tpos[topic], self.lpos[broker]
        v, lo, hi = self.count[t, b], self.lo[t, b], self.hi[t, b]
        return np.maximum(np.maximum(lo - v - delta, v + delta - hi), 0) > np.maximum(np.maximum(lo - v, v - hi), 0)


def topic_cells(state: ClusterState, movable: np.ndarray, topic_lo: np.ndarray | None,
                topic_hi: np.ndarray | None) -> Cells | None:
    """``Cells`` from ``certificate.count_targets(..., per_topic=True)``'s [movable topic, live broker] intervals
    (None: no per-topic targets, so no swap across topics is allowed). No [topic, broker] matrix beyond theirs."""
    if topic_lo is None or not movable.any():
        return None
    b = state.brokers
    topics_m = np.unique(state.topic[movable])
    tpos = np.full(len(state.topics), -1, dtype=np.int64)
    tpos[topics_m] = np.arange(len(topics_m))
    live_idx = np.flatnonzero(b.live)
    lpos = np.full(len(b), -1, dtype=np.int64)
    lpos[live_idx] = np.arange(len(live_idx))
    idx = state.replica_index[movable]
    rt = np.repeat(tpos[state.topic[movable]], idx.shape[1])
    lp = np.where(idx.ravel() >= 0, lpos[np.maximum(idx.ravel(), 0)], -1)
    ok = lp >= 0
    NL = len(live_idx)
    count = np.bincount(rt[ok] * NL + lp[ok], minlength=len(topics_m) * NL).reshape(len(topics_m), NL)
    return Cells(topic_lo, topic_hi, count.astype(np.int64), tpos, lpos)


class _Search:
    """The mutable state of one search: the order, its failover values, and static candidate indexes."""

    def __init__(self, state: ClusterState, before: ClusterState, movable: np.ndarray, cells: Cells | None):
        b = state.brokers
        self.N = N = len(b)
        self.ids = b.ids
        idx = state.replica_index.astype(np.int64)
        self.K = K = max(idx.shape[1], before.replicas.shape[1])
        self.idx = np.pad(idx, ((0, 0), (0, K - idx.shape[1])), constant_values=-1)
        orig = before.replica_index.astype(np.int64)
        self.orig = np.pad(orig, ((0, 0), (0, K - orig.shape[1])), constant_values=-1)
        self.width = state.replicas.shape[1]
        self.topic = state.topic.astype(np.int64)
        self.cells = cells
        live = b.live
        self.live = live
        self.closed = b.no_new  # brokers closed to new replicas: a swap never makes one an arrival there
        in_live = np.append(live, False)[self.idx]
        rf = (self.idx >= 0).sum(axis=1)
        self.eligible = np.asarray(movable, bool) & (in_live.sum(axis=1) == rf) & (rf >= 2)
        self.used = np.zeros(len(self.idx), dtype=bool)
        self._values(state, b)
        self._racks(b, rf)
        self._indexes()

    # ---- failover values ---------------------------------------------------------------------------------------

    def _values(self, state: ClusterState, b) -> None:
        """V[f, b] as in ``metrics.broker_failover`` (loads less weighted shares), and each row's spread."""
        N, live = self.N, self.live
        self.surv = live[:, None] & live[None, :] & ~np.eye(N, dtype=bool)
        L = leader_counts(state).astype(np.float64)
        M = pair_matrix(state).astype(np.float64)
        after = L[None, :] + M
        w = np.where(self.surv, b.weight[None, :], 0.0)
        tot = np.where(self.surv, after, 0.0).sum(axis=1, keepdims=True)
        share = tot * w / np.maximum(w.sum(axis=1, keepdims=True), 1e-300)
        self.V = np.where(self.surv, after - share, np.nan)
        self.spread, self.row_hi, self.row_lo = np.zeros(N), np.zeros(N), np.zeros(N)
        for f in np.flatnonzero(live & self.surv.any(axis=1)):
            self._respread(f)

    def _respread(self, f: int) -> None:
        row = self.V[f][self.surv[f]]
        if len(row):
            self.row_hi[f], self.row_lo[f] = row.max(), row.min()
        self.spread[f] = float(self.row_hi[f] - self.row_lo[f])

    def worst(self) -> float:
        return float(self.spread[self.live].max(initial=0.0))

    # ---- racks -------------------------------------------------------------------------------------------------

    def _racks(self, b, rf: np.ndarray) -> None:
        """Each row's rack per replica and its per-rack bounds (rows of one RF share them)."""
        self.has_racks = b.has_racks
        if not self.has_racks:
            return
        NR = len(b.rack_names)
        self.rack = b.rack.astype(np.int64)
        sizes = np.bincount(b.rack[b.live], minlength=NR).astype(np.int64)
        _, self.rf_of, _, self.rlo, self.rhi = distinct_rack_bounds(rf, sizes)
        self.row_rack = np.where(self.idx >= 0, self.rack[np.maximum(self.idx, 0)], -1)

    def rack_ok(self, rows: np.ndarray, out: np.ndarray, into: np.ndarray) -> np.ndarray:
        """Rows that keep the rack rule when broker ``out`` is replaced by broker ``into`` (per row)."""
        if not self.has_racks:
            return np.ones(len(rows), dtype=bool)
        ro, ri = self.rack[out], self.rack[into]
        rr = self.row_rack[rows]
        u = self.rf_of[rows]
        n_in = (rr == ri[:, None]).sum(axis=1) + 1
        n_out = (rr == ro[:, None]).sum(axis=1) - 1
        return (ro == ri) | ((n_in <= self.rhi[u, ri]) & (n_out >= self.rlo[u, ro]))

    # ---- indexes -----------------------------------------------------------------------------------------------

    def _indexes(self) -> None:
        """Rows by (leader, first follower); replicas behind the leader by (topic, broker) and by broker."""
        N, idx, el = self.N, self.idx, np.flatnonzero(self.eligible)
        pk = idx[el, 0] * N + idx[el, 1]
        o = np.argsort(pk, kind="stable")
        self.pair_rows, self.pair_keys = el[o], pk[o]
        r = np.repeat(el, self.K - 1)
        pos = np.tile(np.arange(1, self.K), len(el))
        br = idx[r, pos]
        ok = br >= 0
        r, pos, br = r[ok], pos[ok], br[ok]
        tk = self.topic[r] * N + br
        o = np.lexsort((pos, r, tk))
        self.t_rows, self.t_pos, self.t_keys = r[o], pos[o], tk[o]
        o = np.lexsort((pos, r, br))
        self.b_rows, self.b_pos, self.b_keys = r[o], pos[o], br[o]

    @staticmethod
    def _range(keys: np.ndarray, key: int) -> slice:
        return slice(int(np.searchsorted(keys, key, "left")), int(np.searchsorted(keys, key, "right")))

    # ---- one swap ----------------------------------------------------------------------------------------------

    def best_swap(self, f: int, worst: float, remaining: int) -> Swap | None:
        """The preferred swap that lowers row f (module doc) within ``remaining`` moves, or None. Candidates: every
        unused partition p led by f, with its first follower b, and the ``MAX_C`` survivors c of lowest value."""
        sl = slice(*np.searchsorted(self.pair_keys, [f * self.N, (f + 1) * self.N]))
        ps = self.pair_rows[sl]
        ps = ps[~self.used[ps]]
        surv = np.flatnonzero(self.surv[f])
        if not len(ps) or not len(surv):
            return None
        V = self.V[f]
        hi, lo = V[surv].max(), V[surv].min()
        cs = self._receivers(f, surv, V)
        p = np.repeat(ps, len(cs))
        c = np.tile(cs, len(ps))
        b = self.idx[p, 1]
        gain = V[b] - V[c]
        ok = (gain >= 2 - EPS) & ((V[b] >= hi - EPS) | (V[c] <= lo + EPS))
        p, b, c, gain = p[ok], b[ok], c[ok], gain[ok]
        ok = ~(self.idx[p] == c[:, None]).any(axis=1) & self.rack_ok(p, b, c)
        ok &= ~self.closed[c] | (self._arrival(p, c) == 0)
        p, b, c, gain = p[ok], b[ok], c[ok], gain[ok]
        if not len(p):
            return None
        cost_p = self._arrival(p, c) - self._arrival(p, b)
        at_max = V[b] >= hi - EPS
        found = self._pick(f, worst, remaining, p, b, c, gain, cost_p, at_max, cross=False)
        if found is None and self.cells is not None:
            top = np.lexsort((p, -gain, ~at_max))[:CROSS_PAIRS]
            found = self._pick(f, worst, remaining, p[top], b[top], c[top], gain[top], cost_p[top], at_max[top],
                               cross=True)
        return found

    def _receivers(self, f: int, surv: np.ndarray, V: np.ndarray) -> np.ndarray:
        """The ``MAX_C`` survivors of lowest value, and with racks also the ``MAX_C`` lowest of every rack: under a
        distinct-racks rule a replica of a partition f leads can only be replaced by a broker of the same rack, and
        f's rack-mates, often the lowest of its row (f's partitions fail over to other racks), can take none."""
        order = surv[np.argsort(V[surv], kind="stable")]
        if not self.has_racks:
            return order[:MAX_C]
        rack = self.rack[order]
        rank = np.empty(len(order), dtype=np.int64)  # position of each survivor among its rack's, lowest first
        by_rack = np.argsort(rack, kind="stable")
        starts = np.searchsorted(rack[by_rack], rack[by_rack])
        rank[by_rack] = np.arange(len(order)) - starts
        return np.unique(np.r_[order[:MAX_C], order[rank < MAX_C]])

    def _pick(self, f, worst, remaining, p, b, c, gain, cost_p, at_max, cross: bool) -> Swap | None:
        """Expand (p, b, c) candidates with every q that holds c behind its leader (same topic as p, or with
        ``cross`` another topic within the per-topic cells) and return the preferred valid swap."""
        if cross:
            keys, rows_of, pos_of = self.b_keys, self.b_rows, self.b_pos
            key = c
        else:
            keys, rows_of, pos_of = self.t_keys, self.t_rows, self.t_pos
            key = self.topic[p] * self.N + c
        left = np.searchsorted(keys, key, "left")
        right = np.searchsorted(keys, key, "right")
        if cross:
            right = np.minimum(right, left + CROSS_SCAN)
        i, at = _expand(left, right)
        q, pos = rows_of[at], pos_of[at]
        pb, pc = b[i], c[i]
        ok = ~self.used[q] & ~(self.idx[q] == pb[:, None]).any(axis=1)
        if cross:
            ok &= self.topic[q] != self.topic[p[i]]
        i, q, pos, pb, pc = i[ok], q[ok], pos[ok], pb[ok], pc[ok]
        ok = self.rack_ok(q, pc, pb) & (~self.closed[pb] | (self._arrival(q, pb) == 0))
        if cross:
            ok &= self._cells_ok(self.topic[p[i]], self.topic[q], pb, pc)
        side = pos == 1
        x = np.where(side, self.idx[q, 0], -1)
        ok &= ~side | self._side_ok(x, f, pb, pc, gain[i], worst)
        cost = cost_p[i] + self._arrival(q, pb) - self._arrival(q, pc)
        ok &= cost <= remaining
        if not ok.any():
            return None
        i, q, x, cost, side = i[ok], q[ok], x[ok], cost[ok], side[ok]
        j = np.lexsort((q, p[i], -gain[i], cost, ~at_max[i], side))[0]
        k = i[j]
        return Swap(f, int(p[k]), int(q[j]), int(b[k]), int(c[k]), int(x[j]), int(cost[j]), cross)

    def _arrival(self, rows: np.ndarray, broker: np.ndarray) -> np.ndarray:
        """1 where ``broker`` would be an arrival in the row (not in its original replicas), else 0."""
        return (~(self.orig[rows] == np.asarray(broker)[..., None]).any(axis=1)).astype(np.int64)

    def _cells_ok(self, tp: np.ndarray, tq: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
        """Across topics: p's topic loses b gains c, q's topic loses c gains b; no cell ends farther outside its
        strict interval than it was."""
        cl = self.cells
        return ~(cl.farther(tp, b, -1) | cl.farther(tp, c, 1) | cl.farther(tq, c, -1) | cl.farther(tq, b, 1))

    def _side_ok(self, x: np.ndarray, f: int, b: np.ndarray, c: np.ndarray, gain: np.ndarray,
                 worst: float) -> np.ndarray:
        """q led by x with first follower c: row x gets V[x, c] - 1, V[x, b] + 1. Allowed when x is not f, row x
        surely stays below ``worst`` (its extremes widened by the change) and Σ V² still falls."""
        xs = np.maximum(x, 0)
        vb, vc = self.V[xs, b], self.V[xs, c]
        est = np.maximum(self.row_hi[xs], vb + 1) - np.minimum(self.row_lo[xs], vc - 1)
        loss = vb - vc + 1
        return (x >= 0) & (x != f) & (est < worst - EPS) & (loss < gain - 1 - EPS)

    def apply(self, sw: Swap) -> None:
        """Do the swap and update values, spreads and per-topic counts."""
        f, p, q, b, c, x = sw.f, sw.p, sw.q, sw.b, sw.c, sw.x
        self.idx[p][self.idx[p] == b] = c
        self.idx[q][self.idx[q] == c] = b
        self.used[p] = self.used[q] = True
        if self.has_racks:
            self.row_rack[p] = np.where(self.idx[p] >= 0, self.rack[np.maximum(self.idx[p], 0)], -1)
            self.row_rack[q] = np.where(self.idx[q] >= 0, self.rack[np.maximum(self.idx[q], 0)], -1)
        self.V[f, b] -= 1
        self.V[f, c] += 1
        self._respread(f)
        if x >= 0:
            self.V[x, c] -= 1
            self.V[x, b] += 1
            self._respread(x)
        if self.cells is not None:
            tp, tq = self.topic[p], self.topic[q]
            self.cells.add([tp, tp, tq, tq], [b, c, c, b], [-1, 1, -1, 1])

    def undo(self, sw: Swap) -> None:
        """Take a swap back: the same swap with b and c exchanged; its rows become free again."""
        self.apply(Swap(sw.f, sw.p, sw.q, sw.c, sw.b, sw.x, -sw.cost, sw.cross))
        self.used[sw.p] = self.used[sw.q] = False

    def replicas(self) -> np.ndarray:
        out = np.where(self.idx >= 0, self.ids[np.maximum(self.idx, 0)], -1).astype(np.int32)
        return out[:, :max(self.width, 1)] if (out[:, self.width:] < 0).all() else out


def _expand(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges [left_i, right_i): (i, position) of every element, in order."""
    size = np.maximum(right - left, 0)
    i = np.repeat(np.arange(len(left)), size)
    start = np.repeat(left - np.cumsum(size) + size, size)
    return i, start + np.arange(int(size.sum()))


def spread_by_swaps(state: ClusterState, before: ClusterState, movable: np.ndarray, limit: int,
                    cells: Cells | None = None, *, thorough: bool = False) -> SwapResult:
    """Swaps (module doc) on ``state``'s order that lower its worst single-broker failover spread, adding at most
    ``limit`` moves against ``before`` (the original assignment, same rows). ``cells``: per-topic strict intervals
    (``topic_cells``); None allows swaps inside a topic only. ``thorough``: rows that no swap helps are passed
    over, not an end, and nothing is taken back: every row at the worst that can be lowered is, within the budget
    (more moves; for when the reordering stages need that slack to follow). Deterministic."""
    s = _Search(state, before, movable, None if cells is None else cells.copy())
    start = s.worst()
    stuck = np.zeros(s.N, dtype=bool)
    done: list[Swap] = []
    kept, level, moves = 0, start, 0  # swaps and worst when the worst last fell; moves of every swap done
    while s.worst() >= 2 - EPS:
        w = s.worst()
        if w < level - EPS:
            level, kept = w, len(done)
        at = np.flatnonzero(s.live & (s.spread >= w - EPS) & ~stuck)
        if not len(at):
            break
        f = int(at[0])
        found = s.best_swap(f, w, limit - moves)
        if found is None:
            stuck[f] = True
            if thorough:
                continue
            break  # this level cannot be cleared: its swaps would only lower the brokers at it
        s.apply(found)
        done.append(found)
        moves += found.cost
    if thorough or s.worst() < level - EPS:
        kept = len(done)
    for sw in reversed(done[kept:]):
        s.undo(sw)
    done = done[:kept]
    w = s.worst()
    return SwapResult(s.replicas(), len(done), sum(not x.cross for x in done), sum(x.x >= 0 for x in done),
                      sum(x.cost for x in done), start, w, int((s.live & (s.spread >= w - EPS) & stuck).sum()))


def rack_failover_floor(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray) -> int | None:
    """A lower bound on the worst single-broker failover spread of every placement that keeps the rack rule and
    every live broker's leaders within its interval, when that rule keeps a partition's replicas in distinct racks
    (every RF at least 2 and at most the racks with live brokers) and brokers are unweighted; None otherwise.

    Failing f hands each partition it leads to another rack, so f's rack-mates keep their own leader counts while
    the n_out brokers of other racks share f's L_f leaderships: row f's spread is at least
    ⌈(Σ_{b outside} L_b + L_f) / n_out⌉ - min_{f's mates} L_b. With intervals [lo, lo + 1] the leader counts differ
    only in which brokers take the E = P - N·lo extra leaders; only their number h_R per rack matters, and the rack's
    best f (one at lo + 1 when h_R > 0) gives g_R(h_R). The bound is the least over every split (h_R) with Σ h_R = E,
    0 <= h_R <= s_R, of max_R g_R(h_R): a subset-sum over the racks per candidate value."""
    b = state.brokers
    rf = np.asarray(target_rf, dtype=np.int64)
    live = b.live
    if not b.has_racks or b.weighted or not len(rf) or rf.min() < 2:
        return None
    racks, sizes = np.unique(b.rack[live], return_counts=True)
    if rf.max() > len(racks) or int(live.sum()) < 2 or not _pinned_distinct(state, movable):
        return None
    P = len(rf)
    lo, hi = intervals(P, b.weight, live)
    lo, hi = int(lo[live].min()), int(hi[live].max())
    N = int(live.sum())
    extra = P - N * lo
    table = [_rack_rows(P, lo, hi, int(s), N - int(s)) for s in sizes]
    values = sorted({v for row in table for v in row if v is not None})
    for v in values:  # the least v reachable with every rack at most v
        reach = np.zeros(extra + 1, dtype=bool)
        reach[0] = True
        for row in table:
            nxt = np.zeros_like(reach)
            for h, g in enumerate(row):
                if g is not None and g <= v and h <= extra:
                    nxt[h:] |= reach[:extra + 1 - h]
            reach = nxt
        if reach[extra]:
            return max(v, 0)
    return None


def _pinned_distinct(state: ClusterState, movable: np.ndarray) -> bool:
    """Partitions that may not move hold live brokers in distinct racks (the bound's premise holds for them)."""
    idx = state.replica_index[~np.asarray(movable, bool)]
    if not len(idx):
        return True
    b = state.brokers
    if ((idx >= 0) & ~np.append(b.live, False)[idx]).any():
        return False
    racks = np.where(idx >= 0, b.rack[np.maximum(idx, 0)], -1 - np.arange(idx.shape[1])[None, :])
    racks = np.sort(racks, axis=1)
    return not (racks[:, 1:] == racks[:, :-1]).any()


def _rack_rows(P: int, lo: int, hi: int, s: int, n_out: int) -> list[int | None]:
    """g_R(h) for h = 0 .. s extra leaders in a rack of s live brokers (module doc of ``rack_failover_floor``);
    racks without mates or without brokers outside bound nothing (0)."""
    out = []
    for h in range(s + 1):
        if hi == lo and h > 0:
            out.append(None)  # no broker can take an extra leader
            continue
        if s < 2 or n_out < 1:
            out.append(0)
            continue
        lf = lo + (1 if h > 0 else 0)
        mate_min = hi if h == s else lo
        inside = s * lo + h
        outside = P - inside
        out.append(max(-((-(outside + lf)) // n_out) - mate_min, 0))
    return out
