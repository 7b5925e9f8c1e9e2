"""Failover stage: every movable partition's leader and first follower chosen jointly, for the most even failover.

The replica sets are fixed; only the order of each movable list changes (no data moves). When live broker f fails,
each partition it leads passes to its first follower, so survivor b leads ``L_b + M[f, b]`` (``M[l, f]``: the
partitions led by l whose first follower is f; ``metrics.broker_failover``). The spread of row f is max - min over
the survivors of that load less the survivor's weighted share. Lexicographically, the stage

(a) keeps every live broker's leader count within its interval (``targets.intervals(P, weight, live)``; where the
    start, stages 2 + 3, misses one, within [min(lo, start), max(hi, start)]), and with ``topic_leaders`` every
    topic's leaders within theirs (the same rule as ``chain.precheck.leaders_balanced``);
(b) minimizes the worst row spread; (c) then the rows at that worst; (d) then the leader changes and the
    (leader, first follower) changes against the input order.

It never makes a removed broker leader or first follower of a partition with a live replica to take that place,
and hands back stages 2 + 3's order unchanged when it finds nothing better by (b), (c).

Why jointly: leaders first, then followers, fixes which partitions a broker leads before asking where those go
when it fails; a broker whose led partitions share few brokers cannot spread them, whatever its followers.

The parts, one module each: ``failover_problem`` (the choice as arrays), ``failover_bound`` (counting lower
bounds per failed broker and per block of brokers that share many partitions: any size), ``failover_flow``
(max-flow thresholds and convex min-cost flows with every broker's leader count held: fast, the method at any
size), ``failover_lp`` (a linear relaxation solved by PDLP, its bound proven by one min-cost flow, and leader
counts to start the flows from: up to ~150 brokers), ``failover_search`` (which brokers sit at the top of their
leader interval: rounds of the flows from shifted counts), ``failover_exact`` (CP-SAT on small clusters, one
worker, fixed seed, deterministic time limit). Each runs only while the order found is above the bound proven so
far. Same input, same output, byte for byte (work limits are counts: iterations, flows, deterministic time).

``bound`` is a lower bound on the worst spread over every order of these replica sets that keeps the intervals of
(a) (and leaves removed brokers out, as above); with weights, values are scaled by ``WEIGHT_SCALE`` and rounded, so
"exact" means within 2 / ``WEIGHT_SCALE`` of a leader.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..metrics import broker_failover
from ..model import ClusterState
from .failover_bound import bounds, in_leaders
from .failover_exact import count_terms, solve_exact
from .failover_flow import by_convex_flow, by_row_targets, by_thresholds, convex_rounds, sort_key, with_leaders
from .failover_lp import lp_bound, lp_fits
from .failover_search import leader_search
from .failover_problem import FailoverProblem, build_problem, loads, realize, row_extremes, spreads, values
from .followers import balance_followers
from .leaders import balance_leaders

EXACT_MAX_BROKERS = 60  # live brokers: the model has one row per failed broker with one term per survivor
EXACT_MAX_TERMS = 3_000  # (replica set, order) count variables: CP-SAT proves little beyond (42 brokers:
# 11,544 terms, nothing better than the flows in 40 deterministic seconds)
CONVEX_WORK = 1_200_000  # options x convex solves: the convex flow runs while this allows one solve or more
CONVEX_ITERATIONS = 6
THRESHOLD_PROBES = 12
LARGE_OPTIONS = 500_000  # options (ordered pairs of free rows) from which a cluster counts as large
LARGE_TOPIC_PROBES = 2  # threshold targets tried on large clusters with topic intervals (each takes flows)
CONVEX_TERMS_WORK = 200_000  # terms x convex flows from the relaxation's leader counts (2 flows on 100 brokers)
COUNT_WORK = 60_000  # terms x convex flows for fewer brokers at a proven worst (2 flows on 100 brokers)
SEARCH_WORK = 100_000  # terms x convex flows the leader search may spend (1 flow on 100 brokers, 8 on 40)
SEARCH_TRIES = 8  # and at most this many
DETERMINISTIC_TIME = 0.4  # CP-SAT's deterministic seconds for levels (b), (c), (d) together (0.3 s for (b))


@dataclass(frozen=True)
class FailoverResult:
    """The new order and its evidence. Spreads are the metric's (``metrics.broker_failover``), in leaders."""

    replicas: np.ndarray  # int32 [P, K] broker ids: the same sets as the input, reordered
    worst: float  # worst single-broker failover spread after this stage
    at_worst: int  # failed brokers whose spread is ``worst``
    bound: float  # lower bound on the worst spread over every order allowed (module doc)
    exact: bool  # ``worst`` equals ``bound``: no order allowed does better
    at_worst_proven: bool  # and no order with that worst has fewer brokers at it
    baseline_worst: float  # the same figures for the start (stages 2 + 3)
    baseline_at_worst: int
    leader_changes: int  # rows whose leader differs from the input's
    pair_changes: int  # rows whose (leader, first follower) differs from the input's
    method: str  # what found ``replicas``: "stages 2 + 3", "thresholds", "convex flow", "LP leaders + leader
    # search" (and the like: where the flows started + what improved last), "CP-SAT"
    note: str  # one line for the certificate's notes
    bound_by: str = "nothing to reorder"  # what proved ``bound``: "failed brokers' rows", "blocks of brokers",
    # "linear relaxation" or "CP-SAT" (failover_bound, failover_lp, failover_exact)


