"""Independent oracles for the failover stage (``flowbalance.stages.failover``): nothing here imports flowbalance.

A ``Case`` is a plain cluster: broker ids with integer weights and a removed flag, and per partition its topic,
its replica list in the start order (what stages 2 + 3 hand the failover stage) and whether it may be reordered.

The problem, derived here from its definition, not from the stage's code:

* a partition that may be reordered and holds at least two live replicas takes any (leader, first follower) pair
  of two distinct live replicas; every other partition keeps the start's order;
* every live broker leads within [floor, ceil] of its weighted share of all partitions (a removed one: [0, 0]),
  widened to the start's count where the start is outside; optionally every topic's leaders too (live brokers,
  [floor, ceil] of the broker's share of the topic's partitions, widened the same way);
* failing live broker f hands each partition it leads to its first follower: survivor b (live, not f) then leads
  ``L_b + M[f, b]``; f's spread is max - min over the survivors of that less the survivor's share of the
  survivors' total by weight. The worst spread is the largest over f.

``brute_force`` enumerates every choice (tiny cases, numpy over all combinations, exact integer arithmetic
for the spreads); ``cpsat_optimum`` is a CP-SAT model with one boolean per (partition, pair) (equal weights).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from ortools.sat.python import cp_model


@dataclass(frozen=True)
class Case:
    ids: tuple[int, ...]
    weight: tuple[int, ...]  # integer weights (all 1: no weights)
    removed: tuple[bool, ...]
    topic: tuple[int, ...]  # per partition
    start: tuple[tuple[int, ...], ...]  # replica ids per partition, in the start order
    movable: tuple[bool, ...]

    @property
    def live(self) -> list[int]:
        return [b for b, r in zip(self.ids, self.removed) if not r]

    def w(self, b: int) -> int:
        return self.weight[self.ids.index(b)]


@dataclass(frozen=True)
class Optimum:
    worst: float  # the smallest worst spread
    at_worst: int  # with it, the fewest failed brokers at that worst (brute force only; -1 otherwise)
    lower: float  # a proven lower bound (== worst when proven)
    proven: bool


# ---- the metric --------------------------------------------------------------------------------------------

def spreads(case: Case, orders: list[tuple[int, ...]]) -> dict[int, Fraction]:
    """Per live broker f, its failover spread for the given replica orders (exact)."""
    lead = {b: 0 for b in case.ids}
    pair: dict[tuple[int, int], int] = {}
    for o in orders:
        lead[o[0]] += 1
        if len(o) > 1:
            pair[(o[0], o[1])] = pair.get((o[0], o[1]), 0) + 1
    out = {}
    live = case.live
    for f in live:
        surv = [b for b in live if b != f]
        if not surv:
            continue
        after = {b: lead[b] + pair.get((f, b), 0) for b in surv}
        tot, wsum = sum(after.values()), sum(case.w(b) for b in surv)
        dev = [Fraction(after[b]) - Fraction(tot * case.w(b), wsum) for b in surv]
        out[f] = max(dev) - min(dev)
    return out


def worst(case: Case, orders: list[tuple[int, ...]]) -> tuple[float, int]:
    """(worst spread, failed brokers at it)."""
    s = spreads(case, orders)
    if not s:
        return 0.0, 0
    w = max(s.values())
    return float(w), sum(1 for v in s.values() if v == w)


# ---- the choices ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Space:
    free: list[int]  # partitions that choose
    options: list[list[tuple[int, int]]]  # per free partition: its (leader, first follower) pairs
    lo: dict[int, int]  # leader interval per broker
    hi: dict[int, int]
    tlo: dict[tuple[int, int], int]  # (topic, live broker) -> interval (when topic leaders are kept)
    thi: dict[tuple[int, int], int]


def space(case: Case, topic_leaders: bool) -> Space:
    live = set(case.live)
    free = [p for p, (m, s) in enumerate(zip(case.movable, case.start)) if m and sum(b in live for b in s) >= 2]
    options = [[(a, b) for a in case.start[p] for b in case.start[p] if a != b and a in live and b in live]
               for p in free]
    start_lead = {b: 0 for b in case.ids}
    for s in case.start:
        start_lead[s[0]] += 1
    lo, hi = _intervals(len(case.start), case, start_lead)
    tlo: dict = {}
    thi: dict = {}
    if topic_leaders:
        for t in sorted(set(case.topic)):
            rows = [p for p, tp in enumerate(case.topic) if tp == t]
            count = {b: sum(1 for p in rows if case.start[p][0] == b) for b in case.ids}
            a, c = _intervals(len(rows), case, count)
            for b in live:
                tlo[(t, b)], thi[(t, b)] = a[b], c[b]
    return Space(free, options, lo, hi, tlo, thi)


def _intervals(total: int, case: Case, now: dict[int, int]) -> tuple[dict[int, int], dict[int, int]]:
    """[floor, ceil] of each live broker's weighted share of ``total`` ([0, 0] removed), widened to ``now``."""
    live = case.live
    wsum = sum(case.w(b) for b in live)
    lo, hi = {}, {}
    for b in case.ids:
        q = Fraction(total * case.w(b), wsum) if b in live else Fraction(0)
        lo[b], hi[b] = min(math.floor(q), now[b]), max(math.ceil(q), now[b])
    return lo, hi


