"""The failover stage's problem: which (leader, first follower) each movable partition takes, as arrays.

A *free row* is a movable partition with at least two live replicas; its *options* are the ordered pairs (leader,
first follower) of distinct live replicas. Every other row is *forced*: it keeps the order the start gives it
(stages 2 + 3). A *choice* names one option per free row. Failing live broker f hands each partition f leads to
its first follower, so survivor b then leads ``L_b + M[f, b]`` (``metrics.broker_failover``); row f of the value
matrix holds those loads less each survivor's weighted share, scaled to integers:

    V[f, b] = D * (L_b + M[f, b]) - R[f, b]        (b survives f: both live, b != f)

Without weights D = 1 and R = 0 (exact integers). With weights, D = ``WEIGHT_SCALE`` and R is D x the share,
rounded, so a scaled spread is within 1 of D x the metric's spread. Each row's total of ``L_b + M[f, b]`` over its
survivors is the same for every choice (free rows always lead and fail over to live brokers; forced rows never
change), so the shares are constants.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..model import PAD, ClusterState
from ..targets import intervals, share_intervals

WEIGHT_SCALE = 1 << 20  # scaled units per leader with broker weights
BIG = np.int64(1) << 60


@dataclass(frozen=True, eq=False)
class FailoverProblem:
    """The choice to make, in dense broker indices. Options are sorted by (free row, leader, follower)."""

    N: int  # brokers
    D: int  # scale of the values (1 without weights)
    R: np.ndarray  # int64 [N, N]: scaled share of survivor b when f fails
    valid: np.ndarray  # bool [N, N]: b survives f (both live, b != f)
    rows: np.ndarray  # free rows of the state, ascending
    opt_row: np.ndarray  # free-row position of each option
    opt_l: np.ndarray  # its leader (broker index)
    opt_f: np.ndarray  # its first follower
    opt_lc: np.ndarray  # the leader's column in the reference row
    opt_fc: np.ndarray  # the follower's column in the reference row
    opt_start: np.ndarray  # [F + 1]: the options of free row i are opt_start[i] .. opt_start[i + 1] - 1
    lo: np.ndarray  # leader interval per broker (widened to the start's count where the start misses it)
    hi: np.ndarray
    fixed_L: np.ndarray  # leaders of the forced rows per broker
    fixed_M: np.ndarray  # [N, N] (leader, first follower) pairs of the forced rows
    ref_opt: np.ndarray  # per free row: the option of the reference order, or -1
    ref_lead: np.ndarray  # per free row: the reference leader when live, else -1
    members: np.ndarray  # [F, K] live replicas of each free row (broker indices, -1 padded)
    topic_of: np.ndarray | None  # per free row: its topic, when topic leader intervals are kept
    tlo: np.ndarray | None  # [T, N] per-topic leader intervals less the forced rows' leaders
    thi: np.ndarray | None

    @property
    def F(self) -> int:
        return len(self.rows)


def build_problem(state: ClusterState, start: ClusterState, movable: np.ndarray,
                  topic_leaders: bool) -> tuple[FailoverProblem, np.ndarray] | None:
    """The problem and the start's choice, or None when there is nothing to choose. ``state`` gives the replica
    sets and the reference order (changes are counted against it); ``start`` the same sets in the stages 2 + 3
    order."""
    b = state.brokers
    N, live = len(b), b.live
    if int(live.sum()) < 2:
        return None
    is_live = np.append(live, False)  # index -1 (padding) reads the extra False
    idx, sidx = state.replica_index, start.replica_index
    free = np.asarray(movable, dtype=bool) & (is_live[idx].sum(axis=1) >= 2)
    rows = np.flatnonzero(free)
    if len(rows) == 0:
        return None
    forced = np.flatnonzero(~free)
    fixed_L, fixed_M = lead_pairs(sidx[forced], N)
    opts = _options(idx[rows], is_live)
    key = (opts[0], opts[1], opts[2])
    ref = find_options(key, N, np.arange(len(rows)), idx[rows, 0], _column(idx[rows], 1))
    choice = find_options(key, N, np.arange(len(rows)), *_live_pair(sidx[rows], is_live))
    L = fixed_L + np.bincount(opts[1][choice], minlength=N)
    lo, hi = intervals(state.num_partitions, b.weight, live)
    lo, hi = np.minimum(lo, L), np.maximum(hi, L)  # where the start misses an interval: no broker ends worse
    members = np.where(is_live[idx[rows]], idx[rows], PAD).astype(np.int64)
    topic_of = tlo = thi = None
    if topic_leaders:
        topic_of, tlo, thi = _topic_intervals(state, rows, forced, sidx[forced, 0], opts[1][choice])
    prob = FailoverProblem(N=N, D=1, R=np.zeros((N, N), dtype=np.int64), valid=_survivors(live), rows=rows,
                           opt_row=opts[0], opt_l=opts[1], opt_f=opts[2], opt_lc=opts[3], opt_fc=opts[4],
                           opt_start=opts[5], lo=lo, hi=hi, fixed_L=fixed_L, fixed_M=fixed_M, ref_opt=ref,
                           ref_lead=np.where(is_live[idx[rows, 0]], idx[rows, 0], PAD).astype(np.int64),
                           members=members, topic_of=topic_of, tlo=tlo, thi=thi)
    if b.weighted:
        prob = _with_shares(prob, b.weight, choice)
    return prob, choice


def _column(idx: np.ndarray, j: int) -> np.ndarray:
    return idx[:, j].astype(np.int64) if idx.shape[1] > j else np.full(len(idx), PAD, dtype=np.int64)


def _live_pair(sub: np.ndarray, is_live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The start's (leader, first follower) of each free row, made live: the first live replica leads, and the
    first live replica after it follows (stages 2 + 3 give live ones; this guards a start that does not)."""
    live = is_live[sub]
    first = np.argmax(live, axis=1)
    after = live & (np.arange(sub.shape[1])[None, :] > first[:, None])
    second = np.argmax(after, axis=1)
    r = np.arange(len(sub))
    return sub[r, first].astype(np.int64), sub[r, second].astype(np.int64)


