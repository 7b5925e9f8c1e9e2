"""The failover stage's fast methods: flows that re-choose (leader, first follower) pairs with every broker's
leader count held at the start's (so each survivor's own leaders, the shares and every row's total stay put).

The assignment network: a free row sends one unit through the *pair node* of the option it takes to that option's
leader, and leader l must receive exactly as many rows as it leads now. With per-topic leader intervals a pair node
is per (topic, leader, follower) and passes through a *cell* node (topic, leader) whose flow stays within the
topic's interval, so those intervals are kept exactly. What a choice changes is then only M, row by row.

* ``by_thresholds`` (any size, the method at scale): the smallest target spread s such that every row keeps its
  cells within [its minimum now, that + s]. The rows in cells above their cap leave, and one max flow on the
  residual network of the others re-places them (a row already within its cap moves only on an augmenting path).
  Bisection on s. With topic intervals a pair's cap is shared by its per-topic nodes, which a flow cannot
  express (they feed different cells): each node may use the whole cap; where a flow takes a pair above it, the
  pair's last rows leave again and, from then on, each of its nodes keeps its rows and an even share of the
  pair's room; the flow re-places them (``TOPIC_ROUNDS`` flows at most, else the target counts as missed;
  missed at once when a flow leaves more than ``OVERFLOW_GIVE_UP`` of the rows above their caps). Those flows
  re-place a few hundred rows over millions of arcs (5,300,000 at 1,000,000 replicas), where Dinic's level
  graphs reach only as far as the paths do: they run by Dinic (``DINIC_GONE_SHARE``; 0.3-1.2 s a flow against
  OR-Tools' push-relabel 0.9-2.6 s). There every pair node has one option (a (topic, leader, follower) triple
  one row can take): from ``CONTRACT_FROM_NODES`` nodes those nodes are left out, each row's arc going straight
  to its cell (``_contract``: 3,000,000 arcs instead of 5,300,000, Dinic 2-4x faster). Without topic cells,
  networks of ``COMPILED_FROM_NODES`` nodes or more run the compiled max flow on one ``Shape`` sorted once for
  every probe (a row's unit on its current option is room back along that arc; 0.12-0.61 s a flow at 1,000,000
  replicas against push-relabel's 0.47-1.11 s); smaller ones OR-Tools' push-relabel, as fast there as Dinic and
  for large values far faster (``flow/maxflow.py``), which also keeps small clusters' plans as they were.
* ``by_convex_flow`` / ``convex_rounds`` (small and medium clusters): min-cost flows with convex costs per pair
  node (a steep exponential of the cell's deviation from its row's mean: a row's units go to its lowest cells
  first), weighted per row; the rows at the worst spread weigh more in the next solve. Rows with the same live
  replica set (and topic) travel together, one node per group (``terms``); equal-cost units of a pair node are
  one arc. A pair change costs a little, a leader change twice that, so unneeded changes are avoided.
* ``with_leaders``: the same rows re-placed for other leader counts (the leader search's and the relaxation's),
  changing the fewest leaders.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from ortools.graph.python import max_flow

from ..flow.maxflow import SLOT_INT32_MAX, Shape, solve_max_flow_dinic
from ..flow.mincost import FlowError, try_min_cost, try_min_cost_arrays
from ..flow.network import Network
from ..forked import Forked, can_fork
from .common import dense_unique, sorted_unique
from .failover_problem import (FailoverProblem, Terms, changes, choice_from_terms, fewest_changes, find_options,
                               group_of, loads, rank, row_extremes, spreads, terms, values)

COMPILED_FROM_NODES = 100_000  # threshold networks without topic cells this large: compiled max flow (module doc)
CONTRACT_FROM_NODES = 100_000  # threshold networks with topic cells this large: one-option pair nodes left out
DINIC_GONE_SHARE = 0.01  # with topic cells, threshold flows re-placing at most this share of the rows run by Dinic
FORK_FROM_OPTIONS = 200_000  # options from which a bisection evaluates its next probe in a second process
TOPIC_ROUNDS = 5  # threshold flows per target with topic intervals
OVERFLOW_GIVE_UP = 0.005  # ... unless a flow leaves more than this share of the rows above their pair's cap
ROW_WEIGHT_STEP = 3  # a row at the worst spread weighs this much more in the next convex solve
ROW_WEIGHT_MAX = 3 ** 6
COST_BASE = 4.0  # each leader of deviation multiplies a unit's cost by this
COST_EXPONENT_MAX = 8  # deviations above this many leaders (from the lowest) cost the same
COST_SCALE = 16  # a pair change costs 1 and a leader change 2 against this per unit of failover cost


@dataclass(frozen=True)
class Layout:
    """The nodes between rows and leaders. ``opt_q``: each option's pair node; ``q_pair``: the (leader,
    follower) pair of a pair node; ``q_cell``: its (topic, leader) cell, or -1 without topic intervals."""

    opt_q: np.ndarray
    opt_pair: np.ndarray
    q_pair: np.ndarray
    q_cell: np.ndarray
    pair_l: np.ndarray
    pair_f: np.ndarray
    cell_t: np.ndarray
    cell_l: np.ndarray

    @staticmethod
    def of(prob: FailoverProblem) -> "Layout":
        N = prob.N
        pairs, opt_pair = dense_unique(prob.opt_l * N + prob.opt_f, N * N)
        if prob.topic_of is None:
            none = np.full(len(pairs), -1, dtype=np.int64)
            return Layout(opt_pair, opt_pair, np.arange(len(pairs)), none, pairs // N, pairs % N,
                          np.zeros(0, np.int64), np.zeros(0, np.int64))
        t = prob.topic_of[prob.opt_row]
        cells, opt_cell = dense_unique(t * N + prob.opt_l, (int(t.max(initial=0)) + 1) * N)
        qkey, first, opt_q = np.unique(opt_cell.ravel() * len(pairs) + opt_pair, return_index=True,
                                       return_inverse=True)
        return Layout(opt_q.ravel().astype(np.int64), opt_pair, opt_pair[first], opt_cell.ravel()[first],
                      pairs // N, pairs % N, cells // N, cells % N)

    @property
    def Q(self) -> int:
        return len(self.q_pair)

    @property
    def C(self) -> int:
        return len(self.cell_t)


def sort_key(prob: FailoverProblem, choice: np.ndarray) -> tuple[int, int, int, int]:
    """What the stage minimizes, in order: worst scaled spread, rows at it, leader changes, pair changes."""
    sp = spreads(prob, choice)
    worst = int(sp.max())
    return (worst, int((sp == worst).sum())) + changes(prob, choice)


# ---- thresholds ------------------------------------------------------------------------------------------------

def by_thresholds(prob: FailoverProblem, choice: np.ndarray, floor: int, probes: int = 12) -> np.ndarray:
    """The choice with the smallest target spread found (bisection on a grid of one leader, or 1/8 of one with
    weights, from ``floor`` up to the current worst, at most ``probes`` max flows); ``choice`` when none is
    better.

    Only the last target met gives the choice; the others only say met or not, which is the flow's value, the
    same for every maximum flow. Without topic intervals, when many rows share their replica set, that value
    comes from a smaller network with such rows merged (``_merged_feasible``), and the full network's flow runs
    once, at the last target met."""
    arcs = _Arcs(prob, Layout.of(prob))
    step = 1 if prob.D == 1 else max(prob.D // 8, 1)
    worst = int(spreads(prob, choice).max())
    hi = max(-(-(worst - floor) // step), 0)  # grid points floor + k * step; the last is the current worst
    held = _Held(prob, arcs.lay, choice)  # every probe starts from ``choice``

    def top(k: int) -> np.ndarray:
        return held.rmin + min(floor + k * step, worst)

    fork = len(prob.opt_row) >= FORK_FROM_OPTIONS and can_fork()
    group = _merge_groups(prob, arcs, choice)
    if group is not None:
        met, _ = _bisect(0, hi, probes, lambda k: _merged_feasible(prob, arcs, group, choice, top(k), held), fork)
        if met is None:
            return choice
        found = _threshold(prob, arcs, choice, top(met), held)
        if found is not None:
            return found  # else (never seen) the bisection with every probe's flow below
    # with topic cells the floor leaves the topics' intervals out (``failover_bound``): targets in the lower half
    # usually fail (the first probe failed in 5 of 6 strict 1,000,000-replica cases), so the child probes ahead
    # as if the current one fails
    met, found = _bisect(0, hi, probes, lambda k: _threshold(prob, arcs, choice, top(k), held), fork,
                         expect_met=not arcs.lay.C)
    return choice if met is None else found


def _bisect(lo: int, hi: int, probes: int, evaluate, fork: bool = False,
            expect_met: bool = True) -> tuple[int | None, object]:
    """(the last grid point met in a bisection over [lo, hi) of at most ``probes`` probes, the smallest one
    probed, and ``evaluate``'s value there), or (None, None); a point is met when its value is truthy (True, or
    a choice rather than None).

    With ``fork``, while this process evaluates a point, a forked child (``flowbalance.forked``) evaluates the
    point probed next if this one goes as the last one went (met or not; ``expect_met`` before the first): runs
    of one outcome are the rule as a bisection closes in (rf-change default: met, met, then four fails). Its
    value is used when the bisection gets there and thrown away otherwise. ``evaluate`` is a pure function of
    the point, so the points decided and the answer are the same either way; a probe that goes as expected then
    costs no extra time (two flows at once on two cores)."""
    last, value, ahead = None, None, None  # ahead: (point, the child evaluating it)
    while lo < hi and probes > 0:
        mid = (lo + hi) // 2
        probes -= 1
        if ahead is not None and ahead[0] == mid:
            got = ahead[1].result_or(lambda: evaluate(mid))
            ahead = None
        else:
            if ahead is not None:
                ahead[1].cancel()
            following = (lo + mid) // 2 if expect_met else (mid + 1 + hi) // 2  # probed next as expected
            more = lo < mid if expect_met else mid + 1 < hi
            ahead = (following, Forked(lambda: evaluate(following))) if fork and probes and more else None
            got = ahead[1].alongside(lambda: evaluate(mid)) if ahead is not None else evaluate(mid)
        expect_met = got is not None and got is not False
        if expect_met:
            last, value, hi = mid, got, mid
        else:
            lo = mid + 1
    if ahead is not None:
        ahead[1].cancel()
    return last, value


MERGE_SHARE = 0.25  # merged rows are used when (replica set, pair) classes are at most this share of the rows


def _merge_groups(prob: FailoverProblem, arcs: "_Arcs", choice: np.ndarray) -> np.ndarray | None:
    """Rows' groups (same live replica set: the same options) when the threshold flows have no topic cells and
    the start's (group, pair) classes are few enough for merged rows to pay; else None."""
    if arcs.lay.C or not prob.F:
        return None
    group = group_of(prob)
    classes = sorted_unique(group * (arcs.lay.Q + 1) + arcs.lay.opt_q[choice])  # np.unique hashes: 0.1-0.2 s
    return group if len(classes) <= MERGE_SHARE * prob.F else None


