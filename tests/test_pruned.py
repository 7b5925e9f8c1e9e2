"""flow.pruned: a min-cost flow solved on a pruned network and proven for the whole one by potentials, checked
against one solve of the whole network (OR-Tools) on random networks, feasible and not."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowbalance.flow.mincost import try_min_cost
from flowbalance.flow.network import Network
from flowbalance.flow.pruned import cheapest, cheapest_parts, solve_pruned

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _random_network(seed: int, nodes: int, arcs: int, negative: bool) -> Network:
    rng = np.random.default_rng(seed)
    net = Network()
    net.nodes(nodes)
    tails, heads = rng.integers(0, nodes, arcs), rng.integers(0, nodes, arcs)
    ok = tails != heads
    low = -20 if negative else 0
    net.add(tails[ok], heads[ok], rng.integers(0, 6, ok.sum()), rng.integers(low, 40, ok.sum()))
    supply = np.zeros(nodes, dtype=np.int64)
    for _ in range(rng.integers(1, 4)):
        a, b = rng.choice(nodes, 2, replace=False)
        k = int(rng.integers(1, 6))
        supply[a] += k
        supply[b] -= k
    net.set_supply(supply)
    return net


@SETTINGS
@given(st.integers(0, 100_000), st.integers(3, 12), st.integers(2, 60), st.floats(0, 1), st.booleans())
def test_pruned_solve_equals_the_whole_solve(seed, nodes, arcs, share, negative):
    """Whatever arcs the first pruned solve keeps, the answer is the whole network's: the same optimal cost, a
    flow that meets every capacity and supply, or None exactly when the whole network has no feasible flow.
    (Negative costs on random arcs can close negative cycles of capacity: the whole network's optimum uses
    them too, and the potentials must still prove it.)"""
    net = _random_network(seed, nodes, arcs, negative)
    keep = np.random.default_rng(seed + 1).random(net.num_arcs) < share
    whole = try_min_cost(net)
    got = solve_pruned(net, keep)
    assert (got is None) == (whole is None)
    if got is None:
        return
    flows, cost, _ = got
    tails, heads, caps, costs = net.arrays()
    assert cost == whole[1] == int((flows * costs).sum())
    assert ((flows >= 0) & (flows <= caps)).all()
    balance = np.bincount(tails, weights=flows, minlength=net.num_nodes) - np.bincount(
        heads, weights=flows, minlength=net.num_nodes)
    assert np.array_equal(balance.astype(np.int64), net.supplies())


class _Hidden:
    """``solve_pruned``'s ``more``: arcs the caller has not built, handed over when their reduced cost is below 0
    (all that are left when asked with None), each once."""

    def __init__(self, arcs: tuple):
        self.arcs, self.left = arcs, np.ones(len(arcs[0]), dtype=bool)

    def __call__(self, d):
        t, h, c, w = self.arcs
        at = np.flatnonzero(self.left)
        if d is not None:
            at = at[w[at] + d[t[at]] - d[h[at]] < 0]
        if not len(at):
            return None
        self.left[at] = False
        self.order = np.concatenate([getattr(self, "order", np.zeros(0, np.int64)), at])
        return t[at], h[at], c[at], w[at]


@SETTINGS
@given(st.integers(0, 100_000), st.integers(3, 12), st.integers(2, 60), st.floats(0, 1), st.floats(0, 1))
def test_pruned_solve_with_arcs_priced_unbuilt_equals_the_whole_solve(seed, nodes, arcs, share, hidden):
    """Arcs the caller prices without building them (``more``) count as the network's: the same optimal cost as
    the whole network's, with the arcs handed over carrying the flow after the built ones."""
    net = _random_network(seed, nodes, arcs, False)
    rng = np.random.default_rng(seed + 2)
    tails, heads, caps, costs = net.arrays()
    out = rng.random(net.num_arcs) < hidden
    whole = try_min_cost(net)
    built = Network()
    built.nodes(net.num_nodes)
    built.add(tails[~out], heads[~out], caps[~out], costs[~out])
    built.set_supply(net.supplies())
    more = _Hidden((tails[out], heads[out], caps[out], costs[out]))
    got = solve_pruned(built, rng.random(int((~out).sum())) < share, more=more)
    assert (got is None) == (whole is None)
    if got is None:
        return
    flows, cost, _ = got
    extra = flows[int((~out).sum()):]
    order = getattr(more, "order", np.zeros(0, np.int64))
    assert len(extra) == len(order)
    t = np.concatenate([tails[~out], tails[out][order]])
    h = np.concatenate([heads[~out], heads[out][order]])
    w = np.concatenate([costs[~out], costs[out][order]])
    assert cost == whole[1] == int((flows * w).sum())
    balance = np.bincount(t, weights=flows, minlength=net.num_nodes) - np.bincount(h, weights=flows,
                                                                                  minlength=net.num_nodes)
    assert np.array_equal(balance.astype(np.int64), net.supplies())