def lead_pairs(sub: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray]:
    """Leaders per broker and the [N, N] (leader, first follower) counts of a replica-index matrix."""
    lead = sub[:, 0] if sub.shape[1] else np.zeros(0, dtype=np.int64)
    L = np.bincount(lead[lead >= 0], minlength=N).astype(np.int64)
    follow = _column(sub, 1)
    ok = (lead >= 0) & (follow >= 0)
    M = np.bincount(lead[ok].astype(np.int64) * N + follow[ok], minlength=N * N).reshape(N, N).astype(np.int64)
    return L, M


def _survivors(live: np.ndarray) -> np.ndarray:
    return live[:, None] & live[None, :] & ~np.eye(len(live), dtype=bool)


def _options(sub: np.ndarray, is_live: np.ndarray) -> tuple[np.ndarray, ...]:
    """Every ordered pair of distinct live replicas of each row, sorted by (row, leader, follower): (row, leader,
    follower, their columns, start of each row's options). Built in that order without a sort: each row's columns
    are ranked by broker (padding, -1, first), and the (rank i, rank j) pairs, i != j, taken in lexicographic
    order are then ordered by leader, then follower."""
    P, K = sub.shape
    col = np.argsort(sub, axis=1, kind="stable")  # column of each rank: brokers ascending within the row
    ranked = np.take_along_axis(sub, col, axis=1)
    pi, pj = (a.ravel() for a in np.nonzero(~np.eye(K, dtype=bool)))  # (i, j) pairs, lexicographic
    ci, cj = col[:, pi], col[:, pj]  # [P, K(K-1)]: the pairs' columns in each row
    lb, fb = ranked[:, pi], ranked[:, pj]
    ok = is_live[lb] & is_live[fb]
    r = np.nonzero(ok)[0]
    start = np.searchsorted(r, np.arange(P + 1))
    return (r.astype(np.int64), lb[ok].astype(np.int64), fb[ok].astype(np.int64), ci[ok].astype(np.int64),
            cj[ok].astype(np.int64), start.astype(np.int64))


