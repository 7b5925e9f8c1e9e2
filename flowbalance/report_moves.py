"""What a plan moves, and where each broker's leaderships go when it fails, as plain data for the report.

* **transfers**: every replica move as (from broker → to broker). Within a partition the brokers that lose a
  replica are paired with the brokers that gain one in list order (the first broker leaving with the first
  arriving, ...); an arrival without a departure (RF raised) comes from ``None``, a departure without an arrival
  (RF lowered) goes to ``None``. Totals per pair, the largest partitions moving and the changed partitions
  (before → after lists, capped) come from one vectorized pass over the changed rows.
* **leader pairs**: the (leader, first follower) matrix, ``count[l, f]`` = partitions led by ``l`` whose first
  follower is ``f``: when ``l`` fails, those leaderships go to ``f`` (its row is the failure's picture). Above
  ``MAX_PAIR_BROKERS`` brokers only the rows of the brokers whose failure leaves the worst spread are kept.
"""
from __future__ import annotations

import numpy as np

from .model import PAD, ClusterState
from .summary import partition_name

MAX_LISTED_PARTITIONS = 5_000  # changed partitions listed in full (the plan file lists all)
LARGEST = 10  # the largest partitions moving
MAX_PAIR_BROKERS = 60  # above this, the pair matrices keep only the worst brokers' rows
WORST_ROWS = 20


