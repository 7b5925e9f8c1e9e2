"""Synthetic clusters for tests, demos and benchmarks: brokers, racks, topics and a replica layout.

Three layouts:

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
* ``"kafka"``: Kafka's own assignment for a new topic (``AdminUtils.assignReplicasToBrokers``, used when a topic
  is created without an explicit assignment and by ``kafka-reassign-partitions --generate``), with its random
  start index and replica shift drawn per topic from the seeded generator (see ``kafka_assignment``). Real
  clusters look like this: a topic with fewer partitions than brokers leaves consecutive partitions' followers on
  the same brokers. With ``rack_aware`` it is Kafka's rack-aware variant (the rack-alternating broker list, then
  brokers of racks that already hold a replica skipped until every rack has one), so RF may exceed the racks.

``history=K`` (K >= 2) grows the cluster in K waves, the way real clusters grow: brokers join in K equal groups
(by id), topics are created in K equal groups (by index, so older topics come first), and each topic is placed
by the layout on the brokers that existed when it was created. Adding brokers moves nothing in Kafka, so the
first brokers hold every wave's topics and the last ones only the newest.

Everything is deterministic for a given seed.
"""
from __future__ import annotations

import math

from dataclasses import replace

import numpy as np

from .errors import InputError
from .model import Brokers, ClusterState

LAYOUTS = ("random", "balanced", "kafka")
SOURCE = "generate_cluster"  # the source of its InputErrors; the place is the parameter's name
# size limits, checked before anything is allocated (numpy would fail late, with a traceback, on 10^10 replicas)
MAX_BROKERS = 100_000
MAX_TOPICS = 1_000_000
MAX_REPLICAS = 50_000_000
MAX_SKEW = 10.0
MAX_LOG_DIRS = 64
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
    history: int = 0,
    log_dirs: int = 1,
) -> ClusterState:
    """A synthetic cluster; a bad value raises InputError ``generate_cluster: PARAMETER: ...`` (``place`` is the
    parameter's name, or ``topics x partitions x rf`` for the replica limit; a remedy is written ``name=value``):
    the command line shows its own flags. ``history`` = number of growth waves (0 or 1: all topics on all brokers).
    ``log_dirs`` = log directories per broker (JBOD when above 1: ``/var/lib/kafka/data-0`` ..., each replica in a
    random one, so the directories are not quite even, as on a real broker)."""
    lo, hi = _check(brokers, racks, topics, partitions, rf, skew, layout, size_mean_bytes, size_alpha,
                    first_broker_id, seed, rack_aware)
    _check_history(history, brokers, rf)
    if not _is_int(log_dirs) or not 1 <= log_dirs <= MAX_LOG_DIRS:
        raise InputError(SOURCE, "log_dirs", f"must be an integer from 1 to {MAX_LOG_DIRS}", log_dirs)
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

    existing = _brokers_at_creation(brokers, topics, history)
    idx = _layout_indices(layout, r_layout, table, counts, pnum, existing, rf, skew, rack_aware)

    size = _sizes(r_sizes, total, size_mean_bytes, size_alpha) if sizes else np.full(total, -1, dtype=np.int64)
    width = max(4, len(str(topics - 1)))
    names = tuple(f"topic-{t:0{width}d}" for t in range(topics))  # zero padded: sorted order = index order
    # already in canonical (topic, partition) order, so the state is built directly (no sort needed)
    state = ClusterState(
        brokers=table,
        topics=names,
        topic=topic_idx,
        partition=pnum,
        replicas=np.ascontiguousarray(table.ids[idx], dtype=np.int32),
        size=size,
    )
    if log_dirs > 1:  # its own stream (the fourth child), so the other streams are as without it
        state = replace(state, dirs=_random_dirs(state, log_dirs, rng.spawn(1)[0]))
    return state


def _random_dirs(state: ClusterState, n: int, rng: np.random.Generator):
    """Every broker with ``n`` log directories and each replica in a random one."""
    from .dirs import build_dirs, replica_keys

    ids = state.brokers.ids.astype(np.int64)
    dir_broker = np.repeat(ids, n)
    dir_path = [f"/var/lib/kafka/data-{i}" for i in range(n)] * len(ids)
    _, rows, bids = replica_keys(state)
    pick = rng.integers(0, n, size=len(rows))
    dir_index = np.searchsorted(ids, bids) * n + pick  # ids are sorted: broker b's dirs start at b's position * n
    return build_dirs(dir_broker, dir_path, rows, bids, dir_index, state.size[rows])


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
        if rf > racks and layout != "kafka":  # Kafka's rack-aware assignment puts a replica on every rack first
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


