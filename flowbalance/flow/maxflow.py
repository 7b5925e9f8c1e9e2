"""Max flow, arc arrays in, flow per arc out: OR-Tools' compiled SimpleMaxFlow (push-relabel), scipy's Dinic
for flows of small value on large networks, and ``Shape``, numba-compiled augmenting paths on one large network
solved again with other capacities.

networkx is the reference oracle in the tests. (scipy's ``maximum_flow`` served ``solve_max_flow`` before: it
sums parallel arcs and returns a flow matrix, so every call paid a duplicate check and a search per arc for its
flow, 0.5 s of the leader stage on a 40-broker, 150,000-replica cluster.)

Why three: push-relabel labels and relabels the whole network whatever the flow's value, so a flow of a few
hundred units over 5,000,000 arcs (the failover stage's threshold flows with topic cells at 1,000,000 replicas)
took 0.9-2.6 s; Dinic's level graphs reach only as far as the augmenting paths do, 0.4-0.7 s on the same
networks. For large values push-relabel is the faster (73,000 units on 2,500,000 arcs: 1.1 s against 1.9 s), so
``solve_max_flow_dinic`` is for callers that know their flow's value is small.

The third, ``Shape``, is ``flow/phase_kernel.py``'s compiled max flow with every arc admissible: shortest
augmenting paths from exact labels (one backward search), relabelling only the nodes the paths meet. Its arcs are sorted into residual slots once and solved again with other rooms, so one
shape serves every threshold flow of the failover stage without topic intervals. On the captured threshold
flows at 1,000,000 replicas (2.9-4.1M arcs, one process): 0.12-0.31 s against OR-Tools' 0.47-0.69 s (1,363-6,175
rows re-placed), 0.2 s against 0.88 s (36 rows), 0.61 s against 1.11 s (109,000 rows, falling short), plus one
sort of 0.2-0.35 s per shape. With topic cells (5,300,000 arcs and 3,300,000 nodes) its backward search visits
every node and scipy's Dinic stays (session 20, docs/performance.md). Numba is imported by the first shape.
"""
from __future__ import annotations

import numpy as np
from ortools.graph.python import max_flow
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_flow


def solve_max_flow(num_nodes: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray,
                   source: int, sink: int) -> tuple[np.ndarray, int]:
    """Return (flow on each arc, in the order given; flow value). Parallel arcs are allowed."""
    tails = np.asarray(tails, dtype=np.int64)
    heads = np.asarray(heads, dtype=np.int64)
    caps = np.asarray(caps, dtype=np.int64)
    if len(tails) == 0 or source == sink:
        return np.zeros(len(tails), dtype=np.int64), 0
    mf = max_flow.SimpleMaxFlow()
    arcs = mf.add_arcs_with_capacity(tails, heads, caps)
    if num_nodes and max(int(tails.max()), int(heads.max())) < num_nodes - 1:
        mf.add_arc_with_capacity(num_nodes - 1, num_nodes - 1, 0)  # every node exists, as in the other solvers
    status = mf.solve(source, sink)
    if status != mf.OPTIMAL:
        raise RuntimeError(f"max flow failed with status {status}")
    return np.asarray(mf.flows(arcs), dtype=np.int64), int(mf.optimal_flow())


def solve_max_flow_dinic(num_nodes: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray,
                         source: int, sink: int) -> tuple[np.ndarray, int]:
    """``solve_max_flow`` by Dinic's algorithm (scipy), for flows of small value (module doc). Parallel and
    opposite arcs are allowed: scipy keeps one net flow per ordered pair of nodes, which is split back over the
    pair's arcs in the order given (each filled before the next). scipy sums a pair's capacities in int32, so
    the capacities must be non-negative and sum below 2**31."""
    tails = np.asarray(tails, dtype=np.int64)
    heads = np.asarray(heads, dtype=np.int64)
    caps = np.asarray(caps, dtype=np.int64)
    if len(tails) == 0 or source == sink:
        return np.zeros(len(tails), dtype=np.int64), 0
    if int(caps.min()) < 0 or int(caps.sum()) > np.iinfo(np.int32).max:
        raise ValueError("caps: the capacities must be non-negative and sum below 2**31")
    graph = csr_matrix((caps.astype(np.int32), (tails, heads)), shape=(num_nodes, num_nodes))
    res = maximum_flow(graph, source, sink, method="dinic")
    return _arc_flows(num_nodes, tails, heads, caps, res.flow), int(res.flow_value)


SLOT_INT32_MAX = 2 ** 31 - 1  # a ``Shape`` whose slot positions and nodes stay within this keeps them int32


