"""Independent, plain-Python oracles for flowbalance.metrics and flowbalance.targets.

Nothing here imports flowbalance: every function works on a plain description of a cluster
(``Spec``), with loops over partitions, dicts, itertools and exact ``Fraction`` arithmetic, so the
values can be compared against the numpy implementation without sharing any of its code.

A ``Spec`` holds
  * ``brokers``: ``{broker_id: BrokerSpec(rack, weight, removed)}``
  * ``partitions``: a list of ``PartSpec(topic, partition, replicas, size)`` sorted by (topic, partition),
    i.e. in the canonical row order of ``ClusterState``; ``replicas[0]`` is the leader, ``size`` is
    ``None`` when unknown.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Sequence


@dataclass(frozen=True)
class BrokerSpec:
    rack: str | None = None
    weight: float = 1.0
    removed: bool = False


@dataclass(frozen=True)
class PartSpec:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    size: int | None = None


@dataclass(frozen=True)
class Spec:
    brokers: dict  # id -> BrokerSpec
    partitions: tuple  # of PartSpec, sorted by (topic, partition)

    # ---- plain views --------------------------------------------------------------------------
    @property
    def ids(self) -> list[int]:
        return sorted(self.brokers)

    @property
    def live(self) -> list[int]:
        return [b for b in sorted(self.brokers) if not self.brokers[b].removed]

    @property
    def removed(self) -> list[int]:
        return [b for b in sorted(self.brokers) if self.brokers[b].removed]

    @property
    def weighted(self) -> bool:
        ws = {self.brokers[b].weight for b in self.live}
        return len(ws) > 1

    @property
    def has_racks(self) -> bool:
        return bool(self.brokers) and all(b.rack is not None for b in self.brokers.values())

    @property
    def topics(self) -> list[str]:
        return sorted({p.topic for p in self.partitions})


# ---- exact shares and intervals ----------------------------------------------------------------
def exact_quotas(total: int, spec: Spec, among: Iterable[int] | None = None) -> dict[int, Fraction]:
    """Each broker's exact share of ``total`` by weight among ``among`` (default: live brokers)."""
    members = list(spec.live if among is None else among)
    wsum = sum(Fraction(spec.brokers[b].weight) for b in members)
    if wsum == 0:
        return {b: Fraction(0) for b in members}
    return {b: Fraction(total) * Fraction(spec.brokers[b].weight) / wsum for b in members}


def exact_intervals(total: int, spec: Spec) -> dict[int, tuple[int, int]]:
    """[floor(quota), ceil(quota)] for live brokers, [0, 0] for removed ones."""
    q = exact_quotas(total, spec)
    out = {}
    for b in spec.ids:
        if spec.brokers[b].removed:
            out[b] = (0, 0)
        else:
            out[b] = (math.floor(q[b]), math.ceil(q[b]))
    return out


# ---- counts ----------------------------------------------------------------------------------
def replica_counts(spec: Spec) -> dict[int, int]:
    c = {b: 0 for b in spec.ids}
    for p in spec.partitions:
        for r in p.replicas:
            c[r] += 1
    return c


def leader_counts(spec: Spec) -> dict[int, int]:
    c = {b: 0 for b in spec.ids}
    for p in spec.partitions:
        if p.replicas:
            c[p.replicas[0]] += 1
    return c


def has_sizes(spec: Spec) -> bool:
    return any(p.size is not None for p in spec.partitions)


def byte_counts(spec: Spec) -> dict[int, int] | None:
    """Bytes held per broker (unknown sizes count as 0); None when no partition has a size."""
    if not has_sizes(spec):
        return None
    c = {b: 0 for b in spec.ids}
    for p in spec.partitions:
        for r in p.replicas:
            c[r] += p.size or 0
    return c


def weighted_spread(counts: dict[int, int], spec: Spec, among: Sequence[int]) -> Fraction:
    """max - min over ``among`` of (count - weighted share of their total); plain max - min for equal weights."""
    among = list(among)
    if not among:
        return Fraction(0)
    total = sum(counts[b] for b in among)
    q = exact_quotas(total, spec, among)
    dev = [counts[b] - q[b] for b in among]
    return max(dev) - min(dev)


def plain_spread(counts: dict[int, int], among: Sequence[int]) -> int:
    vals = [counts[b] for b in among]
    return max(vals) - min(vals) if vals else 0


def within(counts: dict[int, int], intervals: dict[int, tuple[int, int]]) -> bool:
    return all(lo <= counts[b] <= hi for b, (lo, hi) in intervals.items())


def replicas_on_removed(spec: Spec) -> int:
    c = replica_counts(spec)
    return sum(c[b] for b in spec.removed)


