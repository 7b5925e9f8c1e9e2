"""Min-cost flow by the primal-dual method: shortest distances (scipy's Dijkstra), then a max flow (OR-Tools) on
the arcs those distances make admissible, phase after phase.

Why: the leader network is unit capacity with costs 0 and 1 (333,000 partitions, 1,000,000 candidates at
1,000,000 replicas), and nearly every partition keeps its leader. OR-Tools' cost scaling refines the whole
network in every one of its ~20 epsilon phases (10–13 s there); primal-dual sends all the cost-0 flow in its
first phase and then needs one phase per distinct length of the remaining augmenting paths — 3 or 4 on
clusters that need a few tens of thousands of changes (3–4× faster), up to ~20 when chains of changes grow
long. Each phase is a few passes over the arcs in compiled code.

The method (Ford–Fulkerson's primal-dual; Ahuja, Magnanti & Orlin, *Network Flows*, 9.8): keep a pseudo-flow
and node potentials under which every residual arc has a non-negative reduced cost. Start from the flow that
saturates every negative-cost arc (potentials 0 then hold). Each phase computes the shortest reduced distances
``d`` from all nodes with excess, raises each potential by ``min(d, D)`` where ``D`` is the distance to the
nearest node with a deficit, and sends a max flow from the excesses to the deficits over the residual arcs of
reduced cost 0 within ``D``. Reduced costs stay non-negative, so each phase augments along shortest paths and
the final flow is optimal (its potentials are the certificate). No deficit reachable: no feasible flow.

An infeasible network may show it only after many phases (20 s on one leader network where OR-Tools said so
in 1 s). After ``CHECK_AFTER`` phases ``solve_primal_dual`` therefore checks feasibility once, with one max flow
over every arc; networks that finish sooner (most) never pay for it. From ``CHECK_FORK_FROM_ARCS`` arcs, with two
cores, a forked child runs that max flow while the phases go on (0.5-0.9 s a leader network at 1,000,000
replicas); the answer is the same either way (``_Check``).
"""
from __future__ import annotations

import numpy as np
from ortools.graph.python import max_flow
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from ..forked import Forked, can_fork

CHECK_AFTER = 3  # phases run before feasibility is checked (a max flow costs about one phase)
CHECK_FORK_FROM_ARCS = 200_000  # networks this large check feasibility in a forked child, alongside the phases
EXACT = 2 ** 52  # Dijkstra sums float64: distances below this are exact integers
DIAL_FROM_NODES = 100_000  # networks this large get distance buckets before Dijkstra (smaller: Dijkstra is faster)
DIAL_BUCKETS = 32  # distances a bucket search visits before it leaves the phase to Dijkstra
DIAL_LEVELS = 5_000  # breadth-first levels it runs before it does the same (long 0-cost chains; 400 seen at 1M)


class CostRangeError(ArithmeticError):
    """A shortest distance reached 2**52: float64 sums would no longer be exact (use a cost-scaling solver)."""


def solve_primal_dual(num_nodes: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, costs: np.ndarray,
                      supply: np.ndarray, *, check_after: int = CHECK_AFTER) -> tuple[np.ndarray, int] | None:
    """(flow per arc in the order given, optimal cost), or None when no flow meets the supplies.

    ``supply[v]`` > 0 is supplied at v, < 0 demanded; the supplies must sum to 0. Parallel arcs are allowed.
    ``check_after``: phases before the feasibility check (0: check first; -1: never, the caller knows the
    network is feasible)."""
    res = primal_dual(num_nodes, tails, heads, caps, costs, supply, check_after=check_after)
    return None if res is None else res[:2]


