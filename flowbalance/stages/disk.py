"""Disk balance (``--balance bytes|count+bytes``): bring every broker's disk use under its limit, moving few bytes.

Placing partitions of unequal size on brokers is bin-packing-like (NP-hard), so this is an improvement method:
rounds, each an exact min-cost bipartite matching (``scipy.optimize.linear_sum_assignment``, a min-cost flow
on a bipartite graph) between brokers above their limit and brokers with room. The value of a (donor, receiver)
pair is the best single transfer between them: one replica moved, or two swapped (so replica counts, and
per-topic counts when the two are of one topic, stay where stage 1 put them). A transfer is scored by the excess
bytes it removes (above capacity first, then above the tolerance limit), then by the bytes it adds to the plan.
Each round applies one transfer per broker; rounds stop when no broker is above its limit or nothing improves.
The replicas are searched in an index sorted by (broker, size) and (topic, broker, size) that is built once and
updated with the entries each round moved (``disk_entries``), so a round costs the pairs it scores, not a sort of
every replica.
Small problems are then solved exactly (``disk_exact``) and the better assignment is kept.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import ClusterState
from ..targets import intervals
from ..racks import rack_bounds
from .common import apply_changes_arrays, live_positions, rack_forced_intervals, share_intervals
from .disk_entries import EntryIndex, slots_of
from .disk_problem import DiskProblem, DiskScore, bytes_lower_bound, disk_use, replica_use, score

_ROUNDS = 2000  # a bound on rounds (each removes excess; it is never reached in the benchmarks)
_SIDE = 64  # donors and receivers considered per round (the largest excess, the most room)
_NEAR = 3  # candidates per side of the ideal size, per pair
_PASSES = 8  # matchings per round
_STALL = 200  # stop once a round removes less than 1/_STALL of the tolerance excess left


@dataclass
class DiskResult:
    """The new replica matrix and what the disk stage achieved."""

    replicas: np.ndarray
    score: DiskScore
    start_score: DiskScore
    limit: np.ndarray  # int64 [N]: the tolerance limit per broker (removed: 0)
    bytes_lower_bound: int  # no plan with every broker at or under the final limits moves fewer bytes
    rounds: int
    exact: bool  # solved exactly (small problem, proven optimal)
    method: str


def disk_problem(original: ClusterState, current: ClusterState, target_rf: np.ndarray, movable: np.ndarray, *,
                 tolerance: float, counts: bool, per_topic: bool, racks: bool = True) -> tuple[DiskProblem, np.ndarray]:
    """The problem for the movable partitions of ``current`` (stage 1's plan); returns it and the live broker
    indices. Count and per-topic intervals are stage 1's targets widened to its counts (stage 1 is not undone)."""
    b = current.brokers
    live_idx, lpos = live_positions(b.live)
    NL = len(live_idx)
    mov = np.flatnonzero(movable)
    size = np.maximum(current.size, 0).astype(np.int64)
    idx = current.replica_index
    start = np.where(idx[mov] >= 0, lpos[np.maximum(idx[mov], 0)], -1).astype(np.int64)
    oidx = original.replica_index[mov]
    orig = np.where(oidx >= 0, lpos[np.maximum(oidx, 0)], -1).astype(np.int64)
    _, topic = np.unique(current.topic[mov], return_inverse=True)
    use_racks = racks and b.has_racks
    _, rack = np.unique(b.rack[live_idx], return_inverse=True) if use_racks else (None, np.zeros(NL, np.int64))
    K = int(rack.max()) + 1 if NL else 1
    rf = (start >= 0).sum(axis=1)
    if use_racks:
        # the rack rule per (partition, rack), widened to stage 1's counts (stage 1 is not undone)
        rack_lo, rack_hi = rack_bounds(rf, np.bincount(rack, minlength=K))
        pr = np.zeros((len(mov), K), dtype=np.int64)
        r, c = np.nonzero(start >= 0)
        np.add.at(pr, (r, rack[start[r, c]]), 1)
        rack_lo, rack_hi = np.minimum(rack_lo, pr), np.maximum(rack_hi, pr)
    else:
        rack_lo, rack_hi = np.zeros((len(mov), 1), dtype=np.int64), rf[:, None].astype(np.int64)
    fixed = ~movable
    fidx = idx[fixed]
    fs = np.broadcast_to(size[fixed][:, None], fidx.shape)
    ok = fidx >= 0
    base_bytes = np.bincount(lpos[fidx[ok]], weights=fs[ok].astype(np.float64), minlength=NL)
    base_bytes = np.rint(base_bytes).astype(np.int64)
    base_count = np.bincount(lpos[fidx[ok]], minlength=NL).astype(np.int64)
    total = int((size * np.asarray(target_rf, dtype=np.int64)).sum())
    w = b.weight[live_idx]
    share = total * w / w.sum() if NL else np.zeros(0)
    upper = np.floor(np.minimum(tolerance * share + 1e-6, 2.0 ** 61)).astype(np.int64)
    # a broker holding a partition larger than its limit cannot get under it while it keeps that partition,
    # and some broker must: its limit is that partition (then "as close as possible" is the target)
    if len(mov) and NL:
        r, c = np.nonzero(start >= 0)
        largest = np.zeros(NL, dtype=np.int64)
        np.maximum.at(largest, start[r, c], size[mov][r])
        upper = np.maximum(upper, largest)
    cap = b.capacity[live_idx].astype(np.int64)
    prob = DiskProblem(size=size[mov], start=start, original=orig, topic=topic.astype(np.int64), rack=rack,
                       rack_lo=rack_lo.astype(np.int64), rack_hi=rack_hi.astype(np.int64), base_bytes=base_bytes,
                       base_count=base_count, upper=upper, capacity=cap)
    if counts:
        c_now = replica_use(prob, start)
        tot = int(c_now.sum())
        lo, hi = intervals(tot, b.weight, b.live)
        lo, hi = lo[live_idx], hi[live_idx]
        forced = rack_forced_intervals(b, live_idx, rack, K, rf, np.zeros(len(b), np.int64), None) \
            if use_racks and len(mov) and not fixed.any() else None
        if forced is not None:
            lo, hi = forced[0][live_idx], forced[1][live_idx]
        prob.count_lo, prob.count_hi = np.minimum(lo, c_now), np.maximum(hi, c_now)
        if per_topic and len(mov):
            T = int(topic.max()) + 1
            r, c = np.nonzero(start >= 0)
            tc = np.bincount(topic[r] * NL + start[r, c], minlength=T * NL).reshape(T, NL)
            tlo, thi = share_intervals(tc.sum(axis=1), w)
            prob.topic_lo = np.minimum(tlo.reshape(T, NL), tc)
            prob.topic_hi = np.maximum(thi.reshape(T, NL), tc)
    return prob, live_idx


def balance_disk(original: ClusterState, current: ClusterState, target_rf: np.ndarray, movable: np.ndarray, *,
                 tolerance: float, counts: bool, per_topic: bool, exact_limit: int | None = None) -> DiskResult:
    """Run the improvement rounds (and the exact solver when the problem is small) on stage 1's plan."""
    from .disk_exact import SMALL_VARIABLES, solve_exact

    prob, live_idx = disk_problem(original, current, target_rf, movable, tolerance=tolerance, counts=counts,
                                  per_topic=per_topic)
    s0 = score(prob, prob.start)
    assign, rounds = improve(prob)
    s1 = score(prob, assign)
    method = f"improvement rounds ({rounds})"
    exact = False
    small = exact_limit if exact_limit is not None else SMALL_VARIABLES
    if prob.num_partitions * prob.num_brokers <= small and prob.num_partitions:
        res = solve_exact(prob)
        if res.assign is not None and res.score.key() <= s1.key():
            assign, s1 = res.assign, res.score
            exact = res.optimal
            method = "exact (CP-SAT, proven optimal)" if res.optimal else "CP-SAT (not proven optimal)"
    d = disk_use(prob, assign)
    final_limit = np.maximum(np.minimum(prob.upper, np.where(prob.capacity >= 0, prob.capacity, prob.upper)), d)
    lb = score(prob, assign).bytes_moved if exact else bytes_lower_bound(prob, final_limit)
    limit = np.zeros(len(current.brokers), dtype=np.int64)
    limit[live_idx] = prob.upper
    replicas = _to_replicas(current, movable, prob, assign, live_idx)
    return DiskResult(replicas=replicas, score=s1, start_score=s0, limit=limit, bytes_lower_bound=lb,
                      rounds=rounds, exact=exact, method=method)


def _to_replicas(current: ClusterState, movable: np.ndarray, prob: DiskProblem, assign: np.ndarray,
                 live_idx: np.ndarray) -> np.ndarray:
    """Replica lists: kept replicas stay in their slots, arrivals take the released slots."""
    mov = np.flatnonzero(movable)
    start = prob.start
    gone = (start >= 0) & ~(start[:, :, None] == assign[:, None, :]).any(axis=2)
    came = (assign >= 0) & ~(assign[:, :, None] == start[:, None, :]).any(axis=2)
    rr, rc = np.nonzero(gone)
    ar, ac = np.nonzero(came)
    # the slots of the released replicas in the full lists: start[j] is current.replicas[row, j] (same layout)
    return apply_changes_arrays(current.replicas, mov[rr], rc, mov[ar],
                                current.brokers.ids[live_idx[assign[ar, ac]]].astype(np.int64))


def improve(p: DiskProblem) -> tuple[np.ndarray, int]:
    """The improvement rounds; returns (assignment, rounds run)."""
    assign = p.start.copy()
    P, Wd = assign.shape
    NL = p.num_brokers
    if P == 0 or NL < 2:
        return assign, 0
    cap = np.where(p.capacity >= 0, p.capacity, np.iinfo(np.int64).max // 4)
    size = p.size
    in_orig = _membership_test(p)
    K = int(p.rack.max()) + 1
    d = disk_use(p, assign)
    cnt = replica_use(p, assign)
    T = p.num_topics
    tc = None
    if p.topic_lo is not None:
        r, c = np.nonzero(assign >= 0)
        tc = np.bincount(p.topic[r] * NL + assign[r, c], minlength=T * NL).reshape(T, NL)
    scale = max(float(d.mean()), 1.0)
    index = EntryIndex(p, assign)
    rounds = 0
    while rounds < _ROUNDS:
        cap_x = np.maximum(d - cap, 0)
        tol_x = np.maximum(d - p.upper, 0)
        donors = np.flatnonzero((cap_x > 0) | (tol_x > 0))
        if not len(donors):
            break
        rounds += 1
        before_x = cap_x.sum() * 4 + tol_x.sum()
        donors = donors[np.lexsort((donors, -(tol_x[donors] + cap_x[donors] * 4)))][:_SIDE]
        room = np.minimum(cap, p.upper) - d
        others = np.setdiff1d(np.arange(NL), donors)
        recv = others[np.lexsort((others, -room[others]))][:_SIDE]
        recv = recv[room[recv] > 0]
        if not len(recv):
            break
        index.sync(assign)
        cand = _candidates(p, assign, d, cnt, tc, cap, donors, recv, index, size, in_orig, K)
        if cand is None:
            break
        pair_o, pair_c, gain_cap, gain_tol, dbytes, mv = cand
        # one value per (donor, receiver): the best transfer between them
        val = (gain_cap.astype(np.float64) * 1e6 + gain_tol.astype(np.float64)) / scale - 1e-3 * dbytes / scale
        good = (gain_cap > 0) | ((gain_cap == 0) & (gain_tol > 0))
        if not good.any():
            break
        val, pair_o, pair_c, mv = val[good], pair_o[good], pair_c[good], mv[good]
        gain_cap, gain_tol = gain_cap[good], gain_tol[good]
        oi = _pos(donors, pair_o)
        ci = _pos(recv, pair_c)
        best = np.full((len(donors), len(recv)), -np.inf)
        pick = np.full((len(donors), len(recv)), -1, dtype=np.int64)
        order = np.lexsort((-np.arange(len(val)), val))  # ascending value: later writes (better) win
        best[oi[order], ci[order]] = val[order]
        pick[oi[order], ci[order]] = order
        applied = 0
        for _ in range(_PASSES):
            # one matching per pass: each broker in at most one transfer of the pass; later passes use the pairs
            # left (a transfer is re-checked against the state the earlier ones left, see _apply)
            weights = np.where(np.isfinite(best), best, 0.0)
            from scipy.optimize import linear_sum_assignment  # 0.2 s to import: only here
            rows, cols = linear_sum_assignment(weights, maximize=True)
            ok = np.isfinite(best[rows, cols]) & (pick[rows, cols] >= 0)
            rows, cols = rows[ok], cols[ok]
            if not len(rows):
                break
            chosen = pick[rows, cols]
            best[rows, cols] = -np.inf
            for k in chosen[np.argsort(-val[chosen], kind="stable")].tolist():
                if _apply(p, assign, mv[k], d, cnt, tc, cap, in_orig, index):
                    applied += 1
        if applied == 0:
            break
        gained = before_x - (np.maximum(d - cap, 0).sum() * 4 + np.maximum(d - p.upper, 0).sum())
        if cap_x.sum() == 0 and gained * _STALL < before_x:
            break  # tolerance excess falls too slowly to be worth its moves
    return assign, rounds


def _pos(arr: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Index of each value in ``arr`` (values are members; ``arr`` need not be sorted)."""
    o = np.argsort(arr, kind="stable")
    return o[np.searchsorted(arr[o], values)]


def _membership_test(p: DiskProblem):
    """f(rows, brokers) -> bool: did the partition hold that broker originally."""
    orig = p.original

    def test(rows: np.ndarray, brokers: np.ndarray) -> np.ndarray:
        return (orig[rows] == brokers[:, None]).any(axis=1) if orig.shape[1] else np.zeros(len(rows), bool)
    return test


def _candidates(p, assign, d, cnt, tc, cap, donors, recv, index: EntryIndex, size, in_orig, K):
    """Candidate transfers for every (donor, receiver) pair, checked; arrays of (donor, receiver, capacity gain,
    tolerance gain, Δbytes, move) where a move is (row_out, slot_out, to, row_in, slot_in, back), row_in = -1
    for a plain move. Per pair: the donor's replicas nearest the ideal size (the excess, or the receiver's room
    when smaller), moved alone, swapped with the receiver's smallest replica of the same topic, or swapped with
    one of the receiver's smallest replicas. The replicas are looked up in ``index`` (sorted by broker, size)."""
    po = np.repeat(donors, len(recv))
    pc = np.tile(recv, len(donors))
    lim = np.minimum(cap, p.upper)
    need = np.maximum(d[po] - lim[po], 1)
    ideal = np.minimum(need, np.maximum(lim[pc] - d[pc], 1))
    move_ok = np.ones(len(po), dtype=bool)
    if p.count_lo is not None:
        move_ok = (cnt[po] - 1 >= p.count_lo[po]) & (cnt[pc] + 1 <= p.count_hi[pc])
    lo_i, hi_i = index.bounds(po)
    lo_c, hi_c = index.bounds(pc)
    # the candidates of every kind and offset, in that order: the pair, the donor's entry, and what comes back
    # (0: nothing, 1: the receiver's replica of the topic, 2: the receiver's entry ``back``)
    pairs, e_outs, kinds, backs = [], [], [], []
    for kind in ("move", "topic", "top", 0, 1, 2):
        if kind in ("move", "topic", "top"):
            q_size = np.zeros(len(pc), dtype=np.int64)
        else:
            j = lo_c + kind
            valid_q = j < hi_c
            qe = np.where(valid_q, j, 0)
            q_size = np.where(valid_q, size[index.b_rows(qe)], 0)
        pos = np.clip(index.first_at_least(po, ideal + q_size), lo_i, hi_i) if kind != "top" else hi_i - _NEAR
        for off in range(-_NEAR, _NEAR) if kind != "top" else range(_NEAR):
            j = pos + off
            valid = (j >= lo_i) & (j < hi_i)
            if kind == "move":
                valid &= move_ok
            elif kind not in ("topic", "top"):
                valid &= valid_q
            sel = np.flatnonzero(valid)
            pairs.append(sel)
            e_outs.append(j[sel])
            code = 0 if kind == "move" else 1 if kind in ("topic", "top") else 2
            kinds.append(np.full(len(sel), code, dtype=np.int8))
            backs.append(qe[sel] if code == 2 else np.zeros(len(sel), dtype=np.int64))
    sel, e_out, kind, back = (np.concatenate(x) for x in (pairs, e_outs, kinds, backs))
    if not len(sel):
        return None
    o_b, c_b = po[sel], pc[sel]
    r_out = index.b_rows(e_out)
    r_in = np.full(len(sel), -1, dtype=np.int64)
    keep = np.ones(len(sel), dtype=bool)
    t = np.flatnonzero(kind == 1)
    if len(t):
        # the largest replica of p's topic on the receiver with size <= s_p - ideal (else the smallest)
        at, hit = index.topic_at_most(p.topic[r_out[t]], c_b[t], np.maximum(size[r_out[t]] - ideal[sel[t]], 0))
        r_in[t] = index.t_entries(at)[0]
        keep[t] = hit
    q = np.flatnonzero(kind == 2)
    r_in[q] = index.b_rows(back[q])
    o_b, c_b, r_out, r_in = o_b[keep], c_b[keep], r_out[keep], r_in[keep]
    s_out = slots_of(assign, r_out, o_b)
    swap = r_in >= 0
    s_in = np.full(len(r_in), -1, dtype=np.int64)
    s_in[swap] = slots_of(assign, r_in[swap], c_b[swap])
    out = _check(p, assign, d, cap, tc, o_b, c_b, r_out, s_out, r_in, s_in, size, in_orig, K)
    return out if len(out[0]) else None


def _check(p, assign, d, cap, tc, o_b, c_b, r_out, s_out, r_in, s_in, size, in_orig, K):
    """Keep the valid transfers of a batch and score them."""
    ok = _can_go(p, assign, r_out, o_b, c_b, K)
    swap = r_in >= 0
    ri = np.maximum(r_in, 0)
    ok &= ~swap | ((r_in != r_out) & _can_go(p, assign, ri, c_b, o_b, K))
    if tc is not None:
        ok &= _topic_ok(p, tc, r_out, r_in, o_b, c_b)
    o_b, c_b, r_out, s_out, r_in, s_in = (x[ok] for x in (o_b, c_b, r_out, s_out, r_in, s_in))
    swap = r_in >= 0
    ri = np.maximum(r_in, 0)
    back = np.where(swap, size[ri], 0)
    t = size[r_out] - back
    cap_x = np.maximum(d - cap, 0)
    tol_x = np.maximum(d - p.upper, 0)
    g_cap = cap_x[o_b] + cap_x[c_b] - np.maximum(d[o_b] - t - cap[o_b], 0) - np.maximum(d[c_b] + t - cap[c_b], 0)
    g_tol = tol_x[o_b] + tol_x[c_b] - np.maximum(d[o_b] - t - p.upper[o_b], 0) \
        - np.maximum(d[c_b] + t - p.upper[c_b], 0)
    db = size[r_out] * (in_orig(r_out, o_b).astype(np.int64) - in_orig(r_out, c_b))
    db += np.where(swap, size[ri] * (in_orig(ri, c_b).astype(np.int64) - in_orig(ri, o_b)), 0)
    mv = np.stack([r_out, s_out, c_b, r_in, s_in, o_b], axis=1)
    return o_b, c_b, g_cap, g_tol, db, mv


def _can_go(p: DiskProblem, assign: np.ndarray, rows: np.ndarray, frm: np.ndarray, to: np.ndarray, K: int
            ) -> np.ndarray:
    """A replica of each row may move from ``frm`` to ``to``: not held there already, rack limits kept."""
    a = assign[rows]
    ok = ~(a == to[:, None]).any(axis=1)
    if K > 1:
        same = p.rack[frm] == p.rack[to]
        ra = np.where(a >= 0, p.rack[np.maximum(a, 0)], -1)
        in_to = (ra == p.rack[to][:, None]).sum(axis=1)
        in_from = (ra == p.rack[frm][:, None]).sum(axis=1)
        ok &= same | ((in_to + 1 <= p.rack_hi[rows, p.rack[to]]) & (in_from - 1 >= p.rack_lo[rows, p.rack[frm]]))
    return ok


def _topic_ok(p, tc, r_out, r_in, o_b, c_b) -> np.ndarray:
    """Per-topic intervals hold after the transfer (a swap within one topic changes nothing)."""
    t_out = p.topic[r_out]
    t_in = np.where(r_in >= 0, p.topic[np.maximum(r_in, 0)], -1)
    same = t_in == t_out
    ok = same | ((tc[t_out, o_b] - 1 >= p.topic_lo[t_out, o_b]) & (tc[t_out, c_b] + 1 <= p.topic_hi[t_out, c_b]))
    has = (r_in >= 0) & ~same
    ti = np.maximum(t_in, 0)
    ok &= ~has | ((tc[ti, c_b] - 1 >= p.topic_lo[ti, c_b]) & (tc[ti, o_b] + 1 <= p.topic_hi[ti, o_b]))
    return ok


def _apply(p, assign, mv, d, cnt, tc, cap, in_orig, index: EntryIndex | None = None) -> bool:
    """Apply one transfer if it is still valid after the transfers applied before it in this round."""
    r_out, s_out, c_b, r_in, s_in, o_b = (int(x) for x in mv)
    K = int(p.rack.max()) + 1
    one = np.array
    if assign[r_out, s_out] != o_b or not _can_go(p, assign, one([r_out]), one([o_b]), one([c_b]), K)[0]:
        return False
    if r_in >= 0:
        if assign[r_in, s_in] != c_b or r_in == r_out:
            return False
        if not _can_go(p, assign, one([r_in]), one([c_b]), one([o_b]), K)[0]:
            return False
    elif p.count_lo is not None and not (cnt[o_b] - 1 >= p.count_lo[o_b] and cnt[c_b] + 1 <= p.count_hi[c_b]):
        return False
    if tc is not None and not _topic_ok(p, tc, one([r_out]), one([r_in]), one([o_b]), one([c_b]))[0]:
        return False
    t = int(p.size[r_out]) - (int(p.size[r_in]) if r_in >= 0 else 0)
    excess = lambda dd, lim: max(dd - int(lim), 0)  # noqa: E731
    g_cap = excess(d[o_b], cap[o_b]) + excess(d[c_b], cap[c_b]) - excess(d[o_b] - t, cap[o_b]) \
        - excess(d[c_b] + t, cap[c_b])
    g_tol = excess(d[o_b], p.upper[o_b]) + excess(d[c_b], p.upper[c_b]) - excess(d[o_b] - t, p.upper[o_b]) \
        - excess(d[c_b] + t, p.upper[c_b])
    if g_cap < 0 or (g_cap == 0 and g_tol <= 0):
        return False  # an earlier transfer of this round took the room
    if index is not None:
        index.note(r_out, s_out, o_b)
        if r_in >= 0:
            index.note(r_in, s_in, c_b)
    assign[r_out, s_out] = c_b
    d[o_b] -= t
    d[c_b] += t
    if tc is not None:
        tc[p.topic[r_out], o_b] -= 1
        tc[p.topic[r_out], c_b] += 1
    if r_in >= 0:
        assign[r_in, s_in] = o_b
        if tc is not None:
            tc[p.topic[r_in], c_b] -= 1
            tc[p.topic[r_in], o_b] += 1
    else:
        cnt[o_b] -= 1
        cnt[c_b] += 1
    return True