def _padded(before: ClusterState, after: ClusterState, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The before and after lists of ``rows`` at one width (PAD padded)."""
    old, new = before.replicas[rows], after.replicas[rows]
    w = max(old.shape[1], new.shape[1])
    pad = lambda x: np.pad(x, ((0, 0), (0, w - x.shape[1])), constant_values=PAD)  # noqa: E731
    return pad(old), pad(new)


def _ranked(mask: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, rank within the row, broker id) of every True cell, ranks counted left to right."""
    rank = np.cumsum(mask, axis=1) - 1
    r, c = np.nonzero(mask)
    return r, rank[r, c], ids[r, c]


def move_pairs(before: ClusterState, after: ClusterState, rows: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every replica move of ``before`` → ``after`` as (row, from id, to id), from or to PAD for an RF change; in
    row order, then list order."""
    if rows is None:
        old, new = _padded(before, after, np.arange(before.num_partitions))
        rows = np.flatnonzero((old != new).any(axis=1))
    rows = np.asarray(rows, dtype=np.int64)
    old, new = _padded(before, after, rows)
    gone = (old != PAD) & ~(old[:, :, None] == new[:, None, :]).any(axis=2)
    came = (new != PAD) & ~(new[:, :, None] == old[:, None, :]).any(axis=2)
    w = old.shape[1] or 1
    gr, gk, gid = _ranked(gone, old)
    cr, ck, cid = _ranked(came, new)
    key_g, key_c = gr * w + gk, cr * w + ck
    keys = np.union1d(key_g, key_c)
    src = np.full(len(keys), PAD, dtype=np.int64)
    dst = np.full(len(keys), PAD, dtype=np.int64)
    src[np.searchsorted(keys, key_g)] = gid
    dst[np.searchsorted(keys, key_c)] = cid
    return rows[keys // w], src, dst


def _broker(x: int) -> int | None:
    return None if x == PAD else int(x)


def transfers(before: ClusterState, after: ClusterState, changed_rows: np.ndarray, *,
              limit: int = MAX_LISTED_PARTITIONS) -> dict:
    """The report's ``transfers``: ``pairs`` (from, to, replicas, bytes; by replicas, then bytes, then ids),
    ``largest`` (the ``LARGEST`` partitions moving the most bytes, or the most replicas without sizes) and
    ``partitions`` (the changed partitions in (topic, partition) order, at most ``limit``; ``listed_of`` says of
    how many)."""
    changed = np.asarray(changed_rows, dtype=np.int64)
    row, src, dst = move_pairs(before, after, changed)
    sizes = before.has_sizes
    size = np.maximum(before.size, 0) if sizes else np.zeros(before.num_partitions, dtype=np.int64)
    moved = dst != PAD  # an arrival is a move (a departure alone is an RF decrease)
    return {
        "pairs": _pair_totals(src, dst, size[row], sizes),
        "largest": _largest(before, after, row[moved], size, sizes),
        "partitions": [_listed(before, after, int(r), size, sizes) for r in changed[:limit]],
        "listed_of": int(len(changed)),
    }


def _pair_totals(src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray, sizes: bool) -> list[dict]:
    """Replicas (and bytes) per (from, to) pair, the busiest first."""
    if not len(src):
        return []
    pairs, inv = np.unique(np.stack([src, dst], axis=1), axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    count = np.bincount(inv, minlength=len(pairs))
    total = np.bincount(inv, weights=nbytes, minlength=len(pairs)).astype(np.int64)
    order = np.lexsort((pairs[:, 1], pairs[:, 0], -total, -count))
    return [{"from": _broker(pairs[i, 0]), "to": _broker(pairs[i, 1]), "replicas": int(count[i]),
             "bytes": int(total[i]) if sizes else None} for i in order]


def _largest(before: ClusterState, after: ClusterState, rows: np.ndarray, size: np.ndarray, sizes: bool
             ) -> list[dict]:
    """The partitions moving the most: by bytes copied (size × arrivals) with sizes, else by arrivals."""
    if not len(rows):
        return []
    uniq, moves = np.unique(rows, return_counts=True)
    weight = size[uniq] * moves if sizes else moves
    order = np.lexsort((uniq, -weight))[:LARGEST]
    return [{**_listed(before, after, int(uniq[i]), size, sizes), "moves": int(moves[i])} for i in order]


def _listed(before: ClusterState, after: ClusterState, r: int, size: np.ndarray, sizes: bool) -> dict:
    """One changed partition: name, size, before and after lists."""
    return {"partition": partition_name(before, r), "size_bytes": int(size[r]) if sizes else None,
            "before": [int(x) for x in before.replicas[r] if x != PAD],
            "after": [int(x) for x in after.replicas[r] if x != PAD]}


def pair_matrix(state: ClusterState) -> np.ndarray:
    """``count[l, f]``: partitions whose leader is broker position ``l`` and first follower position ``f``
    (int64 [N, N]; partitions with one replica are not counted)."""
    n = len(state.brokers)
    idx = state.replica_index
    if idx.shape[1] < 2:
        return np.zeros((n, n), dtype=np.int64)
    lead, follow = idx[:, 0], idx[:, 1]
    ok = (lead >= 0) & (follow >= 0)
    return np.bincount(lead[ok].astype(np.int64) * n + follow[ok], minlength=n * n).reshape(n, n)


def leader_pairs(before: ClusterState, after: ClusterState | None, failover: dict) -> dict:
    """The report's ``leader_pairs``: ``brokers`` (the columns' ids), ``rows`` (the rows' ids: every broker, or above
    ``MAX_PAIR_BROKERS`` the ``WORST_ROWS`` whose failure leaves the worst spread, after the plan when there is one;
    ``failover`` is the report's ``failover``), ``before`` and ``after`` (null without a plan) matrices of those
    rows, and ``all_rows`` (whether every broker's row is listed)."""
    ids = [int(x) for x in before.brokers.ids]
    pos = {b: i for i, b in enumerate(ids)}
    rows = ids
    if len(ids) > MAX_PAIR_BROKERS:
        side = "after" if after is not None else "before"
        table = [r for r in failover["table"] if r[side] is not None]
        worst = sorted(table, key=lambda r: (-r[side]["spread"], r["failed"]))[:WORST_ROWS]
        rows = sorted(int(r["failed"]) for r in worst)
    take = np.array([pos[b] for b in rows], dtype=np.int64)
    mats = [pair_matrix(s)[take].tolist() if s is not None else None for s in (before, after)]
    return {"brokers": ids, "rows": rows, "before": mats[0], "after": mats[1], "all_rows": rows == ids}