def primal_dual(num_nodes: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, costs: np.ndarray,
                supply: np.ndarray, *, check_after: int = CHECK_AFTER) -> tuple[np.ndarray, int, np.ndarray] | None:
    """``solve_primal_dual`` with the final node potentials as a third item: ``costs + p[tails] - p[heads]``
    is >= 0 on every arc with room left and <= 0 on every arc with flow (the optimality certificate).
    ``CostRangeError`` when a distance reaches 2**52 (costs far beyond any network flowbalance builds)."""
    tails, heads = np.asarray(tails, dtype=np.int64), np.asarray(heads, dtype=np.int64)
    caps, costs = np.asarray(caps, dtype=np.int64), np.asarray(costs, dtype=np.int64)
    supply = np.asarray(supply, dtype=np.int64)
    if int(supply.sum()) != 0:
        return None
    res = _Residual(num_nodes, tails, heads, caps, costs, supply)
    check = _Check(num_nodes, tails, heads, caps, supply)
    phases = 0
    try:
        while res.has_excess():
            if phases == check_after:
                check.start()
            if check.says_infeasible() or not res.phase():
                return None
            phases += 1
    finally:
        check.cancel()
    flow = res.flow
    return flow, int((flow * costs).sum()), res.pot


class _Check:
    """The feasibility check (``_feasible``): here, or on large networks in a forked child (``flowbalance.forked``)
    while the phases go on, its answer read at the first phase boundary after it is ready. Either way the result
    is the same: a feasible network's flow is the phases' own, and an infeasible one gives None whether the check
    or a phase finds it first."""

    def __init__(self, n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, supply: np.ndarray):
        self.run = lambda: _feasible(n, tails, heads, caps, supply)
        self.fork = len(tails) >= CHECK_FORK_FROM_ARCS and can_fork()
        self.child: Forked | None = None
        self.infeasible = False

    def start(self) -> None:
        if self.fork:
            self.child = Forked(self.run)
        else:
            self.infeasible = not self.run()

    def says_infeasible(self) -> bool:
        if self.child is not None and self.child.ready():
            child, self.child = self.child, None
            self.infeasible = not child.result_or(self.run)
        return self.infeasible

    def cancel(self) -> None:
        if self.child is not None:
            self.child.cancel()
            self.child = None


def _feasible(n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, supply: np.ndarray) -> bool:
    """Whether some flow meets every supply (one max flow from a source joined to the supplies to a sink joined
    to the demands)."""
    src, dst = np.flatnonzero(supply > 0), np.flatnonzero(supply < 0)
    need = int(supply[src].sum())
    if need == 0:
        return True
    _, pushed = _max_flow(n, np.concatenate([tails, np.full(len(src), n), dst]),
                          np.concatenate([heads, src, np.full(len(dst), n + 1)]),
                          np.concatenate([caps, supply[src], -supply[dst]]))
    return pushed == need


def _max_flow(n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray) -> tuple[np.ndarray, int]:
    """Max flow from node ``n`` to node ``n + 1`` (OR-Tools push-relabel): (flow per arc, value)."""
    mf = max_flow.SimpleMaxFlow()
    arcs = mf.add_arcs_with_capacity(tails, heads, caps)
    if mf.solve(n, n + 1) != mf.OPTIMAL:
        raise RuntimeError("max flow failed")
    return np.asarray(mf.flows(arcs), dtype=np.int64), int(mf.optimal_flow())