class Shape:
    """Arcs (``tails``, ``heads``) on ``num_nodes`` nodes whose max flow is wanted again and again with other
    capacities: their residual slots sorted once (``phase_kernel.slot_order``), then each ``solve`` writes
    the slots' room and runs ``phase_kernel``'s max flow with every arc admissible (costs and potentials 0):
    shortest augmenting paths from one backward search's labels, relabelling only the nodes the paths meet
    (module doc). The slots' heads, positions and opposite slots are int32 while twice the arcs and the nodes
    fit (``SLOT_INT32_MAX``): the failover stage's shape at 3,000,000 replicas (15,700,000 arcs) is 375 MiB
    smaller and sorts in 0.62 s instead of 0.95-2.5 s. numba is imported here, not with the package."""

    def __init__(self, num_nodes: int, tails: np.ndarray, heads: np.ndarray):
        from . import phase_kernel as pk

        tails, heads = np.asarray(tails), np.asarray(heads)
        if len(tails) and min(int(tails.min()), int(heads.min()), num_nodes - 1 - max(int(tails.max()),
                                                                                      int(heads.max()))) < 0:
            raise ValueError(f"tails, heads: node ids must lie in [0, {num_nodes})")
        index = np.int32 if max(2 * len(tails), num_nodes) <= SLOT_INT32_MAX else np.int64
        tails = np.ascontiguousarray(tails, dtype=index)
        heads = np.ascontiguousarray(heads, dtype=index)
        self.kernel, self.n, self.E = pk, num_nodes, len(tails)
        self.indptr, self.head, self.where, self.mate = pk.slot_order(num_nodes, tails, heads)
        self.cost = np.zeros(2 * self.E, dtype=np.int64)  # every slot admissible: costs and potentials 0

    def solve(self, forward, backward, source: int, sink: int,
              read: slice = slice(None)) -> tuple[int, np.ndarray, np.ndarray]:
        """(flow value, room left along each arc, room left against it): a max flow from ``source`` to ``sink``
        with ``forward[i]`` units of room along arc i and ``backward[i]`` against it (flow it already carries,
        which may go back). Rooms must be non-negative; the flow on arc i is ``forward[i]`` minus what is left.

        Each of ``forward``, ``backward``: one array of a room per arc, or a list of blocks in arc order (arrays,
        or an int k: k arcs with room 0), so a caller with its rooms in blocks joins no arrays (at 3,000,000
        replicas the failover stage's two joined arrays of 15,700,000 rooms cost 0.4-0.5 s). ``read``: the arcs
        whose rooms left are returned (all by default; reading back 15,700,000 arcs twice took 0.4-1.5 s there,
        where the failover stage needs one block of them)."""
        if not (0 <= source < self.n and 0 <= sink < self.n) or source == sink:
            raise ValueError(f"source, sink: two different nodes in [0, {self.n}) expected, got {source}, {sink}")
        n, i64 = self.n, np.int64
        room = np.zeros(2 * self.E, dtype=i64)
        for name, rooms, slots in (("forward", forward, self.where[:self.E]), ("backward", backward,
                                                                                self.where[self.E:])):
            self._place(name, rooms, slots, room)
        excess = np.zeros(n, dtype=i64)
        excess[source] = int(room[self.indptr[source]:self.indptr[source + 1]].sum())  # all it can send
        excess[sink] = -excess[source]
        label, current, sources, queue = (np.empty(n, i64) for _ in range(4))
        value = self.kernel.admissible_max_flow(n, self.indptr, self.head, self.cost, room, self.mate,
                                                np.zeros(n, i64), excess, label, np.empty(n + 3, i64), current,
                                                np.empty(n + 2, i64), sources, queue)
        return int(value), room[self.where[:self.E][read]], room[self.where[self.E:][read]]

    def _place(self, name: str, rooms, slots: np.ndarray, room: np.ndarray) -> None:
        """Write ``rooms`` (``solve``'s array or blocks) at the slot positions ``slots`` of ``room`` (zeros)."""
        blocks = [rooms] if isinstance(rooms, np.ndarray) else list(rooms)
        at = 0
        for block in blocks:
            if isinstance(block, (int, np.integer)):
                if block < 0:
                    raise ValueError(f"{name}: a count of arcs without room must be non-negative, got {block}")
                at += int(block)
                continue
            block = np.asarray(block, dtype=np.int64)
            if block.ndim != 1 or at + len(block) > self.E:
                raise ValueError(f"{name}: one room per arc ({self.E:,}) expected")
            if len(block) and int(block.min()) < 0:
                raise ValueError(f"{name}: rooms must be non-negative")
            room[slots[at:at + len(block)]] = block
            at += len(block)
        if at != self.E:
            raise ValueError(f"{name}: one room per arc ({self.E:,}) expected, got {at:,}")


def _arc_flows(n: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray, net) -> np.ndarray:
    """Flow per arc from the net flow matrix ``net``: an ordered pair's positive net flow fills its arcs in
    order; arcs against it (and of pairs without flow) carry none. Conservation holds because every node's net
    flows are kept."""
    net = net.tocsr()
    pos = np.flatnonzero(net.data > 0)
    flow = np.zeros(len(tails), dtype=np.int64)
    if not len(pos):
        return flow
    rows = np.searchsorted(net.indptr, pos, side="right") - 1
    keys = rows.astype(np.int64) * n + net.indices[pos]
    order = np.argsort(keys)
    keys, amount = keys[order], net.data[pos][order].astype(np.int64)
    sends = np.zeros(n, dtype=bool)
    sends[rows] = True
    arcs = np.flatnonzero(sends[tails])  # only arcs out of a node with a positive net flow can carry any
    arc_key = tails[arcs] * n + heads[arcs]
    at = np.minimum(np.searchsorted(keys, arc_key), len(keys) - 1)
    hit = keys[at] == arc_key
    arcs, pair = arcs[hit], at[hit]  # ascending arcs: the order given within each pair
    if not len(arcs):
        return flow
    by_pair = np.argsort(pair, kind="stable")
    arcs, pair = arcs[by_pair], pair[by_pair]
    before = np.cumsum(caps[arcs]) - caps[arcs]  # capacity of the arcs before each one, over all pairs
    first = np.r_[0, np.flatnonzero(np.diff(pair)) + 1]
    before -= np.repeat(before[first], np.diff(np.r_[first, len(arcs)]))  # ... within its own pair
    flow[arcs] = np.clip(amount[pair] - before, 0, caps[arcs])
    return flow