def _check_history(history, brokers: int, rf: int) -> None:
    """Refuse a bad number of growth waves, or one whose first wave has too few brokers for the RF."""
    if not _is_int(history) or history < 0:
        raise InputError(SOURCE, "history", "the number of growth waves must be a non-negative integer (0 = off)",
                         history)
    if history > 1 and brokers // history < rf:
        raise InputError(SOURCE, "history", f"the first of {history} waves would have {brokers // history} "
                         f"broker(s), fewer than the replication factor {rf}", history)


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


def _brokers_at_creation(brokers: int, topics: int, history: int) -> np.ndarray:
    """Per topic, how many brokers (the first ones by id) existed when it was created: all of them without a
    history; with K waves, topic t is created in wave w = t*K // topics, when the cluster had brokers*(w+1) // K."""
    if history <= 1:
        return np.full(topics, brokers, dtype=np.int64)
    wave = np.arange(topics, dtype=np.int64) * history // topics
    return brokers * (wave + 1) // history


def _layout_indices(layout: str, rng: np.random.Generator, table: Brokers, counts: np.ndarray, pnum: np.ndarray,
                    existing: np.ndarray, rf: int, skew: float, rack_aware: bool) -> np.ndarray:
    """[partitions, rf] broker indices by the layout, each history wave on the brokers that existed then."""
    if layout == "kafka":
        return _kafka_layout(rng, table.rack if rack_aware else None, counts, pnum, existing, rf)
    brokers = len(table)
    weight = np.ones(brokers) if skew == 0 else rng.lognormal(0.0, skew, size=brokers)
    idx = np.empty((len(pnum), rf), dtype=np.int64)
    ends = np.cumsum(counts)[np.flatnonzero(np.diff(existing, append=0))]  # the rows of each wave end here
    for n, lo, hi in zip(np.unique(existing), np.r_[0, ends[:-1]], ends):
        idx[lo:hi] = _place_on_first(layout, rng, table.rack[:n], table.has_racks, rack_aware, int(hi - lo), rf,
                                     weight[:n])
    return idx


def _place_on_first(layout: str, rng: np.random.Generator, rack: np.ndarray, has_racks: bool, rack_aware: bool,
                    p: int, rf: int, weight: np.ndarray) -> np.ndarray:
    """[p, rf] indices of the first ``len(rack)`` brokers, by the random or balanced layout (one history wave)."""
    n = len(rack)
    dense = np.unique(rack, return_inverse=True)[1].astype(np.int64) if has_racks else rack.astype(np.int64)
    n_racks = int(dense.max()) + 1 if has_racks else 0
    if layout == "random":
        return _random_layout(rng, p, rf, weight, dense if rack_aware else np.arange(n, dtype=np.int64))
    if rack_aware and n % n_racks != 0:
        return _balanced_by_rack(rng, p, rf, dense, n_racks)
    return _balanced_layout(rng, p, rf, _interleaved(dense) if has_racks else np.arange(n))


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


# ---- Kafka's own layout ------------------------------------------------------------------------


def kafka_assignment(partitions: int, rf: int, start: int, shift: int, *, brokers: int = 0,
                     rack: np.ndarray | None = None) -> np.ndarray:
    """Kafka's assignment of one new topic (``AdminUtils.assignReplicasToBrokers`` with the given random start
    index and replica shift, both in [0, brokers)): [partitions, rf] indices of brokers listed by id.

    ``rack`` (one integer per broker, in id order; racks ordered like their names) selects the rack-aware
    variant; without it the brokers are ``brokers`` and rack-unaware. Partition p leads on list position
    (start + p) mod N; its followers follow at an increasing shift (shift + p // N), on the rack-alternating
    list and skipping brokers whose rack already holds a replica while some rack holds none.
    """
    n = len(rack) if rack is not None else brokers
    if not 1 <= rf <= n or partitions < 0 or not (0 <= start < n and 0 <= shift < n):
        raise InputError("kafka_assignment", "rf" if not 1 <= rf <= n else "start",
                         f"needs 1 <= rf <= brokers ({n}) and start, shift in [0, {n})", (rf, start, shift))
    if rack is not None:
        rack = np.asarray(rack, dtype=np.int64)
    p = np.arange(partitions, dtype=np.int64)
    return _kafka_layout(None, rack, np.array([partitions]), p, np.array([n]), rf,
                         np.array([start]), np.array([shift]))


