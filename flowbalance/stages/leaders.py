"""Stage 2: preferred leaders by reordering replica lists only (network B as a min-cost flow).

Each movable partition sends one unit to one of its replicas (the new preferred leader): cost 0 for its current
first replica, 1 for any other (one leadership change). Leaders per broker are intervals [floor, ceil] of each
broker's share, per topic too (at lower priority), so the optimum balances leaders wherever the replica sets allow
and then changes the fewest leaders. No replica moves: only the order changes.

Solves, cheapest first; each later one runs only when the ones before it have no feasible flow:

1. **hard**: every broker and every (topic, broker) interval met, the fewest changes (costs 0/1: fast). Skipped
   when counting shows it has no flow, or when some topic alone cannot give its partitions leaders within its
   ceilings (``_counted_out``, with (2)'s raise: after the fewest-bytes stage, and on clusters grown over time,
   topics often have more partitions than their cells' ceilings allow);
2. **each topic as even as it can be**: topics laid out on fewer brokers than they have partitions (clusters
   grown over time) cannot meet ±1. Per topic, the least raise d_t of its ceilings that lets the topic alone give
   every partition a leader (one max flow per raise, all topics at once: they are independent there); then (1)
   with those ceilings, floors cut to the candidates a cell has (then dropped, if still infeasible). Each topic's
   leaders then sit at most d_t above its ceiling on any broker, the least any choice gives that topic. Skipped
   when counting shows a broker that cannot reach its floor with those ceilings (no flow exists then);
3. **topics soft**: the replica sets cannot balance the brokers' leaders within those ceilings (a stage before
   chose the sets without per-topic balance: a broker may hold replicas of only a few topics and must lead many
   of their partitions). Broker intervals stay hard; each (topic, broker) interval becomes graded soft: the d-th
   leader beyond it costs TOPIC_WEIGHT·min(d, 4) leadership changes, so a topic's excess is spread thin over
   brokers and topics, and a leadership change is spent only where it saves more than half a unit of it;
4. **soft**: every interval soft, with priority penalties (broker, then topic, then changes): only when the
   brokers' leaders cannot be balanced at all. Its costs are large and the solver's cost scaling runs many phases
   (minutes at 1,000,000 replicas; the soft topics of (3) take seconds: 8.7 s against 134 s on the
   1,000,000-replica add-20 case after the fewest-bytes stage).

Solves (1)–(3) run by primal-dual (``flow/primal_dual.py``): nearly every partition keeps its leader, so after
its first phase sends the cost-0 flow only a few phases remain (3–4× faster than OR-Tools' cost scaling at
1,000,000 replicas). Solve (4)'s penalties are large; it stays with OR-Tools. On Kafka-placed clusters (1) and
the first try of (2) often have no feasible flow: primal-dual's feasibility check says so (``flow/primal_dual.py``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..flow.maxflow import solve_max_flow
from ..flow.mincost import solve_min_cost
from ..flow.network import Network, convex_arcs
from ..flow.primal_dual import solve_primal_dual
from ..model import PAD, ClusterState
from ..targets import intervals
from .common import StageInput, graded_arcs, move_column, penalties, share_intervals

TOPIC_WEIGHT = 2  # solve (3): one leader beyond a (topic, broker) interval outweighs one leadership change


@dataclass(frozen=True)
class _Problem:
    """The candidates (movable partition, live replica) and the leader intervals the network enforces."""

    Pm: int  # movable partitions
    NL: int  # live brokers
    rows: np.ndarray  # each candidate's movable row position
    cols: np.ndarray  # its position in the replica list
    lp: np.ndarray  # its broker's live position
    cost: np.ndarray  # 0: the current leader, 1: a leadership change
    cell: np.ndarray  # its position in ``cells``, -1 when its (topic, broker) cell is not a selected one
    lo: np.ndarray  # per live broker, less the leaders of partitions that may not move
    hi: np.ndarray
    cells: np.ndarray  # the (topic, broker) cells whose interval can bind (sorted); the others go straight on
    cell_lo: np.ndarray
    cell_hi: np.ndarray
    cell_limit: np.ndarray  # the cell's topic's movable partitions (no cell takes more)
    P: int  # all partitions (the soft solve's penalty scale)


def balance_leaders(state: ClusterState, current_leader: np.ndarray, movable: np.ndarray, *,
                    per_topic: bool = True) -> np.ndarray:
    """New replica matrix with each movable partition's chosen leader moved to the front."""
    si = StageInput.of(state, movable)
    if si.Pm == 0:
        return state.replicas
    pb = _problem(state, si, movable, current_leader, per_topic)
    pick = _choose(pb) > 0
    new_col = np.zeros(pb.Pm, dtype=np.int64)
    new_col[pb.rows[pick]] = pb.cols[pick]
    return _to_front(state.replicas, si.mov, new_col)