def find_options(opts: tuple[np.ndarray, np.ndarray, np.ndarray], N: int, frow: np.ndarray, lead: np.ndarray,
                 follow: np.ndarray) -> np.ndarray:
    """Option index of each (free row, leader, follower) triple; -1 where the pair is not an option."""
    key = (opts[0] * N + opts[1]) * N + opts[2]
    want = (frow.astype(np.int64) * N + lead) * N + follow
    at = np.minimum(np.searchsorted(key, want), max(len(key) - 1, 0))
    ok = (lead >= 0) & (follow >= 0) & (key[at] == want)
    return np.where(ok, at, -1).astype(np.int64)


def _with_shares(prob: FailoverProblem, weight: np.ndarray, choice: np.ndarray) -> FailoverProblem:
    """Weighted shares: R[f, b] = D x (row f's total) x w_b / (row f's survivor weight), rounded. The totals are
    the same for every choice (module doc), so they are read from ``choice``."""
    L, M = loads(prob, choice)
    tot = np.where(prob.valid, L[None, :] + M, 0).sum(axis=1, keepdims=True).astype(np.float64)
    w = np.where(prob.valid, weight[None, :], 0.0)
    wsum = np.maximum(w.sum(axis=1, keepdims=True), 1e-300)
    R = np.rint(WEIGHT_SCALE * tot * w / wsum).astype(np.int64)
    return replace(prob, D=WEIGHT_SCALE, R=R)


