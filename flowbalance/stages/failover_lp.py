"""The failover stage's linear relaxation: a lower bound proven by one min-cost flow, and leader counts to aim at.

The relaxation (``failover_problem`` explains rows and values): the count ``n[g, (l, f)]`` of each group of
interchangeable free rows taking each option may be fractional; leader counts ``L_b`` within their intervals; per
failed broker f, ``h_f`` >= every survivor's value and ``l_f`` <= it; minimize W >= every ``h_f - l_f``. Its
optimum bounds the worst spread from below, and it sees what the counting bounds (``failover_bound``) cannot:
that each partition has one leader and each broker one leader count for every row at once. (Kafka-placed
clusters: 42 brokers, counting bound 1, relaxation 1.68, so 2; 100 brokers: 1 and 2.29, so 3.)

PDLP (a first-order method, one thread, a fixed number of iterations: deterministic) solves it approximately, so
its objective proves nothing by itself. The proof is Lagrangian: for multipliers ``a[f, b], c[f, b] >= 0`` with
``sum_b a[f, b] = sum_b c[f, b] = g_f``, every choice has

    sum_{f, b} (a - c)[f, b] V[f, b]  <=  sum_f g_f (max_b V[f, b] - min_b V[f, b])  <=  (sum_f g_f) x worst,

and the smallest left side over every choice is one min-cost flow (groups -> leaders, each unit on its cheapest
option, leader counts within their intervals: the values are linear in the choice). The multipliers are PDLP's
duals of the value constraints, made integers with those sums exact; the flow's optimum divided by the sum of
the g_f, rounded up, is the bound (exact integer arithmetic).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from ortools.graph.python import min_cost_flow
from ortools.pdlp import solve_log_pb2, solvers_pb2
from ortools.pdlp.python import pdlp

from .failover_bound import bounds
from .failover_exact import count_terms
from .failover_problem import FailoverProblem, loads, row_extremes, term_values, terms, values

LP_MAX_CELLS = 25_000  # (failed, survivor) pairs: the relaxation has two constraints per pair
LP_MAX_TERMS = 120_000  # count variables
LP_WORK = 800_000_000  # iterations x nonzeros PDLP may spend (about 2 s on 100 brokers)
LP_CHUNK = 500  # iterations between proofs (each proof is one min-cost flow)
LP_MAX_CHUNKS = 6  # and at most this many chunks, ending early when two in a row prove nothing more
SETTLED_RESIDUAL, SETTLED_MARGIN = 0.1, 0.1  # leaders; see ``_settled``
MULTIPLIER_SUM = {True: 1 << 24, False: 1 << 16}  # sum of the integer multipliers, without / with weights


@dataclass(frozen=True)
class LpResult:
    bound: int  # scaled lower bound on the worst spread, proven by the flow
    leaders: np.ndarray  # leader counts per broker near the relaxation's, within the intervals, the same total
    value: float  # the relaxation's objective as PDLP left it, in leaders (not a proof)
    iterations: int


def proven_bound(prob: FailoverProblem, choice: np.ndarray) -> int:
    """The best scaled bound proven without search, for a certificate: the rows' and blocks' counting bounds,
    and the relaxation's where it fits and the counting bounds leave ``choice`` above them (then started from
    ``choice``). Deterministic, computed from the plan alone."""
    bound = bounds(prob, choice, blocks=True)[1]
    worst = int((lambda hi, lo: (hi - lo).max())(*row_extremes(prob, values(prob, *loads(prob, choice)))))
    if worst > bound and lp_fits(prob):
        bound = max(bound, lp_bound(prob, choice, floor=bound).bound)
    return bound


def lp_fits(prob: FailoverProblem) -> bool:
    """Whether the relaxation is small enough to build and solve here."""
    return int(prob.valid.sum()) <= LP_MAX_CELLS and count_terms(_brokers_only(prob)) <= LP_MAX_TERMS


def _brokers_only(prob: FailoverProblem) -> FailoverProblem:
    """The problem without topic leader intervals: the relaxation leaves them out (its bound holds with them:
    they only narrow the choices), so rows of every topic with the same replica set form one group."""
    return prob if prob.topic_of is None else replace(prob, topic_of=None, tlo=None, thi=None)


def lp_bound(prob: FailoverProblem, choice: np.ndarray, work: int = LP_WORK, floor: int = 0) -> LpResult:
    """The relaxation solved by PDLP from ``choice`` (a feasible choice: starting there proves in 500 iterations
    what takes 1,500 from zero on 100 brokers), in chunks of ``LP_CHUNK`` iterations, proven after each, until
    the proven bound reaches the choice's worst spread, PDLP settles (``_settled``), or ``work`` is spent.
    ``floor``: a bound proven already (the counting bounds): PDLP also settles when its objective shows it cannot
    prove more than that (on the fleet benchmark's 200 clusters, 119 of 178 stage relaxations prove nothing above
    the counting bound; 86 of them see W = 0 after one chunk)."""
    prob = _brokers_only(prob)
    lp = _Relaxation(prob)
    target = int((lambda hi, lo: (hi - lo).max())(*row_extremes(prob, values(prob, *loads(prob, choice)))))
    params = solvers_pb2.PrimalDualHybridGradientParams()
    params.num_threads = 1
    params.termination_criteria.simple_optimality_criteria.eps_optimal_relative = 1e-4
    params.termination_criteria.simple_optimality_criteria.eps_optimal_absolute = 1e-4
    chunks = min(max(work // max(lp.qp.constraint_matrix.nnz * LP_CHUNK, 1), 1), LP_MAX_CHUNKS)
    best, start, done, idle = 0, lp.primal_of(choice), 0, 0
    for _ in range(chunks):
        params.termination_criteria.iteration_limit = LP_CHUNK
        res = pdlp.primal_dual_hybrid_gradient(lp.qp, params, start)
        done += int(res.solve_log.iteration_count)
        proven = lp.proven(np.asarray(res.dual_solution))
        idle = idle + 1 if proven <= best else 0
        best = max(best, proven)
        if best >= target or idle >= 2 or _settled(res, max(best, floor), prob.D) or \
                res.solve_log.termination_reason != solve_log_pb2.TERMINATION_REASON_ITERATION_LIMIT:
            break
        start = pdlp.PrimalAndDualSolution()
        start.primal_solution, start.dual_solution = res.primal_solution, res.dual_solution
    x = np.asarray(res.primal_solution)
    return LpResult(best, lp.leaders(x), float(x[lp.iW]), done)


def _settled(res, best: int, D: int) -> bool:
    """PDLP's iterate is nearly feasible and its objective (plus a margin) is within the bound already proven, or
    is 0 (the worst spread W at its floor): more iterations would not prove more (a rule for effort only; the
    bound is the flow's). At W = 0 the relaxation balances every failover exactly, so its optimum is 0 up to
    PDLP's tolerance: 12 of 50 relaxations on the fleet benchmark's first 40 clusters end there after one chunk
    (no later chunk proved anything, at 0.1-0.5 s each)."""
    info = list(res.solve_log.solution_stats.convergence_information)
    if not info:
        return False
    c = info[0]
    at_floor = c.primal_objective <= 0.0
    return c.l_inf_primal_residual < SETTLED_RESIDUAL and \
        (at_floor or math.ceil((c.primal_objective + SETTLED_MARGIN) * D) <= best)


class _Relaxation:
    """The LP (module doc) in leaders (values divided by D), with the index of each block of variables and
    constraints; ``proven`` turns duals into a proof."""

    def __init__(self, prob: FailoverProblem):
        p, t = prob, terms(prob)
        self.p, self.t = p, t
        N, K, G = p.N, len(t.g), len(t.size)
        self.rows = np.flatnonzero(p.valid.any(axis=1))
        R = len(self.rows)
        self.cells = np.argwhere(p.valid)
        C = len(self.cells)
        self.iL, ih, il, self.iW = K, K + N, K + N + R, K + N + 2 * R
        rpos = np.full(N, -1, dtype=np.int64)
        rpos[self.rows] = np.arange(R)
        cell_of = np.full((N, N), -1, dtype=np.int64)
        cell_of[self.cells[:, 0], self.cells[:, 1]] = np.arange(C)
        tc = cell_of[t.l, t.f]
        ok = np.flatnonzero(tc >= 0)
        f, b = self.cells[:, 0], self.cells[:, 1]
        self.c0 = G + N  # the max cells, then the min cells, then the rows' W constraints
        blocks = [(t.g, np.arange(K), np.ones(K)),
                  (G + np.r_[np.arange(N), t.l], np.r_[self.iL + np.arange(N), np.arange(K)],
                   np.r_[np.ones(N), -np.ones(K)])]
        for first, col in ((self.c0, ih), (self.c0 + C, il)):
            blocks.append((first + np.r_[np.arange(C), tc[ok], np.arange(C)],
                           np.r_[self.iL + b, ok, col + rpos[f]], np.r_[np.ones(C), np.ones(len(ok)), -np.ones(C)]))
        w0 = self.c0 + 2 * C
        blocks.append((w0 + np.tile(np.arange(R), 3), np.r_[np.full(R, self.iW), ih + np.arange(R), il + np.arange(R)],
                       np.r_[np.ones(R), -np.ones(R), np.ones(R)]))
        rr, cc, vv = (np.concatenate([blk[i] for blk in blocks]) for i in range(3))
        rhs = p.R[f, b] / p.D - p.fixed_M[f, b]  # L_b + M[f, b] - h_f <= rhs <= L_b + M[f, b] - l_f
        inf = np.inf
        qp = self.qp = pdlp.QuadraticProgram()
        nv, nc = self.iW + 1, w0 + R
        qp.resize_and_initialize(nv, nc)
        qp.objective_vector = np.r_[np.zeros(nv - 1), 1.0]
        qp.constraint_matrix = sp.csr_matrix((vv.astype(float), (rr, cc)), shape=(nc, nv))
        qp.constraint_lower_bounds = np.r_[t.size, p.fixed_L, np.full(C, -inf), rhs, np.zeros(R)].astype(float)
        qp.constraint_upper_bounds = np.r_[t.size, p.fixed_L, rhs, np.full(C, inf), np.full(R, inf)].astype(float)
        qp.variable_lower_bounds = np.r_[np.zeros(K), p.lo, np.full(2 * R, -inf), 0.0].astype(float)
        qp.variable_upper_bounds = np.r_[np.full(K, inf), p.hi, np.full(2 * R + 1, inf)].astype(float)
        self.inner = _InnerFlow(p, t)

    def primal_of(self, choice: np.ndarray) -> pdlp.PrimalAndDualSolution:
        """A starting point: the choice's counts, leaders, row extremes and worst spread; duals zero."""
        p = self.p
        L, M = loads(p, choice)
        hi, lo = row_extremes(p, values(p, L, M))
        start = pdlp.PrimalAndDualSolution()
        start.primal_solution = np.r_[term_values(p, self.t, choice), L, hi[self.rows] / p.D, lo[self.rows] / p.D,
                                      (hi - lo).max() / p.D].astype(float)
        start.dual_solution = np.zeros(self.qp.constraint_matrix.shape[0])
        return start

    def leaders(self, x: np.ndarray) -> np.ndarray:
        """The relaxation's leader counts rounded, keeping the total and the intervals (largest remainders)."""
        p = self.p
        frac = np.clip(x[self.iL:self.iL + p.N], p.lo, p.hi)
        out = np.clip(np.floor(frac + 1e-9).astype(np.int64), p.lo, p.hi)
        rest = frac - out
        for _ in range(p.N):  # each pass moves every broker by at most one; one pass nearly always does
            short = int(p.fixed_L.sum()) + p.F - int(out.sum())
            if short == 0:
                break
            room = out < p.hi if short > 0 else out > p.lo
            order = np.lexsort((np.arange(p.N), -rest if short > 0 else rest))
            pick = order[room[order]][:abs(short)]
            out[pick] += 1 if short > 0 else -1
            rest[pick] = 0.0
        return out

    def proven(self, dual: np.ndarray) -> int:
        """The scaled bound the duals of the value constraints prove (module doc); 0 when they prove nothing."""
        p, C = self.p, len(self.cells)
        a = np.abs(dual[self.c0:self.c0 + C])
        c = np.abs(dual[self.c0 + C:self.c0 + 2 * C])
        A, B = np.zeros((p.N, p.N)), np.zeros((p.N, p.N))
        A[self.cells[:, 0], self.cells[:, 1]] = a
        B[self.cells[:, 0], self.cells[:, 1]] = c
        sa, sb = A.sum(axis=1), B.sum(axis=1)
        g = np.where((sa > 0) & (sb > 0), (sa + sb) / 2, 0.0)
        if g.sum() <= 0:
            return 0
        gi = np.floor(g / g.sum() * MULTIPLIER_SUM[p.D == 1]).astype(np.int64)
        Ai = _round_rows(A / np.maximum(sa, 1e-300)[:, None] * gi[:, None], gi)
        Bi = _round_rows(B / np.maximum(sb, 1e-300)[:, None] * gi[:, None], gi)
        if (Ai.sum(axis=1) != gi).any() or (Bi.sum(axis=1) != gi).any():
            return 0  # float rounding left a row's sums unequal: no proof from these duals
        low = self.inner.smallest(np.where(p.valid, Ai - Bi, 0))
        return max(-(-low // int(gi.sum())), 0)


class _InnerFlow:
    """min over every choice of sum (a - c)[f, b] V[f, b]: groups -> leaders (each unit on its cheapest follower
    for the multipliers), leader counts within their intervals."""

    def __init__(self, p: FailoverProblem, t):
        self.p, self.t = p, t
        gl, self.arc_of = np.unique(t.g * p.N + t.l, return_inverse=True)
        self.arc_of = self.arc_of.ravel()
        self.arc_g, self.arc_l = gl // p.N, gl % p.N
        self.lo = np.maximum(p.lo - p.fixed_L, 0)
        self.hi = p.hi - p.fixed_L

    def smallest(self, w: np.ndarray) -> int:
        """The exact minimum (scaled values, integer multipliers ``w`` = a - c on valid cells)."""
        p, t, N = self.p, self.t, self.p.N
        col = w.sum(axis=0)  # L_b appears in every row's value of survivor b
        cost = p.D * (w[t.l, t.f] + col[t.l])
        order = np.lexsort((cost, self.arc_of))
        first = order[np.unique(self.arc_of[order], return_index=True)[1]]  # cheapest option per (group, leader)
        G = len(t.size)
        mcf = min_cost_flow.SimpleMinCostFlow()
        arc_cost = cost[first] - cost[first].min()
        tails = np.r_[self.arc_g, G + np.arange(N)]
        heads = np.r_[G + self.arc_l, np.full(N, G + N)]
        caps = np.r_[t.size[self.arc_g], self.hi - self.lo]
        arcs = mcf.add_arcs_with_capacity_and_unit_cost(tails, heads, caps, np.r_[arc_cost, np.zeros(N, np.int64)])
        supply = np.r_[t.size, -self.lo, -(int(t.size.sum()) - int(self.lo.sum()))]
        mcf.set_nodes_supplies(np.arange(G + N + 1), supply)
        if mcf.solve() != mcf.OPTIMAL:
            return 0
        flow = mcf.flows(arcs)[:len(first)]
        L = p.fixed_L + np.bincount(self.arc_l, weights=flow, minlength=N).astype(np.int64)
        pair = t.l[first] * N + t.f[first]
        M = p.fixed_M + np.bincount(pair, weights=flow, minlength=N * N).astype(np.int64).reshape(N, N)
        return int((w * np.where(p.valid, values(p, L, M), 0)).sum())


def _round_rows(x: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Non-negative rows rounded to integers with each row summing to ``total`` exactly (largest remainders)."""
    fl = np.floor(x).astype(np.int64)
    short = total - fl.sum(axis=1)
    order = np.argsort(-(x - fl), axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(x.shape[1]), x.shape), axis=1)
    return fl + (rank < short[:, None])
