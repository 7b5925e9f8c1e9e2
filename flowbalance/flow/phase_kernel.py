"""The two passes of a primal-dual phase (``flow/primal_dual.py``), compiled by numba: the shortest reduced
distances from the excesses, and a max flow over the arcs those distances make admissible.

Why compiled: at 1,000,000 replicas the leader network's primal-dual ends in tens of phases that each send one
to a few units (150 on one network). Done as numpy passes, a scipy Dijkstra and an OR-Tools max flow, such a
phase costs 0.12–0.2 s whatever it sends (building the max-flow arcs alone is most of it); here it costs one
walk over the part of the residual network the excesses reach: 15–70 ms there, 3× less in all.

Both work on the residual slots of ``primal_dual._Residual``: sorted by tail (``indptr`` in CSR form), the
head, cost and room left of each, and ``mate``, the position of the opposite slot. Arrays in, arrays out
(updated in place), int64 throughout; nothing here allocates per phase. ``workspace`` makes the scratch arrays
once per solve.

- ``shortest_distances``: Dijkstra over non-negative reduced costs, where nearly every reduced cost is 0 or 1:
  a FIFO takes the nodes reached at the current distance over 0-cost arcs (a breadth-first search, no heap),
  another those one further over 1-cost arcs, a binary heap (lazy deletion) only the others. It stops after
  the last node at the nearest deficit's distance D: every node within D then has its exact distance.
  With ``first_only`` it stops at the first deficit it settles (the single-path phases of ``primal_dual``).
- ``raise_potentials``: each potential raised by min(d, D); the arcs of reduced cost 0 after it are the
  admissible ones (they hold every shortest path to a nearest deficit).
- ``augment_path``: one unit (or more) back along the slots that gave each node its distance.
- ``admissible_max_flow``: from all excesses (a virtual source S) to all deficits (a virtual sink T) over the
  admissible arcs with room: shortest augmenting paths with distance labels (Ahuja & Orlin's algorithm,
  *Network Flows* 7.4: advance along an arc one label down, else relabel and retreat) from exact labels, the
  gap rule, and exact labels again (a backward breadth-first search, ``_label``) whenever relabels reach a
  quarter of the nodes labelled: a relabel scans all of a node's slots, and on the captured 1,000,000-replica
  leader networks a quarter took 20–55 % less time than the whole (1.55 → 1.15 s, 2.34 → 1.11 s, 4.45 → 4.04 s;
  a sixteenth no better).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

NONE = np.int64(1) << np.int64(62)  # "no deficit reachable", and "not reached" in the distances


class Workspace(NamedTuple):
    """The scratch arrays of ``shortest_distances`` (the first six) and ``admissible_max_flow`` (the rest, with
    ``queue``), made once per solve."""

    dist: np.ndarray
    reached: np.ndarray
    queue: np.ndarray
    following: np.ndarray
    heap_keys: np.ndarray
    heap_nodes: np.ndarray
    label: np.ndarray
    count: np.ndarray
    current: np.ndarray
    path: np.ndarray
    sources: np.ndarray
    parent: np.ndarray


def workspace(n: int, slots: int) -> Workspace:
    """The scratch arrays for ``n`` nodes and ``slots`` residual slots (the heap holds at most one entry a slot)."""
    i64 = np.int64
    return Workspace(np.empty(n, i64), np.empty(n, np.bool_), np.empty(n, i64), np.empty(n, i64),
                     np.empty(slots + 1, i64), np.empty(slots + 1, i64), np.empty(n, i64), np.empty(n + 3, i64),
                     np.empty(n, i64), np.empty(n + 2, i64), np.empty(n, i64), np.empty(n, i64))


@njit(cache=True)
def slot_order(n, tails, heads):
    """The residual slots of arcs (``tails``, ``heads``) sorted by tail as ``primal_dual._Residual`` sorts them
    (stably: at each node its forward slots in arc order, then its backward ones), by a counting sort: (indptr,
    head, where: each slot's position, slot i < E arc i forward and E + i backward; mate: each position's opposite
    slot's position). The positions first (two passes that read the arcs in order), then one pass that writes
    each arc's two slots: on the failover stage's threshold network at 3,000,000 replicas (15,700,000 arcs) 0.85
    s, where writing every array in the positions' pass took 1.4 s (each array a pass of scattered writes).
    ``head``, ``where`` and ``mate`` have the dtype of ``tails`` (and ``heads``): int32 halves their memory where
    the caller knows 2 x arcs and the nodes fit (0.62 s there, and 375 MiB less to touch)."""
    E = len(tails)
    indptr = np.zeros(n + 1, np.int64)
    for i in range(E):
        indptr[tails[i] + 1] += 1
        indptr[heads[i] + 1] += 1
    for v in range(n):
        indptr[v + 1] += indptr[v]
    fill = indptr[:n].copy()
    where = np.empty(2 * E, tails.dtype)
    for i in range(E):
        where[i] = fill[tails[i]]
        fill[tails[i]] += 1
    for i in range(E):  # after every forward slot: a node's backward slots come after its forward ones
        where[E + i] = fill[heads[i]]
        fill[heads[i]] += 1
    head = np.empty(2 * E, tails.dtype)
    mate = np.empty(2 * E, tails.dtype)
    for i in range(E):
        p = where[i]
        q = where[E + i]
        head[p] = heads[i]
        head[q] = tails[i]
        mate[p] = q
        mate[q] = p
    return indptr, head, where, mate


def residual_slots(n, tails, heads, caps, costs, flow):
    """The residual slots of arcs (``tails``, ``heads``, ``caps``, ``costs``) carrying ``flow``: ``slot_order``'s
    order, as (indptr, head, cost, room, where, mate); each backward slot costs minus its arc's cost, and has the
    arc's flow as room (a forward one: capacity less flow). Compiled passes and four numpy scatters where the
    numpy build sorts and gathers (0.5 s for 1,300,000 arcs, 1.1 s for 2,600,000)."""
    indptr, head, where, mate = slot_order(n, tails, heads)
    E = len(tails)
    forward, backward = where[:E], where[E:]
    cost, room = np.empty(2 * E, np.int64), np.empty(2 * E, np.int64)
    cost[forward], cost[backward] = costs, -costs
    room[forward], room[backward] = caps - flow, flow
    return indptr, head, cost, room, where, mate


@njit(cache=True)
def _heap_push(keys, nodes, size, key, node):
    """Add (key, node) to the binary min-heap of ``size`` entries; returns the new size."""
    i = size
    keys[i] = key
    nodes[i] = node
    while i > 0:
        parent = (i - 1) >> 1
        if keys[parent] <= keys[i]:
            break
        keys[parent], keys[i] = keys[i], keys[parent]
        nodes[parent], nodes[i] = nodes[i], nodes[parent]
        i = parent
    return size + 1


@njit(cache=True)
def _heap_pop(keys, nodes, size):
    """Drop the least entry (read it at index 0 first); returns the new size."""
    size -= 1
    keys[0] = keys[size]
    nodes[0] = nodes[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and keys[child + 1] < keys[child]:
            child += 1
        if keys[i] <= keys[child]:
            break
        keys[child], keys[i] = keys[i], keys[child]
        nodes[child], nodes[i] = nodes[i], nodes[child]
        i = child
    return size


@njit(cache=True)
def shortest_distances(n, indptr, head, cost, room, pot, excess, dist, reached, queue, following, heap_keys,
                       heap_nodes, parent, first_only):
    """The nearest deficit's reduced distance D from the excesses (``NONE``: no deficit reachable); ``dist`` and
    ``reached`` filled: every node within D reached, with its exact distance, and ``parent``: per reached node the
    slot of a shortest path into it (-1 at an excess). With ``first_only`` it returns as soon as it settles a
    deficit (``queue[0]`` then holds it): every node reached has its exact distance, every other one is at D or
    beyond. Reduced costs (``cost + pot[tail] - pot[head]`` on slots with room) must be >= 0."""
    for v in range(n):
        dist[v] = NONE
        reached[v] = False
        parent[v] = -1
    D = NONE
    size = 0
    first = last = 0  # the queue: nodes reached at distance ``at``
    ahead = 0  # ``following``: nodes given distance at + 1 (reduced cost 1, most of the rest), no heap needed
    for v in range(n):
        if excess[v] > 0:
            dist[v] = 0
            reached[v] = True
            queue[last] = v
            last += 1
    at = 0
    while True:
        if first == last:  # the next distance: at + 1, or the heap's least entry still current
            while size > 0 and (reached[heap_nodes[0]] or heap_keys[0] != dist[heap_nodes[0]]):
                size = _heap_pop(heap_keys, heap_nodes, size)
            nearest = at + 1 if ahead else (heap_keys[0] if size else NONE)
            if nearest == NONE or nearest > D:
                return D
            at, first, last = nearest, 0, 0
            for i in range(ahead):
                v = following[i]
                if not reached[v] and dist[v] == at:
                    reached[v] = True
                    queue[last] = v
                    last += 1
            ahead = 0
            while size > 0 and heap_keys[0] == at:
                v = heap_nodes[0]
                size = _heap_pop(heap_keys, heap_nodes, size)
                if not reached[v] and dist[v] == at:
                    reached[v] = True
                    queue[last] = v
                    last += 1
            continue
        u = queue[first]
        first += 1
        if D == NONE and excess[u] < 0:
            D = at
            if first_only:
                queue[0] = u
                return D
        pu = pot[u]
        for e in range(indptr[u], indptr[u + 1]):
            if room[e] <= 0:
                continue
            v = head[e]
            if reached[v]:
                continue
            r = cost[e] + pu - pot[v]
            if r == 0:
                reached[v] = True
                dist[v] = at
                parent[v] = e
                queue[last] = v
                last += 1
            elif at + r < dist[v]:
                dist[v] = at + r
                parent[v] = e
                if r == 1:
                    following[ahead] = v
                    ahead += 1
                else:
                    size = _heap_push(heap_keys, heap_nodes, size, at + r, v)


@njit(cache=True)
def raise_potentials(n, pot, dist, reached, D):
    """Raise each potential by min(d, D); returns the largest potential."""
    top = 0
    for v in range(n):
        pot[v] += dist[v] if reached[v] else D
        if pot[v] > top:
            top = pot[v]
    return top


@njit(cache=True)
def admissible_positions(n, indptr, head, cost, room, pot, reached, out):
    """Write into ``out`` the positions (ascending) of the slots with room and reduced cost 0 whose two ends were
    reached (within the nearest deficit's distance); returns how many. The arcs of ``primal_dual``'s numpy
    phase's max flow, found in one walk over the slots instead of numpy passes over every live one."""
    count = 0
    for u in range(n):
        if not reached[u]:
            continue
        pu = pot[u]
        for e in range(indptr[u], indptr[u + 1]):
            if room[e] > 0 and reached[head[e]] and cost[e] + pu == pot[head[e]]:
                out[count] = e
                count += 1
    return count


@njit(cache=True)
def augment_path(head, room, mate, excess, parent, t):
    """Send from deficit ``t`` back along its ``parent`` slots (``shortest_distances``) to the excess they start
    at, as much as the path's rooms, that excess and t's deficit allow (after ``raise_potentials`` every slot of
    the path is admissible); returns the units sent."""
    units = -excess[t]
    v = t
    while parent[v] >= 0:
        e = parent[v]
        if room[e] < units:
            units = room[e]
        v = head[mate[e]]
    if excess[v] < units:
        units = excess[v]
    if units <= 0:
        return 0
    source = v
    v = t
    while parent[v] >= 0:
        e = parent[v]
        room[e] -= units
        room[mate[e]] += units
        v = head[mate[e]]
    excess[source] -= units
    excess[t] += units
    return units


@njit(cache=True)
def _label(n, indptr, head, cost, room, mate, pot, excess, label, count, current, queue):
    """Exact labels: each node's fewest admissible arcs to a deficit plus one (deficits 1, T 0), n + 2 where
    none; ``count`` per label, current arcs reset. Returns the nodes labelled."""
    far = n + 2
    for v in range(n):
        label[v] = far
        current[v] = indptr[v]
    for k in range(far + 1):
        count[k] = 0
    first = 0
    last = 0
    for v in range(n):
        if excess[v] < 0:
            label[v] = 1
            queue[last] = v
            last += 1
    while first < last:
        u = queue[first]
        first += 1
        count[label[u]] += 1
        pu = pot[u]
        for e in range(indptr[u], indptr[u + 1]):  # the slot w -> u opposite e, admissible with room
            w = head[e]
            if label[w] == far and room[mate[e]] > 0 and cost[e] + pu == pot[w]:
                label[w] = label[u] + 1
                queue[last] = w
                last += 1
    return last


@njit(cache=True)
def admissible_max_flow(n, indptr, head, cost, room, mate, pot, excess, label, count, current, path, sources,
                        queue):
    """Send a max flow from the excesses to the deficits over the admissible slots (room > 0, reduced cost 0),
    updating ``room`` and ``excess``; returns the units sent."""
    far = n + 2
    num_sources = 0
    for v in range(n):
        if excess[v] > 0:
            sources[num_sources] = v
            num_sources += 1
    budget = (_label(n, indptr, head, cost, room, mate, pot, excess, label, count, current, queue) + num_sources) // 4
    relabels = 0
    label_s = 0  # S's label; 0: to be computed
    next_source = num_sources
    sent = 0
    depth = 0
    u = -1  # -1: at S
    source = -1
    while True:
        if relabels > budget:
            budget = _label(n, indptr, head, cost, room, mate, pot, excess, label, count, current, queue)
            budget = (budget + num_sources) // 4
            relabels = 0
            label_s = 0
            next_source = num_sources
            u = -1
        if u < 0:  # at S: advance to a source one label down, else relabel S
            while next_source < num_sources:
                s = sources[next_source]
                if excess[s] > 0 and label[s] + 1 == label_s:
                    break
                next_source += 1
            if next_source < num_sources:
                source = sources[next_source]
                u = source
                depth = 0
                continue
            least = far
            for i in range(num_sources):
                s = sources[i]
                if excess[s] > 0 and label[s] < least:
                    least = label[s]
            if least >= far:
                return sent
            label_s = least + 1
            next_source = 0
            continue
        if excess[u] < 0 and label[u] == 1:  # at a deficit: augment along the path, then start again at S
            units = min(excess[source], -excess[u])
            for i in range(depth):
                units = min(units, room[path[i]])
            for i in range(depth):
                room[path[i]] -= units
                room[mate[path[i]]] += units
            excess[source] -= units
            excess[u] += units
            sent += units
            u = -1
            continue
        lu = label[u]
        pu = pot[u]
        e = current[u]
        end = indptr[u + 1]
        while e < end and not (room[e] > 0 and label[head[e]] + 1 == lu and cost[e] + pu == pot[head[e]]):
            e += 1
        current[u] = e
        if e < end:  # advance
            path[depth] = e
            depth += 1
            u = head[e]
            continue
        least = 0 if excess[u] < 0 else far - 1  # relabel: one above the least admissible neighbour
        for e in range(indptr[u], end):
            if room[e] > 0 and label[head[e]] < least and cost[e] + pu == pot[head[e]]:
                least = label[head[e]]
        relabels += 1
        count[lu] -= 1
        label[u] = min(least + 1, far)
        if label[u] < far:
            count[label[u]] += 1
        current[u] = indptr[u]
        if count[lu] == 0:  # the gap rule: no node left at label lu, which every path from S to T crosses
            return sent
        if depth == 0:  # retreat
            u = -1
        else:
            depth -= 1
            u = head[mate[path[depth]]]
