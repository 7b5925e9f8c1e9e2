"""Max flow with scipy.sparse.csgraph.maximum_flow (Dinic): arc arrays in, flow per arc out."""
from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_flow


def solve_max_flow(num_nodes: int, tails: np.ndarray, heads: np.ndarray, caps: np.ndarray,
                   source: int, sink: int) -> tuple[np.ndarray, int]:
    """Return (flow on each arc, flow value). Arcs must be unique (scipy sums duplicates)."""
    tails = np.asarray(tails, dtype=np.int64)
    heads = np.asarray(heads, dtype=np.int64)
    keys = tails * num_nodes + heads
    if len(np.unique(keys)) != len(keys):
        raise ValueError("duplicate arcs: scipy would add their capacities")
    mat = csr_matrix((np.asarray(caps, dtype=np.int32), (tails, heads)), shape=(num_nodes, num_nodes))
    res = maximum_flow(mat, source, sink, method="dinic")
    flow = res.flow.tocsr()
    flow.sort_indices()
    # scipy stores net flow antisymmetrically (F[v, u] = -F[u, v]); the positive part is a valid flow per arc
    return np.maximum(_lookup(flow, tails, heads), 0), int(res.flow_value)


def _lookup(m: csr_matrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """m[rows[i], cols[i]] for every i, without building a dense matrix (0 where absent)."""
    out = np.zeros(len(rows), dtype=np.int64)
    start = m.indptr[rows]
    end = m.indptr[rows + 1]
    for_rows = np.flatnonzero(end > start)
    # binary search each column inside its row's slice
    idx = m.indices
    lo = start[for_rows].copy()
    hi = end[for_rows].copy()
    target = cols[for_rows]
    while True:
        active = lo < hi
        if not active.any():
            break
        mid = (lo + hi) // 2
        go_right = active & (idx[np.minimum(mid, len(idx) - 1)] < target)
        lo = np.where(go_right, mid + 1, lo)
        hi = np.where(active & ~go_right, mid, hi)
    found = (lo < end[for_rows]) & (idx[np.minimum(lo, len(idx) - 1)] == target)
    out[for_rows[found]] = m.data[lo[found]]
    return out