def balance_failover(state: ClusterState, movable: np.ndarray, *, baseline: np.ndarray | None = None,
                     topic_leaders: bool = False, per_topic: bool = True, exact: bool | None = None,
                     deterministic_time: float = DETERMINISTIC_TIME) -> FailoverResult:
    """Reorder the movable partitions' lists for the most even single-broker failover (module doc).

    ``state``: the replica sets, in the order changes are counted against. ``baseline``: the same sets as stages
    2 + 3 ordered them (the start; computed from ``state`` when None, stage 2 with ``per_topic``).
    ``topic_leaders``: keep every topic's leaders within their intervals too. ``exact``: None = CP-SAT when the
    cluster is small enough (``EXACT_MAX_*``), True / False forces it on / off."""
    movable = np.asarray(movable, dtype=bool)
    base = _stages_2_3(state, movable, per_topic) if baseline is None else np.asarray(baseline)
    start_state = state.with_replicas(base)  # one state: its replica index serves both
    b_worst, b_count = _measured(start_state)
    built = build_problem(state, start_state, movable, topic_leaders)
    if built is None:
        return _result(state, base, (b_worst, b_count), b_worst, True, True, "stages 2 + 3", (b_worst, b_count),
                       "failover: nothing to reorder (fewer than two live brokers, or no movable partition with two "
                       "live replicas)")
    prob, start = built
    row_lb, bound = bounds(prob, start, blocks=True)
    proofs = {"failed brokers' rows": int(row_lb.max(initial=0)), "blocks of brokers": bound}
    choice, method = _fast(prob, start, bound, convex=not lp_fits(prob), row_lb=row_lb)
    if int(spreads(prob, choice).max()) > bound and lp_fits(prob):
        (choice, method), proofs["linear relaxation"] = _relaxed(prob, start, (choice, method), bound, row_lb)
        bound = max(proofs.values())
    elif lp_fits(prob):  # the counting bounds met at once
        choice, method = _fewer_at_worst(prob, (choice, method), bound, row_lb)
    count_proven = False
    if int(spreads(prob, choice).max()) > bound and _exact_fits(prob, exact):
        res = solve_exact(prob, choice, row_lb, deterministic_time, bound)
        proofs["CP-SAT"] = res.bound
        bound = max(proofs.values())
        if sort_key(prob, res.choice) < sort_key(prob, choice):
            choice, method = res.choice, "CP-SAT"
        count_proven = res.proven_count and sort_key(prob, choice)[:2] == sort_key(prob, res.choice)[:2]
    by = next(k for k, v in proofs.items() if v == bound)
    return _finish(state, base, prob, (start, choice), (method, by), (bound, row_lb, count_proven),
                   (b_worst, b_count))


def _stages_2_3(state: ClusterState, movable: np.ndarray, per_topic: bool) -> np.ndarray:
    lead = state.replicas[:, 0].copy()
    return balance_followers(state.with_replicas(balance_leaders(state, lead, movable, per_topic=per_topic)), movable)


def proven_goal(row_lb: np.ndarray, bound: int) -> tuple[int, int]:
    """The least (worst spread, rows at it) that ``bound`` and the rows' own bounds ``row_lb`` prove for every
    order: at a worst of ``bound``, every row whose own bound reaches it is at it, and one row at least."""
    return bound, max(int((np.asarray(row_lb) >= bound).sum()), 1)


