"""The per-topic level of the certificate: the worst per-topic spread a plan leaves, a lower bound on it, and
what strict per-topic balance (every topic within ±1 of its share) would cost in moves.

The default (``per_topic_mode="spread"``) ranks per-topic balance below the number of moves: the plan has the
fewest moves for count balance and, among those, the most even topics the planner finds. Its certificate says how
far that is from the best any plan could do, and what the other choice (strict) costs, so an operator can decide:

    per-topic spread 3 (no plan can go below 1); strict ±1 per topic needs at least 332,924 moves, 14.3× these

* **spread**: ``metrics.topic_spread`` of the plan, the number every command prints as "per-topic spread".
* **floor**: a lower bound on that spread for every plan, whatever its moves: per topic, the least spread of any
  integer placement of its replicas over the live brokers (exact without broker weights: 0 when the topic's
  replicas divide evenly, else 1; with weights, the shares' fractional parts must fit in a window of that width).
* **strict moves**: the closed-form bound of the strict targets (``certificate.count_targets`` with per-topic on:
  the fewest arrivals that bring every broker and every topic within its interval). No plan meeting strict
  per-topic balance moves fewer replicas; a strict plan may need more (the rack rule, removals).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .metrics import TopicSpread
from .model import ClusterState

MODES = ("strict", "spread", "off")


@dataclass(frozen=True)
class TopicLevel:
    """Per-topic balance in a certificate (see the module docstring)."""

    mode: str  # "strict": a target of the moves verdict; "spread": ranked after the moves; "off"
    spread: float  # the plan's worst per-topic spread
    worst_topic: str | None
    floor: float  # no plan leaves a smaller worst per-topic spread
    strict_met: bool  # every topic within its strict interval
    strict_moves: int | None  # fewest moves of any plan meeting strict per-topic balance (lower bound); None: off

    def text(self, moves: int) -> str:
        """One line for the summary; the same words in every command."""
        value = f"per-topic spread {_num(self.spread)}"
        if self.mode == "off":
            return f"{value} (per-topic balance off)"
        if self.strict_met:
            return f"{value}: every topic within ±1 of its share"
        floor = f"no plan can go below {_num(self.floor)}"
        if self.mode == "strict" or self.strict_moves is None:
            return f"{value} ({floor})"
        ratio = f", {self.strict_moves / moves:.1f}× these" if moves > 0 else ""
        return f"{value} ({floor}); strict ±1 per topic needs at least {self.strict_moves:,} moves{ratio}"


def topic_level(state: ClusterState, after: ClusterState, target_rf: np.ndarray, mode: str, spread: TopicSpread,
                strict_missed: bool, strict_moves: int | None) -> TopicLevel:
    """The per-topic level of the plan ``state`` → ``after``; ``spread`` is ``after``'s measured per-topic spread,
    ``strict_missed`` whether it misses a topic's strict interval, ``strict_moves`` the strict targets' bound."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return TopicLevel(mode=mode, spread=float(spread.spread), worst_topic=spread.worst_topic,
                      floor=spread_floor(state, target_rf), strict_met=not strict_missed,
                      strict_moves=strict_moves if mode != "off" else None)


def spread_floor(state: ClusterState, target_rf: np.ndarray) -> float:
    """A lower bound on the worst per-topic spread of any plan with these target RFs (see the module docstring)."""
    b = state.brokers
    w = b.weight[b.live].astype(float)
    if len(w) == 0 or len(state.topics) == 0:
        return 0.0
    totals = np.bincount(state.topic, weights=np.asarray(target_rf, dtype=float), minlength=len(state.topics))
    totals = np.rint(totals).astype(np.int64)
    if np.allclose(w, w[0]):
        return float((totals % len(w) != 0).any())
    return _weighted_floor(totals, w / w.sum())


def _weighted_floor(totals: np.ndarray, share: np.ndarray, chunk: int = 2_000_000) -> float:
    """Per topic, the deviations ``count - total × share`` of any integer placement have fixed fractional parts;
    they all lie in a window of the spread's width, so the spread is at least 1 minus the widest gap between
    consecutive fractional parts on the unit circle. The largest over the topics, rounded down to 1e-9."""
    best = 0.0
    per = max(1, chunk // len(share))
    for start in range(0, len(totals), per):
        q = totals[start:start + per, None] * share[None, :]
        frac = np.sort(np.mod(-q, 1.0), axis=1)
        gaps = np.diff(frac, axis=1, append=frac[:, :1] + 1.0)
        best = max(best, float((1.0 - gaps.max(axis=1)).max()))
    return float(np.floor(max(best, 0.0) * 1e9) / 1e9)


def _num(x: float) -> str:
    return f"{x:g}" if x != int(x) else str(int(x))
