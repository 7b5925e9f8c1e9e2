"""Synthetic clusters for tests, demos and benchmarks: brokers, racks, topics and a replica layout.

Two layouts:

* ``"random"``: every partition gets ``rf`` distinct brokers drawn with probability proportional to a
  per-broker load factor (all equal for ``skew=0``, lognormal with ``sigma=skew`` otherwise, so a few brokers
  carry many more replicas, as in real clusters that grew unevenly). Sampling is vectorized: all replicas
  are drawn with replacement in one call, only the duplicate positions are drawn again, and the rows still
  in conflict after a few rounds are finished by exact masked sampling (chunked, still without a Python
  loop per partition). With ``rack_aware`` the conflicts are on racks instead of brokers.
* ``"balanced"``: a round-robin layout in the spirit of Kafka's ``AdminUtils``: the replicas of all
  partitions fill one cyclic sequence of brokers, ``rf`` consecutive brokers per partition, each topic
  starting where the previous one ended. Replica counts are then within 1 per broker, cluster-wide and for
  every topic; the leader of each partition is picked inside its window by a rotation that makes leader
  counts within 1 too (cluster-wide and per topic). With ``rack_aware`` the broker sequence interleaves the
  racks; when the racks are not all the same size a perfectly balanced rack-aware layout does not exist in
  general, and the layout is balanced per rack instead (see ``_balanced_by_rack``).

Everything is deterministic for a given seed.
"""
from __future__ import annotations

import math

import numpy as np

from .errors import InputError
from .model import Brokers, ClusterState

LAYOUTS = ("random", "balanced")
SOURCE = "generate_cluster"  # the source of its InputErrors; the place is the parameter's name
# size limits, checked before anything is allocated (numpy would fail late, with a traceback, on 10^10 replicas)
MAX_BROKERS = 100_000
MAX_TOPICS = 1_000_000
MAX_REPLICAS = 50_000_000
MAX_SKEW = 10.0
_REJECTION_ROUNDS = 8
_MASK_CELLS = 4_000_000  # rows x brokers per chunk of the masked fallback
_MAX_SIZE = 1 << 50


def generate_cluster(
    *,
    brokers: int,
    racks: int = 0,
    topics: int,
    partitions: int | tuple[int, int],
    rf: int,
    skew: float = 0.0,
    layout: str = "random",
    sizes: bool = False,
    size_mean_bytes: int = 1 << 30,
    size_alpha: float = 1.5,
    first_broker_id: int = 0,
    seed: int = 0,
    rack_aware: bool = False,
) -> ClusterState:
    """A synthetic cluster; a bad value raises InputError ``generate_cluster: PARAMETER: ...`` (``place`` is the
    parameter's name, or ``topics x partitions x rf`` for the replica limit; a remedy is written ``name=value``):
    the command line shows its own flags."""
    lo, hi = _check(brokers, racks, topics, partitions, rf, skew, layout, size_mean_bytes, size_alpha,
                    first_broker_id, seed, rack_aware)
    rng = np.random.default_rng(seed)
    # independent streams, so that (for example) changing the layout does not change the sizes
    r_counts, r_layout, r_sizes = rng.spawn(3)

    table = _brokers(brokers, racks, first_broker_id)
    counts = (
        np.full(topics, lo, dtype=np.int64) if lo == hi else r_counts.integers(lo, hi + 1, size=topics, dtype=np.int64)
    )
    total = int(counts.sum())
    topic_idx = np.repeat(np.arange(topics, dtype=np.int32), counts)
    starts = np.cumsum(counts) - counts
    pnum = (np.arange(total, dtype=np.int64) - np.repeat(starts, counts)).astype(np.int32)

    group = table.rack.astype(np.int64) if rack_aware else np.arange(brokers, dtype=np.int64)
    if layout == "random":
        weight = np.ones(brokers) if skew == 0 else r_layout.lognormal(0.0, skew, size=brokers)
        idx = _random_layout(r_layout, total, rf, weight, group)
    elif rack_aware and brokers % racks != 0:
        idx = _balanced_by_rack(r_layout, total, rf, table.rack.astype(np.int64), len(table.rack_names))
    else:
        idx = _balanced_layout(r_layout, total, rf, _interleaved(table.rack) if racks else np.arange(brokers))

    size = _sizes(r_sizes, total, size_mean_bytes, size_alpha) if sizes else np.full(total, -1, dtype=np.int64)
    width = max(4, len(str(topics - 1)))
    names = tuple(f"topic-{t:0{width}d}" for t in range(topics))  # zero padded: sorted order = index order
    # already in canonical (topic, partition) order, so the state is built directly (no sort needed)
    return ClusterState(
        brokers=table,
        topics=names,
        topic=topic_idx,
        partition=pnum,
        replicas=np.ascontiguousarray(table.ids[idx], dtype=np.int32),
        size=size,
    )


