"""The failover stage's search over leader counts: the flows (``failover_flow``) hold every broker's leader count,
but which brokers sit at the top of their interval matters (a survivor's own leaders are in every row's value).

A round moves one leadership (then three) from brokers that are often at their rows' largest value to brokers
that are often at the smallest (rows at the worst spread count four times, rows one below once), within the
intervals, re-places the rows for the new counts (``with_leaders``), and runs a threshold flow and one convex
flow from there (its rows' weights carried on from the flows before); the first try that improves the order
(``sort_key``) is kept. Rounds stop at the floor, when no try improves, or when the allowance of tries is spent
(each try is one convex flow over every group's options).
(Kafka-placed, 100 brokers grown in four waves: 4 after two convex flows from the relaxation's counts, 3 after
one try; bound 2. A 40-broker one: the start's counts 4, the relaxation's 3.)
"""
from __future__ import annotations

import numpy as np

from .failover_flow import by_thresholds, convex_rounds, sort_key, with_leaders
from .failover_problem import FailoverProblem, loads, row_extremes, values

SHIFTS = (1, 3)  # leaderships moved by the tries of a round
WORST_WEIGHT = 4  # a row at the worst spread counts this much in the pressure, a row one leader below it once


def leader_search(prob: FailoverProblem, choice: np.ndarray, floor: int, tries: int,
                  weight: np.ndarray) -> np.ndarray:
    """The best order found in at most ``tries`` tries (module doc); ``choice`` when none improves it.
    ``weight``: the rows' weights in the convex flows, carried from try to try (``convex_rounds``)."""
    best, key = choice, sort_key(prob, choice)
    while tries > 0 and key[0] > floor:
        for k in SHIFTS:
            target = _shifted(prob, best, k)
            moved = None if target is None else with_leaders(prob, best, target)
            if moved is None:
                continue
            tries -= 1
            found, weight = convex_rounds(prob, by_thresholds(prob, moved, floor), 1, weight)
            if sort_key(prob, found) < key:
                best, key = found, sort_key(prob, found)
                break
            if tries <= 0:
                break
        else:
            return best  # no try of this round improved
    return best


def pressure(prob: FailoverProblem, choice: np.ndarray) -> np.ndarray:
    """Per broker: how often it holds its row's largest value less how often its row's smallest, rows at the
    worst spread weighted ``WORST_WEIGHT``, rows one leader below it 1, others 0."""
    V = values(prob, *loads(prob, choice))
    hi, lo = row_extremes(prob, V)
    sp = hi - lo
    w = np.where(sp == sp.max(), WORST_WEIGHT, np.where(sp >= sp.max() - prob.D, 1, 0))
    at_hi = prob.valid & (V == hi[:, None])
    at_lo = prob.valid & (V == lo[:, None])
    return (w[:, None] * at_hi).sum(axis=0) - (w[:, None] * at_lo).sum(axis=0)


def _shifted(prob: FailoverProblem, choice: np.ndarray, k: int) -> np.ndarray | None:
    """Leader counts with one leadership moved from each of the ``k`` highest-pressure brokers that may lead
    fewer to each of the ``k`` lowest that may lead more (ties by broker index); None when there is no pair."""
    p = pressure(prob, choice)
    L = loads(prob, choice)[0]
    idx = np.arange(prob.N)
    down = idx[(L > prob.lo) & (p > 0)]
    down = down[np.lexsort((down, -p[down]))][:k]
    up = idx[(L < prob.hi) & (p < 0)]
    up = up[np.lexsort((up, p[up]))][:k]
    n = min(len(down), len(up))
    if n == 0:
        return None
    target = L.copy()
    target[down[:n]] -= 1
    target[up[:n]] += 1
    return target