def _merged_feasible(prob: FailoverProblem, arcs: "_Arcs", group: np.ndarray, choice: np.ndarray,
                     top: np.ndarray, held: "_Held | None" = None) -> bool:
    """Whether ``_threshold`` finds a choice for ``top`` (no topic cells): the caps allow it and the maximum
    flow re-places every leaving row. Its value is computed on the same network with interchangeable rows
    merged: rows of one group that stay on the same pair node (or that all leave) have the same arcs, so one
    node with their count on each arc carries as much (a flow of the merged node splits into one unit per row,
    each row's arcs taking at most one)."""
    lay = arcs.lay
    caps = _caps(prob, lay, choice, top, held)
    if caps is None:
        return False
    out = caps.out
    if not out.any():
        return True
    Q, N = lay.Q, prob.N
    cur_q = lay.opt_q[choice]
    _, rep, count = np.unique(np.where(out, 0, 1 + cur_q) + group * (Q + 1), return_index=True,
                              return_counts=True)
    M = len(rep)
    n_opt = prob.opt_start[rep + 1] - prob.opt_start[rep]
    node = np.repeat(np.arange(M), n_opt)
    o = np.repeat(prob.opt_start[rep], n_opt) + rank(node)
    use = out[rep][node] | (lay.opt_q[o] != cur_q[rep][node])  # a staying class: every option but its own
    leave, stay = np.flatnonzero(out[rep]), np.flatnonzero(~out[rep])
    q_now = np.bincount(cur_q[~out], minlength=Q)
    lower_q = np.minimum(q_now, caps.lower[lay.q_pair])
    lost = np.bincount(prob.opt_l[choice[out]], minlength=N)
    S, T = M + Q + N, M + Q + N + 1
    q_node, lead = M + np.arange(Q), M + Q + lay.pair_l[lay.q_pair]
    blocks = [(np.full(len(leave), S), leave, count[leave]), (node[use], M + lay.opt_q[o[use]], count[node[use]]),
              (M + cur_q[rep[stay]], stay, count[stay]), (q_node, lead, caps.upper[lay.q_pair] - q_now),
              (lead, q_node, q_now - lower_q), (M + Q + np.arange(N), np.full(N, T), lost)]
    tails, heads, cap = (np.concatenate([b[i] for b in blocks]).astype(np.int64) for i in range(3))
    keep = cap > 0
    mf = max_flow.SimpleMaxFlow()
    mf.add_arcs_with_capacity(tails[keep].astype(np.int32), heads[keep].astype(np.int32), cap[keep])
    return mf.solve(S, T) == mf.OPTIMAL and mf.optimal_flow() >= int(out.sum())