class _Residual:
    """The pseudo-flow, its excesses and the potentials; residual slot i < E is arc i forward, E + i backward.
    Slots are kept sorted by tail once (``order``) and all per-slot state lives in that order: the room left on
    each slot is updated where a phase sends flow (``mate``: the position of the opposite slot), and each phase
    works on its live slots only, so a phase costs a few passes over the live slots, not a rebuild of them all
    (the flow per arc is read back from the backward slots at the end)."""

    def __init__(self, n, tails, heads, caps, costs, supply):
        self.n, self.E = n, len(tails)
        flow = np.where(costs < 0, caps, 0).astype(np.int64)
        self.excess = supply.copy()
        neg = np.flatnonzero(flow)  # usually few: ufunc.at is slow on millions
        np.subtract.at(self.excess, tails[neg], flow[neg])
        np.add.at(self.excess, heads[neg], flow[neg])
        self.pot = np.zeros(n, dtype=np.int64)
        self.dial = True  # distance buckets until they prove too many (``_distances``)
        slot_tail = np.concatenate([tails, heads])
        self.order = _stable_order(slot_tail, n)
        self.tail = slot_tail[self.order]
        self.head = np.concatenate([heads, tails])[self.order]
        self.cost = np.concatenate([costs, -costs])[self.order]
        self.room = np.concatenate([caps - flow, flow])[self.order]
        self.where = np.empty(2 * self.E, dtype=np.int64)  # slot -> its position in ``order``
        self.where[self.order] = np.arange(2 * self.E, dtype=np.int64)
        self.mate = np.concatenate([self.where[self.E:], self.where[: self.E]])[self.order]  # opposite slot's

    @property
    def flow(self) -> np.ndarray:
        """Flow per arc in the order given: the room of its backward slot."""
        return self.room[self.where[self.E:]]

    def has_excess(self) -> bool:
        return bool((self.excess > 0).any())

    def phase(self) -> bool:
        """One phase: potentials raised by the shortest distances, a max flow over the admissible arcs. False
        when no deficit can be reached (no feasible flow)."""
        lv = np.flatnonzero(self.room > 0)  # the live slots' positions
        tl, hl = self.tail[lv], self.head[lv]
        reduced = self.cost[lv] + self.pot[tl] - self.pot[hl]
        src, dst = np.flatnonzero(self.excess > 0), np.flatnonzero(self.excess < 0)
        found = self._distances(tl, hl, reduced, src, dst)
        if found is None:
            return False
        raise_by, near = found
        self.pot += raise_by
        # admissible: reduced cost 0 now; only nodes within D can be reached from an excess over such arcs
        zero = np.flatnonzero(reduced + raise_by[tl] - raise_by[hl] == 0)
        adm = lv[zero[near[tl[zero]] & near[hl[zero]]]]
        if self._augment(adm, src, dst) == 0:  # a nearest deficit lies on an admissible path: never
            raise RuntimeError("primal-dual phase sent no flow")
        return True

    def _distances(self, tl: np.ndarray, hl: np.ndarray, reduced: np.ndarray, src: np.ndarray, dst: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray] | None:
        """(min(d, D) per node, where D is the nearest deficit's distance; whether d <= D), or None when no
        deficit is reachable; ``tl``, ``hl``, ``reduced``: the live slots (sorted by tail) and their reduced
        costs. Large networks try distance buckets first (``_dial``: the same distances, 2-3x faster than
        Dijkstra's heap on the leader network, whose reduced costs are small), and fall back to Dijkstra for
        good when more than ``DIAL_BUCKETS`` distances come before the nearest deficit. (A Dijkstra limited to
        small distances, retried with larger limits, was no faster: the nodes at reduced distance 0 are most of
        the network. Following Dijkstra's tree paths instead of a max flow when little excess is left was
        slower too: paths collide, so twice the phases.)"""
        n = self.n
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(tl, minlength=n), out=indptr[1:])
        if self.dial and n >= DIAL_FROM_NODES and not (reduced < 0).any():
            is_dst = np.zeros(n, dtype=bool)
            is_dst[dst] = True
            got = _dial(n, indptr, hl, reduced, src, is_dst)
            if got is None:
                return None
            if got != "far":
                d, D = got
                near = d >= 0
                return np.where(near, d, D), near
            self.dial = False
        graph = csr_matrix((reduced.astype(np.float64), hl, indptr), shape=(n, n))
        d = dijkstra(graph, directed=True, indices=src, min_only=True)
        reach = d[dst][np.isfinite(d[dst])]
        if not len(reach):
            return None
        D = int(np.rint(reach.min()))
        if D >= EXACT:
            raise CostRangeError(f"shortest distance {D} is too large for exact float64 sums")
        near = d <= D + 0.5  # inf compares False
        return np.where(near, np.rint(d), D).astype(np.int64), near

    def _augment(self, adm: np.ndarray, src: np.ndarray, dst: np.ndarray) -> int:
        """Max flow from the excesses to the deficits over the admissible slots (positions, ascending); the
        rooms and excesses updated; returns the units sent."""
        n, k = self.n, len(adm)
        f, sent = _max_flow(n, np.concatenate([self.tail[adm], np.full(len(src), n), dst]),
                            np.concatenate([self.head[adm], src, np.full(len(dst), n + 1)]),
                            np.concatenate([self.room[adm], self.excess[src], -self.excess[dst]]))
        used = np.flatnonzero(f[:k])
        pos, sent_on = adm[used], f[used]
        self.room[pos] -= sent_on  # each slot once: no repeated index
        self.room[self.mate[pos]] += sent_on
        self.excess[src] -= f[k: k + len(src)]
        self.excess[dst] += f[k + len(src):]
        return sent


