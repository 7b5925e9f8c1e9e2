"""The disk stage's entry index (``disk_entries``): kept up to date move by move, it must equal an index built from
scratch, answer its searches as a plain scan of the entries does, and leave the improvement rounds' result exactly
what they give when the index is rebuilt every round."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import flowbalance.stages.disk as disk
from flowbalance.generate import generate_cluster
from flowbalance.planner import plan
from flowbalance.stages.disk import disk_problem, improve
from flowbalance.stages.disk_entries import EntryIndex, replace_sorted, slots_of
from flowbalance.stages.disk_problem import violations

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _problem(brokers: int, topics: int, seed: int, racks: int = 0, balance: str = "count+bytes", tol: float = 1.05):
    st0 = generate_cluster(brokers=brokers, racks=racks, rack_aware=racks > 0, topics=topics,
                           partitions=(brokers // 2, 2 * brokers), rf=3, skew=0.5, sizes=True, size_alpha=1.5,
                           seed=seed)
    p1 = plan(st0, stages=("replicas",))
    prob, _ = disk_problem(p1.before, p1.after, p1.target_rf, p1.movable, tolerance=tol,
                           counts=balance != "bytes", per_topic=True)
    return prob


@SETTINGS
@given(st.data())
def test_replace_sorted_equals_sorting(data):
    keys = np.array(sorted(data.draw(st.sets(st.integers(0, 60), max_size=30))), dtype=np.int64)
    gone = data.draw(st.sets(st.sampled_from(keys.tolist()), max_size=len(keys))) if len(keys) else set()
    kept = set(keys.tolist()) - gone
    new = data.draw(st.sets(st.integers(0, 60).filter(lambda k: k not in kept), max_size=10))
    old = np.array(data.draw(st.permutations(sorted(gone))), dtype=np.int64)
    got = replace_sorted(keys, old, np.array(sorted(new, reverse=True), dtype=np.int64))
    assert got.tolist() == sorted(kept | new)


def _scan_first_at_least(p, assign, b, target):
    """Row of the first entry of broker b in (size, row) order with size >= target, or None."""
    rows = sorted((int(p.size[r]), r) for r in np.flatnonzero((assign == b).any(axis=1)))
    return next((r for s, r in rows if s >= target), None)


def _scan_topic_at_most(p, assign, t, b, most):
    """Row of the last entry of topic t on broker b in (size, row) order with size <= most, else the first; None
    when the broker holds no replica of t."""
    rows = sorted((int(p.size[r]), r) for r in np.flatnonzero((assign == b).any(axis=1) & (p.topic == t)))
    if not rows:
        return None
    le = [r for s, r in rows if s <= most]
    return le[-1] if le else rows[0][1]


@pytest.mark.parametrize("seed", range(4))
def test_index_follows_moves_and_answers_like_a_scan(seed):
    p = _problem(8, 6, seed)
    rng = np.random.default_rng(seed)
    assign = p.start.copy()
    index = EntryIndex(p, assign)
    NL, T = p.num_brokers, p.num_topics
    sizes = np.unique(p.size)
    for _ in range(6):
        # a batch of moves (some entries moved twice, some moved back), noted as disk._apply notes them
        for _ in range(int(rng.integers(1, 12))):
            r, s = np.argwhere(assign >= 0)[rng.integers((assign >= 0).sum())]
            free = np.setdiff1d(np.arange(NL), assign[r])
            to = int(rng.choice(free)) if len(free) else int(assign[r, s])
            index.note(int(r), int(s), int(assign[r, s]))
            assign[r, s] = to
        index.sync(assign)
        fresh = EntryIndex(p, assign)
        assert index.b_key.tolist() == fresh.b_key.tolist()
        assert index.t_key.tolist() == fresh.t_key.tolist()
        b = rng.integers(0, NL, 40)
        target = np.concatenate([rng.choice(sizes, 20), rng.integers(0, int(sizes.max()) + 2, 20)])
        lo, hi = index.bounds(b)
        pos = np.clip(index.first_at_least(b, target), lo, hi)
        for i in range(len(b)):
            want = _scan_first_at_least(p, assign, int(b[i]), int(target[i]))
            assert (None if pos[i] == hi[i] else int(index.b_rows(pos[i:i + 1])[0])) == want
        # every replica once, each key naming a (row, broker) the assignment holds
        assert len(index.b_key) == len(index.t_key) == int((assign >= 0).sum())
        all_rows, all_b = index.t_entries(np.arange(len(index.t_key)))
        assert (assign[all_rows] == all_b[:, None]).any(axis=1).all()
        b_rows = index.b_rows(np.arange(len(index.b_key)))
        assert (assign[b_rows] == (index.b_key // index.P)[:, None]).any(axis=1).all()
        t = rng.integers(0, T, 40)
        at, hit = index.topic_at_most(t, b, target)
        for i in range(len(t)):
            want = _scan_topic_at_most(p, assign, int(t[i]), int(b[i]), int(target[i]))
            assert bool(hit[i]) == (want is not None)
            if want is not None:
                rows, brokers = index.t_entries(at[i:i + 1])
                assert (int(rows[0]), int(brokers[0])) == (want, int(b[i]))
                assert assign[want, slots_of(assign, rows, brokers)[0]] == b[i]


class _Rebuilt(EntryIndex):
    """The slow reference: the index built from scratch at every sync."""

    def __init__(self, p, assign):
        super().__init__(p, assign)
        self._p = p

    def sync(self, assign):
        self.__init__(self._p, assign)


@pytest.mark.parametrize("case", [dict(brokers=12, topics=30, seed=1), dict(brokers=24, topics=60, seed=2),
                                  dict(brokers=24, topics=60, seed=3, racks=3),
                                  dict(brokers=16, topics=40, seed=4, balance="bytes"),
                                  dict(brokers=30, topics=60, seed=5, tol=1.02)])
def test_improve_with_kept_index_equals_rebuilt_index(case, monkeypatch):
    p = _problem(**case)
    fast, rounds_fast = improve(p)
    monkeypatch.setattr(disk, "EntryIndex", _Rebuilt)
    slow, rounds_slow = improve(p)
    assert rounds_fast == rounds_slow and rounds_fast > 1
    assert np.array_equal(fast, slow)
    assert violations(p, fast) == []
