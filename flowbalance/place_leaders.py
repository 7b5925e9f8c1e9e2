"""The preferred leaders of new partitions (``flowbalance place``), all topics of a request at once, by one
min-cost flow: every new partition (supply 1) → the (topic, broker) cell of one of its replicas → that broker →
the sink.

Per cell, the topic's leaders on that broker keep within [⌊share⌋, ⌈share⌉] of the topic's partitions (existing
leaders counted: added partitions even out the whole topic) by ``convex_arcs`` with a penalty above any cluster
gain, so the topic is ±1 wherever its replica sets allow it. Per broker, the k-th new leader costs
2·(L_b + k − Q_b) + 1 (L_b: its leaders now, Q_b: its weighted share of all leaders after): the increments of
Σ (L_b + l_b − Q_b)², convex, so the extra leaders go to the brokers with the fewest, the cluster's leaders as
even as the per-topic rule allows. OR-Tools' min-cost flow is exact and deterministic.
"""
from __future__ import annotations

import numpy as np

from .flow.mincost import solve_min_cost
from .flow.network import Network, convex_arcs
from .targets import quotas

SCALE = 4  # costs are integers: the cluster term is scaled by this (shares with weights are fractions)


def choose_leaders(sets: np.ndarray, item: np.ndarray, topic_lo: np.ndarray, topic_hi: np.ndarray,
                   leaders_now: np.ndarray, weight: np.ndarray, live: np.ndarray) -> np.ndarray:
    """The leader (a broker index) of each row of ``sets`` ([P, K] broker indices, -1 padded); ``item``: each
    row's request item; ``topic_lo``/``topic_hi`` [items, N]: each item's interval of new leaders per broker;
    ``leaders_now``: the cluster's leaders per broker before."""
    p, n = len(sets), len(weight)
    share = quotas(int(leaders_now[live].sum()) + p, weight, live)
    net = Network()
    rows, cells, brokers, sink = net.nodes(p), net.nodes(len(topic_lo) * n), net.nodes(n), net.nodes(1)[0]
    supply = np.zeros(net.num_nodes, dtype=np.int64)
    supply[rows], supply[sink] = 1, -p
    net.set_supply(supply)
    r, c = np.nonzero(sets >= 0)
    cand = net.add(rows[r], cells[item[r] * n + sets[r, c]], 1, 0)
    held = np.bincount(item[r] * n + sets[r, c], minlength=len(cells))  # how many rows could lead each cell
    used = np.flatnonzero(held)
    penalty = SCALE * (4 * (int(leaders_now.max(initial=0)) + p) + 4)  # above any cluster gain of one leader
    convex_arcs(net, cells[used], brokers[used % n], topic_lo.ravel()[used], topic_hi.ravel()[used],
                held[used], penalty)
    _cluster_arcs(net, brokers, sink, np.bincount(sets[r, c], minlength=n), leaders_now, share)
    flow, _ = solve_min_cost(net)
    pick = np.flatnonzero(flow[cand] > 0)
    out = np.full(p, -1, dtype=np.int64)
    out[r[pick]] = sets[r[pick], c[pick]]
    return out


def _cluster_arcs(net: Network, brokers: np.ndarray, sink: int, most: np.ndarray, now: np.ndarray,
                  share: np.ndarray) -> None:
    """Broker b → sink, one unit arc per possible new leader k < most[b], cost 2·(now + k − share) + 1."""
    b = np.repeat(np.arange(len(most)), most)
    k = np.arange(len(b)) - np.repeat(np.cumsum(most) - most, most)
    cost = np.round(SCALE * (2 * (now[b] + k - share[b]) + 1)).astype(np.int64)
    net.add(brokers[b], sink, 1, cost)
