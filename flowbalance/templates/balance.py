"""Bring the templates' replica counts to the count targets before the matching.

The rotation-order templates hold every broker equally often only in whole blocks: the last, partial block of the
sequence, topics of different RFs sharing a block, rack-invalid tuples skipped on racks of unequal size, and broker
weights (which the rotation ignores) all leave some brokers with more template replicas than their share. The
matching cannot repair that (it only chooses which partition takes which template), so the counts are fixed on
the templates themselves: some template slots are given to another broker until every live broker's total
(templates plus the partitions that are not moved) is within the targets the flow strategy aims at
(``certificate.count_targets``: each broker's weighted share, within its rack when the rack rule fixes every
rack's total). The matching then stays exact, and the templates' own bound stays a bound.

Which slots change is a min-cost flow over (group, broker) pools, one group per matching group:

    S → broker a (gives) → (g, a) → hub of g [slot class] → (g, b) → broker b (receives) → T

* first the brokers above their interval give, to brokers below it (arcs of cost -BIG: those first) or below
  their ceiling; once none is above, brokers above their floor give to those below it. Every unit brings one
  broker closer to its interval, so the templates change no more than the counts need;
* then the slot (``SLOT_COST``): a follower after the first, so leaders and (leader, first follower) pairs keep
  the templates' balance; a first follower next (RF 2); a leader last (RF 1, or weights that need it);
* then the moves: the templates' own bound of a group (Σ_b max(0, template count - current count), the moves no
  matching avoids) falls by one for each template replica taken from a broker where the group has more templates
  than replicas, and rises by one for each added where it already has as many (``W_MOVE`` per unit);
* then the group's own balance (a topic's template count within its share).

The targets are narrowed first (``spread_targets``) so that with broker weights the weighted spread is at most 1,
not only every broker within [floor, ceil] of its share. The flow is realized tuple by tuple (the new broker must
not be in the tuple, and the rack rule must still hold); what the pools promised but no tuple allows is left to
the next round, and what no round realizes to augmenting chains found on the tuples themselves (``_augment``).
"""
from __future__ import annotations

import numpy as np

from ..flow.mincost import solve_min_cost
from ..flow.network import Network
from ..model import Brokers
from ..racks import rack_bounds
from ..targets import intervals

# per unit, lexicographically: the slot (the templates' leader and pair balance), then the moves (the templates'
# own bound, ±W_MOVE per side), then the group's share (1 per side)
SLOT_COST = (0, 16, 32)  # slot class 0: a follower after the first; 1: the first follower; 2: the leader
W_MOVE = 4
BIG = 128  # a unit that brings a broker into its interval outweighs any path's costs
ROUNDS = 8
FREE_POOLS = 16  # pools per group kept for brokers that only may (not must) give or receive


def slot_class(k: int) -> np.ndarray:
    """Slot class of each position of a k-tuple (see SLOT_COST)."""
    cls = np.zeros(k, dtype=np.int64)
    cls[0] = 2
    if k > 1:
        cls[1] = 1
    return cls


