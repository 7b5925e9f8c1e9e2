"""Brute-force oracles for the planner on tiny clusters, written with plain Python (no flowbalance imports)."""
from __future__ import annotations

import itertools
from fractions import Fraction


def intervals(total: int, brokers: list[int]) -> dict[int, tuple[int, int]]:
    """Equal weights: each live broker in [floor, ceil] of total / N."""
    n = len(brokers)
    share = Fraction(total, n)
    lo = share.numerator // share.denominator
    hi = lo if share.denominator == 1 else lo + 1
    return {b: (lo, hi) for b in brokers}


def valid_sets(live: list[int], k: int, rack: dict[int, str] | None) -> list[frozenset]:
    out = []
    nracks = len({rack[b] for b in live}) if rack else 0
    for combo in itertools.combinations(live, k):
        if rack and k <= nracks and len({rack[b] for b in combo}) < k:
            continue
        out.append(frozenset(combo))
    return out


def min_moves(live: list[int], parts: list[tuple[str, list[int]]], target_rf: list[int],
              rack: dict[int, str] | None, per_topic: bool) -> int | None:
    """Fewest arrivals over every assignment meeting the hard rules and every balance interval (None if none)."""
    best = min_moves_then_bytes(live, parts, target_rf, rack, per_topic, [0] * len(parts))
    return None if best is None else best[0]


def min_moves_then_bytes(live: list[int], parts: list[tuple[str, list[int]]], target_rf: list[int],
                         rack: dict[int, str] | None, per_topic: bool, sizes: list[int]) -> tuple[int, int] | None:
    """(fewest arrivals, then the fewest bytes they copy) over every assignment meeting the hard rules and every
    balance interval (None if none); an arrival of partition i copies sizes[i] bytes."""
    choices = [valid_sets(live, k, rack) for k in target_rf]
    total = sum(target_rf)
    bounds = intervals(total, live)
    topics = sorted({t for t, _ in parts})
    tb = {t: intervals(sum(k for (tt, _), k in zip(parts, target_rf) if tt == t), live) for t in topics}
    best = None
    for combo in itertools.product(*choices):
        counts = {b: 0 for b in live}
        for s in combo:
            for x in s:
                counts[x] += 1
        if any(not (bounds[b][0] <= counts[b] <= bounds[b][1]) for b in live):
            continue
        if per_topic:
            ok = True
            for t in topics:
                tc = {b: 0 for b in live}
                for (tt, _), s in zip(parts, combo):
                    if tt == t:
                        for x in s:
                            tc[x] += 1
                if any(not (tb[t][b][0] <= tc[b] <= tb[t][b][1]) for b in live):
                    ok = False
                    break
            if not ok:
                continue
        moves = sum(len(s - set(old)) for s, (_, old) in zip(combo, parts))
        nbytes = sum(len(s - set(old)) * z for s, (_, old), z in zip(combo, parts, sizes))
        if best is None or (moves, nbytes) < best:
            best = (moves, nbytes)
    return best


def leaders_balanceable(live: list[int], sets: list[list[int]]) -> bool:
    """Is there a choice of one leader per partition (from its replicas) with leader counts in [floor, ceil]?"""
    bounds = intervals(len(sets), live)
    for pick in itertools.product(*sets):
        counts = {b: 0 for b in live}
        for x in pick:
            counts[x] += 1
        if all(bounds[b][0] <= counts[b] <= bounds[b][1] for b in live):
            return True
    return False
