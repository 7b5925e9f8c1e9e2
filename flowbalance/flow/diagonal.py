"""A feasible b-matching of units to slots along a diagonal, repaired by exchanges; compiled by numba.

Stage 1's realization (``stages/pooled.realize``) hands every unit of a pool (a partition's replica moving into
the pool) one slot of the pool (a broker's arrival), each unit a broker its partition does not hold now and no
two units of one partition the same broker. Each pool has exactly as many slots as units. The bipartite graph is
nearly complete (a partition holds only a few brokers of a pool of hundreds of slots), so a perfect matching
almost always exists and is easy to find:

1. *Diagonal*: the i-th unit of a pool takes the pool's i-th slot, in an order that spreads every broker's
   slots evenly (the caller's). Units conflict only where their partition holds that broker or one of its units
   before took it: a few per thousand units.
2. *Repair*, per conflicting unit: a freed slot it may take; else an exchange, a unit v of another partition
   that gives it v's broker and takes a freed slot itself (an augmenting path of length three).

When some unit is still without a slot the answer is "not found", not "none exists": the caller then solves its
exact flow, which decides. With costs (the realization's tie-break, the replacement bonus) the caller keeps the
flow; this is for pure feasibility. At 1,000,000 replicas it realizes 290,000-560,000 units in tens of
milliseconds where the component-by-component flow took 1.2-2.4 s (docs/performance.md, session 23).
"""
from __future__ import annotations

import numpy as np
from numba import njit


def diagonal_matching(unit_grp: np.ndarray, group_start: np.ndarray, held: np.ndarray, pool_start: np.ndarray,
                      diagonal: np.ndarray) -> np.ndarray | None:
    """The broker of every unit, or None when the repair does not finish (the caller's flow then decides).

    ``unit_grp``: per unit, its group (one partition's units in one pool), units ordered by group and groups by
    pool; ``group_start``: each group's first unit, plus the total at the end; ``held``: per group, the brokers
    its partition holds now (-1 padded); ``pool_start``: each pool's first unit, plus the total at the end (a
    pool's units are its slots' count); ``diagonal``: the broker of each unit's diagonal slot."""
    unit_grp = np.ascontiguousarray(unit_grp, dtype=np.int64)
    diagonal = np.ascontiguousarray(diagonal, dtype=np.int64)
    if unit_grp.shape != diagonal.shape:
        raise ValueError("unit_grp, diagonal: one entry per unit expected")
    held = np.ascontiguousarray(held, dtype=np.int64).reshape(len(group_start) - 1, -1)
    out = diagonal.copy()
    ok = _match(unit_grp, np.ascontiguousarray(group_start, dtype=np.int64), held,
                np.ascontiguousarray(pool_start, dtype=np.int64), out)
    return out if ok else None


@njit(cache=True)
def _takes(u, b, unit_grp, group_start, held, out):
    """Whether unit ``u`` may take broker ``b``: its partition does not hold it and no other unit of its group
    has it."""
    g = unit_grp[u]
    for c in range(held.shape[1]):
        if held[g, c] == b:
            return False
    for w in range(group_start[g], group_start[g + 1]):
        if w != u and out[w] == b:
            return False
    return True


@njit(cache=True)
def _match(unit_grp, group_start, held, pool_start, out):
    """``diagonal_matching`` in place on ``out`` (the diagonal on entry): True when every unit has a broker."""
    U = len(out)
    waiting = np.empty(U, np.int64)  # units without a broker, per pool
    freed = np.empty(U, np.int64)  # brokers of the slots they left
    for j in range(len(pool_start) - 1):
        a, z = pool_start[j], pool_start[j + 1]
        n = 0
        for u in range(a, z):
            b = out[u]
            out[u] = -1
            if _takes(u, b, unit_grp, group_start, held, out):
                out[u] = b
            else:
                waiting[n] = u
                freed[n] = b
                n += 1
        for i in range(n):
            if not _place(waiting[i], i, n, freed, a, z, unit_grp, group_start, held, out):
                return False
    return True


@njit(cache=True)
def _place(u, i, n, freed, a, z, unit_grp, group_start, held, out):
    """Give waiting unit ``u`` a freed slot (``freed[i:n]``, used ones swapped to the front), directly or by an
    exchange with a placed unit of another group in the pool's units ``a .. z``."""
    for k in range(i, n):
        if _takes(u, freed[k], unit_grp, group_start, held, out):
            out[u] = freed[k]
            freed[k] = freed[i]
            return True
    for k in range(i, n):
        f = freed[k]
        for v in range(a, z):
            bv = out[v]
            if bv < 0 or unit_grp[v] == unit_grp[u]:
                continue
            if _takes(u, bv, unit_grp, group_start, held, out) and _takes(v, f, unit_grp, group_start, held, out):
                out[u] = bv
                out[v] = f
                freed[k] = freed[i]
                return True
    return False