# ---- checks ------------------------------------------------------------------------------------


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _check(brokers, racks, topics, partitions, rf, skew, layout, size_mean_bytes, size_alpha,
           first_broker_id, seed, rack_aware) -> tuple[int, int]:
    if not _is_int(brokers) or not 1 <= brokers <= MAX_BROKERS:
        raise InputError(SOURCE, "brokers", f"must be an integer from 1 to {MAX_BROKERS}", brokers)
    if not _is_int(racks) or racks < 0:
        raise InputError(SOURCE, "racks", "must be a non-negative integer (0 = no racks)", racks)
    if racks > brokers:
        raise InputError(SOURCE, "racks", f"more racks than brokers ({brokers})", racks)
    if not _is_int(topics) or topics < 1:
        raise InputError(SOURCE, "topics", "must be a positive integer", topics)
    if _is_int(partitions):
        lo = hi = int(partitions)
    elif (isinstance(partitions, (tuple, list)) and len(partitions) == 2
          and all(_is_int(p) for p in partitions)):
        lo, hi = int(partitions[0]), int(partitions[1])
    else:
        raise InputError(SOURCE, "partitions", "expected a count or a range LO-HI", partitions)
    if lo < 1 or hi < lo:
        raise InputError(SOURCE, "partitions", "counts must be positive, and LO <= HI for a range", partitions)
    if not _is_int(rf) or rf < 1:
        raise InputError(SOURCE, "rf", "the replication factor must be at least 1", rf)
    if rf > brokers:
        raise InputError(SOURCE, "rf", f"the replication factor is above the number of brokers ({brokers})", rf)
    _check_replicas(topics, lo, hi, rf)
    if topics > MAX_TOPICS:
        raise InputError(SOURCE, "topics", f"must be at most {MAX_TOPICS:,}", topics)
    if layout not in LAYOUTS:
        raise InputError(SOURCE, "layout", f"unknown layout (choose from {', '.join(LAYOUTS)})", layout)
    if isinstance(skew, bool) or not isinstance(skew, (int, float, np.floating, np.integer)) \
            or not math.isfinite(skew) or not 0 <= skew <= MAX_SKEW:
        raise InputError(SOURCE, "skew", f"must be a number from 0 to {MAX_SKEW:g}", skew)
    if skew > 0 and layout != "random":
        raise InputError(SOURCE, "skew", "only the random layout can be skewed (use layout='random')", skew)
    if rack_aware:
        if racks == 0:
            raise InputError(SOURCE, "rack_aware", "needs racks (racks=K)")
        if rf > racks:
            raise InputError(SOURCE, "rack_aware",
                             f"the replication factor {rf} is above the number of racks ({racks})", rf)
    if not _is_int(size_mean_bytes) or size_mean_bytes < 1:
        raise InputError(SOURCE, "size_mean_bytes", "must be a positive integer", size_mean_bytes)
    if isinstance(size_alpha, bool) or not isinstance(size_alpha, (int, float, np.floating, np.integer)) \
            or not math.isfinite(size_alpha) or size_alpha <= 1:
        raise InputError(SOURCE, "size_alpha", "the Pareto shape must be above 1 (so the mean is finite)", size_alpha)
    if not _is_int(first_broker_id) or first_broker_id < 0 or first_broker_id + brokers - 1 >= 2**31:
        raise InputError(SOURCE, "first_broker_id", "broker ids must stay within 0 .. 2147483647", first_broker_id)
    if not _is_int(seed) or seed < 0:
        raise InputError(SOURCE, "seed", "must be a non-negative integer", seed)
    return lo, hi