class TemplateCounts:
    """The groups' templates (changed in place), their partitions' current brokers, and the count targets."""

    def __init__(self, tmpls: list[np.ndarray], curs: list[np.ndarray], fixed: np.ndarray, lo: np.ndarray,
                 hi: np.ndarray, brokers: Brokers, within_racks: bool):
        self.tmpls, self.curs = tmpls, curs
        self.fixed = fixed
        self.b = brokers
        self.N = len(brokers)
        self.racks = brokers.has_racks
        # when the rack rule fixes every rack's total, a slot can only pass to a broker of the same rack
        self.key = brokers.rack.astype(np.int64) if (within_racks and self.racks) else np.zeros(self.N, np.int64)
        self.lo, self.hi = spread_targets(lo, hi, self.counts(), brokers, self.key)
        self.rack_sizes = (np.bincount(brokers.rack[brokers.live], minlength=len(brokers.rack_names))
                           if self.racks else None)
        self._rules: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        w = np.where(brokers.live, brokers.weight, 0.0)
        self.share = w / w.sum() if w.sum() > 0 else w

    def counts(self) -> np.ndarray:
        """Every broker's replicas: the partitions not moved plus every template."""
        c = self.fixed.copy()
        for t in self.tmpls:
            c += np.bincount(t.ravel(), minlength=self.N)
        return c

    def settled(self) -> bool:
        """Every live broker within its interval."""
        over, under = _outside(self, self.counts())
        return not (over.any() or under.any())

    def retarget_within_racks(self) -> None:
        """Targets each rack's brokers share the rack's current total by (when the cluster-wide targets cannot be
        met: the rack rule holds some racks' totals away from them); slots then only pass within a rack, so the
        rack totals, and with them the cluster-wide maximum and minimum, can only come closer."""
        c = self.counts()
        live, rack = self.b.live, self.b.rack.astype(np.int64)
        lo, hi = np.zeros(self.N, dtype=np.int64), np.zeros(self.N, dtype=np.int64)
        for r in np.unique(rack[live]):
            members = live & (rack == r)
            a, z = intervals(int(c[members].sum()), self.b.weight, members)
            lo[members], hi[members] = a[members], z[members]
        self.key = rack
        self.lo, self.hi = spread_targets(lo, hi, c, self.b, rack)

    def rack_rule(self, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Per rack (lo, hi) replicas of one k-tuple, or None without racks."""
        if not self.racks:
            return None
        if k not in self._rules:
            lo, hi = rack_bounds(np.array([k]), self.rack_sizes)
            self._rules[k] = (lo[0], hi[0])
        return self._rules[k]


def spread_targets(lo: np.ndarray, hi: np.ndarray, c: np.ndarray, brokers: Brokers, key: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Narrow [floor, ceil] of each broker's share so that the weighted spread is at most 1: within each key
    group (all live brokers, or one rack), the brokers that round up must be those whose shares have the largest
    fractional parts (a broker rounded up sits 1 - f above its share, one rounded down f below, so the spread is
    1 - f_up + f_down, at most 1 exactly when no broker rounded down has a larger f than one rounded up). Equal
    weights have equal fractions: nothing narrows. The group's total (``c`` summed) is what its brokers share."""
    lo, hi = lo.copy(), hi.copy()
    live = brokers.live
    for k in np.unique(key[live]):
        members = np.flatnonzero(live & (key == k))
        w = brokers.weight[members]
        q = c[members].sum() * w / w.sum()
        if not np.array_equal(np.floor(q + 1e-9), lo[members]):
            continue  # targets of another kind (the fixed load of a partial scope): leave them
        f = q - lo[members]
        up = int(round(float(q.sum() - lo[members].sum())))
        if up <= 0 or up >= len(members):
            continue
        theta = np.sort(f)[::-1][up - 1]
        hi[members[f < theta - 1e-9]] = lo[members[f < theta - 1e-9]]
        lo[members[f > theta + 1e-9]] = hi[members[f > theta + 1e-9]]
    return lo, hi


def balance_templates(tc: TemplateCounts) -> int:
    """Change template slots until every live broker is within [lo, hi]: pooled rounds for the bulk, then one
    augmenting chain at a time for what they could not realize. Returns how many slots changed."""
    changed = 0
    for _ in range(ROUNDS):
        c = tc.counts()
        over, under = _outside(tc, c)
        done = _one_round(tc, c, over, under, True) if over.any() else 0
        if not done and under.any():  # nothing above, or what is above cannot give (partitions not moved)
            done = _one_round(tc, c, over, under, False)
        changed += done
        if not done:
            break
    return changed + _augment(tc)


def _outside(tc: TemplateCounts, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Live brokers above their interval, and below it."""
    live = tc.b.live
    return live & (c > tc.hi), live & (c < tc.lo)


def _one_round(tc: TemplateCounts, c: np.ndarray, over: np.ndarray, under: np.ndarray, from_over: bool) -> int:
    """Solve the pooled flow from the counts ``c`` and realize it; the slots changed. ``from_over``: brokers above
    their interval give to brokers below their ceiling (those below their floor first); otherwise brokers above
    their floor give to those below it."""
    live = tc.b.live
    zero = np.zeros(tc.N, dtype=np.int64)
    if from_over:
        take_free = np.where(live & ~under & (c < tc.hi), tc.hi - c, 0)
        caps = (np.where(over, c - tc.hi, 0), zero, np.where(under, tc.lo - c, 0), take_free)
    else:
        caps = (zero, np.where(live & ~over & (c > tc.lo), c - tc.lo, 0), np.where(under, tc.lo - c, 0), zero)
    p = _Pools(tc, caps[0] + caps[1] > 0, caps[2] + caps[3] > 0)
    net, arcs = _network(tc, p, *caps)
    flow, _ = solve_min_cost(net)
    return _realize(tc, p, arcs, flow, caps[2] + caps[3])


class _Pools:
    """Per group (rows) and broker (columns): template count T, current count C, changeable slots S by class,
    and the group's share interval [tlo, thi]."""

    def __init__(self, tc: TemplateCounts, give: np.ndarray, take: np.ndarray):
        G, N = len(tc.tmpls), tc.N
        self.T = np.zeros((G, N), dtype=np.int64)
        self.C = np.zeros((G, N), dtype=np.int64)
        self.S = np.zeros((3, G, N), dtype=np.int64)
        self.m = np.array([len(t) for t in tc.tmpls], dtype=np.int64)
        k = np.array([t.shape[1] for t in tc.tmpls], dtype=np.int64)
        for g, (t, cur) in enumerate(zip(tc.tmpls, tc.curs)):
            self.T[g] = np.bincount(t.ravel(), minlength=N)
            self.C[g] = np.bincount(cur[cur >= 0], minlength=N)
            cls = slot_class(t.shape[1])
            for s in range(3):
                self.S[s, g] = np.bincount(t[:, cls == s].ravel(), minlength=N)
        q = (self.m * k).astype(np.float64)[:, None] * tc.share[None, :]
        self.tlo = np.floor(q + 1e-9).astype(np.int64)
        self.thi = np.ceil(q - 1e-9).astype(np.int64)
        self.give, self.take = give, take


def _convex(net: Network, tails: np.ndarray, heads: np.ndarray, cap: np.ndarray, base: int, a: int, x: np.ndarray,
            b: int, y: np.ndarray) -> list[np.ndarray]:
    """Arcs pricing the j-th unit (1-based, j <= cap) at base + a·[j <= x] + b·[j > y] (a <= 0 <= b, x, y >= 0):
    at most three parallel arcs of increasing cost. Returns the arc ids of every arc added."""
    lo, hi = np.minimum(x, y), np.maximum(x, y)
    c1, c2 = np.minimum(lo, cap), np.minimum(hi, cap)
    mid = np.where(x <= y, base, base + a + b)
    ids = []
    for seg, cost in ((c1, np.full(len(cap), base + a)), (c2 - c1, mid), (cap - c2, np.full(len(cap), base + b))):
        keep = seg > 0
        ids.append(net.add(tails[keep], heads[keep], seg[keep], cost[keep]))
    return ids


def _network(tc: TemplateCounts, p: _Pools, give_forced, give_free, take_forced, take_free):
    """The pooled network; returns it and the arcs whose flow the realization reads."""
    N = tc.N
    net = Network()
    S, T = net.nodes(2)
    xout, xin = net.nodes(N), net.nodes(N)
    net.add(np.full(N, S), xout, give_forced, -BIG)
    net.add(np.full(N, S), xout, give_free, 0)
    net.add(xin, np.full(N, T), take_forced, -BIG)
    net.add(xin, np.full(N, T), take_free, 0)
    supply = int(give_forced.sum() + give_free.sum())
    net.add([S], [T], supply, 0)  # units nobody needs stay where they are
    S_all = p.S.sum(axis=0)
    og, oa = np.nonzero((S_all > 0) & p.give[None, :])
    room = p.m[:, None] - p.T  # tuples of the group without the broker
    ig, ib = np.nonzero((room > 0) & p.take[None, :])
    # brokers that must give or receive keep every pool; the others only their best few per group (enough for
    # the few units they serve, and the network stays small on large clusters)
    keep = _best_per_group(og, (p.S[0, og, oa] > 0) * (1 << 20) + p.T[og, oa] - p.C[og, oa], give_forced[oa] > 0)
    og, oa = og[keep], oa[keep]
    keep = _best_per_group(ig, p.C[ig, ib] - p.T[ig, ib], take_forced[ib] > 0)
    ig, ib = ig[keep], ib[keep]
    gout, gin = net.nodes(len(og)), net.nodes(len(ig))
    K = int(tc.key.max(initial=0)) + 1
    hub_key = np.unique(np.concatenate([og * K + tc.key[oa], ig * K + tc.key[ib]]))
    hubs = net.nodes(len(hub_key))
    hub_out = hubs[np.searchsorted(hub_key, og * K + tc.key[oa])]
    hub_in = hubs[np.searchsorted(hub_key, ig * K + tc.key[ib])]
    # give: a unit saves a move while the group has more templates of a than replicas on a, and costs the
    # group's balance once it would fall below its share's floor
    T_o, T_i = p.T[og, oa], p.T[ig, ib]
    _convex(net, xout[oa], gout, S_all[og, oa], 0, -W_MOVE, np.maximum(T_o - p.C[og, oa], 0), 1,
            np.maximum(T_o - p.tlo[og, oa], 0))
    slot_arcs = []
    for s in range(3):
        cap = p.S[s, og, oa]
        keep = cap > 0
        slot_arcs.append((net.add(gout[keep], hub_out[keep], cap[keep], SLOT_COST[s]), np.flatnonzero(keep)))
    recv_arcs = net.add(hub_in, gin, room[ig, ib], 0)
    # take: a unit is free while the group has fewer templates of b than replicas on b, a move after; and costs
    # the group's balance once above its share's ceiling
    _convex(net, gin, xin[ib], room[ig, ib], W_MOVE, -W_MOVE, np.maximum(p.C[ig, ib] - T_i, 0), 1,
            np.maximum(p.thi[ig, ib] - T_i, 0))
    sup = np.zeros(net.num_nodes, dtype=np.int64)
    sup[S], sup[T] = supply, -supply
    net.set_supply(sup)
    return net, dict(og=og, oa=oa, ig=ig, ib=ib, slot_arcs=slot_arcs, recv_arcs=recv_arcs)


def _best_per_group(g: np.ndarray, score: np.ndarray, always: np.ndarray, per_group: int = FREE_POOLS
                    ) -> np.ndarray:
    """Mask over pools (group ``g``): the ``always`` ones, and the ``per_group`` highest scores of each group."""
    order = np.lexsort((-score, g))
    gs = g[order]
    first = np.searchsorted(gs, gs, side="left")
    rank = np.empty(len(g), dtype=np.int64)
    rank[order] = np.arange(len(g)) - first
    return always | (rank < per_group)


def _realize(tc: TemplateCounts, p: _Pools, arcs: dict, flow: np.ndarray, room: np.ndarray) -> int:
    """Apply the flow to the templates, tuple by tuple; the slots changed. ``room``: what each broker may still
    receive this round (any receiver with room stands in when the flow's own receiver is in every candidate
    tuple: the pools do not see which brokers share a tuple)."""
    G = len(tc.tmpls)
    out: list[list[tuple[int, int, int]]] = [[] for _ in range(G)]  # per group: (slot class, giver, units)
    for s, (ids, pos) in enumerate(arcs["slot_arcs"]):
        f = flow[ids]
        for j in np.flatnonzero(f > 0):
            out[int(arcs["og"][pos[j]])].append((s, int(arcs["oa"][pos[j]]), int(f[j])))
    need = np.zeros((G, tc.N), dtype=np.int64)
    f = flow[arcs["recv_arcs"]]
    np.add.at(need, (arcs["ig"], arcs["ib"]), f)
    pairs = _pairs(tc)
    room = room.copy()
    changed = 0
    for g in range(G):
        if out[g]:
            changed += _realize_group(tc, g, sorted(out[g]), need[g], room, pairs)
    return changed


def _pairs(tc: TemplateCounts) -> np.ndarray:
    """[N, N]: templates led by a broker with another as first follower (what failover depends on)."""
    keys = [t[:, 0] * tc.N + t[:, 1] for t in tc.tmpls if t.shape[1] > 1]
    flat = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    return np.bincount(flat, minlength=tc.N * tc.N).reshape(tc.N, tc.N)


def _realize_group(tc: TemplateCounts, g: int, out: list[tuple[int, int, int]], need: np.ndarray,
                   room: np.ndarray, pairs: np.ndarray) -> int:
    """Give ``units`` slots of class s held by each giver to the group's receivers (``need``, then any broker
    with ``room``), same hub key. A first follower is taken where its pair with the leader is most used and given
    to the broker whose pair with that leader is least used (``pairs`` is kept up to date), so failover stays as
    even as the change allows."""
    t = tc.tmpls[g]
    cls = slot_class(t.shape[1])
    rule = tc.rack_rule(t.shape[1])
    done = 0
    for s, a, units in out:
        rows, cols = np.nonzero((t == a) & (cls == s)[None, :])
        if s == 1:
            order = np.argsort(-pairs[t[rows, 0], a], kind="stable")
            rows, cols = rows[order], cols[order]
        for row, col in zip(rows.tolist(), cols.tolist()):
            if units == 0:
                break
            b = _pick(tc, t[row], a, s, np.where(room > 0, need, 0), rule, pairs)
            if b < 0:
                b = _pick(tc, t[row], a, s, room, rule, pairs)
            if b < 0:
                continue
            if s == 1:
                pairs[t[row, 0], a] -= 1
                pairs[t[row, 0], b] += 1
            t[row, col] = b
            need[b] = max(need[b] - 1, 0)
            room[b] -= 1
            units -= 1
            done += 1
    return done


def _pick(tc: TemplateCounts, row: np.ndarray, a: int, s: int, want: np.ndarray, rule, pairs: np.ndarray) -> int:
    """The broker (want > 0, same key as a, not in the tuple, rack rule kept) to take a's slot of class s: for a
    first follower the least used pair with the leader, then the largest want; -1 when none fits."""
    cand = np.flatnonzero(want > 0)
    cand = cand[(tc.key[cand] == tc.key[a]) & (cand[:, None] != row[None, :]).all(axis=1)]
    if rule is not None and len(cand):
        cand = cand[_rack_ok(tc, row, a, cand, rule)]
    if not len(cand):
        return -1
    if s == 1:
        return int(cand[np.lexsort((-want[cand], pairs[row[0], cand]))[0]])
    return int(cand[np.argmax(want[cand])])


def _rack_ok(tc: TemplateCounts, row: np.ndarray, a: int, cand: np.ndarray, rule) -> np.ndarray:
    """For each candidate b: the tuple with a replaced by b keeps the rack rule."""
    lo, hi = rule
    rack = tc.b.rack
    cnt = np.bincount(rack[row], minlength=len(hi))
    ra, rb = rack[a], rack[cand]
    same = rb == ra
    return same | ((cnt[rb] + 1 <= hi[rb]) & (cnt[ra] - 1 >= lo[ra]))


# ---- augmenting chains: one unit at a time, exact on the tuples ----------------------------------------

def _augment(tc: TemplateCounts) -> int:
    """While a broker is outside its interval: the shortest chain a → x → ... → b of slot changes (a gives a slot
    to x in one tuple, x gives one to the next broker in another, ...) from a broker that may give to one that
    may receive, found by breadth-first search over brokers; brokers inside the chain keep their counts. The
    edges are exact for one change (a tuple holds a, not x, and keeps the rack rule with x for a), so a chain
    fails only when its own earlier changes took a witness away: that edge is then dropped."""
    changed = 0
    blocked = np.zeros((tc.N, tc.N), dtype=bool)
    failures = 0
    while failures <= tc.N:
        c = tc.counts()
        over, under = _outside(tc, c)
        if not (over.any() or under.any()):
            break
        live = tc.b.live
        E = _edges(tc) & ~blocked
        path = _shortest_chain(E, over, live & (c < tc.hi)) if over.any() else None
        if path is None and under.any():
            path = _shortest_chain(E, live & ~over & (c > tc.lo), under)
        if path is None:
            break
        for u, v in zip(path[:-1], path[1:]):
            if not _give_slot(tc, u, v):
                blocked[u, v] = True
                failures += 1
                break
            changed += 1
    return changed


def _receivable(racks_t: np.ndarray, pos: np.ndarray, rule) -> np.ndarray:
    """[rows, racks]: the racks whose brokers may take position ``pos[row]`` of each tuple (rack indices
    ``racks_t``) under the rack rule (per rack lo, hi)."""
    lo, hi = rule
    m, R = len(racks_t), len(hi)
    rows = np.arange(m)
    cnt = np.zeros((m, R), dtype=np.int64)
    for j in range(racks_t.shape[1]):
        cnt[rows, racks_t[:, j]] += 1
    ra = racks_t[rows, pos]
    recv = (cnt < hi[None, :]) & (cnt[rows, ra] > lo[ra])[:, None]
    recv[rows, ra] = True
    return recv


def _edges(tc: TemplateCounts) -> np.ndarray:
    """E[a, x]: some tuple holds a and not x, and keeps the rack rule with x in a's place; same key, both live."""
    N = tc.N
    R = len(tc.rack_sizes) if tc.racks else 1
    rack = tc.b.rack.astype(np.int64) if tc.racks else np.zeros(N, dtype=np.int64)
    can_keys, both_keys = [], []  # [a, r]: tuples holding a where rack r may replace it; [a, x]: ... x already in
    for t in tc.tmpls:
        m, k = t.shape
        rule = tc.rack_rule(k)
        racks_t = rack[t]
        for i in range(k):
            a = t[:, i]
            recv = _receivable(racks_t, np.full(m, i), rule) if rule is not None else np.ones((m, 1), dtype=bool)
            r_idx, c_idx = np.nonzero(recv)
            can_keys.append(a[r_idx] * R + c_idx)
            for j in range(k):
                if j != i:
                    ok = recv[np.arange(m), racks_t[:, j]]
                    both_keys.append(a[ok] * N + t[ok, j])
    cat = lambda xs: np.concatenate(xs) if xs else np.zeros(0, dtype=np.int64)  # noqa: E731
    can = np.bincount(cat(can_keys), minlength=N * R).reshape(N, R)
    both = np.bincount(cat(both_keys), minlength=N * N).reshape(N, N)
    E = (can[:, rack] - both) > 0
    E &= tc.key[:, None] == tc.key[None, :]
    E &= tc.b.live[:, None] & tc.b.live[None, :]
    np.fill_diagonal(E, False)
    return E


def _shortest_chain(E: np.ndarray, src: np.ndarray, dst: np.ndarray) -> list[int] | None:
    """Fewest edges from any ``src`` broker to any ``dst`` broker (not the same one), or None."""
    N = len(E)
    parent = np.full(N, -2, dtype=np.int64)
    parent[src] = -1
    frontier = np.flatnonzero(src)
    while len(frontier):
        reach = E[frontier]  # [frontier, N]
        new = reach.any(axis=0) & (parent == -2)
        if not new.any():
            return None
        nodes = np.flatnonzero(new)
        parent[nodes] = frontier[np.argmax(reach[:, nodes], axis=0)]
        hit = nodes[dst[nodes]]
        if len(hit):
            path = [int(hit[0])]
            while parent[path[-1]] >= 0:
                path.append(int(parent[path[-1]]))
            return path[::-1]
        frontier = nodes
    return None


def _give_slot(tc: TemplateCounts, u: int, v: int) -> bool:
    """Replace u by v in the best tuple that holds u and not v and keeps the rack rule: the lowest slot class,
    then the change the group's bound likes most. False when no tuple can."""
    best = None
    for g, t in enumerate(tc.tmpls):
        rows, cols = np.nonzero(t == u)
        if not len(rows):
            continue
        ok = ~(t[rows] == v).any(axis=1)
        rule = tc.rack_rule(t.shape[1])
        if rule is not None and ok.any():
            ok &= _receivable(tc.b.rack.astype(np.int64)[t[rows]], cols, rule)[:, tc.b.rack[v]]
        if not ok.any():
            continue
        cls = slot_class(t.shape[1])[cols[ok]]
        i = int(np.argmin(cls))
        cur = tc.curs[g]
        T = np.bincount(t.ravel(), minlength=tc.N)
        C = np.bincount(cur[cur >= 0], minlength=tc.N)
        gain = int(T[u] > C[u]) - int(T[v] >= C[v])
        key = (int(cls[i]), -gain)
        if best is None or key < best[0]:
            best = (key, g, int(rows[ok][i]), int(cols[ok][i]))
    if best is None:
        return False
    _, g, r, col = best
    tc.tmpls[g][r, col] = v
    return True
