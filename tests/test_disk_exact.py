"""The CP-SAT disk solver against brute force on tiny random problems, plus determinism, a hand case and the guard.

The oracle enumerates every assignment (each row: every set of its RF distinct live positions), keeps those
``disk_problem.violations`` accepts and takes the least ``disk_problem.score`` key: it shares nothing with the
CP-SAT model but the spec module.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from flowbalance.stages.disk_exact import SMALL_VARIABLES, solve_exact
from flowbalance.stages.disk_problem import DiskProblem, disk_use, replica_use, score, violations

MAX_ASSIGNMENTS = 3000  # brute force budget per example


def to_matrix(rows: list[tuple[int, ...]], width: int) -> np.ndarray:
    a = np.full((len(rows), width), -1, dtype=np.int64)
    for i, r in enumerate(rows):
        a[i, :len(r)] = sorted(r)
    return a


def brute_force(p: DiskProblem) -> tuple[tuple[int, int, int, int] | None, int]:
    """(least score key over every feasible assignment or None, number of feasible assignments)."""
    rf = (p.start >= 0).sum(axis=1)
    choices = [list(itertools.combinations(range(p.num_brokers), int(k))) for k in rf]
    best, feasible = None, 0
    for rows in itertools.product(*choices):
        a = to_matrix(list(rows), p.start.shape[1])
        if violations(p, a):
            continue
        feasible += 1
        k = score(p, a).key()
        best = k if best is None or k < best else best
    return best, feasible


def widen(lo: np.ndarray, hi: np.ndarray, have: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.minimum(lo, have), np.maximum(hi, have)


def intervals(draw, lo: np.ndarray, hi: np.ndarray, have: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] widened to hold ``have``; some entries pinned to ``have`` exactly, so the limits often bind."""
    lo, hi = widen(lo, hi, have)
    pin = np.array(draw(st.lists(st.booleans(), min_size=have.size, max_size=have.size))).reshape(have.shape)
    return np.where(pin, have, lo), np.where(pin, have, hi)


SIZES = st.one_of(st.just(0), st.integers(1, 9), st.integers(10, 1000), st.integers(2**38, 2**41))