def _check_replicas(topics: int, lo: int, hi: int, rf: int) -> None:
    """Refuse more than MAX_REPLICAS replicas (the most a range of partition counts can draw), naming the product."""
    most = topics * hi * rf
    if most > MAX_REPLICAS:
        parts = f"{hi:,}" if lo == hi else f"up to {hi:,}"
        raise InputError(SOURCE, "topics x partitions x rf",
                         f"{topics:,} x {parts} x {rf:,} = {most:,} replicas, above the limit of {MAX_REPLICAS:,}")


# ---- brokers -----------------------------------------------------------------------------------


def _brokers(n: int, racks: int, first_id: int) -> Brokers:
    ids = np.arange(first_id, first_id + n, dtype=np.int64)
    if racks <= 0:
        return Brokers.build(ids)
    names = [f"r{k}" for k in range(racks)]
    return Brokers.build(ids, [names[i % racks] for i in range(n)])


def _interleaved(rack: np.ndarray) -> np.ndarray:
    """Broker indices ordered rack by rack in turn (first of each rack, then second of each, ...)."""
    order = np.argsort(rack, kind="stable")
    sorted_rack = rack[order]
    first = np.searchsorted(sorted_rack, sorted_rack, side="left")
    rank = np.arange(len(rack)) - first  # position of each broker inside its rack
    return order[np.lexsort((sorted_rack, rank))]


# ---- random layout -----------------------------------------------------------------------------


def _random_layout(rng: np.random.Generator, p: int, rf: int, weight: np.ndarray, group: np.ndarray) -> np.ndarray:
    """[p, rf] broker indices, drawn proportional to ``weight``, with distinct ``group`` values per row."""
    cdf = np.cumsum(weight / weight.sum())
    last = len(weight) - 1

    def draw(shape) -> np.ndarray:
        return np.minimum(np.searchsorted(cdf, rng.random(shape), side="right"), last)

    idx = draw((p, rf))
    if rf == 1:
        return idx
    dup = _later_duplicates(group[idx])
    rows = np.flatnonzero(dup.any(axis=1))
    dup = dup[rows]
    for _ in range(_REJECTION_ROUNDS):
        if not len(rows):
            return idx
        sub = idx[rows]
        sub[dup] = draw(int(dup.sum()))
        idx[rows] = sub
        dup = _later_duplicates(group[sub])
        keep = dup.any(axis=1)
        rows, dup = rows[keep], dup[keep]
    if len(rows):
        _masked_fill(rng, idx, rows, dup, weight, group)
    return idx


def _later_duplicates(g: np.ndarray) -> np.ndarray:
    """Mask of the positions whose value already occurs further left in the same row."""
    order = np.argsort(g, axis=1, kind="stable")
    sg = np.take_along_axis(g, order, axis=1)
    out = np.zeros(g.shape, dtype=bool)
    np.put_along_axis(out, order[:, 1:], sg[:, 1:] == sg[:, :-1], axis=1)
    return out