def orders_of(case: Case, sp: Space, picks: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Replica orders with free partition i taking option picks[i] (other replicas after, in start order)."""
    out = [tuple(s) for s in case.start]
    for p, opts, k in zip(sp.free, sp.options, picks):
        a, b = opts[k]
        out[p] = (a, b) + tuple(x for x in case.start[p] if x not in (a, b))
    return out


def keeps_intervals(case: Case, sp: Space, orders: list[tuple[int, ...]]) -> bool:
    lead = {b: 0 for b in case.ids}
    for o in orders:
        lead[o[0]] += 1
    if any(not sp.lo[b] <= lead[b] <= sp.hi[b] for b in case.ids):
        return False
    if not sp.tlo:
        return True
    cell: dict = {}
    for t, o in zip(case.topic, orders):
        cell[(t, o[0])] = cell.get((t, o[0]), 0) + 1
    return all(sp.tlo[k] <= cell.get(k, 0) <= sp.thi[k] for k in sp.tlo)


# ---- brute force ---------------------------------------------------------------------------------------------

def combinations(case: Case, topic_leaders: bool = False) -> int:
    sp = space(case, topic_leaders)
    return math.prod(len(o) for o in sp.options)


def brute_force(case: Case, topic_leaders: bool = False) -> Optimum:
    """Every choice (numpy over all combinations; exact integer spreads, divided once at the end)."""
    sp = space(case, topic_leaders)
    ids = list(case.ids)
    pos = {b: i for i, b in enumerate(ids)}
    N = len(ids)
    grid = np.array(list(itertools.product(*[range(len(o)) for o in sp.options])), dtype=np.int64)
    grid = grid.reshape(len(grid), len(sp.free))
    C = len(grid)
    lead = np.zeros((C, N), dtype=np.int64)
    pair = np.zeros((C, N, N), dtype=np.int64)
    free = set(sp.free)
    for p, s in enumerate(case.start):  # the fixed partitions
        if p not in free:
            lead[:, pos[s[0]]] += 1
            if len(s) > 1:
                pair[:, pos[s[0]], pos[s[1]]] += 1
    for i, opts in enumerate(sp.options):
        a = np.array([pos[x] for x, _ in opts])[grid[:, i]]
        b = np.array([pos[y] for _, y in opts])[grid[:, i]]
        np.add.at(lead, (np.arange(C), a), 1)
        np.add.at(pair, (np.arange(C), a, b), 1)
    ok = np.all((lead >= [sp.lo[b] for b in ids]) & (lead <= [sp.hi[b] for b in ids]), axis=1)
    if sp.tlo:
        ok &= _topic_ok(case, sp, grid, pos)
    w = np.array([case.w(b) for b in ids], dtype=np.int64)
    rows = []
    for f in case.live:
        surv = np.array([pos[b] for b in case.live if b != f])
        if not len(surv):
            continue
        after = lead[:, surv] + pair[:, pos[f], surv]
        wsum = int(w[surv].sum())
        dev = after * wsum - after.sum(axis=1, keepdims=True) * w[surv][None, :]
        rows.append((dev.max(axis=1) - dev.min(axis=1)) / wsum)
    sp_all = np.column_stack(rows) if rows else np.zeros((C, 1))
    worst_c = sp_all.max(axis=1)
    best = float(worst_c[ok].min())
    at = (np.abs(sp_all - best) <= 1e-9).sum(axis=1)
    count = int(at[ok & (np.abs(worst_c - best) <= 1e-9)].min())
    return Optimum(best, count, best, True)


def _topic_ok(case: Case, sp: Space, grid: np.ndarray, pos: dict[int, int]) -> np.ndarray:
    free = set(sp.free)
    ok = np.ones(len(grid), dtype=bool)
    for t in sorted(set(case.topic)):
        cnt = {b: np.zeros(len(grid), dtype=np.int64) for b in case.ids}
        for p, s in enumerate(case.start):
            if case.topic[p] == t and p not in free:
                cnt[s[0]] += 1
        for i, (p, opts) in enumerate(zip(sp.free, sp.options)):
            if case.topic[p] == t:
                leaders = np.array([x for x, _ in opts])[grid[:, i]]
                for b in case.ids:
                    cnt[b] += leaders == b
        for b in case.live:
            ok &= (cnt[b] >= sp.tlo[(t, b)]) & (cnt[b] <= sp.thi[(t, b)])
    return ok


# ---- CP-SAT (equal weights) ------------------------------------------------------------------------------------

def cpsat_optimum(case: Case, topic_leaders: bool = False, seconds: float = 20.0) -> Optimum:
    """Booleans x[p, k] (free partition p takes its k-th pair), leader and pair counts as sums, per failed broker
    its survivors' largest and smallest load (max / min equalities), W >= every difference; minimize W, from the
    start's order as a complete hint. One worker, fixed seed, deterministic time limit."""
    assert len(set(case.weight)) == 1, "the CP-SAT oracle is for equal weights"
    sp = space(case, topic_leaders)
    m = cp_model.CpModel()
    sums = _choice_sums(case, sp, m)
    start_lead, start_pair = _counts(case.start)
    start_lead = {b: start_lead.get(b, 0) for b in case.ids}
    L = {}
    for b in case.ids:
        L[b] = m.new_int_var(sp.lo[b], sp.hi[b], "")
        m.add(L[b] == sums.lead_const[b] + sum(sums.lead[b]))
        m.add_hint(L[b], start_lead[b])
    for (t, b), a in sp.tlo.items():
        m.add_linear_constraint(sums.cell_const.get((t, b), 0) + sum(sums.cell.get((t, b), [])), a, sp.thi[(t, b)])
    W = m.new_int_var(0, len(case.start), "W")
    start_w = 0
    for f in case.live:
        load = {b: L[b] + sums.pair_const.get((f, b), 0) + sum(sums.pair.get((f, b), [])) for b in case.live if b != f}
        if load:
            at_start = {b: start_lead[b] + start_pair.get((f, b), 0) for b in load}
            start_w = max(start_w, _row_spread(m, W, load, at_start, len(case.start)))
    m.add_hint(W, start_w)
    m.minimize(W)
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.random_seed = 7
    s.parameters.max_deterministic_time = seconds
    status = s.solve(m)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE), "the oracle found no choice (the start is one)"
    return Optimum(float(s.objective_value), -1, float(math.ceil(s.best_objective_bound - 1e-9)),
                   status == cp_model.OPTIMAL)


