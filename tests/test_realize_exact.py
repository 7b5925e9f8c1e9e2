"""The realization's fast paths against plain references, exactly: which broker every unit gets (the plans
depend on it, not only on its count) and the flow of every arc of a component-by-component solve."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flowbalance.flow.mincost import _solve, solve_split_arrays
from flowbalance.stages import pooled as pooled_mod
from flowbalance.stages.pooled import realize

SETTINGS = settings(max_examples=60, deadline=None)


def _split_reference(tails, heads, caps, costs, supply, comp):
    """Each component solved alone: its nodes numbered in id order, its arcs in insertion order."""
    flows = np.zeros(len(tails), dtype=np.int64)
    if np.isin(comp[supply != 0], comp[tails], invert=True).any():
        return None  # a component with supply and no arcs
    for k in np.unique(comp[tails]).tolist():
        nodes = np.flatnonzero(comp == k)
        local = np.full(len(comp), -1)
        local[nodes] = np.arange(len(nodes))
        arcs = np.flatnonzero(comp[tails] == k)
        res = _solve(local[tails[arcs]], local[heads[arcs]], caps[arcs], costs[arcs], supply[nodes], len(nodes))
        if res is None:
            return None
        flows[arcs] = res[0]
    return flows


@SETTINGS
@given(st.integers(1, 6), st.integers(0, 10_000), st.booleans())
def test_split_arrays_equals_each_component_alone(components, seed, grouped):
    """Arcs grouped by component (a slice per component) or interleaved (a gather): the same flows as solving
    each component on its own."""
    rng = np.random.default_rng(seed)
    tails, heads, comp, supply = [], [], [], []
    base = 0
    for k in range(components):
        n = int(rng.integers(2, 7))
        m = int(rng.integers(n, 3 * n))
        t, h = rng.integers(0, n, m), rng.integers(0, n, m)
        keep = t != h
        tails += [base + t[keep], base + np.arange(n - 1)]
        heads += [base + h[keep], base + np.arange(1, n)]
        sup = np.zeros(n, dtype=np.int64)
        sup[0], sup[-1] = 3, -3
        supply.append(sup)
        comp += [k] * n
        base += n
    tails, heads = np.concatenate(tails), np.concatenate(heads)
    caps = np.where(np.arange(len(tails)) % 3 == 0, 50, rng.integers(1, 5, len(tails))).astype(np.int64)
    costs = rng.integers(-3, 7, len(tails)).astype(np.int64)
    comp, supply = np.array(comp), np.concatenate(supply)
    if not grouped:
        perm = rng.permutation(len(tails))
        tails, heads, caps, costs = tails[perm], heads[perm], caps[perm], costs[perm]
    got = solve_split_arrays(tails, heads, caps, costs, supply, comp, infeasible_ok=True)
    want = _split_reference(tails, heads, caps, costs, supply, comp)
    assert (got is None) == (want is None)
    if got is not None:
        assert got.tolist() == want.tolist()


def _realize_reference(unit_p, unit_g, slot_b, slot_g, sub, lpos, lead_lp, pairs, bonus, first_window):
    """The realization as first written: every (unit group, slot) pair of the window gathered pair by pair, the
    pairs a partition holds dropped by comparing its whole row, one network per round."""
    U = len(unit_p)
    key = unit_g.astype(np.int64) * (len(sub) + 1) + unit_p
    gkey, ginv, gdem = np.unique(key, return_inverse=True, return_counts=True)
    g_pool, g_p = gkey // (len(sub) + 1), gkey % (len(sub) + 1)
    NLp = int(slot_b.max()) + 1
    skeys, scap = np.unique(slot_g.astype(np.int64) * NLp + slot_b, return_counts=True)
    s_pool, s_b = skeys // NLp, skeys % NLp
    pools = np.unique(np.concatenate([g_pool, s_pool]))
    s_start = np.searchsorted(s_pool, pools)
    gp = np.searchsorted(pools, g_pool)
    n_slots = (np.searchsorted(s_pool, pools, side="right") - s_start)[gp]
    su = np.repeat(np.arange(len(skeys)), scap)
    rank = np.arange(len(su)) - np.repeat(np.cumsum(scap) - scap, scap)
    su = su[np.lexsort((su, (2 * rank + 1) / (2 * scap[su]), s_pool[su]))]
    su_len = np.bincount(np.searchsorted(pools, s_pool), weights=scap, minlength=len(pools)).astype(np.int64)
    su_start = np.cumsum(su_len) - su_len
    pos = np.cumsum(gdem) - gdem - su_start[gp]
    held = np.where(sub >= 0, lpos[np.maximum(sub, 0)], -1)
    width = int(su_len.max())
    window = min(first_window, width)
    while True:
        if window >= width:
            gi = np.repeat(np.arange(len(gkey)), n_slots)
            j = np.arange(len(gi)) - np.repeat(np.cumsum(n_slots) - n_slots, n_slots)
            sidx = s_start[gp[gi]] + j
        else:
            w = np.minimum(gdem + window, su_len[gp])
            gi = np.repeat(np.arange(len(gkey)), w)
            j = np.arange(len(gi)) - np.repeat(np.cumsum(w) - w, w)
            sidx = su[su_start[gp[gi]] + (pos[gi] + j) % su_len[gp[gi]]]
            pair = np.unique(gi * len(skeys) + sidx)
            gi, sidx = pair // len(skeys), pair % len(skeys)
        sb = s_b[sidx]
        bad = (held[g_p[gi]] == sb[:, None]).any(axis=1)
        gi, sidx, sb = gi[~bad], sidx[~bad], sb[~bad]
        lp = lead_lp[g_p[gi]]
        cost = np.where(lp >= 0, np.minimum(pairs[np.maximum(lp, 0), sb], pooled_mod._HINT_MAX), 0)
        if U > pooled_mod._HINT_UNITS:
            cost[:] = 0
        for newpos, (rows_mask, _) in bonus.items():
            cost[(sb == newpos) & rows_mask[g_p[gi]]] -= pooled_mod._HINT_MAX * U + 1
        supply = np.concatenate([gdem, -scap])
        comp = np.concatenate([gp, np.searchsorted(pools, s_pool)])
        flows = _split_reference(gi, len(gkey) + sidx, np.ones(len(gi), dtype=np.int64), cost.astype(np.int64),
                                 supply, comp)
        if flows is not None:
            fl = flows > 0
            chosen_g, chosen_b = gi[fl], sb[fl]
            chosen_b = chosen_b[np.lexsort((chosen_b, chosen_g))]
            out = np.empty(U, dtype=np.int64)
            out[np.argsort(ginv, kind="stable")] = chosen_b
            return out
        if window >= width:
            return None
        window = min(width, window * 4)


@SETTINGS
@given(st.integers(0, 10_000), st.booleans(), st.booleans(), st.booleans())
def test_realize_equals_the_reference(seed, windowed, hints, with_bonus):
    """Random pools (units of partitions that may already hold some of the pool's brokers, several units of one
    partition in one pool, slots of one broker repeated): the same broker for every unit as the reference, from
    a first window of 16 slot units (growing fourfold) or the whole pool, with or without the pair tie-break and a
    replacement bonus."""
    rng = np.random.default_rng(seed)
    P, N, RF, G = int(rng.integers(3, 40)), int(rng.integers(3, 12)), 3, int(rng.integers(1, 4))
    sub = np.array([rng.choice(N, size=min(RF, N), replace=False) for _ in range(P)])
    sub[rng.random(sub.shape) < 0.1] = -1
    lpos = np.arange(N)
    U = int(rng.integers(1, 3 * P))
    unit_p, unit_g = rng.integers(0, P, U), rng.integers(0, G, U)
    slot_g = np.sort(unit_g)
    slot_b = rng.integers(0, N, U)
    lead_lp = np.where(sub[:, 0] >= 0, sub[:, 0], -1)
    pairs = rng.integers(0, 6, (N, N))
    bonus = {int(rng.integers(0, N)): (rng.random(P) < 0.3, 0)} if with_bonus else {}
    old = pooled_mod._REALIZE_ARCS, pooled_mod._HINT_UNITS
    try:
        pooled_mod._REALIZE_ARCS = 0 if windowed else old[0]
        pooled_mod._HINT_UNITS = old[1] if hints else 0
        want = _realize_reference(unit_p, unit_g, slot_b, slot_g, sub, lpos, lead_lp, pairs, bonus,
                                  16 if windowed else 10**9)
        got, _ = realize(unit_p, unit_g, slot_b, slot_g, sub, lpos, lead_lp, pairs, bonus)
    finally:
        pooled_mod._REALIZE_ARCS, pooled_mod._HINT_UNITS = old
    assert (got is None) == (want is None)
    if got is None:
        return
    if not hints and not with_bonus:  # no costs: the diagonal matching (flow/diagonal.py), any valid one
        _assert_valid_realization(got, unit_p, unit_g, slot_b, slot_g, sub, lpos)
    else:
        assert got.tolist() == want.tolist()


def _assert_valid_realization(got, unit_p, unit_g, slot_b, slot_g, sub, lpos):
    """Every pool's units take exactly its slots' brokers (with their counts), no unit a broker its partition
    holds now, no two units of one partition in one pool the same broker."""
    for g in np.unique(unit_g).tolist():
        units = np.flatnonzero(unit_g == g)
        assert sorted(got[units].tolist()) == sorted(slot_b[slot_g == g].tolist())
    for u in range(len(unit_p)):
        held = {int(lpos[b]) for b in sub[unit_p[u]] if b >= 0}
        assert int(got[u]) not in held
    pairs = list(zip(unit_g.tolist(), unit_p.tolist(), got.tolist()))
    assert len(set(pairs)) == len(pairs)