@dataclass(frozen=True)
class _Caps:
    """Free units each pair may hold (``upper``) and must keep (``lower``) for a target, and the rows that
    leave (those above their pair's upper cap, the last ones in row order)."""

    upper: np.ndarray
    lower: np.ndarray
    out: np.ndarray


def by_row_targets(prob: FailoverProblem, choice: np.ndarray, top: np.ndarray) -> np.ndarray | None:
    """A choice with every row's cells within [its minimum now, ``top`` of the row] (scaled), or None."""
    return _threshold(prob, _Arcs(prob, Layout.of(prob)), choice, np.maximum(top, _row_min(prob, choice)))


def _row_min(prob: FailoverProblem, choice: np.ndarray) -> np.ndarray:
    return row_extremes(prob, values(prob, *loads(prob, choice)))[1]


def _threshold(prob: FailoverProblem, arcs: "_Arcs", choice: np.ndarray, top: np.ndarray,
               held: "_Held | None" = None) -> np.ndarray | None:
    """A choice with every row's cells within [its minimum now, ``top`` of the row], the same leader counts (and
    topic cells within their intervals), or None when the flow finds none. ``held``: ``_Held`` of ``choice``
    when the caller has it."""
    lay = arcs.lay
    shared = np.zeros(len(lay.pair_l), dtype=bool)  # pairs a flow took above their cap through several topics
    for _ in range(TOPIC_ROUNDS if lay.C else 1):
        caps = _caps(prob, lay, choice, top, held)
        held = None  # the next round's choice is another
        if caps is None:
            return None
        if not caps.out.any():
            return choice
        alloc = _split_room(arcs, choice, caps, caps.upper[lay.q_pair], shared)
        choice = _augment(prob, arcs, choice, caps, alloc)
        if choice is None:
            return None
        over = np.maximum(np.bincount(lay.opt_pair[choice], minlength=len(lay.pair_l)) - caps.upper, 0)
        if over.sum() > OVERFLOW_GIVE_UP * prob.F:
            return None  # far from the target: the rounds do not converge (measured), spare their time
        shared |= over > 0
    return choice if not shared.any() or _caps(prob, lay, choice, top).out.sum() == 0 else None


