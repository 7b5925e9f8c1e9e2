"""The failover stage's exact method on small and medium clusters: a CP-SAT model over order counts.

Free rows with the same live replica set (and topic, when topic leader intervals are kept) are interchangeable:
the metric sees only how many of them take each (leader, first follower) option. So the model has one integer
``n[g, (l, f)]`` per group g and option of the group, summing to the group's size; leader counts (within their
intervals), per-topic leader counts, and pair counts are sums of them; per failed broker f two variables bound
the largest and smallest scaled value over its survivors, and W bounds every row's difference. Lexicographically:
(b) minimize W; (c) with W at its best, maximize the rows below it; (d) keep the most leaders, then pairs, of the
reference order. Each level is solved within its share of a deterministic time budget, by one worker with a fixed
seed, so the same input always gives the same answer; a level not proven optimal keeps its best solution, and
(b)'s proven bound (CP-SAT's, or the counting bound when larger) is reported.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ..lazy import cp_model  # CP-SAT, imported when a model is first built

from .failover_problem import BIG, FailoverProblem, Terms, choice_from_terms, term_values, terms, values

SEED = 20240611
SHARE_B, SHARE_C = 0.75, 0.9  # of the budget: level (b) up to 75 %, (b) + (c) up to 90 %, (d) the rest


@dataclass(frozen=True)
class ExactResult:
    choice: np.ndarray
    bound: int  # scaled lower bound on the worst spread (level (b))
    proven: bool  # level (b) solved to optimality: the worst spread of ``choice`` equals ``bound``
    proven_count: bool  # level (c) too: no choice with that worst has fewer rows at it


def count_terms(prob: FailoverProblem) -> int:
    """How many count variables the model would have (the size test of the caller)."""
    return len(terms(prob).g)


def solve_exact(prob: FailoverProblem, hint: np.ndarray, row_lb: np.ndarray, budget: float,
                floor: int = 0) -> ExactResult:
    """Levels (b), (c), (d) from ``hint`` (a feasible choice); ``row_lb``: scaled lower bounds per row, ``floor``
    on the worst spread (both proven elsewhere: they only help CP-SAT prove). Levels (c) and (d) run only when
    (b) is proven: a worst spread not known to be the least does not deserve the time."""
    t = terms(prob)
    model = _Model(prob, t)
    m = model.m
    for h, lo, lb in zip(model.hi, model.lo, row_lb[model.rows].tolist()):
        m.add(h - lo >= lb)
    m.add(model.W >= floor)
    best = term_values(prob, t, hint)
    model.hint(best)
    m.minimize(model.W)
    s, status = model.solve(SHARE_B * budget)
    spent = s.deterministic_time
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return ExactResult(hint, 0, False, False)
    best = model.counts(s)
    w_best = int(s.value(model.W))
    proven = status == cp_model.OPTIMAL
    bound = w_best if proven else max(int(np.ceil(s.best_objective_bound - 1e-9)), floor)
    if not proven:
        return ExactResult(choice_from_terms(prob, t, best), bound, False, False)
    m.add(model.W <= w_best)
    best, proven_c, spent = _fewest_at_worst(model, row_lb, w_best, best, SHARE_C * budget - spent, spent)
    best = _most_kept(model, best, budget - spent)
    return ExactResult(choice_from_terms(prob, t, best), bound, proven, proven and proven_c)


def _fewest_at_worst(model: "_Model", row_lb: np.ndarray, w_best: int, best: np.ndarray, budget: float,
                     spent: float) -> tuple[np.ndarray, bool, float]:
    """Level (c): the most rows below ``w_best`` (rows whose own bound reaches it cannot be)."""
    m = model.m
    below = [(h, lo) for h, lo, lb in zip(model.hi, model.lo, row_lb[model.rows].tolist()) if lb < w_best]
    if not below:
        return best, True, spent
    z = [m.new_bool_var("") for _ in below]
    for zf, (h, lo) in zip(z, below):
        m.add(h - lo <= w_best - 1).only_enforce_if(zf)
    model.hint(best)
    m.maximize(sum(z))
    s, status = model.solve(budget)
    spent += s.deterministic_time
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return best, False, spent
    m.add(sum(z) >= int(round(s.objective_value)))
    return model.counts(s), status == cp_model.OPTIMAL, spent


def _most_kept(model: "_Model", best: np.ndarray, budget: float) -> np.ndarray:
    """Level (d): keep the most leaders, then pairs, of the reference order (``_keep_objective``)."""
    keep = _keep_objective(model)
    if keep is None or budget <= 0:
        return best
    model.hint(best)
    model.m.maximize(keep)
    s, status = model.solve(budget)
    return model.counts(s) if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else best


def _groups(keys: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Distinct keys ascending and the positions holding each (ascending)."""
    order = np.argsort(keys, kind="stable")
    u, start = np.unique(keys[order], return_index=True)
    return u, np.split(order, start[1:])