def _fast(prob: FailoverProblem, start: np.ndarray, floor: int, convex: bool = True,
          row_lb: np.ndarray | None = None) -> tuple[np.ndarray, str]:
    """Thresholds, then (when the cluster is small enough, and ``convex``) convex flows, then thresholds again
    from there. ``row_lb``: the rows' own bounds; the convex flows stop at ``proven_goal`` (none when None).
    With topic intervals the convex flow runs without them and its rows' maxima become targets for a flow that
    keeps them (``by_row_targets``): the convex costs need each pair's units together, which topic cells split."""
    best, method = start, "stages 2 + 3"
    options = len(prob.opt_row)
    probes = THRESHOLD_PROBES if prob.topic_of is None or options <= LARGE_OPTIONS else LARGE_TOPIC_PROBES
    found = by_thresholds(prob, start, floor, probes)
    if sort_key(prob, found) < sort_key(prob, best):
        best, method = found, "thresholds"
    iterations = min(CONVEX_ITERATIONS, CONVEX_WORK // max(options, 1)) if convex else 0
    near = int(spreads(prob, best).max()) <= floor + (prob.D if options > LARGE_OPTIONS // 5 else 0)
    if not iterations or near:  # large clusters within one leader of the bound: the convex flow costs seconds
        return best, method
    goal = proven_goal(row_lb, floor) if row_lb is not None else None
    for found in _convex_candidates(prob, best, iterations, goal):
        if sort_key(prob, found) < sort_key(prob, best):
            best, method = by_thresholds(prob, found, floor, THRESHOLD_PROBES), "convex flow"
    return best, method


def _relaxed(prob: FailoverProblem, start: np.ndarray, found: tuple[np.ndarray, str], bound: int,
             row_lb: np.ndarray) -> tuple[tuple[np.ndarray, str], int]:
    """The order found and the linear relaxation's proven bound: while the found order is above it, the flows
    from the relaxation's leader counts, then the search over leader counts (``failover_search``). Holding the start's
    counts can cost a leader or more (42 Kafka-placed brokers: 4 with them, 3 with the relaxation's; bound 2).
    With topic intervals the counts stay (other counts would need them kept too): the convex flows run from the
    start instead."""
    choice, method = found
    lp = lp_bound(prob, choice, floor=bound)
    proven, bound = lp.bound, max(bound, lp.bound)
    if int(spreads(prob, choice).max()) <= bound:
        return _fewer_at_worst(prob, found, bound, row_lb), proven
    if prob.topic_of is not None:
        again, how = _fast(prob, start, bound, row_lb=row_lb)
        return ((again, how) if sort_key(prob, again) < sort_key(prob, choice) else found), proven
    moved = with_leaders(prob, choice, lp.leaders)
    terms_n = max(count_terms(prob), 1)
    iterations = min(CONVEX_ITERATIONS, max(CONVEX_TERMS_WORK // terms_n, 1))
    tries = min(max(SEARCH_WORK // terms_n, 1), SEARCH_TRIES)
    for base, how in (((moved, "LP leaders"),) if moved is not None else ()) + ((choice, method),):
        steps = [by_thresholds(prob, base, bound)]
        found_c, weight = convex_rounds(prob, steps[0], iterations, np.ones(prob.N, dtype=np.int64),
                                        proven_goal(row_lb, bound))
        steps.append(by_thresholds(prob, found_c, bound) if found_c is not steps[0] else steps[0])
        steps.append(leader_search(prob, steps[1], bound, tries, weight))
        if sort_key(prob, steps[2]) < sort_key(prob, choice):
            last = next(i for i in (2, 1, 0) if i == 0 or steps[i] is not steps[i - 1])
            return (steps[2], f"{how} + {('thresholds', 'convex flow', 'leader search')[last]}"), proven
        if int(spreads(prob, steps[2]).max()) <= bound + prob.D:
            break  # within a leader of the bound: the start's counts are not worth a second search
    return found, proven


def _fewer_at_worst(prob: FailoverProblem, found: tuple[np.ndarray, str], bound: int,
                    row_lb: np.ndarray) -> tuple[np.ndarray, str]:
    """At the proven bound, fewer failed brokers at it (level (c)): convex flows (``COUNT_WORK``), then
    thresholds, kept when better (100 brokers: 98 at the worst after the thresholds, 64 after two flows); none
    when the rows at it are already as few as ``row_lb`` proves (``proven_goal``)."""
    choice, method = found
    iterations = min(CONVEX_ITERATIONS, max(COUNT_WORK // max(count_terms(prob), 1), 1))
    better = convex_rounds(prob, choice, iterations, np.ones(prob.N, dtype=np.int64),
                           proven_goal(row_lb, bound))[0]
    if better is choice:
        return found
    better = by_thresholds(prob, better, bound)
    return (better, f"{method} + convex flow" if method != "stages 2 + 3" else "convex flow")


def _convex_candidates(prob: FailoverProblem, best: np.ndarray, iterations: int, goal: tuple[int, int] | None):
    """The convex flow's choice; with topic intervals, choices that keep them with rows no higher than its.
    ``goal`` (``proven_goal``) stops the flows without topic intervals; with them the flows run on a problem
    without the intervals, whose goal may be lower."""
    if prob.topic_of is None:
        yield by_convex_flow(prob, best, iterations, goal)
        return
    free = by_convex_flow(replace(prob, topic_of=None, tlo=None, thi=None), best, iterations)
    top = row_extremes(prob, values(prob, *loads(prob, free)))[0]
    for slack in (0, prob.D):
        found = by_row_targets(prob, best, top + slack)
        if found is not None:
            yield found


def _exact_fits(prob: FailoverProblem, exact: bool | None) -> bool:
    if exact is not None:
        return exact
    if int(prob.valid.any(axis=1).sum()) > EXACT_MAX_BROKERS or len(prob.opt_row) > 4 * EXACT_MAX_TERMS:
        return False
    return count_terms(prob) <= EXACT_MAX_TERMS


def _finish(state: ClusterState, base: np.ndarray, prob: FailoverProblem, choices: tuple[np.ndarray, np.ndarray],
            how: tuple[str, str], proof: tuple[int, np.ndarray, bool], before: tuple[float, int]) -> FailoverResult:
    """The replicas of the chosen order, or stages 2 + 3's when that is no better by the metric. ``proof``: the
    scaled bound (CP-SAT's when it proved its optimum: then the optimum), the rows' own bounds, and whether
    CP-SAT proved the rows at the worst fewest. ``how``: the method that found the order, what proved the bound."""
    start, choice = choices
    method, by = how
    bound, row_lb, count_proven = proof
    new = realize(state, base, prob, choice)
    after = _measured(state.with_replicas(new))
    if not _better(after, before):
        new, after, method, choice = _start_replicas(state, base, prob, start), before, "stages 2 + 3", start
        if new is not base:  # stages 2 + 3 let a removed broker lead or fail over: the start without that
            after = _measured(state.with_replicas(new))
    sp = spreads(prob, choice)
    worst = int(sp.max())
    exact = worst <= bound
    # rows whose own bound reaches the worst are at it in every order: when they are all, the count is proven
    count_proven = exact and (count_proven or int((sp == worst).sum()) <= int((row_lb >= worst).sum()))
    b = in_leaders(prob, bound)
    # the bound itself is the certificate's to print (computed from the plan alone, the same in every command);
    # the note says only whether this stage proved its order the best
    note = (f"failover (stage 4): worst single-broker spread {before[0]:g} → {after[0]:g} ({after[1]:,} broker"
            f"{'s' if after[1] != 1 else ''} at it), by {method}"
            + ("; no order of these replica sets does better" if exact else ""))
    return replace(_result(state, new, after, b, exact, count_proven, method, before, note), bound_by=by)


def _start_replicas(state: ClusterState, base: np.ndarray, prob: FailoverProblem, start: np.ndarray) -> np.ndarray:
    """Stages 2 + 3's replicas when every free row's leader and first follower there are the start's (live),
    else the start realized."""
    ids = state.brokers.ids
    sub = np.asarray(base)[prob.rows]
    same = (sub[:, 0] == ids[prob.opt_l[start]]) & (sub[:, 1] == ids[prob.opt_f[start]])
    return base if bool(same.all()) else realize(state, base, prob, start)


def _better(a: tuple[float, int], b: tuple[float, int]) -> bool:
    """(worst, brokers at it) of ``a`` below ``b``'s, with the metric's float noise allowed for."""
    if a[0] < b[0] - 1e-9:
        return True
    return abs(a[0] - b[0]) <= 1e-9 and a[1] < b[1]


def _measured(state: ClusterState) -> tuple[float, int]:
    """(worst spread, failed brokers within 1e-9 of it), by the metric itself."""
    fo = broker_failover(state)
    if not len(fo.spread):
        return 0.0, 0
    w = float(fo.spread.max())
    return fo.worst[1], int((fo.spread >= w - 1e-9).sum())


def _result(state: ClusterState, new: np.ndarray, after: tuple[float, int], bound: float, exact: bool,
            proven_count: bool, method: str, before: tuple[float, int], note: str) -> FailoverResult:
    old, nw = state.replicas, np.asarray(new)
    follow_changed = (old[:, 1] != nw[:, 1]) if old.shape[1] > 1 and nw.shape[1] > 1 else False
    return FailoverResult(replicas=nw, worst=after[0], at_worst=after[1], bound=bound, exact=exact,
                          at_worst_proven=proven_count, baseline_worst=before[0], baseline_at_worst=before[1],
                          leader_changes=int((old[:, 0] != nw[:, 0]).sum()),
                          pair_changes=int(((old[:, 0] != nw[:, 0]) | follow_changed).sum()),
                          method=method, note=note)