def _topic_intervals(state: ClusterState, rows: np.ndarray, forced: np.ndarray, forced_lead: np.ndarray,
                     free_lead: np.ndarray):
    """Per-topic leader intervals over the live brokers (widened to the start's counts), less the forced rows'
    leaders: the room left for the free rows. Same rule as ``precheck.leaders_balanced``."""
    b = state.brokers
    N, T = len(b), len(state.topics)
    live_idx = np.flatnonzero(b.live)
    a, c = share_intervals(np.bincount(state.topic, minlength=T), b.weight[live_idx])
    tlo = np.zeros((T, N), dtype=np.int64)
    thi = np.full((T, N), np.iinfo(np.int64).max // 4, dtype=np.int64)  # removed brokers: not checked
    tlo[:, live_idx], thi[:, live_idx] = a.reshape(T, -1), c.reshape(T, -1)
    fixed = np.zeros((T, N), dtype=np.int64)
    ok = forced_lead >= 0
    np.add.at(fixed, (state.topic[forced][ok], forced_lead[ok]), 1)
    now = fixed.copy()
    np.add.at(now, (state.topic[rows], free_lead), 1)
    tlo, thi = np.minimum(tlo, now), np.maximum(thi, now)
    return state.topic[rows].astype(np.int64), tlo - fixed, thi - fixed


# ---- a choice: loads, values, spreads ------------------------------------------------------------------------

def loads(prob: FailoverProblem, choice: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(L, M): leaders per broker and [N, N] (leader, first follower) counts of a choice."""
    N = prob.N
    lead, follow = prob.opt_l[choice], prob.opt_f[choice]
    L = prob.fixed_L + np.bincount(lead, minlength=N)
    M = prob.fixed_M + np.bincount(lead * N + follow, minlength=N * N).reshape(N, N)
    return L, M


def values(prob: FailoverProblem, L: np.ndarray, M: np.ndarray) -> np.ndarray:
    """Scaled values V[f, b] = D * (L_b + M[f, b]) - R[f, b] (meaningful where ``valid``)."""
    return prob.D * (L[None, :] + M) - prob.R


def row_extremes(prob: FailoverProblem, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per failed broker: the largest and smallest value over its survivors (0, 0 for rows of removed brokers)."""
    has = prob.valid.any(axis=1)
    hi = V.max(axis=1, where=prob.valid, initial=-BIG)  # masked in the reduction: no N x N copy (3,000 brokers)
    lo = V.min(axis=1, where=prob.valid, initial=BIG)
    return np.where(has, hi, 0), np.where(has, lo, 0)


def spreads(prob: FailoverProblem, choice: np.ndarray) -> np.ndarray:
    """Scaled spread of every row of a choice."""
    hi, lo = row_extremes(prob, values(prob, *loads(prob, choice)))
    return hi - lo


def leaders_fit(prob: FailoverProblem, choice: np.ndarray) -> bool:
    """True when every broker's leaders (and each topic's, when kept) are within the problem's intervals."""
    L = loads(prob, choice)[0]
    if not bool(np.all((L >= prob.lo) & (L <= prob.hi))):
        return False
    if prob.topic_of is None:
        return True
    TL = np.zeros_like(prob.tlo)
    np.add.at(TL, (prob.topic_of, prob.opt_l[choice]), 1)
    return bool(np.all((TL >= prob.tlo) & (TL <= prob.thi)))


def changes(prob: FailoverProblem, choice: np.ndarray) -> tuple[int, int]:
    """(leaders changed, (leader, first follower) pairs changed) against the reference order."""
    lead = int((prob.opt_l[choice] != prob.ref_lead).sum())
    return lead, int((choice != prob.ref_opt).sum())


# ---- from a choice to replica lists ----------------------------------------------------------------------------

def realize(state: ClusterState, start: np.ndarray, prob: FailoverProblem, choice: np.ndarray) -> np.ndarray:
    """The replica matrix of a choice: forced rows as the start has them; free rows lead with the chosen leader,
    then the chosen first follower, then their other replicas in the reference order. Rows with the same live
    replica set swap their orders first so that the fewest leaders, then pairs, change (the metric sees only
    the counts per set, which stay the same)."""
    choice = fewest_changes(prob, choice)
    out = np.asarray(start, dtype=np.int32).copy()
    src = state.replicas[prob.rows]
    W = src.shape[1]
    cols = np.arange(W)[None, :]
    li, fi = prob.opt_lc[choice][:, None], prob.opt_fc[choice][:, None]
    key = np.where(cols == li, -2, np.where(cols == fi, -1, cols))
    order = np.argsort(key, axis=1, kind="stable")
    out[prob.rows, :W] = np.take_along_axis(src, order, axis=1)
    return out


def group_of(prob: FailoverProblem) -> np.ndarray:
    """Group per free row: rows with the same live replica set (and topic, with topic intervals) are
    interchangeable."""
    key = np.sort(prob.members, axis=1)
    if prob.topic_of is not None:
        key = np.column_stack([prob.topic_of, key])
    code = _row_code(key, prob.N)
    if code is None:
        return np.unique(key, axis=0, return_inverse=True)[1].ravel().astype(np.int64)
    return np.unique(code, return_inverse=True)[1].ravel().astype(np.int64)


def _row_code(key: np.ndarray, N: int) -> np.ndarray | None:
    """Each row of ``key`` (a topic, then broker indices of -1 .. N - 1; or only those) as one int64 that orders
    the rows as ``np.unique(key, axis=0)`` does, lexicographically: groups numbered by a 1-D sort, 3-10 times
    faster. None when the codes would not fit in 63 bits."""
    if not len(key):
        return None
    base = N + 1
    lead = int(key[:, 0].max()) + 2  # the first column (topic or broker + 1) below this
    if lead * base ** (key.shape[1] - 1) >= 1 << 62 or int(key.min()) < -1:
        return None
    code = key[:, 0].astype(np.int64) + 1
    for j in range(1, key.shape[1]):
        code = code * base + (key[:, j] + 1)
    return code


def fewest_changes(prob: FailoverProblem, choice: np.ndarray) -> np.ndarray:
    """The same (leader, follower) counts per group, handed to rows: first to rows that keep their pair, then to
    rows that keep their leader, then to the rest (each step matches as many rows as it can)."""
    N = prob.N
    g = group_of(prob)
    slot_l, slot_f = prob.opt_l[choice], prob.opt_f[choice]
    ref = prob.ref_opt
    none = -1 - np.arange(prob.F, dtype=np.int64)  # keys that match no slot
    pair_key = np.where(ref >= 0, (g * N + prob.opt_l[np.maximum(ref, 0)]) * N + prob.opt_f[np.maximum(ref, 0)],
                        none)
    lead_key = np.where(prob.ref_lead >= 0, g * N + prob.ref_lead, none)
    row_free = np.ones(prob.F, dtype=bool)
    slot_free = np.ones(prob.F, dtype=bool)
    got_l = np.full(prob.F, -1, dtype=np.int64)
    got_f = np.full(prob.F, -1, dtype=np.int64)
    for rkey, skey in ((pair_key, (g * N + slot_l) * N + slot_f), (lead_key, g * N + slot_l), (g, g)):
        r_ix, s_ix = np.flatnonzero(row_free), np.flatnonzero(slot_free)
        mr, ms = match(rkey[r_ix], skey[s_ix])
        got_l[r_ix[mr]], got_f[r_ix[mr]] = slot_l[s_ix[ms]], slot_f[s_ix[ms]]
        row_free[r_ix[mr]] = False
        slot_free[s_ix[ms]] = False
    return find_options((prob.opt_row, prob.opt_l, prob.opt_f), N, np.arange(prob.F), got_l, got_f)


def match(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pair positions of ``a`` and ``b`` with equal keys, the k-th of a key in ``a`` (by position) with the k-th
    in ``b``: as many pairs per key as the smaller side has; pairs in (key, k) order. Two stable sorts and one
    search: the k-th of a key in sorted ``b`` is k places after its first (the convex rounds call this twice
    per round on every free row)."""
    oa, ob = np.argsort(a, kind="stable"), np.argsort(b, kind="stable")
    sa, sb = a[oa], b[ob]
    at = np.searchsorted(sb, sa) + rank(sa)  # where the k-th of sa's key would be in sb
    ok = at < len(sb)
    ok[ok] = sb[at[ok]] == sa[ok]
    return oa[ok], ob[at[ok]]


def rank(sorted_keys: np.ndarray) -> np.ndarray:
    """Position of each element among the equal keys before it (keys sorted)."""
    n = len(sorted_keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    start = np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]
    return np.arange(n) - np.maximum.accumulate(np.where(start, np.arange(n), 0))


# ---- groups of interchangeable rows ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Terms:
    """One entry per (group, option of the group): the count variables of the exact model and the relaxation,
    and the units of the convex flow. ``opt``: the option of the group's first row (its pair and columns)."""

    g: np.ndarray
    l: np.ndarray  # noqa: E741
    f: np.ndarray
    opt: np.ndarray
    size: np.ndarray  # rows per group
    group: np.ndarray  # group per free row


def terms(prob: FailoverProblem) -> Terms:
    """The groups (``group_of``) and the options of each, in option order."""
    group = group_of(prob)
    size = np.bincount(group).astype(np.int64)
    first = np.unique(group, return_index=True)[1]  # each group's first row
    n_opt = prob.opt_start[first + 1] - prob.opt_start[first]
    tg = np.repeat(np.arange(len(first)), n_opt)
    o = np.repeat(prob.opt_start[first], n_opt) + rank(tg)
    return Terms(tg, prob.opt_l[o], prob.opt_f[o], o, size, group)


def choice_from_terms(prob: FailoverProblem, t: Terms, val: np.ndarray) -> np.ndarray:
    """A choice with ``val`` rows of each group on each of its options (which row gets which is settled by
    ``fewest_changes`` later)."""
    slot = np.repeat(np.arange(len(val)), val)
    mr, ms = match(t.group, t.g[slot])
    got_l = np.full(prob.F, -1, dtype=np.int64)
    got_f = np.full(prob.F, -1, dtype=np.int64)
    got_l[mr], got_f[mr] = t.l[slot[ms]], t.f[slot[ms]]
    return find_options((prob.opt_row, prob.opt_l, prob.opt_f), prob.N, np.arange(prob.F), got_l, got_f)


def term_values(prob: FailoverProblem, t: Terms, choice: np.ndarray) -> np.ndarray:
    """The counts n[g, (l, f)] of a choice."""
    N = prob.N
    key_t = (t.g * N + t.l) * N + t.f
    key_c = (t.group * N + prob.opt_l[choice]) * N + prob.opt_f[choice]
    u, c = np.unique(key_c, return_counts=True)
    at = np.minimum(np.searchsorted(u, key_t), len(u) - 1)
    return np.where(u[at] == key_t, c[at], 0)