@SETTINGS
@given(st.integers(0, 100_000), st.integers(1, 6), st.integers(1, 80))
def test_cheapest_keeps_the_low_levels_whole_and_nothing_above(seed, groups, n):
    """Per group: every entry of a level below the one whose running capacity reaches the quota is kept, none
    above it; when the whole group falls short of its quota, everything is kept."""
    rng = np.random.default_rng(seed)
    group, other = rng.integers(0, groups, n), rng.integers(0, 50, n)
    level, cap = rng.integers(0, 4, n), rng.integers(1, 5, n)
    quota = rng.integers(0, 30, groups)
    kept = cheapest(group, other, level, cap, quota)
    for g in range(groups):
        mine = group == g
        running = 0
        for lev in range(4):
            at = mine & (level == lev)
            if running >= quota[g]:
                assert not kept[at].any()
            elif running + cap[at].sum() < quota[g]:
                assert kept[at].all()
            running += int(cap[at].sum())


@SETTINGS
@given(st.integers(0, 100_000), st.integers(1, 6), st.integers(1, 80))
def test_cheapest_draws_exactly_as_hashing_every_entry(seed, groups, n):
    """The threshold level's draw, hashed for its entries only, keeps exactly what hashing every entry keeps
    (the first pruned network, hence the plans, depend on which entries of that level are drawn)."""
    rng = np.random.default_rng(seed)
    group, other = rng.integers(0, groups, n), rng.integers(0, 50, n)
    level, cap = rng.integers(0, 4, n), rng.integers(1, 5, n)
    quota = rng.integers(0, 30, groups)
    n_lev = int(level.max()) + 1
    at = np.bincount(group * n_lev + level, weights=cap, minlength=groups * n_lev).reshape(groups, n_lev)
    upto = np.cumsum(at, axis=1)
    thr = (upto < quota[:, None]).sum(axis=1)
    before = np.where(thr > 0, upto[np.arange(groups), np.maximum(thr - 1, 0)], 0)
    share = (quota - before) * 1.5 / np.maximum(at[np.arange(groups), np.minimum(thr, n_lev - 1)], 1)
    mix = (group.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)) ^ (other.astype(np.uint64)
                                                                        * np.uint64(0xBF58476D1CE4E5B9))
    mix ^= mix >> np.uint64(31)
    draw = (mix >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    want = (level < thr[group]) | ((level == thr[group]) & (draw < share[group]))
    assert cheapest(group, other, level, cap, quota).tolist() == want.tolist()


@SETTINGS
@given(st.integers(0, 100_000), st.integers(1, 6), st.integers(1, 80), st.integers(0, 80))
def test_cheapest_of_parts_is_cheapest_of_them_joined(seed, groups, n, cut):
    """Entries given as two parts (the split network's built arrivals and its lazy cells' first pieces) are kept
    exactly as when joined in one array, each part's mask its share of the joined one."""
    rng = np.random.default_rng(seed)
    group, other = rng.integers(0, groups, n), rng.integers(0, 50, n)
    level, cap = rng.integers(0, 4, n), rng.integers(1, 5, n)
    quota = rng.integers(0, 30, groups)
    cut = min(cut, n)
    joined = cheapest(group, other, level, cap, quota)
    parts = [tuple(x[:cut] for x in (group, other, level, cap)), tuple(x[cut:] for x in (group, other, level, cap))]
    got = cheapest_parts(parts, quota)
    assert np.concatenate(got).tolist() == joined.tolist()
