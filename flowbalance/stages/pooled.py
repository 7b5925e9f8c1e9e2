"""Stage 1 at scale: the pooled keep network, a relaxation of the keep network whose optimum is realized exactly.

The keep network (``replicas.py``) gives every movable partition an arc to every live broker: P × N arcs, 333M
for 1,000,000 replicas on 1,000 brokers. Every arc that is not a keep costs the same one move, so the pooled
network sends all of a partition's moves through one pool node per (topic, rack) instead:

    p → (p, rack) ─keep, cost 0─────────────→ (topic, broker) → broker → sink
                  └─move, cost 1─→ pool(topic, rack) ─┘

with the same soft intervals as the keep network. That is R keep arcs + P·K move arcs + T·N pool arcs. The
pool forgets which partition a unit came from, so its optimum is a lower bound on the keep network's optimum
(every real plan is a pooled flow of the same cost). ``realize`` then hands each pooled unit to a broker of its
pool — at most one per broker per partition, never a broker the partition already holds — with the arrival counts
the flow chose. When that bipartite flow is saturated, the plan costs exactly the pooled optimum: it is optimal,
certified by the flow value. When it is not (tiny clusters, where one partition must send two units into a pool
with one gainer), the caller falls back to the keep network.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..flow.lexicographic import solve_lexicographic
from ..flow.mincost import FlowError, solve_min_cost_split, solve_split_arrays, try_min_cost
from ..flow.network import Network, convex_arcs
from ..model import ClusterState
from ..racks import rack_bounds
from .common import apply_changes_arrays, graded_arcs, graded_move_cost, pair_counts, penalties, sorted_unique
from .stage_targets import StageTargets, stage_targets

# realization arcs built at once before the candidate brokers per unit are limited (and enlarged on failure)
_REALIZE_ARCS = 4_000_000
_HINT_MAX = 3
_HINT_UNITS = 100_000  # above this many moved replicas the realization drops the pair tie-break (speed)


@dataclass
class PooledResult:
    """The realized replica matrix (or None when realization failed) and what the pooled flow proved."""

    replicas: np.ndarray | None
    moves: int  # units through the pools: a lower bound on moves at the same balance (= lower_bound when pruned)
    pruned: bool
    rack_forced: bool  # the rack rule fixes every rack's total: targets are shares within each rack
    bound: int | None  # the lower bound the pruned attempt had to reach
    arcs: int
    nodes: int
    realize_rounds: int


def balance_pooled(
    state: ClusterState,
    target_rf: np.ndarray,
    movable: np.ndarray,
    *,
    per_topic: bool = True,
    racks: bool = True,
    prefer: dict[int, int] | None = None,
    lower_bound: int | None = None,
    allow_prune: bool = True,
    move_size: np.ndarray | None = None,
    achieved: ClusterState | None = None,
    count_targets: bool = True,
    topics_after_moves: bool = False,
    move_weight: int | None = None,
    topic_slack: int = 0,
    targets: StageTargets | None = None,
) -> PooledResult:
    """Solve the pooled network, then realize its pooled units as concrete arrivals.

    ``topics_after_moves``: per-topic balance ranks below the number of moves (broker intervals, then the fewest
    moves, then the least per-topic excess over the topics' intervals): a move costs more than the worst per-topic
    excess, so per-topic balance only chooses among the plans with the fewest moves for count balance.
    ``topic_slack``: every (topic, broker) interval widened by this many replicas on each side (the move
    budget's per-topic targets). ``move_weight`` (with ``topics_after_moves``) lowers that cost: a move is then worth ``move_weight`` units of
    graded per-topic excess, so moves are traded for per-topic balance (the move budget's parametric search).

    ``move_size`` (int64 per movable partition, >= 0): among the flows with the fewest moves, one that moves the
    least total ``move_size`` (the bytes objective; a lexicographic flow, ``flow/lexicographic.py``); then
    ``achieved`` (an earlier plan) widens every interval to that plan's counts and the intervals are hard, so the
    earlier plan stays feasible and no penalty is needed. ``count_targets=False`` drops the broker intervals
    (``--balance bytes``: only what must move moves; the disk stage places by bytes). ``targets``: what
    ``stage_targets`` gives for these parameters, when the caller has it already (not computed again)."""
    tg = targets if targets is not None else stage_targets(
        state, target_rf, movable, per_topic=per_topic, racks=racks, count_targets=count_targets,
        topic_slack=topic_slack, lower_bound=lower_bound, achieved=achieved)
    si = tg.si
    b, N, live_idx, lpos, NL, idx, mov, Pm = si.b, si.N, si.live_idx, si.lpos, si.NL, si.idx, si.mov, si.Pm
    if Pm == 0:
        # nothing may move (every partition held or left out): the assignment stays as it is
        return PooledResult(replicas=state.replicas.copy(), moves=0, pruned=False, rack_forced=False,
                            bound=lower_bound, arcs=0, nodes=0, realize_rounds=0)
    per_topic = tg.per_topic
    total, lo, hi, fixed_c, kp = tg.total, tg.lo, tg.hi, tg.fixed_c, tg.kp
    use_racks, rack_of_live, K = tg.use_racks, tg.rack_of_live, tg.K
    Tm, tpos, tcount, tlo, thi, c_tb = tg.Tm, tg.tpos, tg.tcount, tg.tlo, tg.thi, tg.c_tb
    sub, kr, kc, kb = tg.sub, tg.kr, tg.kc, tg.kb
    lower_bound = tg.lower_bound
    forced_racks = tg.forced or None
    mp = np.repeat(np.arange(Pm), K)  # move arcs: (p, rack) -> pool(topic, rack)
    mr = np.tile(np.arange(K), Pm)
    # the rack rule per (partition, rack), over the live brokers of each rack: [Pm, K]
    low_r, cap_r = rack_bounds(kp, np.bincount(rack_of_live, minlength=K)) if use_racks else (None, None)

    lexicographic = topics_after_moves and per_topic and move_size is None
    # a move costs more than any difference in the per-topic cost (at most (STEPS + 1) per replica either way)
    unit_cost = (move_weight or graded_move_cost(total)) if lexicographic else 1

    open_b = ~b.no_new[live_idx]  # live positions open to new replicas

    def build(hard: bool, prune: bool):
        """The pooled network. With ``prune``, pools only feed (topic, broker) pairs below their ceiling (a
        restriction: accepted only when it reaches the lower bound). (topic, broker) nodes whose interval cannot
        bind (floor 0, nothing above the ceiling, no pool arc) are left out: their keep arcs go to the broker."""
        net = Network()
        # rack totals fixed: each (partition, rack) carries exactly hi_r replicas, so it is the source itself
        pnode = net.nodes(0 if forced_racks is not None else Pm)
        rnode = net.nodes(Pm * K) if use_racks else None
        hub = net.nodes(Tm * K)
        bnode = net.nodes(NL)
        sink = int(net.nodes(1)[0])
        direct_lo = None
        if per_topic and Pm:
            pool_tb = np.flatnonzero(thi > c_tb) if prune else np.arange(Tm * NL)
            need = (tlo > 0) | (c_tb > thi)
            need[pool_tb] = True
            if hard and not lexicographic:
                # a pair that holds nothing now only receives from its pool: with a hard interval the pool arc
                # itself carries it (forced floor, capacity ceiling), no node needed
                empty = c_tb == 0
                need &= ~empty
                direct = pool_tb[empty[pool_tb]]
                pool_tb = pool_tb[~empty[pool_tb]]
                direct_lo = tlo[direct]
            tnode_of = np.full(Tm * NL, -1, dtype=np.int64)
            tsel = np.flatnonzero(need)
            tnode_of[tsel] = net.nodes(len(tsel))
            kkey = tpos[kr] * NL + kb
            kheads = np.where(tnode_of[kkey] >= 0, tnode_of[kkey], bnode[kb])
            pt, pb = pool_tb // NL, pool_tb % NL
            pheads = tnode_of[pool_tb]
        else:
            kheads = bnode[kb]
            pt, pb = np.zeros(NL, dtype=np.int64), np.arange(NL)
            pheads = bnode[pb]
        supply = np.zeros(net.num_nodes, dtype=np.int64)
        if forced_racks is not None:
            supply[rnode] = cap_r.ravel()
        else:
            supply[pnode] = kp
        supply[sink] = -int(kp.sum())
        net.set_supply(supply)
        # three levels as ever (topic < rack < broker); the rack rule itself is hard (always feasible: lo_r <=
        # hi_r <= the rack's live brokers), so its level is unused
        pen_topic, _, pen_broker = [None] * 3 if hard else penalties(1, total, net.num_nodes, 3)
        if lexicographic:  # topics below moves: 1 per unit of excess; brokers above every move when soft
            # (above the graded per-topic cost even when the move budget makes a move cheap)
            top = max(unit_cost, graded_move_cost(total))
            pen_topic, pen_broker = 1, None if hard else penalties(top, total, net.num_nodes, 1)[0]
        if forced_racks is not None:
            src, move_cap = rnode.reshape(Pm, K), cap_r.ravel()
        elif use_racks:
            convex_arcs(net, np.repeat(pnode, K), rnode, low_r.ravel(), cap_r.ravel(), cap_r.ravel(), None)
            src, move_cap = rnode.reshape(Pm, K), cap_r.ravel()
        else:
            src, move_cap = pnode.reshape(Pm, 1), kp
        keep = net.add(src[kr, rack_of_live[kb]], kheads, 1, 0)
        move = net.add(src[mp, mr], hub[tpos[mp] * K + mr], move_cap, unit_cost)
        # no pool feeds a broker closed to new replicas (it only keeps what it holds)
        pool = net.add(hub[pt * K + rack_of_live[pb]], pheads, np.where(open_b[pb], tcount[pt], 0), 0)
        forced = np.zeros(len(pool), dtype=np.int64)
        if direct_lo is not None and len(direct):
            dt, db = direct // NL, direct % NL
            dtail = hub[dt * K + rack_of_live[db]]
            net.force(dtail[direct_lo > 0], bnode[db[direct_lo > 0]], direct_lo[direct_lo > 0])
            room = np.where(open_b[db], thi[direct] - direct_lo, 0)
            pool = np.concatenate([pool, net.add(dtail, bnode[db], room, 0)])
            forced = np.concatenate([forced, direct_lo])
            pt, pb = np.concatenate([pt, dt]), np.concatenate([pb, db])
        if per_topic and Pm:
            if lexicographic:
                graded_arcs(net, tnode_of[tsel], bnode[tsel % NL], tlo[tsel], thi[tsel], tcount[tsel // NL])
            else:
                convex_arcs(net, tnode_of[tsel], bnode[tsel % NL], tlo[tsel], thi[tsel], tcount[tsel // NL],
                            pen_topic)
        convex_arcs(net, bnode, sink, lo[live_idx] - fixed_c[live_idx], hi[live_idx] - fixed_c[live_idx],
                    np.full(NL, Pm, dtype=np.int64), pen_broker)
        return net, keep, move, pool, forced, pt, pb

    # 1. pruned pools, hard intervals (costs 0/1: the solver's cost scaling is fast); kept only when the moves
    #    reach the lower bound, which proves them optimal. 2. every pool arc, hard intervals: the exact relaxation.
    # 3. when the intervals cannot all be met at once: soft intervals with priority penalties (closest balance).
    attempts = [(True, True), (True, False), (False, False)] if (lower_bound is not None and allow_prune) \
        else [(True, False), (False, False)]
    if move_size is not None:
        attempts = [(True, False)]
    elif lexicographic:  # no pruned attempt: pruning is a restriction proven only by reaching the moves bound
        attempts = [(True, False), (False, False)]
    for hard, prune in attempts:
        net, keep, move, pool, forced, pt, pb = build(hard, prune)
        res = try_min_cost(net) if move_size is None else _fewest_moves_then_size(net, move, move_size[mp])
        if res is None:
            continue
        if prune and int(res[0][move].sum()) != lower_bound:
            continue
        break
    else:
        raise FlowError("the soft pooled network has no feasible flow")
    flows = res[0]
    kept = flows[keep] > 0
    units = flows[move]
    arrivals = flows[pool] + forced
    moves = int(units.sum())

    # released replicas: live replicas whose keep arc carries nothing, and every replica on a removed broker
    released = (sub >= 0) & (lpos[np.maximum(sub, 0)] < 0)
    released[kr[~kept], kc[~kept]] = True

    unit_p = np.repeat(mp, units)  # one entry per pooled unit
    unit_g = np.repeat(tpos[mp] * K + mr, units)
    slot_b = np.repeat(pb, arrivals)  # one entry per arrival slot, grouped by pool
    slot_g = np.repeat(pt * K + rack_of_live[pb], arrivals)
    lead_lp = np.where(sub[:, 0] >= 0, lpos[np.maximum(sub[:, 0], 0)], -1)
    pairs = pair_counts(idx, lpos, NL)
    bonus = _prefer_bonus(state, mov, lpos, b, prefer or {})
    got, rounds = realize(unit_p, unit_g, slot_b, slot_g, sub, lpos, lead_lp, pairs, bonus)
    if got is None and prune:
        # another optimum of the unpruned relaxation may be realizable
        return balance_pooled(state, target_rf, movable, per_topic=per_topic, racks=racks, prefer=prefer,
                              lower_bound=lower_bound, allow_prune=False, move_size=move_size, achieved=achieved,
                              count_targets=count_targets, topics_after_moves=topics_after_moves,
                              move_weight=move_weight, topic_slack=topic_slack, targets=tg)
    if got is None:
        return PooledResult(replicas=None, moves=moves, pruned=prune, rack_forced=forced_racks is not None, bound=lower_bound, arcs=net.num_arcs, nodes=net.num_nodes,
                            realize_rounds=rounds)
    rel_rows, rel_cols = np.nonzero(released)
    replicas = apply_changes_arrays(state.replicas, mov[rel_rows], rel_cols, mov[unit_p], b.ids[live_idx[got]])
    return PooledResult(replicas=replicas, moves=moves, pruned=prune, rack_forced=forced_racks is not None, bound=lower_bound, arcs=net.num_arcs, nodes=net.num_nodes,
                        realize_rounds=rounds)


def realize(unit_p: np.ndarray, unit_g: np.ndarray, slot_b: np.ndarray, slot_g: np.ndarray, sub: np.ndarray,
            lpos: np.ndarray, lead_lp: np.ndarray, pairs: np.ndarray, bonus: dict[int, tuple[np.ndarray, int]]
            ) -> tuple[np.ndarray | None, int]:
    """Give every pooled unit (partition ``unit_p`` in pool ``unit_g``) a live broker position from the slots of
    its pool, at most one per broker per partition and never one it holds now. Returns (broker per unit, rounds),
    or (None, rounds) when no such assignment exists among the candidates tried (then one exists nowhere only if
    the last round used every slot).

    A min-cost flow: unit groups (p, pool) → (pool, broker) slots. Costs are a small tie-break: a unit prefers a
    broker that is rarely the partner of its partition's leader (helps stage 3), and a partition of a replaced
    broker prefers the replacement. Each unit first sees a window of the pool's slots; the window grows fourfold until
    the flow is saturated or covers the whole pool. Above ``_HINT_UNITS`` units without a replacement bonus (no
    costs then) a compiled matching comes first (``_diagonal``, ``flow/diagonal.py``); the flow runs only when it
    does not finish."""
    U = len(unit_p)
    if U == 0:
        return np.zeros(0, dtype=np.int64), 0
    # unit groups: (pool, partition) with a demand; slot groups: (pool, broker) with a capacity
    key = unit_g.astype(np.int64) * (len(sub) + 1) + unit_p
    gkey, ginv, gdem = np.unique(key, return_inverse=True, return_counts=True)
    g_pool = gkey // (len(sub) + 1)
    g_p = gkey % (len(sub) + 1)
    NLp = int(slot_b.max()) + 1 if len(slot_b) else 1
    skey = slot_g.astype(np.int64) * NLp + slot_b
    skeys, scap = np.unique(skey, return_counts=True)
    s_pool = skeys // NLp
    s_b = skeys % NLp
    # per pool: its slot groups are contiguous in skeys, its unit groups contiguous in gkey (both sorted by pool)
    pools = sorted_unique(np.concatenate([g_pool, s_pool]))
    s_start = np.searchsorted(s_pool, pools)
    s_len = np.searchsorted(s_pool, pools, side="right") - s_start
    gp = np.searchsorted(pools, g_pool)
    n_slots = s_len[gp]
    # slot units: each slot group repeated by its capacity; a pool has as many slot units as units. Within a pool
    # each broker's slot units are spread evenly over the pool's sequence (the i-th of c at (i + 1/2) / c), so any
    # window of w slot units sees the brokers in proportion to their arrivals, never a run of one broker: a
    # partition sending several units into one large pool (one pool per rack without per-topic balance) finds
    # distinct brokers within a small window
    su = np.repeat(np.arange(len(skeys)), scap)
    rank = np.arange(len(su)) - np.repeat(np.cumsum(scap) - scap, scap)
    su = su[np.lexsort((su, (2 * rank + 1) / (2 * scap[su]), s_pool[su]))]
    su_len = np.bincount(np.searchsorted(pools, s_pool), weights=scap, minlength=len(pools)).astype(np.int64)
    su_start = np.cumsum(su_len) - su_len
    pos = np.cumsum(gdem) - gdem - su_start[gp]  # first unit of each group, counted within its pool
    held = np.where(sub >= 0, lpos[np.maximum(sub, 0)], -1)  # live positions each partition holds now
    if U > _HINT_UNITS and not bonus:
        got = _diagonal(ginv, gdem, held[g_p], su_start, su_len, s_b[su], gp)
        if got is not None:
            return got, 1
    full = int(n_slots.sum())
    width = int(su_len.max()) if len(su_len) else 0
    window = width if full <= _REALIZE_ARCS else 16
    rounds = 0
    while True:
        rounds += 1
        if window >= width:
            # every slot group of the pool
            gi = np.repeat(np.arange(len(gkey)), n_slots)
            j = np.arange(len(gi)) - np.repeat(np.cumsum(n_slots) - n_slots, n_slots)
            sidx = s_start[gp[gi]] + j
        else:
            gi, sidx = _window(gdem + window, gp, pos, su, su_start, su_len, len(skeys))
        sb = s_b[sidx]
        ok = np.flatnonzero(~_holds(held[g_p], gi, sb))
        gi, sidx, sb = gi[ok], sidx[ok], sb[ok]
        if U > _HINT_UNITS:
            cost = np.zeros(len(gi), dtype=np.int64)  # a pure feasibility flow solves faster; the tie-break
            # matters little among so many moves
        else:
            lp = lead_lp[g_p[gi]]
            cost = np.where(lp >= 0, np.minimum(pairs[np.maximum(lp, 0), sb], _HINT_MAX), 0).astype(np.int64)
        if bonus:
            big = _HINT_MAX * U + 1
            for newpos, (rows_mask, _) in bonus.items():
                hit = (sb == newpos) & rows_mask[g_p[gi]]
                cost[hit] -= big
        # unit groups are nodes 0 .. G-1, slot groups G ..; pools are independent components: solved one by one
        supply = np.concatenate([gdem, -scap]).astype(np.int64)
        component = np.concatenate([gp, np.searchsorted(pools, s_pool)])
        flows = solve_split_arrays(gi, len(gkey) + sidx, np.ones(len(gi), dtype=np.int64), cost, supply,
                                   component, infeasible_ok=True)
        if flows is not None:
            fl = flows > 0
            # units of a group take that group's chosen brokers in order
            chosen_g, chosen_b = gi[fl], sb[fl]
            order = np.lexsort((chosen_b, chosen_g))
            chosen_b = chosen_b[order]
            unit_order = np.argsort(ginv, kind="stable")
            out = np.empty(U, dtype=np.int64)
            out[unit_order] = chosen_b
            return out, rounds
        if window >= width:
            return None, rounds
        window = min(width, window * 4)


def _diagonal(ginv: np.ndarray, gdem: np.ndarray, held_g: np.ndarray, su_start: np.ndarray, su_len: np.ndarray,
              su_b: np.ndarray, gp: np.ndarray) -> np.ndarray | None:
    """``realize`` without costs by ``flow/diagonal.py``: the k-th unit of a pool (groups in order) starts on the
    pool's k-th slot unit (brokers spread evenly, ``su_b``), conflicts repaired by exchanges. The broker per unit
    (each group's brokers ascending over its units in input order), or None when the repair does not finish or
    a pool's units and slots differ in number."""
    units_in_pool = np.bincount(gp, weights=gdem, minlength=len(su_len)).astype(np.int64)
    if not np.array_equal(units_in_pool, su_len):
        return None
    from ..flow.diagonal import diagonal_matching  # numba: imported for a large realization only

    group_start = np.concatenate([[0], np.cumsum(gdem)])
    unit_grp = np.repeat(np.arange(len(gdem)), gdem)
    got = diagonal_matching(unit_grp, group_start, held_g, np.concatenate([su_start, [len(su_b)]]), su_b)
    if got is None:
        return None
    out = np.empty(len(got), dtype=np.int64)
    out[np.argsort(ginv, kind="stable")] = got[np.lexsort((got, unit_grp))]
    return out


def _window(w: np.ndarray, gp: np.ndarray, pos: np.ndarray, su: np.ndarray, su_start: np.ndarray,
            su_len: np.ndarray, n_slot_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """The diagonal window: unit group g sees its pool's slot units ``pos[g] .. pos[g] + w[g]`` (cyclically;
    ``w`` at most the pool's slot units), as (group, slot group) pairs, each once, sorted. The k-th unit of a pool
    sees the pool's slot units k .. k + window (capacity-weighted, so a broker with many arrivals is seen by as
    many units); the identity is nearly a matching already, the window leaves room around conflicts. Per-group
    values are repeated along the window rather than gathered per pair (millions of pairs at 1,000,000
    replicas)."""
    w = np.minimum(w, su_len[gp])
    gi = np.repeat(np.arange(len(gp)), w)
    at = np.arange(len(gi)) + np.repeat(pos - (np.cumsum(w) - w), w)  # pos[g] + j, j the place in the window
    n = np.repeat(su_len[gp], w)
    if bool(((pos >= 0) & (pos + w <= 2 * su_len[gp])).all()):
        at = np.where(at >= n, at - n, at)  # wraps at most once: the same as the modulo, without a division
    else:
        at %= n
    pair = gi * n_slot_groups + su[np.repeat(su_start[gp], w) + at]
    pair.sort(kind="stable")  # nearly sorted already: fast; group-major, so ``gi`` keeps its order
    first = np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])
    gi = gi[first]
    return gi, pair[first] - gi * n_slot_groups


def _holds(held_g: np.ndarray, gi: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """Per pair (unit group ``gi``, broker ``sb``): whether the group's partition holds that broker now
    (``held_g``: per group, the live positions its partition holds, -1 padded). ``gi`` is sorted, so each
    column is repeated per group rather than gathered per pair."""
    cnt = np.bincount(gi, minlength=len(held_g))
    bad = np.zeros(len(gi), dtype=bool)
    for c in range(held_g.shape[1]):
        bad |= np.repeat(held_g[:, c], cnt) == sb
    return bad


def _fewest_moves_then_size(net: Network, move: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, int] | None:
    """The hard network's flow with the fewest moves (its own costs) and among those the least total ``size`` of
    the units on the ``move`` arcs: (flow per arc, its moves), or None when it has no flow."""
    tails, heads, caps, costs = net.arrays()
    second = np.zeros(len(tails), dtype=np.int64)
    second[move] = size
    res = solve_lexicographic(net.num_nodes, tails, heads, caps, costs, second, net.supplies())
    return None if res is None else res[:2]


def _prefer_bonus(state: ClusterState, mov: np.ndarray, lpos: np.ndarray, b, prefer: dict[int, int]
                  ) -> dict[int, tuple[np.ndarray, int]]:
    """Per replacement broker (live position): which movable rows were on the broker it replaces."""
    out: dict[int, tuple[np.ndarray, int]] = {}
    for old, new in prefer.items():
        if not (b.contains(old) and b.contains(new)):
            continue
        newpos = int(lpos[b.index_of([new])[0]])
        if newpos < 0:
            continue
        on_old = (state.replicas[mov] == old).any(axis=1)
        prev = out.get(newpos, (np.zeros(len(mov), dtype=bool), 0))[0]
        out[newpos] = (prev | on_old, old)
    return out