def _caps(prob: FailoverProblem, lay: Layout, choice: np.ndarray, top: np.ndarray,
          held: "_Held | None" = None) -> _Caps | None:
    """The pairs' caps for the rows' targets (None when a cell no option can change is already above it).
    ``held``: ``_Held(prob, lay, choice)`` when the caller has it (a bisection asks for many targets of one
    choice)."""
    h = _Held(prob, lay, choice) if held is None else held
    D = prob.D
    if (h.fixed_cells & (h.V > top[:, None])).any():
        return None
    pl, pf = lay.pair_l, lay.pair_f
    upper = (top[pl] + prob.R[pl, pf]) // D - h.fixed
    lower = np.maximum(-((-(h.rmin[pl] + prob.R[pl, pf])) // D) - h.fixed, 0)
    if (upper < 0).any() or (lower > upper).any():
        return None
    out = np.zeros(prob.F, dtype=bool)
    out[h.order] = h.rank >= upper[h.cur_sorted]
    return _Caps(upper, lower, out)


class _Held:
    """What ``_caps`` needs of a choice whatever the target: the cells' values and each row's minimum, the
    cells no option can change, each pair's fixed part, and the rows in pair order with their rank in their
    pair (the last ones leave first)."""

    def __init__(self, prob: FailoverProblem, lay: Layout, choice: np.ndarray):
        N = prob.N
        L, M = loads(prob, choice)
        self.V = values(prob, L, M)
        self.rmin = row_extremes(prob, self.V)[1]
        changeable = np.zeros(N * N, dtype=bool)
        changeable[lay.pair_l * N + lay.pair_f] = True
        self.fixed_cells = prob.valid & ~changeable.reshape(N, N)
        self.fixed = L[lay.pair_f] + prob.fixed_M[lay.pair_l, lay.pair_f]
        cur = lay.opt_pair[choice]
        self.order = np.lexsort((np.arange(prob.F), cur))
        self.cur_sorted = cur[self.order]
        self.rank = rank(self.cur_sorted)


def _split_room(arcs: "_Arcs", choice: np.ndarray, caps: _Caps, alloc: np.ndarray, over: np.ndarray) -> np.ndarray:
    """For the pairs ``over``, each pair node keeps its rows and an even share of the pair's spare room (the
    first nodes by index get the remainder). Only the nodes of those pairs are computed: ``alloc`` elsewhere."""
    lay = arcs.lay
    sel = np.flatnonzero(over[lay.q_pair])
    if not len(sel):
        return alloc
    kept_opt = choice[~caps.out]
    kept_q = np.bincount(lay.opt_q[kept_opt], minlength=lay.Q)
    kept_p = np.bincount(lay.opt_pair[kept_opt], minlength=len(lay.pair_l))  # a node's pair is its options'
    spare = caps.upper - kept_p
    p = lay.q_pair[sel]
    nodes = arcs.pair_nodes[p]
    out = alloc.copy()
    out[sel] = kept_q[sel] + spare[p] // nodes + (arcs.q_rank[sel] < spare[p] % nodes)
    return out


def _augment(prob: FailoverProblem, arcs: "_Arcs", choice: np.ndarray, caps: _Caps, alloc: np.ndarray):
    """Re-place the rows ``caps.out`` by one max flow on the residual network of the others' choice: a row takes
    an option (row -> pair node); a pair node passes units on to its cell or leader while it has room, and a
    unit it holds can go back to its row, which then takes another option; a leader (cell) takes back exactly the
    rows it lost (that its floor needs). Without topic cells, on networks of ``COMPILED_FROM_NODES`` nodes or
    more, by the compiled max flow (``_augment_compiled``)."""
    rooms = _blocks(prob, arcs, choice, caps, alloc)
    if _cut_below(arcs, rooms, int(caps.out.sum())):
        return None  # no flow re-places every leaving row: the flow's own answer, without it
    if arcs.compiled:
        return _augment_compiled(prob, arcs, choice, caps, rooms)
    net = _network(prob, arcs, choice, caps, alloc, rooms)
    if arcs.lay.C and net.gone <= DINIC_GONE_SHARE * prob.F:
        flow, value = solve_max_flow_dinic(net.sink + 1, net.tails, net.heads, net.cap, net.source, net.sink)
        opt_flow = flow[net.gone:net.gone + len(net.opt)]
    else:
        mf = max_flow.SimpleMaxFlow()
        ids = mf.add_arcs_with_capacity(net.tails, net.heads, net.cap)
        if mf.solve(net.source, net.sink) != mf.OPTIMAL:
            return None
        value, opt_flow = mf.optimal_flow(), mf.flows(ids[net.gone:net.gone + len(net.opt)])
    if value < net.gone:
        return None
    taken = net.opt[opt_flow > 0]
    new = choice.copy()
    new[prob.opt_row[taken]] = taken
    return new


def _augment_compiled(prob: FailoverProblem, arcs: "_Arcs", choice: np.ndarray, caps: _Caps, rooms: list):
    """``_augment``'s flow on ``arcs.shape``, every threshold network in one: source -> every row (room: 1 when
    it leaves), row -> pair node per option (room 1 forward; a staying row's own option instead carries its unit
    already, room 1 back), then the arcs ``arcs.ends`` with the capacities ``rooms`` (``_blocks``). A row's new
    option is the one carrying its unit after the flow."""
    F, n_opt, out = prob.F, len(prob.opt_row), caps.out
    held = np.zeros(n_opt, dtype=np.int64)
    held[choice[~out]] = 1
    rooms = [np.maximum(np.asarray(r, dtype=np.int64), 0) for r in rooms]
    forward = [out, 1 - held] + rooms  # blocks, in the shape's arc order
    backward = [F, held, sum(len(r) for r in rooms)]
    value, _, back = arcs.shape.solve(forward, backward, arcs.nodes - 2, arcs.nodes - 1, read=slice(F, F + n_opt))
    if value < int(out.sum()):
        return None
    new = np.flatnonzero(back)  # one option a row, in row order (options are sorted by row)
    if len(new) != F:
        raise FlowError(f"threshold flow: {len(new):,} options carry a row's unit, {F:,} rows")
    return new


@dataclass(frozen=True)
class _Net:
    """One threshold max flow as OR-Tools takes it: arcs with positive capacity in their building order (the
    order decides which maximum flow OR-Tools returns), node ids int32. Its first ``gone`` arcs leave the
    source; the next ``len(opt)`` are the options ``opt`` (row -> pair node), whose flows say what rows take."""

    tails: np.ndarray
    heads: np.ndarray
    cap: np.ndarray
    source: int
    sink: int
    gone: int
    opt: np.ndarray


def _network(prob: FailoverProblem, arcs: "_Arcs", choice: np.ndarray, caps: _Caps, alloc: np.ndarray,
             rooms: list | None = None) -> _Net:
    """The network of ``_augment``: arc blocks, each without its zero-capacity arcs (the unit blocks have
    none): source -> leaving rows; rows -> their options' pair nodes (every option but a staying row's own); pair
    node -> its staying rows; then ``arcs.ends`` with the capacities ``rooms`` (``_blocks``, computed when
    None)."""
    lay = arcs.lay
    F, Q, N, C = prob.F, lay.Q, prob.N, lay.C
    out = caps.out
    kept, gone = np.flatnonzero(~out), np.flatnonzero(out)
    kept_opt = choice[kept]
    chosen = np.zeros(len(prob.opt_row), dtype=bool)
    chosen[kept_opt] = True  # option o is its row's choice exactly when choice[opt_row[o]] == o
    opt = np.flatnonzero(~chosen)
    S, T = F + Q + C + N, F + Q + C + N + 1
    rooms = _blocks(prob, arcs, choice, caps, alloc) if rooms is None else rooms
    opt_head, held_tail, held = arcs.opt_head[opt], arcs.opt_head[kept_opt], kept
    if arcs.contracted:
        opt, opt_head, held_tail, held, rooms = _contract(arcs, opt, kept_opt, kept, rooms)
    unit = [(np.full(len(gone), S, dtype=np.int32), gone.astype(np.int32)),
            (arcs.row_tail[opt], opt_head),
            (held_tail, held.astype(np.int32))]
    blocks = [(t, h, c) for (t, h), c in zip(arcs.ends, rooms)]
    n_unit = sum(len(u[0]) for u in unit)
    pos = [np.flatnonzero(np.asarray(c) > 0) for _, _, c in blocks]
    tails = np.concatenate([u[0] for u in unit] + [np.asarray(b[0])[k].astype(np.int32) for b, k in zip(blocks, pos)])
    heads = np.concatenate([u[1] for u in unit] + [np.asarray(b[1])[k].astype(np.int32) for b, k in zip(blocks, pos)])
    cap = np.concatenate([np.ones(n_unit, dtype=np.int64)] + [np.asarray(b[2])[k].astype(np.int64)
                                                              for b, k in zip(blocks, pos)])
    return _Net(tails, heads, cap, S, T, len(gone), opt)


def _contract(arcs: "_Arcs", opt: np.ndarray, kept_opt: np.ndarray, kept: np.ndarray, rooms: list) -> tuple:
    """``_network``'s arcs with every pair node of one option (with topic cells at 1,000,000 replicas: all
    2,000,000 of them) left out: its row's arc goes straight to the cell, when the node has room for the row
    (``rooms[0]``); a staying row's unit on it comes straight from the cell, when the node's floor lets it go
    (``rooms[1]``). Such a node passes at most its row's one unit, so the maximum flow's value is the same, on a
    network of about half the arcs and a third of the nodes (the node ids stay; those nodes get no arcs).
    Returns (options, their arcs' heads, the staying rows' arcs' tails, those rows, rooms)."""
    lay, single = arcs.lay, arcs.single
    up, down = np.asarray(rooms[0]), np.asarray(rooms[1])
    q = lay.opt_q[opt]
    opt = opt[~single[q] | (up[q] > 0)]
    q = lay.opt_q[opt]
    opt_head = np.where(single[q], arcs.q_up[q], arcs.opt_head[opt])
    q = lay.opt_q[kept_opt]
    stay = ~single[q] | (down[q] > 0)
    kept_opt, kept = kept_opt[stay], kept[stay]
    q = lay.opt_q[kept_opt]
    held_tail = np.where(single[q], arcs.q_up[q], arcs.opt_head[kept_opt])
    return opt, opt_head, held_tail, kept, [np.where(single, 0, up), np.where(single, 0, down)] + list(rooms[2:])


def _blocks(prob: FailoverProblem, arcs: "_Arcs", choice: np.ndarray, caps: _Caps, alloc: np.ndarray) -> list:
    """The capacities of the arcs ``arcs.ends`` for a target: pair node <-> its cell (leader) within the room
    and the floor; cells, leaders -> sink (``_cell_rooms``)."""
    lay = arcs.lay
    kept_opt = choice[~caps.out]
    q_now = np.bincount(lay.opt_q[kept_opt], minlength=lay.Q)
    lower_q = np.minimum(q_now, caps.lower[lay.q_pair])
    lost = np.bincount(prob.opt_l[choice[caps.out]], minlength=prob.N)
    return [alloc - q_now, q_now - lower_q] + (_cell_rooms(prob, arcs, kept_opt, lost) if lay.C else [lost])


def _cut_below(arcs: "_Arcs", rooms: list, gone: int) -> bool:
    """True when a cut of one node and the sink holds less than the ``gone`` leaving rows: node v's arcs into it
    and every other arc into the sink (a leader whose pairs have less room than the rows it lost, say), so no
    flow re-places them all. A proof, so the answer is the maximum flow's: on 1000 racked brokers the failing
    probe's flow (1-2.4 s) is not needed. Only cells and leaders have arcs into the sink, and only the arcs
    ``arcs.ends`` (capacities ``rooms``) lead into them, so those arcs decide (``arcs.cut_arcs``: per block of
    ``ends``, only the arcs into cells, leaders and the sink are read; no block is copied whole)."""
    width = arcs.cut_width
    need, have, total = np.zeros(width), np.zeros(width), 0
    for (sink_at, sink_tail, node_at, node_head), room in zip(arcs.cut_arcs, rooms):
        room = np.asarray(room, dtype=np.int64)
        if len(sink_at):
            cap = np.maximum(room[sink_at], 0)
            need += np.bincount(sink_tail, weights=cap, minlength=width)
            total += int(cap.sum())
        if len(node_at):
            have += np.bincount(node_head, weights=np.maximum(room[node_at], 0), minlength=width)
    cut = float(total) - need + have
    return bool((cut[need > 0] < gone).any())


class _Arcs:
    """What the threshold networks of one problem share (one ``by_thresholds`` call builds it once): node ids
    as OR-Tools takes them (int32); the ends of ``_blocks``' arcs (``ends``); whether the flows are
    ``compiled`` (``_augment``), and then their one ``shape``; and for ``_split_room`` each pair node's rank
    among its pair's nodes."""

    def __init__(self, prob: FailoverProblem, lay: Layout):
        F, N = prob.F, prob.N
        self.lay = lay
        self.row_tail = prob.opt_row.astype(np.int32)  # per option: its row's node
        self.opt_head = (F + lay.opt_q).astype(np.int32)  # per option: its pair node's
        self.q_node = np.arange(F, F + lay.Q, dtype=np.int32)
        up = F + lay.Q + lay.q_cell if lay.C else F + lay.Q + lay.C + lay.pair_l[lay.q_pair]
        self.q_up = up.astype(np.int32)  # what each pair node feeds: its cell, or its leader
        if lay.C:  # cells: their nodes, their leaders' nodes, the topics' intervals, each option's cell
            self.cell_node = np.arange(F + lay.Q, F + lay.Q + lay.C, dtype=np.int32)
            self.cell_lead = (F + lay.Q + lay.C + lay.cell_l).astype(np.int32)
            self.cell_tlo = prob.tlo[lay.cell_t, lay.cell_l]
            self.cell_thi = prob.thi[lay.cell_t, lay.cell_l]
            self.opt_cell = lay.q_cell[lay.opt_q]
        S = F + lay.Q + lay.C + N
        T = np.full(N + lay.C, S + 1, dtype=np.int32)
        lead = np.arange(F + lay.Q + lay.C, S, dtype=np.int32)
        self.ends = [(self.q_node, self.q_up), (self.q_up, self.q_node)] + (
            [(self.cell_node, self.cell_lead), (self.cell_lead, self.cell_node), (self.cell_node, T[:lay.C]),
             (lead, T[:N])] if lay.C else [(lead, T[:N])])
        self.rows, self.nodes = F, S + 2
        self.compiled = not lay.C and self.nodes >= COMPILED_FROM_NODES
        self.contracted = bool(lay.C) and self.nodes >= CONTRACT_FROM_NODES

    @cached_property
    def shape(self) -> Shape:
        """Every threshold network of the problem as one ``Shape`` of the compiled max flow: source -> every row,
        row -> pair node per option, then ``ends`` (``_augment_compiled`` gives each network's rooms)."""
        F, S = self.rows, self.nodes - 2
        units = [(np.full(F, S), np.arange(F)), (self.row_tail, self.opt_head)]
        index = np.int32 if max(2 * (F + len(self.row_tail) + sum(len(e[0]) for e in self.ends)),
                                self.nodes) <= SLOT_INT32_MAX else np.int64  # Shape's own choice: no copy there
        return Shape(self.nodes, *(np.concatenate([b[i] for b in units + self.ends], dtype=index) for i in (0, 1)))

    @property
    def cut_width(self) -> int:
        """The cells' and leaders' count (``_cut_below`` numbers them from the first cell)."""
        return self.nodes - 2 - (self.rows + self.lay.Q)

    @cached_property
    def cut_arcs(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
        """For ``_cut_below``, per block of ``ends``: its arcs into the sink (positions in the block) and their
        tails, its arcs into a cell or a leader and their heads (tails, heads as positions from the first cell:
        cells, then leaders)."""
        base, sink = self.rows + self.lay.Q, self.nodes - 1
        out = []
        for tails, heads in self.ends:
            into_sink = np.flatnonzero(heads == sink)
            into_node = np.flatnonzero((heads >= base) & (heads < base + self.cut_width))
            out.append((into_sink, tails[into_sink].astype(np.int64) - base, into_node,
                        heads[into_node].astype(np.int64) - base))
        return out

    @cached_property
    def single(self) -> np.ndarray:
        """Per pair node: whether it has one option only (``_contract``)."""
        return np.bincount(self.lay.opt_q, minlength=self.lay.Q) == 1

    @cached_property
    def pair_nodes(self) -> np.ndarray:
        """Pair nodes per pair."""
        return np.bincount(self.lay.q_pair, minlength=len(self.lay.pair_l))

    @cached_property
    def q_rank(self) -> np.ndarray:
        """Each pair node's position among its pair's nodes, by index."""
        order = np.lexsort((np.arange(self.lay.Q), self.lay.q_pair))
        out = np.zeros(self.lay.Q, dtype=np.int64)
        out[order] = rank(self.lay.q_pair[order])
        return out


def _cell_rooms(prob: FailoverProblem, arcs: "_Arcs", kept_opt: np.ndarray, lost: np.ndarray) -> list:
    """Cell -> leader while the topic's ceiling allows, back while its floor allows; a cell the leaving rows
    took below its floor must get that many back (cell -> sink), the rest of a leader's loss goes leader -> sink.
    ``kept_opt``: the options of the rows that stay. What a cell gets back counts toward its ceiling: its arc to
    the leader has room for the ceiling less the floor then (until session 21 it had the ceiling less the rows
    that stay, and a flow could take such a cell above its ceiling by as many as it was short)."""
    lay, N = arcs.lay, prob.N
    now = np.bincount(arcs.opt_cell[kept_opt], minlength=lay.C)
    tlo, thi = arcs.cell_tlo, arcs.cell_thi
    short = np.maximum(tlo - now, 0)
    lead_short = np.bincount(lay.cell_l, weights=short, minlength=N).astype(np.int64)
    return [thi - now - short, now - tlo, short, lost - lead_short]


# ---- convex costs -----------------------------------------------------------------------------------------------

def by_convex_flow(prob: FailoverProblem, choice: np.ndarray, iterations: int,
                   goal: tuple[int, int] | None = None) -> np.ndarray:
    """The best choice (``sort_key``) over ``iterations`` convex min-cost flows, or ``choice`` when none beats
    it; the rows at the worst spread weigh ``ROW_WEIGHT_STEP`` times more in each next solve. ``goal``: see
    ``convex_rounds``."""
    return convex_rounds(prob, choice, iterations, np.ones(prob.N, dtype=np.int64), goal)[0]


def convex_rounds(prob: FailoverProblem, choice: np.ndarray, iterations: int, weight: np.ndarray,
                  goal: tuple[int, int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``by_convex_flow`` from the rows' weights ``weight``: (best choice, the weights after the last solve),
    so that a caller can go on weighing the rows that stay at the worst.

    ``goal``: a proven least (worst spread, rows at it) of every order (``failover.proven_goal``). The rounds
    stop once the best choice is there: they reweigh the rows at the worst to lower those two, which no order
    can, and only the changes (level (d)) could still differ (100 brokers, 100,000 replicas: the first solve
    reached it and four more took 5.6 s)."""
    lay, t = Layout.of(prob), terms(prob)
    best, best_key = choice, sort_key(prob, choice)
    new, net = choice, None
    for _ in range(iterations):
        if goal is not None and best_key[:2] <= goal:
            break
        net = _ConvexNet.for_choice(prob, lay, t, new, net)
        new = fewest_changes(prob, net.step(new, weight))
        sp = spreads(prob, new)
        key = (int(sp.max()), int((sp == sp.max()).sum())) + changes(prob, new)  # sort_key, from sp
        if key < best_key:
            best, best_key = new, key
        weight = np.minimum(np.where(sp == sp.max(), weight * ROW_WEIGHT_STEP, weight), ROW_WEIGHT_MAX)
    return best, weight


class _ConvexNet:
    """The convex min-cost flow of one round (``step``): groups of interchangeable rows -> pair nodes (a row off
    its reference pair costs 1, off its reference leader 2) -> (cells ->) leaders; the j-th unit of a pair node
    costs by the deviation it brings its cell to; each leader receives as many rows as it leads now, each topic
    cell within its interval.

    Built once per leader counts ``L``, not once per round: every round holds the leader counts, so only the
    units' costs change between rounds (the rows' weights; with topics the units the other topics hold), and the
    arcs from groups to pair nodes, the units and the supplies are the same. Each solve gets the arcs, in the
    order, and the supplies the network built per round gave (OR-Tools' flow among equal-cost optima depends on
    them), so the flows are the same (tests/test_failover_convex.py)."""

    def __init__(self, prob: FailoverProblem, lay: Layout, t: Terms, L: np.ndarray):
        N, Q, C = prob.N, lay.Q, lay.C
        G = len(t.size)
        self.prob, self.lay, self.t, self.L = prob, lay, t, L
        gnode, qnode = np.arange(G), G + np.arange(Q)
        cnode, lnode = G + Q + np.arange(C), G + Q + C + np.arange(N)
        self.num_nodes = G + Q + C + N
        supply = np.zeros(self.num_nodes, dtype=np.int64)
        supply[gnode] = t.size
        supply[lnode] = -(L - prob.fixed_L)
        parts = [(np.flatnonzero(cap), cost, cap) for cost, cap in enumerate(_change_caps(prob, t))]
        self.parts = [k for k, _, _ in parts]  # per cost: the terms whose arcs carry it, in arc order
        self.g_tails = np.concatenate([gnode[t.g[k]] for k, _, _ in parts])
        self.g_heads = np.concatenate([qnode[lay.opt_q[t.opt[k]]] for k, _, _ in parts])
        self.g_caps = np.concatenate([cap[k] for k, _, cap in parts]).astype(np.int64)
        self.g_costs = np.concatenate([np.full(len(k), cost, dtype=np.int64) for k, cost, _ in parts])
        units = np.bincount(lay.opt_q[t.opt], weights=t.size[t.g], minlength=Q).astype(np.int64)
        self.q = np.repeat(np.arange(Q), units)
        self.j = np.arange(len(self.q)) - np.repeat(np.cumsum(units) - units, units) + 1
        self.q_head = cnode[lay.q_cell] if C else lnode[lay.pair_l[lay.q_pair]]
        self.tail_arcs = [np.zeros(0, dtype=np.int64)] * 4  # tails, heads, caps, costs after the units' arcs
        if C:
            tlo, thi = prob.tlo[lay.cell_t, lay.cell_l], prob.thi[lay.cell_t, lay.cell_l]
            lo = np.maximum(tlo, 0)
            np.subtract.at(supply, cnode[lo > 0], lo[lo > 0])  # the forced flow (``Network.force``)
            np.add.at(supply, lnode[lay.cell_l[lo > 0]], lo[lo > 0])
            self.tail_arcs = [cnode, lnode[lay.cell_l], np.asarray(thi - lo, dtype=np.int64),
                              np.zeros(C, dtype=np.int64)]
        self.supply = supply

    @staticmethod
    def for_choice(prob: FailoverProblem, lay: Layout, t: Terms, choice: np.ndarray,
                   net: "_ConvexNet | None") -> "_ConvexNet":
        """``net`` when it was built for ``choice``'s leader counts, else a new one for them."""
        L = loads(prob, choice)[0]
        return net if net is not None and np.array_equal(net.L, L) else _ConvexNet(prob, lay, t, L)

    def step(self, choice: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """One solve: the choice the flow gives. ``choice`` (with this net's leader counts) gives, with topics,
        the units the other topics put on each pair."""
        prob, lay, t = self.prob, self.lay, self.t
        q, cost, cap = _merge_units(self.q, _unit_costs(prob, lay, choice, weight, self.q, self.j))
        tails = np.concatenate([self.g_tails, q + len(t.size), self.tail_arcs[0]])
        heads = np.concatenate([self.g_heads, self.q_head[q], self.tail_arcs[1]])
        caps = np.concatenate([self.g_caps, cap, self.tail_arcs[2]])
        costs = np.concatenate([self.g_costs, cost, self.tail_arcs[3]])
        res = try_min_cost_arrays(self.num_nodes, tails, heads, caps, costs, self.supply)
        if res is None:
            raise FlowError("min-cost flow found no feasible flow")
        flows = res[0]
        val = np.zeros(len(t.g), dtype=np.int64)
        at = 0
        for k in self.parts:
            val[k] += flows[at:at + len(k)]
            at += len(k)
        return choice_from_terms(prob, t, val)


def _change_caps(prob: FailoverProblem, t: Terms) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per term, the rows of its group that may take it at cost 0 (their reference pair), 1 (their reference
    leader) and 2 (the rest). A row is counted under each term it could take, so the costs are a relaxation of
    the rows' own (``fewest_changes`` settles which row takes which)."""
    N = prob.N
    key = (t.g * N + t.l) * N + t.f
    has = prob.ref_opt >= 0
    ref = prob.ref_opt[has]
    pair_key = (t.group[has] * N + prob.opt_l[ref]) * N + prob.opt_f[ref]
    cnt_pair = _count_at(key, pair_key)
    lead = prob.ref_lead >= 0
    cnt_lead = _count_at(t.g * N + t.l, t.group[lead] * N + prob.ref_lead[lead])
    c1 = np.maximum(cnt_lead - cnt_pair, 0)
    return cnt_pair, c1, t.size[t.g] - cnt_pair - c1


def _count_at(keys: np.ndarray, items: np.ndarray) -> np.ndarray:
    """How many ``items`` equal each of ``keys``."""
    u, c = np.unique(items, return_counts=True)
    if not len(u):
        return np.zeros(len(keys), dtype=np.int64)
    at = np.minimum(np.searchsorted(u, keys), len(u) - 1)
    return np.where(u[at] == keys, c[at], 0).astype(np.int64)


def _merge_units(q: np.ndarray, cost: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Consecutive units of a pair node with the same cost as one arc of that capacity (they are sorted by
    pair node, costs non-decreasing within one)."""
    if not len(q):
        return q, cost, np.zeros(0, dtype=np.int64)
    start = np.flatnonzero(np.r_[True, (q[1:] != q[:-1]) | (cost[1:] != cost[:-1])])
    cap = np.diff(np.r_[start, len(q)])
    return q[start], cost[start], cap


def _unit_costs(prob: FailoverProblem, lay: Layout, choice: np.ndarray, weight: np.ndarray, q: np.ndarray,
                j: np.ndarray) -> np.ndarray:
    """Cost of the j-th unit on pair node q: COST_SCALE x its row's weight x COST_BASE ** (the deviation from
    its row's mean, in leaders, of the cell it fills, above the lowest such deviation; capped). Non-decreasing in
    j (convex). Leaders are held, so the means are the start's. A pair split by topic counts each node's units
    on top of the units the other topics' nodes hold in ``choice`` (an approximation: the flow may move those)."""
    D, (L, M) = prob.D, loads(prob, choice)
    pl, pf = lay.pair_l[lay.q_pair[q]], lay.pair_f[lay.q_pair[q]]
    n = np.maximum(prob.valid.sum(axis=1), 1)
    mean = np.where(prob.valid, values(prob, L, M), 0).sum(axis=1) / n
    other = 0
    if lay.C:
        own = np.bincount(lay.opt_q[choice], minlength=lay.Q)
        pair = np.bincount(lay.q_pair, weights=own, minlength=len(lay.pair_l)).astype(np.int64)
        other = (pair[lay.q_pair] - own)[q]
    dev = (values(prob, L, prob.fixed_M)[pl, pf] + D * (other + j) - mean[pl]) / D
    e = np.clip(dev - dev.min(initial=0.0), 0, COST_EXPONENT_MAX)
    return np.rint(COST_SCALE * weight[pl] * COST_BASE ** e).astype(np.int64)


# ---- other leader counts ----------------------------------------------------------------------------------------

def with_leaders(prob: FailoverProblem, choice: np.ndarray, target: np.ndarray) -> np.ndarray | None:
    """A choice whose leader counts are ``target`` (within the intervals), changing the fewest leaders of
    ``choice`` (one min-cost flow: rows -> their possible leaders -> each leader's count); a row whose leader
    changes takes its first option with the new leader that keeps its follower, else its first with that leader.
    None when no choice has those counts."""
    F, N = prob.F, prob.N
    o = np.arange(len(prob.opt_row))
    first = np.r_[True, (prob.opt_row[1:] != prob.opt_row[:-1]) | (prob.opt_l[1:] != prob.opt_l[:-1])]
    lead_opt = o[first]  # options are sorted by (row, leader, follower): one per (row, leader)
    net = Network()
    rnode, lnode = net.nodes(F), net.nodes(N)
    supply = np.zeros(net.num_nodes, dtype=np.int64)
    supply[rnode] = 1
    supply[lnode] = -(np.asarray(target) - prob.fixed_L)
    if (supply[lnode] > 0).any() or int(supply.sum()) != 0:
        return None  # a count below the forced rows' leaders, or not every row led
    net.set_supply(supply)
    row = prob.opt_row[lead_opt]
    cost = (prob.opt_l[lead_opt] != prob.opt_l[choice[row]]).astype(np.int64)
    arcs = net.add(rnode[row], lnode[prob.opt_l[lead_opt]], 1, cost)
    res = try_min_cost(net)
    if res is None:
        return None
    lead = np.zeros(F, dtype=np.int64)
    taken = lead_opt[res[0][arcs] > 0]
    lead[prob.opt_row[taken]] = prob.opt_l[taken]
    keep = find_options((prob.opt_row, prob.opt_l, prob.opt_f), N, np.arange(F), lead, prob.opt_f[choice])
    any_f = taken[np.argsort(prob.opt_row[taken], kind="stable")]
    return np.where(keep >= 0, keep, any_f)