def _problem(state: ClusterState, si: StageInput, movable: np.ndarray, current_leader: np.ndarray,
             per_topic: bool) -> _Problem:
    """Every candidate of the movable partitions, with the broker and (``per_topic``) cell intervals."""
    b, idx, mov, NL = si.b, si.idx, si.mov, si.NL
    fl = idx[~np.asarray(movable, bool), 0]
    fixed_l = np.bincount(fl[fl >= 0], minlength=si.N).astype(np.int64)
    lo, hi = intervals(state.num_partitions, b.weight, b.live)
    K = idx.shape[1]
    rows = np.repeat(np.arange(si.Pm), K)
    cols = np.tile(np.arange(K), si.Pm)
    bi = idx[mov].ravel()
    ok = bi != PAD
    rows, cols, bi = rows[ok], cols[ok], bi[ok]
    lp = si.lpos[bi]
    ok = lp >= 0
    rows, cols, bi, lp = rows[ok], cols[ok], bi[ok], lp[ok]
    cost = np.where(b.ids[bi] == current_leader[mov][rows], 0, 1).astype(np.int64)
    cell, cells = np.full(len(rows), -1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    cell_lo = cell_hi = cell_limit = cells
    if per_topic:
        topics_m, tpos_of = np.unique(state.topic[mov], return_inverse=True)
        pt = np.bincount(tpos_of, minlength=len(topics_m)).astype(np.int64)
        tlo, thi = share_intervals(pt, b.weight[si.live_idx])
        key = tpos_of[rows] * NL + lp
        # a cell matters only when its interval can bind: a floor above 0, or more candidates than the ceiling
        cells = np.flatnonzero((tlo > 0) | (np.bincount(key, minlength=len(tlo)) > thi))
        cell_lo, cell_hi, cell_limit = tlo[cells], thi[cells], pt[cells // NL]
        pos = np.minimum(np.searchsorted(cells, key), max(len(cells) - 1, 0))
        cell = np.where((cells[pos] == key) if len(cells) else False, pos, -1)
    live_idx = si.live_idx
    return _Problem(si.Pm, NL, rows, cols, lp, cost, cell, lo[live_idx] - fixed_l[live_idx],
                    hi[live_idx] - fixed_l[live_idx], cells, cell_lo, cell_hi, cell_limit, state.num_partitions)


def _choose(pb: _Problem) -> np.ndarray:
    """The flow on each candidate: the first feasible of the module doc's solves."""
    bound = _CellBound.of(pb) if len(pb.cells) else None
    topic_raise = None if bound is None else _topic_raise(pb, bound)
    if not _counted_out(pb, topic_raise):
        net, cand = _network(pb, pb.cost)
        res = try_min_cost(net)
        if res is not None:
            return res[0][cand]
    if bound is not None:
        raised = pb.cell_hi + topic_raise[pb.cells // pb.NL]
        available = np.bincount(pb.cell[pb.cell >= 0], minlength=len(pb.cells))
        floors = (np.minimum(pb.cell_lo, available), np.zeros_like(pb.cell_lo))
        for floor in floors if _brokers_can_fill(pb, np.minimum(raised, available)) else ():
            net, cand = _network(replace(pb, cell_lo=floor, cell_hi=np.maximum(raised, floor)), pb.cost)
            res = try_min_cost(net)
            if res is not None:
                return res[0][cand]
        net, cand = _network(pb, pb.cost, topic_weight=TOPIC_WEIGHT)
        res = try_min_cost(net)
        if res is not None:
            return res[0][cand]
    nodes = pb.Pm + pb.NL + len(pb.cells) + 1
    net, cand = _network(pb, pb.cost, soft_levels=penalties(1, pb.P, nodes, 2))
    return solve_min_cost(net)[0][cand]


def try_min_cost(net: Network) -> tuple[np.ndarray, int] | None:
    """One of solves (1)–(3) by primal-dual (see the module doc); None when it has no feasible flow."""
    tails, heads, caps, costs = net.arrays()
    return solve_primal_dual(net.num_nodes, tails, heads, caps, costs, net.supplies())


def _counted_out(pb: _Problem, topic_raise: np.ndarray | None) -> bool:
    """Whether solve (1) has no flow, shown without it: a topic needs its ceilings raised (``topic_raise``:
    ``_topic_raise``, None when no cell is selected) to give the partitions that can only lead in its selected
    cells a leader even alone (brokers unconstrained; counting alone shows it when they outnumber the cells'
    summed ceilings), a cell has fewer candidates than its floor, or a broker cannot reach its floor
    (``_brokers_can_fill``). The solve would say so too, in 1.5 s at 1,000,000 replicas."""
    if topic_raise is None:
        return False
    available = np.bincount(pb.cell[pb.cell >= 0], minlength=len(pb.cells))
    if (available < pb.cell_lo).any() or not _brokers_can_fill(pb, np.minimum(pb.cell_hi, available)):
        return True
    return bool(topic_raise.any())


@dataclass(frozen=True)
class _CellBound:
    """The partitions that can only lead in selected cells (a partition with a candidate outside them always has
    one: such a cell never binds), and per topic how many there are against its cells' summed ceilings."""

    T: int  # topics (positions in the cells' keys)
    cell_topic: np.ndarray  # per selected cell
    prow: np.ndarray  # per candidate inside: its row among those partitions
    cpos: np.ndarray  # per candidate inside: its cell
    row_topic: np.ndarray  # per such partition
    parts: np.ndarray  # per topic: such partitions
    room: np.ndarray  # per topic: its cells' ceilings summed

    @classmethod
    def of(cls, pb: _Problem) -> _CellBound:
        T = int(pb.cells.max()) // pb.NL + 1
        inside = pb.cell >= 0
        elsewhere = np.zeros(pb.Pm, dtype=bool)
        elsewhere[pb.rows[~inside]] = True
        only = inside & ~elsewhere[pb.rows]
        cpos = pb.cell[only]
        need, prow = np.unique(pb.rows[only], return_inverse=True)
        cell_topic = pb.cells // pb.NL
        row_topic = np.zeros(len(need), dtype=np.int64)
        row_topic[prow] = cell_topic[cpos]
        room = np.bincount(cell_topic, weights=pb.cell_hi, minlength=T).astype(np.int64)
        return cls(T, cell_topic, prow, cpos, row_topic, np.bincount(row_topic, minlength=T), room)


def _brokers_can_fill(pb: _Problem, cell_room: np.ndarray) -> bool:
    """Whether every broker can reach its leader floor with at most ``cell_room`` leaders from each of its cells
    (a counting check: when it fails no flow exists, and a min-cost solve takes seconds to find that out at
    1,000,000 replicas; when it passes the solve decides)."""
    direct = np.bincount(pb.lp[pb.cell < 0], minlength=pb.NL)
    room = direct + np.bincount(pb.cells % pb.NL, weights=cell_room, minlength=pb.NL).astype(np.int64)
    return bool((room >= pb.lo).all())


def _topic_raise(pb: _Problem, cb: _CellBound) -> np.ndarray:
    """Per topic, the least d such that its partitions can all take a leader with every cell's ceiling raised by d
    (the topic alone, brokers unconstrained). Topics are independent there, so one max flow answers a trial d for
    every topic at once: the first trial is the counting bound (enough room in the topic's cells), usually the
    answer; topics that it does not serve are bisected between it plus the rows it left without a leader over
    the topic's cells (a unit more in each lets at most one more row in per cell) and it plus those rows (as many
    more in every cell take them), the flows holding only the topics still open (``_CellBound``: the partitions
    counted, ``_CellBound.of(pb)``)."""
    T, cell_topic, prow, cpos, row_topic, parts, room = (cb.T, cb.cell_topic, cb.prow, cb.cpos, cb.row_topic,
                                                         cb.parts, cb.room)
    n_p = len(row_topic)
    width = np.maximum(np.bincount(cell_topic, minlength=T), 1)
    lo = np.maximum(-(-(parts - room) // width), 0) - 1  # every d <= lo is too small (counting); -1: none known
    hi = np.maximum(parts, lo + 1)  # enough: every cell can take all of its topic's partitions
    trial = lo + 1
    trying = np.ones(T, dtype=bool)  # every topic's first trial; then those still open (hi - lo > 1)
    while n_p and trying.any():
        r_ids, c_ids = np.flatnonzero(trying[row_topic]), np.flatnonzero(trying[cell_topic])
        served = _rows_served(pb, n_p, prow, cpos, r_ids, c_ids, trial[cell_topic[c_ids]])
        unserved = np.bincount(row_topic[r_ids[~served]], minlength=T)
        short = unserved > 0
        # k rows left without a leader: k more in every cell of the topic takes them (each into any of its cells),
        # and each unit more lets at most one more row in per cell (a minimum cut's capacity grows by at most the
        # topic's cells), so fewer than k / cells more is too few
        hi = np.where(trying, np.minimum(hi, trial + unserved), hi)
        lo = np.where(trying & short, np.maximum(lo, trial + -(-unserved // width) - 1), lo)
        trying = hi - lo > 1
        trial = np.where(trying, (lo + hi) // 2, hi)
    return hi


def _rows_served(pb: _Problem, n_p: int, prow: np.ndarray, cpos: np.ndarray, r_ids: np.ndarray, c_ids: np.ndarray,
                 raise_by: np.ndarray) -> np.ndarray:
    """Per row of ``r_ids`` (of the ``n_p`` rows that can only lead in selected cells, those of the topics being
    tried; ``prow``, ``cpos``: each candidate's row and cell), whether one max flow gives it a leader in a cell of
    ``c_ids`` (those topics' cells) with ceilings raised by ``raise_by``. Topics are independent here, so the
    network holds only the topics still being bisected (history after the fewest-bytes stage: the first flow on
    990,000 arcs, the next seven on 760,000 down to 73,000)."""
    row_new = np.full(n_p, -1, dtype=np.int64)
    row_new[r_ids] = np.arange(len(r_ids))
    cell_new = np.full(len(pb.cells), -1, dtype=np.int64)
    cell_new[c_ids] = np.arange(len(c_ids))
    arcs = np.flatnonzero(row_new[prow] >= 0)
    m_p, m_c = len(r_ids), len(c_ids)
    source, sink = m_p + m_c, m_p + m_c + 1
    tails = np.concatenate([np.full(m_p, source), row_new[prow[arcs]], m_p + np.arange(m_c)])
    heads = np.concatenate([np.arange(m_p), m_p + cell_new[cpos[arcs]], np.full(m_c, sink)])
    caps = np.concatenate([np.ones(m_p + len(arcs), dtype=np.int64), pb.cell_hi[c_ids] + raise_by])
    flow, _ = solve_max_flow(m_p + m_c + 2, tails, heads, caps, source, sink)
    return flow[:m_p] > 0


def _network(pb: _Problem, cand_cost: np.ndarray, *, soft_levels: list[int] | None = None,
             topic_weight: int | None = None) -> tuple[Network, np.ndarray]:
    """Partitions (supply 1) → their selected cell, or their broker → sink; returns (network, candidate arc ids).
    Intervals are hard; with ``topic_weight`` the cells' are graded soft (that weight per unit and depth), with
    ``soft_levels`` every one soft (the [topic, broker] penalties)."""
    net = Network()
    pnode = net.nodes(pb.Pm)
    bnode = net.nodes(pb.NL)
    cnode = net.nodes(len(pb.cells))
    sink = int(net.nodes(1)[0])
    supply = np.zeros(net.num_nodes, dtype=np.int64)
    supply[pnode] = 1
    supply[sink] = -pb.Pm
    net.set_supply(supply)
    heads = np.where(pb.cell >= 0, cnode[np.maximum(pb.cell, 0)] if len(pb.cells) else 0, bnode[pb.lp])
    pen_topic, pen_broker = soft_levels if soft_levels else (None, None)
    cand = net.add(pnode[pb.rows], heads, 1, cand_cost)
    if len(pb.cells) and topic_weight:
        graded_arcs(net, cnode, bnode[pb.cells % pb.NL], pb.cell_lo, pb.cell_hi, pb.cell_limit, topic_weight)
    elif len(pb.cells):
        convex_arcs(net, cnode, bnode[pb.cells % pb.NL], pb.cell_lo, pb.cell_hi, pb.cell_limit, pen_topic)
    convex_arcs(net, bnode, sink, pb.lo, pb.hi, np.full(pb.NL, pb.Pm, dtype=np.int64), pen_broker)
    return net, cand


def _to_front(replicas: np.ndarray, mov: np.ndarray, new_col: np.ndarray) -> np.ndarray:
    """``replicas`` with each movable row's chosen column moved to the front (the others keep their order)."""
    moved = np.flatnonzero(new_col > 0)
    return move_column(replicas, mov[moved], new_col[moved], 0)