@dataclass
class _Sums:
    """The model's booleans grouped by leader, (leader, follower) and (topic, leader), and the fixed part."""

    lead: dict
    pair: dict
    cell: dict
    lead_const: dict
    pair_const: dict
    cell_const: dict


def _choice_sums(case: Case, sp: Space, m: cp_model.CpModel) -> _Sums:
    free = set(sp.free)
    fixed = [o for p, o in enumerate(case.start) if p not in free]
    lead_const, pair_const = _counts(fixed)
    cell_const: dict = {}
    for p, o in enumerate(case.start):
        if p not in free:
            cell_const[(case.topic[p], o[0])] = cell_const.get((case.topic[p], o[0]), 0) + 1
    sums = _Sums({b: [] for b in case.ids}, {}, {}, {b: lead_const.get(b, 0) for b in case.ids}, pair_const,
                 cell_const)
    for p, opts in zip(sp.free, sp.options):
        row = [m.new_bool_var("") for _ in opts]
        m.add_exactly_one(row)
        for (a, b), v in zip(opts, row):
            m.add_hint(v, (a, b) == tuple(case.start[p][:2]))  # the start's order: a feasible choice
            sums.lead[a].append(v)
            sums.pair.setdefault((a, b), []).append(v)
            sums.cell.setdefault((case.topic[p], a), []).append(v)
    return sums


def _counts(orders) -> tuple[dict, dict]:
    """Leaders per broker and (leader, first follower) counts of some replica orders."""
    lead: dict = {}
    pair: dict = {}
    for o in orders:
        lead[o[0]] = lead.get(o[0], 0) + 1
        if len(o) > 1:
            pair[(o[0], o[1])] = pair.get((o[0], o[1]), 0) + 1
    return lead, pair


def _row_spread(m: cp_model.CpModel, W, load: dict, at_start: dict, n: int) -> int:
    """W >= (largest - smallest survivor load) of one failed broker; returns that spread at the start."""
    loads = []
    for b, expr in load.items():
        v = m.new_int_var(0, 2 * n, "")
        m.add(v == expr)
        m.add_hint(v, at_start[b])
        loads.append(v)
    hi, lo = m.new_int_var(0, 2 * n, ""), m.new_int_var(0, 2 * n, "")
    m.add_max_equality(hi, loads)
    m.add_min_equality(lo, loads)
    m.add_hint(hi, max(at_start.values()))
    m.add_hint(lo, min(at_start.values()))
    m.add(W >= hi - lo)
    return max(at_start.values()) - min(at_start.values())