def _masked_fill(rng: np.random.Generator, idx: np.ndarray, rows: np.ndarray, dup: np.ndarray,
                 weight: np.ndarray, group: np.ndarray) -> None:
    """Redraw the ``dup`` positions of ``rows`` exactly, among brokers whose group the row does not use yet."""
    n_groups = int(group.max()) + 1
    chunk = max(1, _MASK_CELLS // len(weight))
    for c0 in range(0, len(rows), chunk):
        r = rows[c0:c0 + chunk]
        d = dup[c0:c0 + chunk]
        sub = idx[r]
        used = np.zeros((len(r), n_groups), dtype=bool)
        rr, cc = np.nonzero(~d)
        used[rr, group[sub[rr, cc]]] = True
        for j in range(sub.shape[1]):
            m = np.flatnonzero(d[:, j])
            if not len(m):
                continue
            w = np.where(used[m][:, group], 0.0, weight[None, :])
            cum = np.cumsum(w, axis=1)
            u = rng.random(len(m)) * cum[:, -1]
            pick = np.argmax(cum > u[:, None], axis=1)
            bad = w[np.arange(len(m)), pick] <= 0  # only from rounding at the very top of the range
            pick[bad] = np.argmax(w[bad] > 0, axis=1)
            sub[m, j] = pick
            used[m, group[pick]] = True
        idx[r] = sub


# ---- balanced layouts --------------------------------------------------------------------------


def _rotated_windows(p: int, rf: int, ring: int, start: int) -> np.ndarray:
    """[p, rf] positions on a ring: partition q takes ``rf`` consecutive positions from ``start + q*rf``.

    The first column (the leader) rotates inside the window: with g = gcd(rf, ring), partitions
    q = c*(ring/g) + i use offset c mod g, so any ``ring`` consecutive partitions lead on every position
    exactly once, and any shorter run of partitions on distinct positions.
    """
    q = np.arange(p, dtype=np.int64)
    g = math.gcd(rf, ring)
    rot = (q // (ring // g)) % g
    k = np.arange(rf, dtype=np.int64)
    return (start + q[:, None] * rf + (rot[:, None] + k[None, :]) % rf) % ring


def _balanced_layout(rng: np.random.Generator, p: int, rf: int, order: np.ndarray) -> np.ndarray:
    """Round-robin over the brokers in ``order``; each topic starts where the previous one ended."""
    n = len(order)
    return order[_rotated_windows(p, rf, n, int(rng.integers(n)))]


def _balanced_by_rack(rng: np.random.Generator, p: int, rf: int, rack: np.ndarray, n_racks: int) -> np.ndarray:
    """Rack-aware layout for racks of unequal size: round-robin over racks, then over brokers in each rack.

    Partitions take ``rf`` consecutive racks (distinct), so racks get replica and leader counts within 1
    of each other; inside a rack its leaders come first and its followers continue the same cycle of
    brokers, so brokers of one rack are within 1 (replicas and leaders). Brokers of a smaller rack carry
    more, which no rack-aware layout can avoid when every partition spans all racks.
    """
    pos = _rotated_windows(p, rf, n_racks, int(rng.integers(n_racks)))
    members = np.argsort(rack, kind="stable")  # broker indices grouped by rack (ids ascending inside)
    size = np.bincount(rack, minlength=n_racks)
    first = np.cumsum(size) - size
    lead = pos[:, 0]
    occ_lead = _occurrence(lead, n_racks)
    n_lead = np.bincount(lead, minlength=n_racks)
    fol = pos[:, 1:].ravel()
    occ_fol = _occurrence(fol, n_racks)
    out = np.empty((p, rf), dtype=np.int64)
    out[:, 0] = members[first[lead] + occ_lead % size[lead]]
    out[:, 1:] = members[first[fol] + (n_lead[fol] + occ_fol) % size[fol]].reshape(p, rf - 1)
    return out


def _occurrence(values: np.ndarray, n: int) -> np.ndarray:
    """For each element, how many equal elements come before it."""
    order = np.argsort(values, kind="stable")
    counts = np.bincount(values, minlength=n)
    first = np.cumsum(counts) - counts
    out = np.empty(len(values), dtype=np.int64)
    out[order] = np.arange(len(values)) - first[values[order]]
    return out


# ---- sizes -------------------------------------------------------------------------------------


def _sizes(rng: np.random.Generator, p: int, mean: int, alpha: float) -> np.ndarray:
    """Pareto(alpha) sizes scaled so the mean is about ``mean`` bytes (int64, capped at 2**50)."""
    scale = mean * (alpha - 1.0) / alpha  # Pareto with minimum x_m has mean x_m * alpha / (alpha - 1)
    raw = (rng.pareto(alpha, size=p) + 1.0) * scale
    return np.minimum(np.floor(raw), _MAX_SIZE).astype(np.int64)