def _kafka_layout(rng: np.random.Generator | None, rack: np.ndarray | None, counts: np.ndarray, pnum: np.ndarray,
                  existing: np.ndarray, rf: int, starts: np.ndarray | None = None,
                  shifts: np.ndarray | None = None) -> np.ndarray:
    """[rows, rf] broker indices: each topic placed by Kafka on its first ``existing`` brokers, with its own
    start index and replica shift (drawn from ``rng`` when not given, as Kafka draws them at topic creation)."""
    if starts is None:
        starts = rng.integers(0, existing)
        shifts = rng.integers(0, existing)
    sizes, wave = np.unique(existing, return_inverse=True)
    ring, offset, n_racks = _kafka_rings(sizes, rack)
    w = np.repeat(wave.ravel(), counts)
    n = sizes[w]
    first = (pnum + np.repeat(starts, counts)) % n
    shift = np.repeat(shifts, counts) + pnum // n  # Kafka adds 1 to the shift after every N partitions
    if rack is None:
        pos = _unaware_positions(first, shift, n, rf)
    else:
        pos = _aware_positions(first, shift, n, rf, n_racks[w], rack[ring], offset[w])
    return ring[offset[w][:, None] + pos]


def _kafka_rings(sizes: np.ndarray, rack: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each cluster size N (the first N brokers), Kafka's broker list concatenated: ids in order, or with
    racks the rack-alternating list (first broker of each rack, then second, ...); its offsets and rack counts."""
    lists, racks = [], []
    for n in sizes:
        if rack is None:
            lists.append(np.arange(n, dtype=np.int64))
            racks.append(0)
        else:
            lists.append(_interleaved(rack[:n]))
            racks.append(len(np.unique(rack[:n])))
    offset = np.cumsum([0] + [len(x) for x in lists[:-1]])
    return np.concatenate(lists), np.asarray(offset, dtype=np.int64), np.asarray(racks, dtype=np.int64)


def _unaware_positions(first: np.ndarray, shift: np.ndarray, n: np.ndarray, rf: int) -> np.ndarray:
    """Rack-unaware: follower j of a partition led at ``first`` sits 1 + (shift + j) mod (N - 1) further on."""
    j = np.arange(rf - 1, dtype=np.int64)
    gap = (shift[:, None] + j[None, :]) % np.maximum(n - 1, 1)[:, None]
    return np.column_stack([first, (first[:, None] + 1 + gap) % n[:, None]])


def _aware_positions(first: np.ndarray, shift: np.ndarray, n: np.ndarray, rf: int, n_racks: np.ndarray,
                     ring_rack: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """Rack-aware: candidates k = 0, 1, ... sit 1 + (shift * racks + k) mod (N - 1) past the leader; a candidate
    is taken unless it already holds a replica, or its rack does while some rack holds none. Simulated one
    candidate at a time for all unfinished partitions at once (a few steps: the list alternates racks)."""
    rows = len(first)
    base = shift * n_racks % np.maximum(n - 1, 1)
    pos = np.full((rows, rf), -1, dtype=np.int64)
    used = np.full((rows, rf), -1, dtype=np.int64)  # racks of the replicas taken
    pos[:, 0] = first
    used[:, 0] = ring_rack[offset + first]
    distinct = np.ones(rows, dtype=np.int64)
    filled = np.ones(rows, dtype=np.int64)
    k = np.zeros(rows, dtype=np.int64)
    active = np.flatnonzero(filled < rf)
    while len(active):
        nn = n[active]
        cand = (first[active] + 1 + (base[active] + k[active]) % (nn - 1)) % nn
        crack = ring_rack[offset[active] + cand]
        new_rack = ~(used[active] == crack[:, None]).any(axis=1)
        free = ~(pos[active] == cand[:, None]).any(axis=1)
        take = free & (new_rack | (distinct[active] == n_racks[active]))
        got = active[take]
        pos[got, filled[got]] = cand[take]
        used[got, filled[got]] = crack[take]
        distinct[got] += new_rack[take]
        filled[got] += 1
        k[active] += 1
        active = active[filled[active] < rf]
    return pos


# ---- sizes -------------------------------------------------------------------------------------


def _sizes(rng: np.random.Generator, p: int, mean: int, alpha: float) -> np.ndarray:
    """Pareto(alpha) sizes scaled so the mean is about ``mean`` bytes (int64, capped at 2**50)."""
    scale = mean * (alpha - 1.0) / alpha  # Pareto with minimum x_m has mean x_m * alpha / (alpha - 1)
    raw = (rng.pareto(alpha, size=p) + 1.0) * scale
    return np.minimum(np.floor(raw), _MAX_SIZE).astype(np.int64)