def _stable_order(key: np.ndarray, n: int) -> np.ndarray:
    """``np.argsort(key, kind="stable")`` for keys in [0, n): numpy sorts 16-bit keys by radix (linear time), so
    the keys are sorted as one 16-bit digit, or as two (low digit first, then high: least significant digit
    radix sort, stable), instead of by a comparison sort of int64 (3x faster at 2,000,000 slots)."""
    if n <= 1 << 16:
        return np.argsort(key.astype(np.uint16), kind="stable")
    if n > 1 << 32:
        return np.argsort(key, kind="stable")
    low = np.argsort((key & 0xFFFF).astype(np.uint16), kind="stable")
    return low[np.argsort((key[low] >> 16).astype(np.uint16), kind="stable")]


def _dial(n: int, indptr: np.ndarray, heads: np.ndarray, w: np.ndarray, src: np.ndarray, is_dst: np.ndarray,
          max_buckets: int | None = None, max_levels: int | None = None
          ) -> tuple[np.ndarray, int] | str | None:
    """Shortest distances from ``src`` over the CSR graph (``indptr``, ``heads``, integer weights ``w`` >= 0),
    by buckets of equal distance (Dial's algorithm, each bucket a breadth-first search over its 0-weight arcs,
    vectorized level by level): (distance per node, -1 beyond D; D), D the nearest deficit's distance. Every
    node within D gets its exact distance, the same as Dijkstra's. None when no deficit is reachable; "far" when
    more than ``max_buckets`` (default ``DIAL_BUCKETS``) distances come first, or the searches need more than
    ``max_levels`` (``DIAL_LEVELS``) levels in all (the caller then runs Dijkstra)."""
    dist = np.full(n, -1, dtype=np.int64)
    stamp = np.empty(n, dtype=np.int64)

    def distinct_open(x: np.ndarray) -> np.ndarray:
        """The nodes of ``x`` without a distance yet, each once (no sort: the last write of a stamp wins)."""
        x = x[dist[x] < 0]
        at = np.arange(len(x))
        stamp[x] = at
        return x[stamp[x] == at]

    buckets: dict[int, list[np.ndarray]] = {0: [np.asarray(src, dtype=np.int64)]}
    levels = DIAL_LEVELS if max_levels is None else max_levels
    for _ in range(DIAL_BUCKETS if max_buckets is None else max_buckets):
        if not buckets:
            return None
        k = min(buckets)
        waiting = buckets.pop(k)
        front = distinct_open(waiting[0] if len(waiting) == 1 else np.concatenate(waiting))
        found = False
        while len(front):
            levels -= 1
            if levels < 0:
                return "far"
            dist[front] = k
            found = found or bool(is_dst[front].any())
            deg = indptr[front + 1] - indptr[front]
            e = np.repeat(indptr[front] - (np.cumsum(deg) - deg), deg) + np.arange(int(deg.sum()))
            h, we = heads[e], w[e]
            zero = we == 0
            _bucket_arcs(buckets, k, h[~zero], we[~zero], dist)
            front = distinct_open(h[zero])
        if found:
            return dist, k
    return None if not buckets else "far"


def _bucket_arcs(buckets: dict, k: int, h: np.ndarray, w: np.ndarray, dist: np.ndarray) -> None:
    """File the heads of positive arcs leaving distance ``k`` under distance k + w (those still without one)."""
    keep = dist[h] < 0
    h, w = h[keep], w[keep]
    if not len(w):
        return
    lo = int(w.min())
    if lo == int(w.max()):
        buckets.setdefault(k + lo, []).append(h)
        return
    for v in np.unique(w).tolist():
        buckets.setdefault(k + v, []).append(h[w == v])
