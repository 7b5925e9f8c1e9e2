"""flow/diagonal.py against a max-flow oracle (networkx): every matching it returns is valid, it returns one
whenever a length-three exchange suffices, and never when none exists."""
from __future__ import annotations

import networkx as nx
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flowbalance.flow.diagonal import diagonal_matching


def _instance(rng, pools, brokers, density):
    """Random pools: groups (one partition each) of 1-3 units, each partition holding some brokers; slots drawn
    from the brokers (repeats allowed), as many as the pool's units."""
    unit_grp, held, pool_start, diagonal = [], [], [0], []
    g = 0
    for _ in range(pools):
        units = 0
        for _ in range(int(rng.integers(1, 6))):
            d = int(rng.integers(1, 4))
            unit_grp += [g] * d
            held.append(rng.choice(brokers, size=3, replace=False) if rng.random() < density else [-1, -1, -1])
            units += d
            g += 1
        diagonal += rng.integers(0, brokers, units).tolist()
        pool_start.append(pool_start[-1] + units)
    unit_grp = np.array(unit_grp)
    group_start = np.r_[0, np.cumsum(np.bincount(unit_grp))]
    return unit_grp, group_start, np.array(held).reshape(-1, 3), np.array(pool_start), np.array(diagonal)


def _valid(out, unit_grp, group_start, held, pool_start, diagonal):
    for j in range(len(pool_start) - 1):
        a, z = pool_start[j], pool_start[j + 1]
        if sorted(out[a:z].tolist()) != sorted(diagonal[a:z].tolist()):
            return False
    for g in range(len(group_start) - 1):
        got = out[group_start[g]:group_start[g + 1]].tolist()
        if len(set(got)) != len(got) or set(got) & set(held[g].tolist()):
            return False
    return True


def _exists(unit_grp, group_start, held, pool_start, diagonal):
    """Whether a valid matching exists: per pool a max flow group -> broker (1 per pair, not held) -> sink."""
    for j in range(len(pool_start) - 1):
        a, z = pool_start[j], pool_start[j + 1]
        G = nx.DiGraph()
        for b, c in zip(*np.unique(diagonal[a:z], return_counts=True)):
            G.add_edge(("b", int(b)), "t", capacity=int(c))
        for g in np.unique(unit_grp[a:z]).tolist():
            G.add_edge("s", ("g", g), capacity=int(group_start[g + 1] - group_start[g]))
            for b in np.unique(diagonal[a:z]).tolist():
                if b not in held[g]:
                    G.add_edge(("g", g), ("b", int(b)), capacity=1)
        if "s" not in G or nx.maximum_flow_value(G, "s", "t") < z - a:
            return False
    return True


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 100_000), st.integers(3, 9), st.floats(0.0, 1.0))
def test_matching_is_valid_and_found_when_one_exists(seed, brokers, density):
    rng = np.random.default_rng(seed)
    inst = _instance(rng, int(rng.integers(1, 4)), brokers, density)
    got = diagonal_matching(*inst)
    if got is not None:  # None may also mean "not found" (the caller's flow decides): see the next test
        assert _valid(got, *inst)
    if not _exists(*inst):
        assert got is None


def test_found_on_most_pools_that_have_one():
    """Small pools where every partition holds 3 of 20 brokers: a matching is found for at least 90 % of those
    that have one (measured: 147 of 154; placing directly without exchanges finds far fewer). The rest go to the
    caller's flow."""
    found = exists = 0
    for seed in range(300):
        inst = _instance(np.random.default_rng(seed), 4, 20, 1.0)
        if _exists(*inst):
            exists += 1
            found += diagonal_matching(*inst) is not None
    assert exists >= 100 and found >= 0.9 * exists


def test_exchange_is_used():
    """Pool of brokers 0, 1; group 0 (one unit) holds 0, group 1 (one unit) holds nothing; the diagonal gives
    group 0 broker 0: the repair must hand it 1 and give group 1 broker 0."""
    out = diagonal_matching(np.array([0, 1]), np.array([0, 1, 2]), np.array([[0], [-1]]), np.array([0, 2]),
                            np.array([0, 1]))
    assert out.tolist() == [1, 0]


def test_no_matching_gives_none():
    """Both units' partitions hold broker 0, the pool's only broker twice."""
    assert diagonal_matching(np.array([0, 1]), np.array([0, 1, 2]), np.array([[0], [0]]), np.array([0, 2]),
                             np.array([0, 0])) is None