# ---- M* --------------------------------------------------------------------------------------
def count_vector_min_arrivals(
    counts: Sequence[int], total_after: int, lo: Sequence[int], hi: Sequence[int], live: Sequence[bool]
) -> int | None:
    """min over integer vectors t (live brokers only) with lo <= t <= hi and sum t = total_after of
    sum (t - c)+, by enumerating every such vector; None when there is none."""
    idx = [i for i in range(len(counts)) if live[i]]
    best = None
    for t in itertools.product(*[range(lo[i], hi[i] + 1) for i in idx]):
        if sum(t) != total_after:
            continue
        cost = sum(max(tv - counts[i], 0) for tv, i in zip(t, idx))
        if best is None or cost < best:
            best = cost
    return best


def doc_pure_rebalance_mstar(counts: Sequence[int]) -> int:
    """§3.1 special case (equal weights, no removal, no RF change), written from the formula:
    r > 0: max(sum (c - q - 1)+, sum (q - c)+); r = 0: sum (c - q)+."""
    n = len(counts)
    total = sum(counts)
    q, r = divmod(total, n)
    if r > 0:
        return max(sum(max(c - q - 1, 0) for c in counts), sum(max(q - c, 0) for c in counts))
    return sum(max(c - q, 0) for c in counts)


def brute_force_min_arrivals(spec: Spec, target_rf: Sequence[int] | None = None) -> int | None:
    """Enumerate EVERY new assignment: partition i gets ``target_rf[i]`` (default: its RF) distinct live
    brokers (removed brokers get nothing; order within a partition is irrelevant to arrivals); keep the ones
    whose per-broker replica counts lie in the exact [floor, ceil] intervals of the new total; return the
    fewest arrivals (a broker newly holding a partition = one arrival), or None when none is feasible."""
    parts = spec.partitions
    ks = [len(p.replicas) for p in parts] if target_rf is None else [int(k) for k in target_rf]
    live = spec.live
    iv = exact_intervals(sum(ks), spec)
    options = []
    for p, k in zip(parts, ks):
        old = set(p.replicas)
        options.append([(combo, len(set(combo) - old)) for combo in itertools.combinations(live, k)])
    best = None
    for choice in itertools.product(*options):
        cost = sum(a for _, a in choice)
        if best is not None and cost >= best:
            continue
        counts = {b: 0 for b in spec.ids}
        for combo, _ in choice:
            for b in combo:
                counts[b] += 1
        if within(counts, iv):
            best = cost
    return best


# ---- topics ----------------------------------------------------------------------------------
def topic_spreads(spec: Spec) -> dict[str, Fraction]:
    """Per topic: weighted max - min over live brokers of that topic's replica counts."""
    live = spec.live
    out = {}
    for t in spec.topics:
        c = {b: 0 for b in spec.ids}
        for p in spec.partitions:
            if p.topic == t:
                for r in p.replicas:
                    c[r] += 1
        out[t] = weighted_spread(c, spec, live)
    return out


def topic_unbalanced(spec: Spec) -> int:
    """Topics with a live broker outside [floor, ceil] of its weighted share of the topic's live replicas."""
    live = spec.live
    bad = 0
    for t in spec.topics:
        c = {b: 0 for b in live}
        for p in spec.partitions:
            if p.topic == t:
                for r in p.replicas:
                    if r in c:
                        c[r] += 1
        q = exact_quotas(sum(c.values()), spec, live)
        if any(not (math.floor(q[b]) <= c[b] <= math.ceil(q[b])) for b in live):
            bad += 1
    return bad


def worst(table: dict, order: Sequence) -> tuple[object, object]:
    """The first key in ``order`` with the largest value."""
    best_k, best_v = None, None
    for k in order:
        if best_v is None or table[k] > best_v:
            best_k, best_v = k, table[k]
    return best_k, best_v


# ---- failover --------------------------------------------------------------------------------
def broker_failover(spec: Spec) -> dict[int, tuple[int, int, Fraction]]:
    """For each live broker f: every partition led by f is led by its first replica (in list order) that is
    not f; (min, max, weighted spread) of leader counts over the survivors (live brokers other than f)."""
    out = {}
    for f in spec.live:
        leaders = {b: 0 for b in spec.ids}
        for p in spec.partitions:
            lead = p.replicas[0]
            if lead == f:
                rest = [r for r in p.replicas if r != f]
                if not rest:
                    continue
                lead = rest[0]
            leaders[lead] += 1
        surv = [b for b in spec.live if b != f]
        if not surv:
            out[f] = (0, 0, Fraction(0))
            continue
        vals = [leaders[b] for b in surv]
        out[f] = (min(vals), max(vals), weighted_spread(leaders, spec, surv))
    return out


