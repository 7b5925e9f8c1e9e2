"""Stage 1 at scale: the split network, a relaxation of the pooled network small enough to solve in a second.

The pooled network (``pooled.py``) still has a node per partition and per (topic, broker): two million nodes at
1,000,000 replicas. When no partition must lose a replica (no RF decrease, and with racks no rack above its
share), which partition a unit comes from does not matter to the counts, so the split network drops partitions
altogether and splits every live broker in two:

    out(b) ─keep, cost 0────────────────────────────────→ in(b) → sink     [b's interval]
       └─release from (t, b), cost move + Δ(t, b)─→ pool(t, rack) ─arrive at (t, b'), cost Δ(t, b')─→ in(b')

``out(b)`` supplies the live replicas of movable partitions on b; a pool supplies the units that must arrive
anyway (replicas on removed brokers, RF increases, a rack below its share). Each (topic, broker) interval is a
convex cost on the count, so its marginal costs Δ are laid out as parallel arcs: the k-th unit released from a
cell holding c costs -Δ(c - k), the k-th arriving costs Δ(c + k - 1). A cell never both releases and receives in
an optimum (that round trip costs a move and, by convexity, saves nothing), so the optimum equals the pooled
optimum: about 3,000 nodes at 1,000,000 replicas on 1,000 brokers.

At 1,000,000 replicas the network still has about 3,000,000 arcs (a release and an arrival block per
(topic, broker)), of which an optimum uses a few hundred thousand: it is solved from each node's cheapest arcs
and proven optimal for all of them by node potentials (``flow.pruned``), 3-4x faster.

Most of those arcs are arrivals into cells that hold none of their topic: T x N cells grow faster than the
replicas (19,000,000 of 25,000,000 arcs at 3,000,000 replicas on 3,000 brokers). From ``LAZY_FROM_CELLS``
cells, when such cells are at least ``LAZY_SHARE`` of the receiving ones, their arcs are not built (``_Lazy``):
a cell's first piece joins the first pruned solve when the cheapest-arc choice picks it, and a cell's pieces
left are built when its next piece (the cheapest left: the marginal costs only rise) has a negative reduced
cost under the solve's potentials, so the proof covers them all (``_LazyArcs``).
Stage 1 at 3,000,000 replicas (9,000,000 cells): 11.6-12.8 -> 7.4-8.9 s, 25,300,000 -> 7,460,000 arcs built;
then 4.7-7.5 s once the lazy cells' first pieces were read from the cost layout (``_first_piece``) and picked
without joining them to the built arrivals (``cheapest_parts``; session 24).
At 1,000,000 replicas (1,000,000 cells) it did not pay: 3,200,000 -> 2,060,000 arcs built, but the first pruned
solve, offered only the empty cells' first pieces, then needed another round on the history case (1.5 -> 2.2 s)
and gained nothing elsewhere; hence the threshold (docs/performance.md, session 23).

``realize`` then chooses which replicas leave each cell (in row order) and hands every unit
to a broker of its pool exactly as for the pooled network; when that fails, the caller solves the pooled network.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..flow.mincost import try_min_cost
from ..flow.network import Network, convex_arcs
from ..flow.primal_dual import KERNEL_FROM_NODES
from ..flow.pruned import cheapest, cheapest_parts, solve_pruned
from ..model import ClusterState
from ..racks import rack_bounds
from ..targets import min_arrivals
from .common import TOPIC_STEPS, apply_changes_arrays, graded_move_cost, pair_counts, penalties
from .pooled import PooledResult, _prefer_bonus, realize
from .stage_targets import StageTargets

_NEG_INF = np.iinfo(np.int64).min // 4
PRUNE_FROM_ARCS = 200_000  # networks this large are solved pruned first
SEGMENT_BLOCK = 1 << 18  # cells cut into pieces at a time (``_segments``)
COMPILED_SEGMENTS_FROM = 500_000  # cells from which ``_segments`` runs compiled (``segments_kernel``), when the
# movable partitions reach ``primal_dual.KERNEL_FROM_NODES`` (the leader network then loads numba anyway)
PRUNE_SLACK = 32  # units of release / arrival arcs kept per node beyond its need in the first pruned solve
LAZY_FROM_CELLS = 4_000_000  # from this many (topic, broker) cells, empty ones' arrival arcs are built on demand
LAZY_SHARE = 0.5  # ... when they are at least this share of the receiving cells (else all are built at once)


def balance_split(state: ClusterState, tg: StageTargets, *, prefer: dict[int, int] | None = None,
                  topics_after_moves: bool = False, move_weight: int | None = None) -> PooledResult | None:
    """Solve the split network for the targets ``tg`` (``stage_targets``) and realize it; None when it does not
    apply (a partition must lose a replica, or the rack rule leaves racks free) or its optimum could not be
    realized. ``prefer``, ``topics_after_moves``, ``move_weight``: as ``balance_pooled``."""
    if tg.si.Pm == 0 or (tg.use_racks and not tg.forced):
        return None
    deficit = _deficits(tg)
    if deficit is None:
        return None
    lexicographic = topics_after_moves and tg.per_topic
    unit_cost = (move_weight or graded_move_cost(tg.total)) if lexicographic else 1
    # moves rank first (graded per-topic cost below a full move, or no per-topic cost): try the network without
    # brokers that both release and receive, kept only when it reaches M* (then every plan with the fewest moves
    # is in it); then the whole network with hard broker intervals; then soft ones (closest balance)
    moves_first = unit_cost >= graded_move_cost(tg.total) if lexicographic else not tg.per_topic
    m_star = _count_bound(tg)
    for hard, restrict in ((True, True),) * moves_first + ((True, False), (False, False)):
        net, arcs, need = _build(tg, deficit, lexicographic, unit_cost, hard, restrict)
        res = _solve(net, arcs, need, tg, lexicographic)
        if res is None:
            continue
        if restrict and int(res[0][arcs.release].sum()) + int(deficit.sum()) != m_star:
            continue
        break
    else:
        return None
    flows = res[0]
    rel_cell = np.bincount(arcs.release_cell, weights=flows[arcs.release], minlength=tg.si.NL * tg.Tm)
    arrive = np.bincount(arcs.arrive_slot, weights=flows[arcs.arrive], minlength=tg.si.NL * tg.Tm * tg.K)
    return _realize(state, tg, deficit, rel_cell.astype(np.int64), arrive.astype(np.int64), prefer,
                    len(flows), net.num_nodes)


def _solve(net: Network, arcs: "_Arcs", need: np.ndarray, tg: StageTargets, lexicographic: bool
           ) -> tuple[np.ndarray, int] | None:
    """The network's min-cost flow: on large networks from the cheapest release and arrival arcs of every node
    first (enough for ``need[node]`` units more than ``PRUNE_SLACK``; ``flow.pruned``: proven optimal for every
    arc, the lazy cells' too, priced by their next piece), else in one solve (lazy cells built first)."""
    if net.num_arcs < PRUNE_FROM_ARCS:
        if arcs.lazy is not None:
            built = _LazyArcs(tg, arcs, lexicographic, net.num_arcs).build(np.arange(len(arcs.lazy.cell)), True)
            net.add(*built)
        return try_min_cost(net)
    tails, heads, caps, costs = net.arrays()
    keep = np.ones(net.num_arcs, dtype=bool)
    quota = need + PRUNE_SLACK
    r, a = _block(arcs.release), _block(arcs.arrive)
    keep[r] = (cheapest(tails[r], heads[r], arcs.release_level, caps[r], quota)
               | cheapest(heads[r], tails[r], arcs.release_level, caps[r], quota))
    # a pool passes on what it may receive: its arrival arcs must carry that too
    kept = arcs.release[keep[r]]
    quota = quota + np.bincount(heads[kept], weights=caps[kept], minlength=net.num_nodes).astype(np.int64)
    # arrivals, with the lazy cells' first pieces among them (one unit each: an empty cell's first piece)
    lz = arcs.lazy
    parts = [(tails[a], heads[a], arcs.arrive_level, caps[a])]
    if lz is not None:
        parts.append((lz.tail, lz.head, lz.level, np.ones(len(lz.cell), dtype=np.int64)))
    by_tail = cheapest_parts(parts, quota)
    by_head = cheapest_parts([(h, t, lv, c) for t, h, lv, c in parts], quota)
    keep[a] = by_tail[0] | by_head[0]
    lazy = None
    if lz is not None:  # the lazy cells picked: their first piece built
        lazy = _LazyArcs(tg, arcs, lexicographic, len(tails))
        built = lazy.build(np.flatnonzero(by_tail[1] | by_head[1]))
        tails, heads, caps, costs = (np.concatenate([x, y]) for x, y in zip((tails, heads, caps, costs), built))
        keep = np.concatenate([keep, np.ones(len(built[0]), dtype=bool)])
    res = solve_pruned(net, keep, arrays=(tails, heads, caps, costs), more=lazy)
    return None if res is None else res[:2]


def _block(ids: np.ndarray) -> slice | np.ndarray:
    """A block's arc ids (consecutive, as ``Network.add`` returns them) as a slice: its arrays are then views,
    not gathers of millions of arcs."""
    if len(ids) and int(ids[-1]) - int(ids[0]) + 1 == len(ids) and bool((np.diff(ids) == 1).all()):
        return slice(int(ids[0]), int(ids[-1]) + 1)
    return ids


def _deficits(tg: StageTargets) -> np.ndarray | None:
    """Units each (movable partition, rack) must receive whatever the plan: [Pm, K]. None when some partition
    holds more live replicas than its target (in all, or in a rack whose total the rack rule fixes)."""
    si = tg.si
    held = np.bincount(tg.kr * tg.K + tg.rack_of_live[tg.kb], minlength=si.Pm * tg.K).reshape(si.Pm, tg.K)
    want = (rack_bounds(tg.kp, np.bincount(tg.rack_of_live, minlength=tg.K))[1] if tg.use_racks
            else tg.kp[:, None])
    short = want - held
    return None if (short < 0).any() else short


@dataclass
class _Arcs:
    """Arc ids of the release and arrival blocks, with the cell / (pool, broker) slot each belongs to."""

    release: np.ndarray
    release_cell: np.ndarray
    release_level: np.ndarray  # rank of the arc's cost among the costs a release can have (0: cheapest)
    arrive: np.ndarray
    arrive_slot: np.ndarray
    arrive_level: np.ndarray
    lazy: "_Lazy | None" = None  # arrival cells not built (``_Lazy``)


@dataclass
class _Lazy:
    """Receiving cells that hold none of their topic (most (topic, broker) cells at scale: 19,000,000 of
    25,000,000 arcs at 3,000,000 replicas on 3,000 brokers), whose arrival arcs are built only when the pruned
    solve needs them (``_solve``): the cell, its count limit, its arcs' tail (pool) and head (broker) nodes and
    slot, how far its pieces are built, and the next piece's cost and level (the cheapest left: a cell's
    marginal costs only rise)."""

    cell: np.ndarray
    limit: np.ndarray
    tail: np.ndarray
    head: np.ndarray
    slot: np.ndarray
    start: np.ndarray  # per cell: the count from which its pieces are not built yet (``limit``: all built)
    cost: np.ndarray  # the cost of the piece from ``start`` (its next one)
    level: np.ndarray


def _count_bound(tg: StageTargets) -> int:
    """M* for the targets of this solve: no plan meeting the broker intervals moves fewer replicas."""
    si = tg.si
    counts = np.bincount(si.idx[si.idx >= 0], minlength=si.N)
    return min_arrivals(counts, tg.total, tg.lo, tg.hi, si.b.live)


def _build(tg: StageTargets, deficit: np.ndarray, lexicographic: bool, unit_cost: int, hard: bool, restrict: bool
           ) -> tuple[Network, _Arcs, np.ndarray]:
    """The split network, and per node the units its release or arrival arcs must carry at least (the pools'
    supply, what brokers hold above their ceiling or lack below their floor). ``restrict``: a broker only
    releases when it holds more than its floor and only receives up to its ceiling (a plan that moves M*
    replicas never does both at one broker)."""
    si, NL, K, Tm = tg.si, tg.si.NL, tg.K, tg.Tm
    n_b = np.bincount(tg.kb, minlength=NL).astype(np.int64)  # live movable replicas per broker
    lo_b = tg.lo[si.live_idx] - tg.fixed_c[si.live_idx]
    hi_b = tg.hi[si.live_idx] - tg.fixed_c[si.live_idx]
    net = Network()
    out, inn, pool = net.nodes(NL), net.nodes(NL), net.nodes(Tm * K)
    sink = int(net.nodes(1)[0])
    supply = np.zeros(net.num_nodes, dtype=np.int64)
    supply[out] = n_b
    pool_of = tg.tpos[:, None] * K + np.arange(K)[None, :]
    supply[pool] = np.bincount(pool_of.ravel(), weights=deficit.ravel(), minlength=Tm * K).astype(np.int64)
    supply[sink] = -int(supply.sum())
    net.set_supply(supply)
    releasing = n_b > lo_b if restrict else n_b > 0
    receiving = (n_b < hi_b if restrict else np.ones(NL, dtype=bool)) & ~si.b.no_new[si.live_idx]  # closed: none
    room = np.maximum(hi_b - n_b, 0) if restrict else np.full(NL, tg.total, dtype=np.int64)
    net.add(out, inn, n_b, 0)
    c_tb = tg.c_tb if tg.per_topic else n_b
    cell_t = np.repeat(np.arange(Tm), NL)
    cell_b = np.tile(np.arange(NL), Tm)
    # releases: x runs from c - L to c - 1, each unit costs the move less the marginal it gives up
    rc = np.flatnonzero((c_tb > 0) & releasing[cell_b])
    seg_cell, seg_cap, seg_cost, piece = _segments(tg, rc, np.zeros(len(rc), dtype=np.int64), c_tb[rc],
                                                   lexicographic)
    release_level = piece.max(initial=0) - piece  # the cheapest release is the last piece's
    release = net.add(out[cell_b[seg_cell]], pool[cell_t[seg_cell] * K + tg.rack_of_live[cell_b[seg_cell]]],
                      seg_cap, unit_cost - seg_cost)
    release_cell = seg_cell
    # arrivals: x runs from c to c + L - 1, at most one unit per partition of the topic the broker lacks
    ac = np.flatnonzero(receiving[cell_b])
    limit = np.minimum(tg.tcount[cell_t[ac]] - c_tb[ac], room[cell_b[ac]])
    lazy = None
    empty = (c_tb[ac] == 0) & (limit > 0) if tg.per_topic and Tm * NL >= LAZY_FROM_CELLS else None
    if empty is not None and empty.sum() >= LAZY_SHARE * len(ac):
        lazy = _lazy(tg, ac[empty], limit[empty], pool, inn, lexicographic)
        ac, limit = ac[~empty], limit[~empty]
    seg_cell, seg_cap, seg_cost, arrive_level = _segments(tg, ac, c_tb[ac], c_tb[ac] + limit, lexicographic)
    slot = (cell_t[seg_cell] * K + tg.rack_of_live[cell_b[seg_cell]]) * NL + cell_b[seg_cell]
    arrive = net.add(pool[slot // NL], inn[cell_b[seg_cell]], seg_cap, seg_cost)
    if hard:
        pen = None
    elif lexicographic:  # brokers above every move, even when the move budget makes a move cheap
        pen = penalties(max(unit_cost, graded_move_cost(tg.total)), tg.total, net.num_nodes, 1)[0]
    else:  # brokers above the per-topic penalties (levels topic < rack < broker, as in the pooled network)
        pen = penalties(1, tg.total, net.num_nodes, 3)[2]
    convex_arcs(net, inn, sink, lo_b, hi_b, np.full(NL, tg.total, dtype=np.int64), pen)
    need = np.zeros(net.num_nodes, dtype=np.int64)
    need[pool] = supply[pool]
    need[out] = np.maximum(n_b - hi_b, 0)  # what b must release
    need[inn] = np.maximum(lo_b - n_b, 0)  # what b must receive
    return net, _Arcs(release, release_cell, release_level, arrive, slot, arrive_level, lazy), need


class _LazyArcs:
    """Builds the arrival arcs of ``arcs.lazy``'s cells on demand, recording them in ``arcs`` (ids from
    ``next_id`` on, after every arc built before). ``build(at)``: each cell's next piece only (the first pruned
    solve's pick); ``build(at, whole=True)``: all of each cell's pieces left. Called with potentials
    (``flow.pruned.solve_pruned``'s ``more``): all pieces left of the cells whose next piece (the cheapest left:
    a cell's marginal costs only rise) has a negative reduced cost, or None; with None: all pieces left."""

    def __init__(self, tg: StageTargets, arcs: _Arcs, lexicographic: bool, next_id: int):
        self.tg, self.arcs, self.lexicographic, self.next_id = tg, arcs, lexicographic, next_id

    def __call__(self, d: np.ndarray | None) -> tuple | None:
        lz = self.arcs.lazy
        at = np.flatnonzero(lz.start < lz.limit)
        if d is not None:
            at = at[lz.cost[at] + d[lz.tail[at]] - d[lz.head[at]] < 0]
        return self.build(at, whole=True) if len(at) else None

    def build(self, at: np.ndarray, whole: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The arcs of lazy cells ``at`` (with pieces left): (tails, heads, caps, costs), recorded as arrivals."""
        lz, arcs = self.arcs.lazy, self.arcs
        cells, first = lz.cell[at], lz.start[at]  # cells ascending, as the lazy cells are
        seg, cap, cost, level = _segments(self.tg, cells, first, lz.limit[at], self.lexicographic)
        seg = at[np.searchsorted(cells, seg)]  # each arc's lazy cell
        if whole:
            lz.start[at] = lz.limit[at]
        else:
            head = np.ones(len(seg), dtype=bool)  # each cell's next piece
            head[1:] = seg[1:] != seg[:-1]
            nxt = np.flatnonzero(~head[1:] & head[:-1]) + 1  # and the one after it, where there is one
            lz.start[seg[head]] += cap[head]
            lz.cost[seg[nxt]], lz.level[seg[nxt]] = cost[nxt], level[nxt]
            seg, cap, cost, level = seg[head], cap[head], cost[head], level[head]
        ids = self.next_id + np.arange(len(seg))
        self.next_id += len(seg)
        arcs.arrive = np.concatenate([arcs.arrive, ids])
        arcs.arrive_slot = np.concatenate([arcs.arrive_slot, lz.slot[seg]])
        arcs.arrive_level = np.concatenate([arcs.arrive_level, level])
        return lz.tail[seg], lz.head[seg], cap, cost


def _lazy(tg: StageTargets, cells: np.ndarray, limit: np.ndarray, pool: np.ndarray, inn: np.ndarray,
          lexicographic: bool) -> _Lazy:
    """``_Lazy`` for the empty receiving ``cells`` (each with its count ``limit`` > 0)."""
    NL, K = tg.si.NL, tg.K
    zero = np.zeros(len(cells), dtype=np.int64)
    cost, level = _first_piece(tg, cells, lexicographic)
    t, b = cells // NL, cells % NL
    slot = (t * K + tg.rack_of_live[b]) * NL + b
    return _Lazy(cells, limit, pool[slot // NL], inn[b], slot, zero.copy(), cost, level)


def _first_piece(tg: StageTargets, cells: np.ndarray, lexicographic: bool) -> tuple[np.ndarray, np.ndarray]:
    """(cost, piece index) of the first unit into each of the empty ``cells`` (count 0): ``_segments`` of the
    count range [0, 1), read straight from the layout (the lazy cells: 6,600,000 at 3,000,000 replicas)."""
    lo, hi, below, above, costs = _layout(tg, cells, lexicographic)
    if not len(below):
        k = np.zeros(len(cells), dtype=np.int64)
    else:  # ``_segments``' piece_of(0)
        k = np.clip(1 - lo - below[0], 0, len(below)) + np.clip(1 - hi - above[0], 0, len(above))
    return costs[k], k


def _layout(tg: StageTargets, cells: np.ndarray, lexicographic: bool
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The marginal cost of each of ``cells`` as a step function of its count x: (lo, hi, below, above, costs).
    Piece 0 starts at -infinity, pieces 1.. start at ``lo + below[j]``, then at ``hi + above[j]`` (``below``
    and ``above`` runs of consecutive offsets); piece k costs ``costs[k]`` up to the next start. Graded
    per-topic excess (moves first), flat priority penalties (per-topic strict), or nothing (no per-topic
    targets)."""
    if not tg.per_topic:
        none = np.zeros(0, dtype=np.int64)
        zero = np.zeros(len(cells), dtype=np.int64)
        return zero, zero, none, none, np.zeros(1, dtype=np.int64)
    lo, hi = np.asarray(tg.tlo[cells], dtype=np.int64), np.asarray(tg.thi[cells], dtype=np.int64)
    if lexicographic:
        S = TOPIC_STEPS
        # x = lo - d costs -d; x = hi + d - 1 costs d; from hi + S on, S + 1
        costs = np.concatenate([[-(S + 1)], -np.arange(S, 0, -1), [0], np.arange(1, S + 2)])
        return lo, hi, np.arange(-S, 1), np.arange(0, S + 1), costs
    pen = penalties(1, tg.total, 1, 1)[0]
    return lo, hi, np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.array([-pen, 0, pen], dtype=np.int64)


def _segments(tg: StageTargets, cells: np.ndarray, first: np.ndarray, end: np.ndarray, lexicographic: bool,
              block: int = SEGMENT_BLOCK) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The counts x in [first, end) of each cell cut into the pieces of its marginal cost: (cell, units, cost,
    piece index: costs rise with it) per non-empty piece, cell by cell in order.

    A cell's pieces run from the one holding ``first`` to the one holding ``end - 1``; between them every piece
    is whole (one unit wide, or the interval's [lo, hi), skipped when empty). So the arcs are counted first and
    written in place, ``block`` cells at a time: no cells x pieces matrix (9,000,000 cells at 3,000 topics on
    3,000 brokers, about 42,000,000 arcs) and no copy of the result."""
    lo, hi, below, above, costs = _layout(tg, cells, lexicographic)
    first, end = np.asarray(first, dtype=np.int64), np.asarray(end, dtype=np.int64)
    if len(cells) >= COMPILED_SEGMENTS_FROM and tg.si.Pm >= KERNEL_FROM_NODES:
        return _compiled_segments(cells, first, end, (lo, hi, below, above, costs))
    nb = len(below)
    # piece j > 0 starts at its base (lo or hi) + offset[j]; the last entry stands for the piece after the last,
    # asked of cells whose first piece is the last and never used (their arc is one piece: end - first)
    offset = np.concatenate([[0], below, above, [0]])

    def piece_of(x: np.ndarray) -> np.ndarray:  # how many starts after piece 0 lie at or below x
        if not nb:
            return np.zeros(len(x), dtype=np.int64)
        return np.clip(x - lo - below[0] + 1, 0, nb) + np.clip(x - hi - above[0] + 1, 0, len(above))

    def start(j: np.ndarray) -> np.ndarray:  # where piece j > 0 of each cell starts
        return np.where(j <= nb, lo, hi) + offset[j]

    k0, k1 = piece_of(first), piece_of(end - 1)
    lo_width = (hi + offset[nb + 1]) - (lo + offset[nb]) if nb else np.zeros(len(cells), dtype=np.int64)
    skip = (lo_width == 0) & (k0 < nb) & (nb < k1)  # the interval's piece is empty (lo = hi) and inside
    count = np.where(end > first, k1 - k0 + 1 - skip, 0)
    head = np.cumsum(count) - count  # each cell's first arc
    units_first = np.where(k1 > k0, start(k0 + 1) - first, end - first)
    units_last = end - start(k1)
    out = (np.empty(int(count.sum()), dtype=cells.dtype), *(np.empty(int(count.sum()), dtype=np.int64)
                                                             for _ in range(3)))
    for i in range(0, len(cells), block):  # gathers cost ~10 ns an element: repeats and scatters instead
        part = slice(i, i + block)
        c, local = count[part], head[part] - head[i]  # arcs per cell, the cells' first arcs in the block
        n = int(c.sum())
        k = np.repeat(k0[part] - local, c)
        k += np.arange(n)
        if nb:
            k += np.repeat(skip[part], c) & (k >= nb)
        units = np.ones(n, dtype=np.int64)
        whole = (c > 0) & (k0[part] <= nb) & (nb <= k1[part]) & (lo_width[part] > 0)  # the interval's piece
        units[local[whole] + nb - k0[part][whole]] = lo_width[part][whole]
        units[local[c > 1] + c[c > 1] - 1] = units_last[part][c > 1]
        units[local[c > 0]] = units_first[part][c > 0]
        at = slice(int(head[i]), int(head[i]) + n)
        out[0][at], out[1][at], out[2][at], out[3][at] = np.repeat(cells[part], c), units, costs[k], k
    return out


def _compiled_segments(cells: np.ndarray, first: np.ndarray, end: np.ndarray, layout: tuple
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``_segments`` by ``segments_kernel`` (numba, imported here: large clusters only), on ``_layout``'s
    arrays."""
    from . import segments_kernel as sk

    lo, hi, below, above, costs = (np.ascontiguousarray(x, dtype=np.int64) for x in layout)
    n = sk.count(first, end, lo, hi, below, above)
    out = (np.empty(n, dtype=cells.dtype), *(np.empty(n, dtype=np.int64) for _ in range(3)))
    sk.segments(np.ascontiguousarray(cells), first, end, lo, hi, below, above, costs, *out)
    return out


def _choose_releases(cell: np.ndarray, row: np.ndarray, need: np.ndarray, owed: np.ndarray, rounds: int
                     ) -> np.ndarray:
    """Which replicas leave: ``need[c]`` of the replicas of each cell c (replica i is in ``cell[i]`` and of
    partition ``row[i]``), as indices into them. Within a cell the first rows go first. With ``rounds`` > 0, a
    partition already leaving from another cell (or sending ``owed`` units anyway: a replica on a removed broker,
    an RF increase) is passed over while others remain, for up to that many rounds: a partition that loses two
    replicas needs two receiving brokers that lack it, and one broker added to a cluster has room for one."""
    order = np.lexsort((row, cell))
    c_sorted, r_sorted = cell[order], row[order]
    need = need.astype(np.int64).copy()
    taken = owed.astype(np.int64).copy()
    picked = np.zeros(len(order), dtype=bool)
    attempt = 0
    while need.any():
        last = attempt >= rounds
        cand = ~picked & (need[c_sorted] > 0) & (last | (taken[r_sorted] == 0))
        ci = np.flatnonzero(cand)
        attempt = attempt + 1 if len(ci) else rounds  # nothing left that leaves no partition twice: allow it
        if len(ci) == 0:
            continue
        cc = c_sorted[ci]
        rank = np.arange(len(ci)) - np.searchsorted(cc, cc)  # position among the cell's candidates
        ci = ci[rank < need[cc]]
        if not last:  # one cell per partition this round: the first in cell order
            _, first = np.unique(r_sorted[ci], return_index=True)
            ci = ci[np.sort(first)]
        picked[ci] = True
        need -= np.bincount(c_sorted[ci], minlength=len(need))
        taken += np.bincount(r_sorted[ci], minlength=len(taken))
    return order[picked]


def _realize(state: ClusterState, tg: StageTargets, deficit: np.ndarray, rel_cell: np.ndarray,
             arrive: np.ndarray, prefer: dict[int, int] | None, arcs: int, nodes: int) -> PooledResult | None:
    """Choose the replicas each cell releases, then place every unit (released or owed) with ``realize``."""
    si, NL, K = tg.si, tg.si.NL, tg.K
    cell = (tg.tpos[tg.kr] * NL + tg.kb) if tg.per_topic else tg.kb
    lead_lp = np.where(tg.sub[:, 0] >= 0, si.lpos[np.maximum(tg.sub[:, 0], 0)], -1)
    pairs = pair_counts(si.idx, si.lpos, NL)
    bonus = _prefer_bonus(state, si.mov, si.lpos, si.b, prefer or {})
    slots = np.flatnonzero(arrive)
    slot_b = np.repeat(slots % NL, arrive[slots])
    slot_g = np.repeat(slots // NL, arrive[slots])
    dp, dr = np.nonzero(deficit)
    owed_p = np.repeat(dp, deficit[dp, dr])
    owed_g = np.repeat(tg.tpos[dp] * K + dr, deficit[dp, dr])
    # first the first rows of every cell (measured on Kafka-placed clusters: the most even start for the failover
    # stage, as even as the pooled network's choice); when those cannot all be placed, no partition twice
    for rounds in (0, 8):
        chosen = _choose_releases(cell, tg.kr, rel_cell, deficit.sum(axis=1), rounds)
        rel_p = tg.kr[chosen]
        unit_p = np.concatenate([rel_p, owed_p])
        unit_g = np.concatenate([tg.tpos[rel_p] * K + tg.rack_of_live[tg.kb[chosen]], owed_g])
        got, tries = realize(unit_p, unit_g, slot_b, slot_g, tg.sub, si.lpos, lead_lp, pairs, bonus)
        if got is not None:
            break
    else:
        return None
    released = (tg.sub >= 0) & (si.lpos[np.maximum(tg.sub, 0)] < 0)
    released[tg.kr[chosen], tg.kc[chosen]] = True
    rel_rows, rel_cols = np.nonzero(released)
    replicas = apply_changes_arrays(state.replicas, si.mov[rel_rows], rel_cols, si.mov[unit_p],
                                    si.b.ids[si.live_idx[got]])
    return PooledResult(replicas=replicas, moves=len(unit_p), pruned=False, rack_forced=tg.forced,
                        bound=tg.lower_bound, arcs=arcs, nodes=nodes, realize_rounds=tries)
