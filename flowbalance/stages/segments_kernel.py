"""``split._segments`` compiled by numba: each cell's count range cut into the pieces of its marginal cost, in one
pass that counts the pieces and one that writes them, cell by cell.

Why: the numpy version works on whole arrays (a cell's first and last piece, the interval's piece, the whole
ones between), ten or so passes over the cells and repeats over the arcs; at 1,000,000 replicas it takes
0.3-0.8 s a plan (two calls, 1,000,000-3,000,000 cells), at 3,000,000 replicas 1.5 s. Here it is two walks over
the cells. Large cell counts of clusters whose leader network loads numba anyway only
(``split.COMPILED_SEGMENTS_FROM`` cells, ``primal_dual.KERNEL_FROM_NODES`` movable partitions): loading numba
costs about 0.45 s once per process. The two give the same arrays (tested).

The step function (``split._layout``): piece 0 starts at -infinity, piece j in 1..nb at ``lo + below[j - 1]``,
piece j in nb + 1..nb + na at ``hi + above[j - nb - 1]``; piece k costs ``costs[k]`` up to the next start.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _piece_of(x, lo, hi, below, above):
    """How many piece starts after piece 0 lie at or below count ``x`` (its piece's index)."""
    nb, na = len(below), len(above)
    if nb == 0:
        return 0
    return min(max(x - lo - below[0] + 1, 0), nb) + min(max(x - hi - above[0] + 1, 0), na)


@njit(cache=True)
def _start(j, lo, hi, below, above):
    """Where piece j starts (j = 0: at ``lo``, as ``split._segments`` counts it; j = nb + na + 1: the piece after
    the last, at ``hi``)."""
    nb, na = len(below), len(above)
    if j == 0:
        return lo
    if j <= nb:
        return lo + below[j - 1]
    if j <= nb + na:
        return hi + above[j - nb - 1]
    return hi


@njit(cache=True)
def _cut(first, end, lo, hi, below, above):
    """One cell's (first piece, last piece, pieces, interval piece's width, skip: the interval's piece is empty
    and inside the range)."""
    nb = len(below)
    if end <= first:
        return 0, 0, 0, 0, False
    k0 = _piece_of(first, lo, hi, below, above)
    k1 = _piece_of(end - 1, lo, hi, below, above)
    width = _start(nb + 1, lo, hi, below, above) - (lo + below[nb - 1]) if nb else 0
    skip = width == 0 and k0 < nb < k1
    return k0, k1, k1 - k0 + 1 - (1 if skip else 0), width, skip


@njit(cache=True)
def segments(cells, first, end, lo, hi, below, above, costs, out_cell, units, cost, piece):
    """Fill (cell, units, cost, piece) per non-empty piece, cell by cell in order, into the four arrays of
    ``count(...)`` arcs; returns the arcs written."""
    nb = len(below)
    at = 0
    for i in range(len(cells)):
        k0, k1, n, width, skip = _cut(first[i], end[i], lo[i], hi[i], below, above)
        for m in range(n):
            k = k0 + m
            if skip and k >= nb:
                k += 1
            u = 1
            if width > 0 and k == nb and k0 <= nb <= k1:
                u = width
            if m == n - 1 and n > 1:
                u = end[i] - _start(k1, lo[i], hi[i], below, above)
            if m == 0:
                u = _start(k0 + 1, lo[i], hi[i], below, above) - first[i] if k1 > k0 else end[i] - first[i]
            out_cell[at] = cells[i]
            units[at] = u
            cost[at] = costs[k]
            piece[at] = k
            at += 1
    return at


@njit(cache=True)
def count(first, end, lo, hi, below, above):
    """The pieces ``segments`` writes, in all."""
    total = 0
    for i in range(len(first)):
        total += _cut(first[i], end[i], lo[i], hi[i], below, above)[2]
    return total