class _Model:
    """The CP-SAT model (module doc): counts ``n``, leader counts ``Lx``, pair counts ``Mx``, row extremes
    ``hi`` / ``lo`` (rows of live brokers, ``rows``), and W."""

    def __init__(self, prob: FailoverProblem, t: Terms):
        self.p, self.t = prob, t
        m = self.m = cp_model.CpModel()
        self.n = [m.new_int_var(0, int(t.size[g]), "") for g in t.g.tolist()]
        for g, ix in zip(*_groups(t.g)):
            m.add(sum(self.n[i] for i in ix.tolist()) == int(t.size[g]))
        self.Lx = self._leaders()
        if prob.topic_of is not None:
            self._topic_cells()
        self.Mx = self._pairs()
        self.rows = np.flatnonzero(prob.valid.any(axis=1))
        self.hi, self.lo = self._rows()
        self.W = m.new_int_var(0, 2 * self._span(), "W")
        for h, lo in zip(self.hi, self.lo):
            m.add(self.W >= h - lo)

    def _span(self) -> int:
        p = self.p
        return int(p.D * (p.fixed_L.sum() + p.F + 1) + np.abs(p.R).max() + 1)

    def _leaders(self) -> list:
        """Leader count per broker: a variable within [lo, hi] where free rows can add to it, else a constant."""
        p, t = self.p, self.t
        out = [int(x) for x in p.fixed_L]
        for b, ix in zip(*_groups(t.l)):
            v = self.m.new_int_var(int(p.lo[b]), int(p.hi[b]), "")
            self.m.add(v == int(p.fixed_L[b]) + sum(self.n[i] for i in ix.tolist()))
            out[int(b)] = v
        return out

    def _topic_cells(self) -> None:
        p, t = self.p, self.t
        topic = np.zeros(len(t.size), dtype=np.int64)
        topic[t.group] = p.topic_of
        for key, ix in zip(*_groups(topic[t.g] * p.N + t.l)):
            tt, b = divmod(int(key), p.N)
            self.m.add_linear_constraint(sum(self.n[i] for i in ix.tolist()), int(p.tlo[tt, b]), int(p.thi[tt, b]))

    def _pairs(self) -> dict[int, object]:
        p, t, N = self.p, self.t, self.p.N
        out: dict[int, object] = {}
        for key, ix in zip(*_groups(t.l * N + t.f)):
            a, f = divmod(int(key), N)
            fixed = int(p.fixed_M[a, f])
            v = self.m.new_int_var(fixed, fixed + int(t.size[t.g[ix]].sum()), "")
            self.m.add(v == fixed + sum(self.n[i] for i in ix.tolist()))
            out[int(key)] = v
        return out

    def _rows(self) -> tuple[list, list]:
        p, m, N, D = self.p, self.m, self.p.N, self.p.D
        span = self._span()
        his, los = [], []
        for f in self.rows.tolist():
            h, lo = m.new_int_var(-span, span, ""), m.new_int_var(-span, span, "")
            for b in np.flatnonzero(p.valid[f]).tolist():
                pair = self.Mx.get(f * N + b, int(p.fixed_M[f, b]))
                val = D * self.Lx[b] + D * pair - int(p.R[f, b])
                m.add(h >= val)
                m.add(lo <= val)
            his.append(h)
            los.append(lo)
        return his, los

    def counts(self, s: cp_model.CpSolver) -> np.ndarray:
        return np.array([s.value(v) for v in self.n], dtype=np.int64)

    def hint(self, val: np.ndarray) -> None:
        """A complete hint (counts, leader and pair counts, row extremes, W): CP-SAT starts from it."""
        m, p, t, N = self.m, self.p, self.t, self.p.N
        m.clear_hints()
        for v, x in zip(self.n, val.tolist()):
            m.add_hint(v, x)
        L = p.fixed_L + np.bincount(t.l, weights=val, minlength=N).astype(np.int64)
        M = p.fixed_M + np.bincount(t.l * N + t.f, weights=val, minlength=N * N).astype(np.int64).reshape(N, N)
        for b, v in enumerate(self.Lx):
            if not isinstance(v, int):
                m.add_hint(v, int(L[b]))
        for key, v in self.Mx.items():
            m.add_hint(v, int(M[key // N, key % N]))
        V = values(p, L, M)[self.rows]
        valid = p.valid[self.rows]
        hi, lo = np.where(valid, V, -BIG).max(axis=1), np.where(valid, V, BIG).min(axis=1)
        for h, low, a, b in zip(self.hi, self.lo, hi.tolist(), lo.tolist()):
            m.add_hint(h, a)
            m.add_hint(low, b)
        m.add_hint(self.W, int((hi - lo).max()))

    def solve(self, budget: float) -> tuple[cp_model.CpSolver, int]:
        s = cp_model.CpSolver()
        s.parameters.num_workers = 1
        s.parameters.random_seed = SEED
        s.parameters.max_deterministic_time = max(budget, 1e-3)
        return s, s.solve(self.m)


def _keep_objective(model: _Model):
    """(F + 1) x leaders kept + pairs kept: per group, min(chosen, rows of the group that had it) for each
    leader and each pair of the reference order."""
    p, t, m, n, N = model.p, model.t, model.m, model.n, model.p.N
    ref = p.ref_opt
    has = ref >= 0
    pair_key = (t.group[has] * N + p.opt_l[ref[has]]) * N + p.opt_f[ref[has]]
    lead_ok = p.ref_lead >= 0
    lead_key = t.group[lead_ok] * N + p.ref_lead[lead_ok]
    terms = []
    for keys, tkey, weight in ((lead_key, t.g * N + t.l, p.F + 1), (pair_key, (t.g * N + t.l) * N + t.f, 1)):
        if not len(keys):
            continue
        u, c = np.unique(keys, return_counts=True)
        tk_u, tk_ix = _groups(tkey)
        at = np.minimum(np.searchsorted(tk_u, u), len(tk_u) - 1)
        for k, cnt, a in zip(u.tolist(), c.tolist(), at.tolist()):
            if tk_u[a] != k:
                continue
            v = m.new_int_var(0, cnt, "")
            m.add(v <= sum(n[i] for i in tk_ix[a].tolist()))
            terms.append((v, weight))
    if not terms:
        return None
    return cp_model.LinearExpr.weighted_sum([v for v, _ in terms], [w for _, w in terms])
