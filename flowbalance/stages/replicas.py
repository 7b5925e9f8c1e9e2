"""Stage 1: replica counts by min-cost flow on the keep network (A′), with racks and per-topic layers.

Network, per movable partition p (supply = its target RF):
    p → (p, rack) [the rack rule: lo_r..hi_r, see racks.py]  → (topic, broker) → broker → sink
An arc into a broker that already holds p costs 0 (keep); any other costs one move. Broker totals and per-topic
totals are soft intervals [floor, ceil] of each broker's share, with penalties far above any number of moves, so
the optimum first meets every interval it can and then moves the fewest replicas (the flow, not a fixed rule,
decides which brokers keep the ceiling). Removed brokers get no arcs, so everything on them moves; brokers closed to
new replicas keep their keep arcs and no others.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..flow.mincost import solve_min_cost
from ..flow.network import Network, convex_arcs
from ..errors import PlanningError
from ..model import PAD, ClusterState
from ..racks import rack_bounds
from .pooled import balance_pooled
from .split import balance_split
from .common import COST_BOUND, apply_changes, graded_arcs, graded_move_cost, membership, pair_counts, penalties
from .stage_targets import stage_targets


# the full keep network is the fallback only up to this many candidate arcs (about 2 GiB in the solver)
_KEEP_ARCS = 30_000_000


@dataclass
class ReplicaResult:
    """New replica matrix (ids) and what the solve saw."""

    replicas: np.ndarray
    arcs: int
    nodes: int
    network: str = "keep"  # "split" or "pooled" (realized exactly), or "keep" (the full network)
    flow_bound: int | None = None  # moves in the pooled optimum: a lower bound at the same balance
    pruned: bool = False  # the pooled network had pruned pools (and reached the lower bound)
    rack_forced: bool = False  # the rack rule fixes every rack's total: the targets were shares within each rack
    bound: int | None = None  # the lower bound for the targets stage 1 used


def balance_replicas(
    state: ClusterState,
    target_rf: np.ndarray,
    movable: np.ndarray,
    *,
    per_topic: bool = True,
    racks: bool = True,
    prefer: dict[int, int] | None = None,
    lower_bound: int | None = None,
    count_targets: bool = True,
    topics_after_moves: bool = False,
    move_weight: int | None = None,
    topic_slack: int = 0,
) -> ReplicaResult:
    """Stage 1: the split network, realized exactly, where it applies; else the pooled network, realized exactly;
    the full keep network when that realization fails too.
    ``count_targets=False``: no broker intervals, only what must move moves (``--balance bytes``).
    ``topics_after_moves``: per-topic balance ranks below the number of moves (see ``balance_pooled``), in the
    keep fallback too; ``move_weight``: what a move is worth in graded per-topic excess (see ``balance_pooled``)."""
    tg = stage_targets(state, target_rf, movable, per_topic=per_topic, racks=racks, count_targets=count_targets,
                       topic_slack=topic_slack, lower_bound=lower_bound)  # once, for the split and pooled networks
    split = balance_split(state, tg, prefer=prefer, topics_after_moves=topics_after_moves, move_weight=move_weight)
    if split is not None:
        return ReplicaResult(replicas=split.replicas, arcs=split.arcs, nodes=split.nodes, network="split",
                             flow_bound=split.moves, rack_forced=split.rack_forced, bound=split.bound)
    pooled = balance_pooled(state, target_rf, movable, per_topic=per_topic, racks=racks, prefer=prefer,
                            lower_bound=lower_bound, count_targets=count_targets,
                            topics_after_moves=topics_after_moves, move_weight=move_weight, topic_slack=topic_slack,
                            targets=tg)
    if pooled.replicas is not None:
        return ReplicaResult(replicas=pooled.replicas, arcs=pooled.arcs, nodes=pooled.nodes, network="pooled",
                             flow_bound=pooled.moves, pruned=pooled.pruned, rack_forced=pooled.rack_forced,
                             bound=pooled.bound)
    live = int(state.brokers.live.sum())
    if int(movable.sum()) * live > _KEEP_ARCS:
        raise PlanningError(
            f"the pooled optimum ({pooled.moves} moves) could not be realized and the full network would need "
            f"{int(movable.sum()) * live:,} arcs; plan fewer topics at a time (a topic scope) and report this case")
    res = balance_keep(state, target_rf, movable, per_topic=per_topic, racks=racks, prefer=prefer,
                       count_targets=count_targets, topics_after_moves=topics_after_moves, move_weight=move_weight,
                       topic_slack=topic_slack)
    res.flow_bound = pooled.moves
    return res


def balance_keep(
    state: ClusterState,
    target_rf: np.ndarray,
    movable: np.ndarray,
    *,
    per_topic: bool = True,
    racks: bool = True,
    prefer: dict[int, int] | None = None,
    move_cost: np.ndarray | None = None,
    achieved: ClusterState | None = None,
    count_targets: bool = True,
    topics_after_moves: bool = False,
    move_weight: int | None = None,
    topic_slack: int = 0,
) -> ReplicaResult:
    """Choose each movable partition's replica set; fixed partitions keep theirs but count toward totals.

    With ``move_cost`` (per movable partition) and ``achieved`` (an earlier plan), the intervals are hard and
    widened to that plan's counts, and a move of partition p costs ``move_cost[p]`` (see ``balance_pooled``).
    ``topics_after_moves``: the per-topic intervals rank below the moves (a graded cost, as in the pooled network);
    otherwise they rank above them (soft, by priority penalties)."""
    tg = stage_targets(state, target_rf, movable, per_topic=per_topic, racks=racks, count_targets=count_targets,
                       topic_slack=topic_slack, lower_bound=None, achieved=achieved if move_cost is not None else None)
    si, per_topic = tg.si, tg.per_topic
    b, N, live_idx, lpos, NL, idx, mov, Pm = si.b, si.N, si.live_idx, si.lpos, si.NL, si.idx, si.mov, si.Pm
    graded = per_topic and topics_after_moves and move_cost is None
    total, lo, hi, fixed_c, trf = tg.total, tg.lo, tg.hi, tg.fixed_c, tg.trf
    use_racks, rack_of_live, K, Tm, tpos_of = tg.use_racks, tg.rack_of_live, tg.K, tg.Tm, tg.tpos

    net = Network()
    pnode = net.nodes(Pm)
    rnode = net.nodes(Pm * K) if use_racks else None
    tnode = net.nodes(Tm * NL) if per_topic else None
    bnode = net.nodes(NL)
    sink = int(net.nodes(1)[0])

    supply = np.zeros(net.num_nodes, dtype=np.int64)
    supply[pnode] = trf[mov]
    supply[sink] = -int(trf[mov].sum())
    net.set_supply(supply)

    # move costs: 1 per arrival; with --replace, arrivals of a replaced broker's partitions on its
    # replacement are cheaper by 1/W of a move (W > the number of such arrivals, so moves stay first)
    prefer = prefer or {}
    n_pref = sum(int((state.replicas[mov] == old).sum()) for old in prefer) if prefer else 0
    # pair hint: among equal-move plans, prefer arrivals on brokers that are rarely the partner of the partition's
    # leader (a small tie-break below one move), so placement helps stage 3 where replicas must move anyway
    hint_max = 3
    sized = move_cost
    move_cost = (n_pref + 1) * (hint_max * total + 1)
    use_hint = (move_cost * (total + 1) * 64 * (net.num_nodes + Pm * NL + 1) < COST_BOUND and sized is None
                and not graded)
    # a preferred arrival is cheaper by one bonus; every bonus together stays below one move
    bonus = hint_max * total + 1 if use_hint else (graded_move_cost(total) if graded else 1)
    if not use_hint:
        move_cost = (n_pref + 1) * bonus
    if graded and move_weight:  # the move budget's trade: no replacement bonus below a move worth this little
        move_cost, bonus = move_weight, 0
    if sized is None:
        top = max(move_cost, graded_move_cost(total)) if graded else move_cost
        pen = penalties(top, total, net.num_nodes + Pm * NL, 3)
        pen_topic, pen_broker = pen[0], pen[2]  # pen[1], the rack level, is unused: the rack rule is hard
    else:  # hard intervals, widened to the achieved plan's counts (``stage_targets``)
        pen_topic = pen_broker = None
        prefer = {}

    # partition -> (partition, rack) arcs
    if use_racks:
        # the rack rule per (partition, rack), over the live brokers of each rack: hard, and always feasible
        # (lo_r <= hi_r <= the rack's live brokers, each reachable by a candidate arc)
        low, cap = rack_bounds(trf[mov], np.bincount(rack_of_live, minlength=K))
        convex_arcs(net, np.repeat(pnode, K), rnode, low.ravel(), cap.ravel(), cap.ravel(), None)

    # candidate arcs: every movable partition to every live broker (via its rack node and topic node)
    member = membership(idx[mov], lpos, NL)
    pp = np.repeat(np.arange(Pm), NL)
    bb = np.tile(np.arange(NL), Pm)
    keep = member.ravel()
    cost = np.where(keep, 0, move_cost if sized is None else np.repeat(sized, NL)).astype(np.int64)
    if use_hint and NL > 1:
        pairs = pair_counts(state.replica_index, lpos, NL)  # [NL, NL]: leader live position -> partner live position
        lead = lpos[np.maximum(idx[mov, 0], 0)]
        lead = np.where(idx[mov, 0] >= 0, lead, -1)
        lp_rep = np.repeat(lead, NL)
        ok = (lp_rep >= 0) & ~keep
        hint = np.zeros(len(cost), dtype=np.int64)
        hint[ok] = np.minimum(pairs[lp_rep[ok], bb[ok]], hint_max)
        cost = cost + hint  # total hints < one replace bonus (3T+1) < one move
    if prefer:
        for old, new in prefer.items():
            if not b.contains(new) or not b.contains(old):
                continue
            newpos = lpos[b.index_of([new])[0]]
            if newpos < 0:
                continue
            on_old = (state.replicas[mov] == old).any(axis=1)
            sel = np.flatnonzero(on_old) * NL + newpos
            cost[sel] = np.where(keep[sel], 0, cost[sel] - bonus)
    tails = rnode[pp * K + rack_of_live[bb]] if use_racks else pnode[pp]
    heads = tnode[tpos_of[pp] * NL + bb] if per_topic else bnode[bb]
    # brokers closed to new replicas keep theirs (keep arcs) and take no others (capacity 0)
    cand = net.add(tails, heads, (keep | ~b.no_new[live_idx][bb]).astype(np.int64), cost)

    # (topic, broker) -> broker: per-topic soft intervals
    if per_topic:
        tlo, thi, tcount = tg.tlo, tg.thi, tg.tcount
        if graded:
            graded_arcs(net, tnode, np.tile(bnode, Tm), tlo, thi, np.repeat(tcount, NL))
        else:
            convex_arcs(net, tnode, np.tile(bnode, Tm), tlo, thi, np.repeat(tcount, NL), pen_topic)

    # broker -> sink: soft cluster intervals, less the fixed partitions' replicas
    convex_arcs(net, bnode, sink, lo[live_idx] - fixed_c[live_idx], hi[live_idx] - fixed_c[live_idx],
                np.full(NL, Pm, dtype=np.int64), pen_broker)

    flows, _ = solve_min_cost(net)  # FlowError when hard widened intervals meet an unmet rack rule
    chosen = flows[cand] > 0
    new_sets = chosen.reshape(Pm, NL) if Pm else np.zeros((0, NL), dtype=bool)
    replicas = _rebuild(state, mov, new_sets, member, b.ids[live_idx])
    return ReplicaResult(replicas=replicas, arcs=net.num_arcs, nodes=net.num_nodes)


def _rebuild(state: ClusterState, mov: np.ndarray, new_sets: np.ndarray, member: np.ndarray,
             live_ids: np.ndarray) -> np.ndarray:
    """Turn the chosen sets into lists (kept replicas stay in place; see ``apply_changes``)."""
    changed = np.flatnonzero((new_sets != member).any(axis=1) | (new_sets.sum(axis=1) != state.rf[mov]))
    removed, added = {}, {}
    for c in changed.tolist():
        row = int(mov[c])
        old = {int(x) for x in state.replicas[row] if x != PAD}
        new = {int(x) for x in live_ids[new_sets[c]]}
        removed[row] = sorted(old - new)
        added[row] = sorted(new - old)
    return apply_changes(state.replicas, removed, added)
