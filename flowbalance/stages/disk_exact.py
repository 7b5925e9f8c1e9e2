"""Exact disk balancing for small problems with CP-SAT, to check the flow-based stage and to finish small cases.

One boolean per (movable partition, live broker). The lexicographic objective of ``disk_problem`` is solved as a
sequence of single-objective solves, each level fixed at its optimum before the next: a weighted sum would
overflow int64 with byte-sized terms. The search is single-threaded with a fixed seed and a deterministic time
limit, so the same input always gives the same answer.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ..lazy import cp_model  # CP-SAT, imported when a model is first built

from .disk_problem import DiskProblem, DiskScore, disk_use, score

SMALL_VARIABLES = 4000  # P * NL at most, else the caller must not call solve_exact
SEED = 20240611


@dataclass
class ExactResult:
    """The best assignment found (live positions, like ``DiskProblem.start``) and how far it is proven."""

    assign: np.ndarray | None  # int64 [P, W]: each row its positions ascending, then -1; None when none found
    score: DiskScore | None
    optimal: bool  # every lexicographic level proven optimal
    status: str  # "optimal" | "feasible" | "infeasible" | "unknown"


def _sum(vs: list, coeffs: list[int]):
    return cp_model.LinearExpr.weighted_sum(vs, coeffs)


def solve_exact(problem: DiskProblem, *, deterministic_time: float = 20.0) -> ExactResult:
    """Lexicographically optimal assignment: tolerance excess, then bytes moved, then moves (capacity is hard)."""
    p = problem
    P, NL, W = p.num_partitions, p.num_brokers, p.start.shape[1]
    if P * NL > SMALL_VARIABLES:
        raise ValueError(f"{P} partitions x {NL} brokers is above the exact solver's {SMALL_VARIABLES} variables")
    size = p.size.tolist()
    rf = (p.start >= 0).sum(axis=1).tolist()
    held = np.zeros((P, NL), dtype=bool)
    rows, cols = np.nonzero(p.start >= 0)
    held[rows, p.start[rows, cols]] = True
    orig = np.zeros((P, NL), dtype=bool)
    rows, cols = np.nonzero((p.original >= 0) & (p.original < NL))
    orig[rows, p.original[rows, cols]] = True

    m = cp_model.CpModel()
    x = [[m.new_bool_var(f"x{i}_{b}") for b in range(NL)] for i in range(P)]
    K = int(p.rack.max()) + 1 if NL else 1
    in_rack = [np.flatnonzero(p.rack == r).tolist() for r in range(K)]
    for i in range(P):
        m.add_linear_constraint(_sum(x[i], [1] * NL), rf[i], rf[i])
        for r, brokers in enumerate(in_rack):
            m.add_linear_constraint(_sum([x[i][b] for b in brokers], [1] * len(brokers)),
                                    int(p.rack_lo[i, r]), int(p.rack_hi[i, r]))

    col = [[x[i][b] for i in range(P)] for b in range(NL)]
    base = p.base_bytes.tolist()
    excess = []
    for b in range(NL):
        load = _sum(col[b], size)
        if p.capacity[b] >= 0:
            m.add(load <= int(p.capacity[b]) - base[b])
        top = max(0, base[b] + sum(size) - int(p.upper[b]))
        e = m.new_int_var(0, top, f"excess{b}")
        m.add(e >= load + (base[b] - int(p.upper[b])))
        excess.append(e)
    if p.count_lo is not None:
        for b in range(NL):
            m.add_linear_constraint(_sum(col[b], [1] * P), int(p.count_lo[b] - p.base_count[b]),
                                    int(p.count_hi[b] - p.base_count[b]))
    if p.topic_lo is not None:
        for t in range(p.topic_lo.shape[0]):
            mine = np.flatnonzero(p.topic == t).tolist()
            for b in range(NL):
                m.add_linear_constraint(_sum([x[i][b] for i in mine], [1] * len(mine)),
                                        int(p.topic_lo[t, b]), int(p.topic_hi[t, b]))

    new = [(i, b) for i in range(P) for b in range(NL) if not orig[i, b]]  # x = 1 there is an arrival
    paid = [(i, b) for i, b in new if size[i]]
    levels = [  # (variables, coefficients) of each objective, in lexicographic order
        (excess, [1] * NL),
        ([x[i][b] for i, b in paid], [size[i] for i, _ in paid]),
        ([x[i][b] for i, b in new], [1] * len(new)),
    ]
    flat = [v for row in x for v in row]
    hint = held.ravel().tolist() + np.maximum(disk_use(p, p.start) - p.upper, 0).tolist()
    solution: list[int] | None = None
    status, budget = "optimal", float(deterministic_time)
    for level, (vs, coeffs) in enumerate(levels):
        m.clear_hints()
        for v, h in zip(flat + excess, hint):
            m.add_hint(v, h)
        objective = _sum(vs, coeffs)
        m.minimize(objective)
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = SEED
        # presolve off: with byte-sized coefficients (1e9..1e12) CP-SAT 9.15's presolve returned non-optimal
        # solutions marked OPTIMAL (found by the brute-force tests); the models here are small
        solver.parameters.cp_model_presolve = False
        solver.parameters.max_deterministic_time = max(budget / (len(levels) - level), 1e-3)
        result = solver.solve(m)
        budget -= solver.deterministic_time
        if result in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            hint = [int(solver.value(v)) for v in flat + excess]
            solution = hint
        if result == cp_model.OPTIMAL:
            # integer sum of the solution (objective_value is a double and loses bytes above 2**53)
            m.add(objective == sum(c * solver.value(v) for v, c in zip(vs, coeffs)))
            continue
        if level == 0 and result == cp_model.INFEASIBLE:
            status = "infeasible"
        elif result in (cp_model.FEASIBLE, cp_model.UNKNOWN):
            status = "feasible" if solution is not None else "unknown"
        else:
            raise RuntimeError(f"CP-SAT: {solver.status_name(result)} at level {level} after fixing the levels above")
        break

    if solution is None:
        return ExactResult(None, None, False, status)
    chosen = np.array(solution[:P * NL], dtype=bool).reshape(P, NL)
    assign = np.full((P, W), -1, dtype=np.int64)
    rows, cols = np.nonzero(chosen)  # row-major: each row's positions come out ascending
    assign[rows, np.arange(len(rows)) - np.searchsorted(rows, rows)] = cols
    return ExactResult(assign, score(p, assign), status == "optimal", status)
