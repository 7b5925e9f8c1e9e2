"""The failover stage's fast methods: flows that re-choose (leader, first follower) pairs with every broker's
leader count held at the start's (so every row's shares and the column of each survivor's own leaders stay put).

A partition sends one unit through the pair node (l, f) it chooses to leader l; leader l must receive exactly as
many units as it leads now. What the choice changes is then only M, one row at a time (``failover_problem``).

* ``by_thresholds`` (any size, the method at scale): the smallest target spread s such that every row can keep
  its cells within [row minimum, row minimum + s]: the cells above are emptied down to their caps and the rows
  taken out are re-placed by one max flow on the residual network (so the partitions already within their caps
  stay unless an augmenting path moves them). Bisection on s.
* ``by_convex_flow`` (small and medium clusters): one min-cost flow with convex costs per pair (a steep
  exponential of the cell's deviation from its row's mean, so a row's units go to its lowest cells first and
  high cells cost the most), weighted per row; the rows at the worst spread gain weight from one solve to the
  next. A change of leader or pair costs a little, so unneeded changes are avoided.

Per-topic leader intervals (when kept) are not a flow constraint: a move is allowed only when its topic has room
at both ends, and a solution that still overfills or empties a topic's cell forbids the offending moves and
solves again (at most ``TOPIC_ROUNDS`` times; then that solve counts as failed).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ortools.graph.python import max_flow

from ..flow.mincost import solve_min_cost
from ..flow.network import Network
from .failover_problem import FailoverProblem, changes, loads, rank, row_extremes, spreads, values

TOPIC_ROUNDS = 4
ROW_WEIGHT_STEP = 3  # a row at the worst spread weighs this much more in the next convex solve
ROW_WEIGHT_MAX = 3 ** 6
COST_BASE = 4.0  # each leader of deviation multiplies a unit's cost by this
COST_EXPONENT_MAX = 8  # deviations above this many leaders (from the lowest) cost the same
COST_SCALE = 16  # a leader or pair change costs 1 or 2 against this per unit of failover cost


@dataclass(frozen=True)
class _Pairs:
    """The distinct (leader, follower) pairs among the options: option -> pair, and each pair's ends."""

    of: np.ndarray  # pair of each option
    l: np.ndarray  # noqa: E741
    f: np.ndarray

    @staticmethod
    def of_problem(prob: FailoverProblem) -> "_Pairs":
        uq, q_of = np.unique(prob.opt_l * prob.N + prob.opt_f, return_inverse=True)
        return _Pairs(q_of.ravel().astype(np.int64), uq // prob.N, uq % prob.N)

    def __len__(self) -> int:
        return len(self.l)


def sort_key(prob: FailoverProblem, choice: np.ndarray) -> tuple[int, int, int, int]:
    """What the stage minimizes, in order: worst scaled spread, rows at it, leader changes, pair changes."""
    sp = spreads(prob, choice)
    worst = int(sp.max())
    return (worst, int((sp == worst).sum())) + changes(prob, choice)


# ---- thresholds ------------------------------------------------------------------------------------------------

def by_thresholds(prob: FailoverProblem, choice: np.ndarray, floor: int, probes: int = 12) -> np.ndarray:
    """The choice with the smallest target spread found (bisection on a grid of one leader, or 1/8 of one with
    weights, from ``floor`` up to the current worst, at most ``probes`` max flows); ``choice`` when none is
    better."""
    pairs = _Pairs.of_problem(prob)
    step = 1 if prob.D == 1 else max(prob.D // 8, 1)
    worst = int(spreads(prob, choice).max())
    lo, hi = 0, max(-(-(worst - floor) // step), 0)  # grid points floor + k * step; the last is the current worst
    best = choice
    while lo < hi and probes > 0:
        mid = (lo + hi) // 2
        probes -= 1
        found = _with_topic_rounds(prob, choice, lambda allowed: _threshold_step(
            prob, pairs, choice, min(floor + mid * step, worst), allowed))
        if found is None:
            lo = mid + 1
        else:
            best, hi = found, mid
    return best


def _threshold_step(prob: FailoverProblem, pairs: _Pairs, choice: np.ndarray, s: int,
                    allowed: np.ndarray) -> np.ndarray | None:
    """A choice with every row's cells within [its minimum now, that + s] and the same leader counts, or None
    when no such choice exists (among the allowed options) or a cell nothing can change is above it."""
    N, D = prob.N, prob.D
    L, M = loads(prob, choice)
    V = values(prob, L, M)
    rmin = row_extremes(prob, V)[1]
    top = rmin + s
    changeable = np.zeros(N * N, dtype=bool)
    changeable[pairs.l * N + pairs.f] = True
    if (prob.valid & ~changeable.reshape(N, N) & (V > top[:, None])).any():
        return None
    ql, qf = pairs.l, pairs.f
    fixed = L[qf] + prob.fixed_M[ql, qf]
    ucap = (top[ql] + prob.R[ql, qf]) // D - fixed  # free units each pair may hold
    lcap = np.maximum(-((-(rmin[ql] + prob.R[ql, qf])) // D) - fixed, 0)  # and must keep
    if (ucap < 0).any() or (lcap > ucap).any():
        return None
    cur = pairs.of[choice]
    order = np.lexsort((np.arange(prob.F), cur))
    out = np.zeros(prob.F, dtype=bool)
    out[order] = rank(cur[order]) >= ucap[cur[order]]  # the rows above their pair's cap (the last ones) leave
    if not out.any():
        return choice
    used = np.bincount(cur[~out], minlength=len(pairs))
    return _augment(prob, pairs, choice, out, ucap - used, used - lcap, allowed)


def _augment(prob: FailoverProblem, pairs: _Pairs, choice: np.ndarray, out: np.ndarray, room: np.ndarray,
             spare: np.ndarray, allowed: np.ndarray) -> np.ndarray | None:
    """Re-place the rows ``out`` by one max flow on the residual network of the others' choice: row -> pair (an
    allowed option), pair -> its leader (``room``), back from the leader to a pair (``spare``: units it may give
    up) and on to a row that holds it (which then takes another option); each leader takes back exactly the rows
    it lost."""
    F, Q, N = prob.F, len(pairs), prob.N
    S, T = F + Q + N, F + Q + N + 1
    opt = np.flatnonzero(allowed & ((choice[prob.opt_row] != np.arange(len(allowed))) | out[prob.opt_row]))
    kept, gone = np.flatnonzero(~out), np.flatnonzero(out)
    lost = np.bincount(prob.opt_l[choice[gone]], minlength=N)
    tails = np.concatenate([np.full(len(gone), S), prob.opt_row[opt], F + pairs.of[choice[kept]],
                            F + np.arange(Q), F + Q + pairs.l, F + Q + np.arange(N)])
    heads = np.concatenate([gone, F + pairs.of[opt], kept, F + Q + pairs.l, F + np.arange(Q), np.full(N, T)])
    caps = np.concatenate([np.ones(len(gone) + len(opt) + len(kept), dtype=np.int64), room, spare, lost])
    keep = np.flatnonzero(caps > 0)
    mf = max_flow.SimpleMaxFlow()
    arcs = mf.add_arcs_with_capacity(tails[keep], heads[keep], caps[keep])
    if mf.solve(S, T) != mf.OPTIMAL or mf.optimal_flow() < len(gone):
        return None
    flow = np.zeros(len(caps), dtype=np.int64)
    flow[keep] = mf.flows(arcs)
    is_opt = np.zeros(len(caps), dtype=bool)
    is_opt[len(gone):len(gone) + len(opt)] = True
    taken = opt[flow[is_opt] > 0]
    new = choice.copy()
    new[prob.opt_row[taken]] = taken
    return new


# ---- convex costs -----------------------------------------------------------------------------------------------

def by_convex_flow(prob: FailoverProblem, choice: np.ndarray, iterations: int) -> np.ndarray:
    """The best choice (``sort_key``) over ``iterations`` convex min-cost flows, or ``choice`` when none beats
    it; the rows at the worst spread weigh ``ROW_WEIGHT_STEP`` times more in each next solve."""
    pairs = _Pairs.of_problem(prob)
    weight = np.ones(prob.N, dtype=np.int64)
    best, best_key = choice, sort_key(prob, choice)
    for _ in range(iterations):
        new = _with_topic_rounds(prob, choice, lambda allowed: _convex_step(prob, pairs, choice, weight, allowed))
        if new is None:
            break
        key = sort_key(prob, new)
        if key < best_key:
            best, best_key = new, key
        sp = spreads(prob, new)
        weight = np.minimum(np.where(sp == sp.max(), weight * ROW_WEIGHT_STEP, weight), ROW_WEIGHT_MAX)
    return best


def _convex_step(prob: FailoverProblem, pairs: _Pairs, choice: np.ndarray, weight: np.ndarray,
                 allowed: np.ndarray) -> np.ndarray:
    """One min-cost flow: rows -> pairs (a pair change costs 1, a leader change 2) -> leaders (the j-th unit of
    a pair costs by the deviation it brings its cell to), each leader receiving as many rows as it leads now."""
    N, F, Q = prob.N, prob.F, len(pairs)
    L, M = loads(prob, choice)
    net = Network()
    rnode, qnode, lnode = net.nodes(F), net.nodes(Q), net.nodes(N)
    supply = np.zeros(net.num_nodes, dtype=np.int64)
    supply[rnode] = 1
    supply[lnode] = -(L - prob.fixed_L)
    net.set_supply(supply)
    opt = np.flatnonzero(allowed)
    cost = np.where(prob.opt_l[opt] == prob.ref_lead[prob.opt_row[opt]], 1, 2)
    cost[prob.ref_opt[prob.opt_row[opt]] == opt] = 0
    arcs = net.add(rnode[prob.opt_row[opt]], qnode[pairs.of[opt]], 1, cost)
    units = np.bincount(pairs.of[opt], minlength=Q)
    q = np.repeat(np.arange(Q), units)
    j = np.arange(len(q)) - np.repeat(np.cumsum(units) - units, units) + 1
    net.add(qnode[q], lnode[pairs.l[q]], 1, _unit_costs(prob, pairs, L, M, weight, q, j))
    flows = solve_min_cost(net)[0]
    taken = opt[flows[arcs] > 0]
    new = choice.copy()
    new[prob.opt_row[taken]] = taken
    return new


def _unit_costs(prob: FailoverProblem, pairs: _Pairs, L: np.ndarray, M: np.ndarray, weight: np.ndarray,
                q: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Cost of the j-th unit on pair q: COST_SCALE x its row's weight x COST_BASE ** (the deviation from its
    row's mean, in leaders, of the cell it fills, above the lowest such deviation; capped). Non-decreasing in j
    (convex), so a pair's cheap units fill first. Leaders are held, so the means are the start's."""
    D, ql, qf = prob.D, pairs.l[q], pairs.f[q]
    n = np.maximum(prob.valid.sum(axis=1), 1)
    mean = np.where(prob.valid, values(prob, L, M), 0).sum(axis=1) / n
    dev = (values(prob, L, prob.fixed_M)[ql, qf] + D * j - mean[ql]) / D
    e = np.clip(dev - dev.min(initial=0.0), 0, COST_EXPONENT_MAX)
    return np.rint(COST_SCALE * weight[ql] * COST_BASE ** e).astype(np.int64)


# ---- per-topic leader intervals ------------------------------------------------------------------------------

def _with_topic_rounds(prob: FailoverProblem, choice: np.ndarray, solve) -> np.ndarray | None:
    """``solve(allowed)`` until its answer keeps every topic's leader intervals (no topics: once)."""
    allowed = np.ones(len(prob.opt_row), dtype=bool)
    if prob.topic_of is None:
        return solve(allowed)
    allowed = _topic_room(prob, choice)
    for _ in range(TOPIC_ROUNDS):
        new = solve(allowed)
        if new is None:
            return None
        bad = _topic_offenders(prob, choice, new)
        if not len(bad):
            return new
        allowed[bad] = False
    return None


def _topic_leaders(prob: FailoverProblem, choice: np.ndarray) -> np.ndarray:
    TL = np.zeros_like(prob.tlo)
    np.add.at(TL, (prob.topic_of, prob.opt_l[choice]), 1)
    return TL


def _topic_room(prob: FailoverProblem, choice: np.ndarray) -> np.ndarray:
    """Options allowed on their own: the same leader, or a new leader whose topic cell is below its ceiling
    while the old leader's is above its floor."""
    TL = _topic_leaders(prob, choice)
    t = prob.topic_of[prob.opt_row]
    old = prob.opt_l[choice][prob.opt_row]
    new = prob.opt_l
    return (new == old) | ((TL[t, new] < prob.thi[t, new]) & (TL[t, old] > prob.tlo[t, old]))


def _topic_offenders(prob: FailoverProblem, choice: np.ndarray, new: np.ndarray) -> np.ndarray:
    """Options to forbid where ``new`` overfills (empties) a topic's cell: of the rows that moved in (out), the
    last ones beyond the cell's room lose that move (may not take that leader; must keep their own)."""
    TL = _topic_leaders(prob, new)
    excess_in = np.maximum(TL - prob.thi, 0).ravel()
    excess_out = np.maximum(prob.tlo - TL, 0).ravel()
    if not (excess_in.any() or excess_out.any()):
        return np.zeros(0, dtype=np.int64)
    N = prob.N
    moved = np.flatnonzero(prob.opt_l[new] != prob.opt_l[choice])
    to, frm = prob.opt_l[new[moved]], prob.opt_l[choice[moved]]
    banned = np.full(prob.F, -1, dtype=np.int64)  # a leader the row may not take
    kept = np.full(prob.F, -1, dtype=np.int64)  # the leader the row must keep
    for leader, excess, into in ((to, excess_in, banned), (frm, excess_out, kept)):
        cell = prob.topic_of[moved] * N + leader
        hit = excess[cell] > 0
        rows, cell, leader = moved[hit], cell[hit], leader[hit]
        order = np.lexsort((-rows, cell))  # per cell, the last rows first
        drop = order[rank(cell[order]) < excess[cell[order]]]
        into[rows[drop]] = leader[drop]
    r = prob.opt_row
    bad = ((banned[r] >= 0) & (prob.opt_l == banned[r])) | ((kept[r] >= 0) & (prob.opt_l != kept[r]))
    return np.flatnonzero(bad)