@st.composite
def problems(draw) -> DiskProblem:
    """A random problem whose ``start`` keeps every rule except perhaps capacity; ``original`` may differ."""
    NL = draw(st.integers(3, 5))
    P = draw(st.integers(2, 5))
    rf = np.array([draw(st.integers(1, 3)) for _ in range(P)], dtype=np.int64)
    assume(math.prod(math.comb(NL, int(k)) for k in rf) <= MAX_ASSIGNMENTS)
    W = int(rf.max()) + draw(st.integers(0, 1))
    rows = [sorted(draw(st.permutations(range(NL)))[:k]) for k in rf]
    start = to_matrix(rows, W)

    # original: start with some replicas elsewhere or removed, maybe another width
    W0 = W + draw(st.integers(-1, 1)) if W > int(rf.max()) else W + draw(st.integers(0, 1))
    original = np.full((P, W0), -1, dtype=np.int64)
    for i, r in enumerate(rows):
        for j, b in enumerate(r):
            if j < W0:
                original[i, j] = draw(st.sampled_from([b, b, b, (b + 1) % NL, -1]))

    K = draw(st.integers(1, 3))
    rack = np.array(draw(st.permutations([r % K for r in range(NL)])), dtype=np.int64)
    per_rack = np.zeros((P, K), dtype=np.int64)
    for i, r in enumerate(rows):
        for b in r:
            per_rack[i, rack[b]] += 1
    rack_hi = np.where(rf <= K, 1, -(-rf // K))
    rack_lo = np.where(rf <= K, 0, rf // K)
    rack_lo, rack_hi = np.minimum(rack_lo, per_rack.min(axis=1)), np.maximum(rack_hi, per_rack.max(axis=1))

    size = np.array([draw(SIZES) for _ in range(P)], dtype=np.int64)
    topic = np.array([draw(st.integers(0, 1)) for _ in range(P)], dtype=np.int64)
    topic[0] = 0
    base_bytes = np.array([draw(st.sampled_from([0, 0, 5, 500, 2**39])) for _ in range(NL)], dtype=np.int64)
    base_count = np.array([draw(st.integers(0, 2)) for _ in range(NL)], dtype=np.int64)
    p = DiskProblem(size=size, start=start, original=original, topic=topic, rack=rack, rack_lo=rack_lo,
                    rack_hi=rack_hi, base_bytes=base_bytes, base_count=base_count,
                    upper=np.zeros(NL, dtype=np.int64), capacity=np.full(NL, -1, dtype=np.int64))

    disk = disk_use(p, start)
    avg = int(disk.sum()) // NL
    p.upper = np.array([avg * draw(st.sampled_from([80, 100, 100, 110, 130])) // 100 for _ in range(NL)],
                       dtype=np.int64)
    cap = []
    for b in range(NL):
        kind = draw(st.sampled_from(["none", "loose", "tight"]))
        if kind == "none":
            cap.append(-1)
        elif kind == "loose":
            cap.append(int(disk.sum()))
        else:
            cap.append(int(base_bytes[b]) + draw(st.integers(0, max(int(disk.sum() - base_bytes.sum()) // NL * 2, 1))))
    p.capacity = np.array(cap, dtype=np.int64)

    if draw(st.booleans()):
        total = int(base_count.sum() + rf.sum())
        lo, hi = np.full(NL, total // NL), np.full(NL, -(-total // NL))
        p.count_lo, p.count_hi = intervals(draw, lo, hi, replica_use(p, start))
    if draw(st.booleans()):
        T = p.num_topics
        have = np.zeros((T, NL), dtype=np.int64)
        np.add.at(have, (np.repeat(topic, W)[start.ravel() >= 0], start.ravel()[start.ravel() >= 0]), 1)
        per_topic = np.bincount(topic, weights=rf, minlength=T).astype(np.int64)
        lo, hi = (per_topic // NL)[:, None], (-(-per_topic // NL))[:, None]
        p.topic_lo, p.topic_hi = intervals(draw, np.repeat(lo, NL, axis=1), np.repeat(hi, NL, axis=1), have)
    assert [v for v in violations(p, start) if "capacity" not in v] == []
    return p


def well_formed(p: DiskProblem, a: np.ndarray) -> bool:
    """Same shape and dtype as ``start``; each row its positions ascending, then -1."""
    live = a >= 0
    n = live.sum(axis=1)
    padded = live == (np.arange(a.shape[1])[None, :] < n[:, None])
    ascending = all((np.diff(row[row >= 0]) > 0).all() for row in a)
    return a.shape == p.start.shape and a.dtype == np.int64 and bool(padded.all()) and ascending


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(problems())
def test_exact_equals_brute_force(p):
    best, _ = brute_force(p)
    r = solve_exact(p)
    if best is None:
        assert r.status == "infeasible" and r.assign is None and r.score is None and not r.optimal
        return
    assert r.status == "optimal" and r.optimal
    assert well_formed(p, r.assign)
    assert violations(p, r.assign) == []
    assert r.score == score(p, r.assign)
    assert r.score.key() == best


def random_problem(seed: int, P: int, NL: int) -> DiskProblem:
    """A mid-size problem (no brute force) with racks, counts, topics and heavy-tailed sizes."""
    rng = np.random.default_rng(seed)
    K = 3
    rack = np.arange(NL) % K
    start = np.full((P, 3), -1, dtype=np.int64)
    for i in range(P):
        racks = rng.permutation(K)
        start[i] = np.sort([rng.choice(np.flatnonzero(rack == r)) for r in racks])
    size = (rng.pareto(1.2, P) * 2**30).astype(np.int64)
    size[rng.random(P) < 0.2] = 0
    original = start.copy()
    original[rng.random(P) < 0.3, 0] = -1
    p = DiskProblem(size=size, start=start, original=original, topic=rng.integers(0, 3, P), rack=rack,
                    rack_lo=np.ones(P, dtype=np.int64), rack_hi=np.ones(P, dtype=np.int64),
                    base_bytes=np.zeros(NL, dtype=np.int64), base_count=np.zeros(NL, dtype=np.int64),
                    upper=np.zeros(NL, dtype=np.int64), capacity=np.full(NL, -1, dtype=np.int64))
    disk = disk_use(p, start)
    p.upper = np.full(NL, int(disk.sum()) // NL * 105 // 100)
    counts = replica_use(p, start)
    p.count_lo, p.count_hi = widen(np.full(NL, 3 * P // NL), np.full(NL, -(-3 * P // NL)), counts)
    return p


@pytest.mark.parametrize("P, NL, budget", [(120, 9, 2.0), (300, 12, 1.0)])
def test_deterministic(P, NL, budget):
    # the second case stops on the deterministic time limit ("feasible"), where a wall clock would vary
    p = random_problem(7, P, NL)
    a, b = solve_exact(p, deterministic_time=budget), solve_exact(p, deterministic_time=budget)
    assert a.assign is not None and violations(p, a.assign) == []
    assert a.assign.tobytes() == b.assign.tobytes()
    assert (a.score, a.status, a.optimal) == (b.score, b.status, b.optimal)
    assert a.score.key() <= score(p, p.start).key()


def hand_problem(**kw) -> DiskProblem:
    args = dict(topic=np.zeros(2, dtype=np.int64), rack=np.zeros(2, dtype=np.int64),
                rack_lo=np.zeros(2, dtype=np.int64), rack_hi=np.ones(2, dtype=np.int64),
                base_bytes=np.zeros(2, dtype=np.int64), base_count=np.zeros(2, dtype=np.int64))
    args.update(kw)
    return DiskProblem(**args)


def test_capacity_forces_the_big_partition_off():
    # Two brokers, RF 1: A (100 bytes) and B (10 bytes) both on broker 0, whose capacity is 50. A must leave
    # (100 > 50); then broker 0 holds 10 and broker 1 holds 100, 45 above its tolerance limit 55. Moving B too
    # would give 0 / 110, 55 above. So: move A only, score (0, 45, 100, 1), assignment [[1], [0]].
    start = np.array([[0], [0]])
    p = hand_problem(size=np.array([100, 10]), start=start, original=start.copy(),
                     upper=np.array([55, 55]), capacity=np.array([50, 200]))
    r = solve_exact(p)
    assert r.status == "optimal" and r.optimal
    assert r.assign.tolist() == [[1], [0]]
    assert r.score.key() == (0, 45, 100, 1)

    # Broker 1's capacity 99 leaves nowhere for A: infeasible.
    p.capacity = np.array([50, 99])
    r = solve_exact(p)
    assert (r.status, r.assign, r.score, r.optimal) == ("infeasible", None, None, False)

    # Broker 1's fixed partitions alone exceed its capacity: infeasible whatever moves.
    p.capacity, p.base_bytes = np.array([500, 500]), np.array([0, 501])
    assert solve_exact(p).status == "infeasible"


def test_moving_back_to_an_original_broker_is_free():
    # Three brokers, no racks, RF 1. A (2**40 bytes) is at start on broker 0 but was originally on broker 2;
    # broker 0 has capacity 0, so A must leave. Brokers 1 and 2 both fit with no tolerance excess (limit 2**41),
    # but broker 2 costs no bytes and is no arrival. B (0 bytes) is at start on broker 1, originally on broker 0:
    # staying is an arrival (one move), going back to broker 0 is none and fits its capacity 0 (0 bytes).
    # So: [[2], [0]] with score (0, 0, 0, 0).
    start = np.array([[0], [1]])
    p = hand_problem(size=np.array([2**40, 0]), start=start, original=np.array([[2], [0]]),
                     rack=np.zeros(3, dtype=np.int64), base_bytes=np.zeros(3, dtype=np.int64),
                     base_count=np.zeros(3, dtype=np.int64), upper=np.full(3, 2**41), capacity=np.array([0, -1, -1]))
    r = solve_exact(p)
    assert r.status == "optimal" and r.optimal
    assert r.assign.tolist() == [[2], [0]]
    assert r.score.key() == (0, 0, 0, 0)


def test_guard():
    P, NL = SMALL_VARIABLES // 5 + 1, 5
    z = np.zeros(NL, dtype=np.int64)
    p = DiskProblem(size=np.zeros(P, dtype=np.int64), start=np.zeros((P, 1), dtype=np.int64),
                    original=np.zeros((P, 1), dtype=np.int64), topic=np.zeros(P, dtype=np.int64), rack=z,
                    rack_lo=np.zeros(P, dtype=np.int64), rack_hi=np.ones(P, dtype=np.int64), base_bytes=z,
                    base_count=z, upper=z, capacity=z - 1)
    with pytest.raises(ValueError):
        solve_exact(p)