def rack_failover(spec: Spec) -> dict[str, tuple[int, int, Fraction]]:
    """For each rack with a live broker: partitions led in that rack are led by their first replica outside
    it (if any); (min, max, weighted spread) of leader counts over live brokers outside the rack."""
    if not spec.has_racks:
        return {}
    rack = {b: spec.brokers[b].rack for b in spec.ids}
    out = {}
    for k in sorted({rack[b] for b in spec.live}):
        leaders = {b: 0 for b in spec.ids}
        for p in spec.partitions:
            lead = p.replicas[0]
            if rack[lead] == k:
                outside = [r for r in p.replicas if rack[r] != k]
                if not outside:
                    continue
                lead = outside[0]
            leaders[lead] += 1
        surv = [b for b in spec.live if rack[b] != k]
        if not surv:
            out[k] = (0, 0, Fraction(0))
            continue
        vals = [leaders[b] for b in surv]
        out[k] = (min(vals), max(vals), weighted_spread(leaders, spec, surv))
    return out


# ---- racks -----------------------------------------------------------------------------------
def rack_optima(k: int, live_per_rack: dict[str, int]) -> list[dict[str, int]]:
    """The rack rule by enumeration: every per-rack count vector (c_r <= live brokers of rack r, sum k) whose
    descending sort is lexicographically smallest ("as evenly as the brokers allow"); [] when none fits (k above
    the live brokers)."""
    names = sorted(live_per_rack)
    best, vectors = None, []
    for c in itertools.product(*[range(min(live_per_rack[r], k) + 1) for r in names]):
        if sum(c) != k:
            continue
        key = sorted(c, reverse=True)
        if best is None or key < best:
            best, vectors = key, [c]
        elif key == best:
            vectors.append(c)
    return [dict(zip(names, v)) for v in vectors]


def rack_violations(spec: Spec) -> list[int]:
    """Rows (in canonical order) of partitions that break the rack rule (``rack_optima`` over the live brokers
    per rack): a rack holds more than any optimal vector gives it (a rack without live brokers: more than the
    largest entry L of an optimal vector), or every replica is in a rack with live brokers and the counts are not
    an optimal vector. Replicas on removed brokers count in their rack. An RF above the live brokers (no optimal
    vector) has no placement at all and is not counted. Empty when the brokers have no racks."""
    if not spec.has_racks:
        return []
    live_per_rack: dict[str, int] = {}
    for b in spec.live:
        live_per_rack[spec.brokers[b].rack] = live_per_rack.get(spec.brokers[b].rack, 0) + 1
    if not live_per_rack:
        return []
    out = []
    for i, p in enumerate(spec.partitions):
        k = len(p.replicas)
        optima = rack_optima(k, live_per_rack)
        if not optima:
            continue
        caps = {r: max(v[r] for v in optima) for r in live_per_rack}
        level = max(optima[0].values())
        held: dict[str, int] = {}
        for r in p.replicas:
            held[spec.brokers[r].rack] = held.get(spec.brokers[r].rack, 0) + 1
        above = any(n > caps.get(rack, level) for rack, n in held.items())
        in_live = all(rack in live_per_rack for rack in held)
        uneven = in_live and {r: held.get(r, 0) for r in live_per_rack} not in optima
        if above or uneven:
            out.append(i)
    return out


# ---- before / after --------------------------------------------------------------------------
@dataclass
class PlainChanges:
    moves: int
    bytes_moved: int | None
    leader_changes: int
    reorder_only: int
    changed_rows: list[int]
    leader_changed_rows: list[int]
    rf_changed: int


def compare(before: Spec, after: Spec) -> PlainChanges:
    """Arrivals, bytes moved (arrivals x the partition's size before), leader changes, reorder-only
    partitions, by a loop over partitions matched by (topic, partition)."""
    after_by_key = {(p.topic, p.partition): p for p in after.partitions}
    sized = has_sizes(before)
    moves = bytes_moved = leader_changes = reorder = rf_changed = 0
    changed, lchanged = [], []
    for i, b in enumerate(before.partitions):
        a = after_by_key[(b.topic, b.partition)]
        arrivals = len(set(a.replicas) - set(b.replicas))
        moves += arrivals
        bytes_moved += arrivals * (b.size or 0)
        if a.replicas != b.replicas:
            changed.append(i)
            if set(a.replicas) == set(b.replicas):
                reorder += 1
        if a.replicas[:1] != b.replicas[:1]:
            leader_changes += 1
            lchanged.append(i)
        if len(a.replicas) != len(b.replicas):
            rf_changed += 1
    return PlainChanges(moves, bytes_moved if sized else None, leader_changes, reorder, changed, lchanged, rf_changed)
