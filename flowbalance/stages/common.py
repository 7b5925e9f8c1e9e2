"""Helpers the stages share: live-broker positions, membership matrices, and soft-interval penalties."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import PAD, Brokers, ClusterState

# Min-cost flow costs are int64 and OR-Tools scales them by the node count; keep every cost times the
# node count below this bound.
COST_BOUND = 2**60


def live_positions(live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indices of live brokers, map from broker index to live position or -1)."""
    live_idx = np.flatnonzero(live)
    pos = np.full(len(live), -1, dtype=np.int64)
    pos[live_idx] = np.arange(len(live_idx))
    return live_idx, pos


def membership(idx: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """member[i, j] = True when row i of the broker-index matrix ``idx`` holds the broker at live position j."""
    rows = idx.shape[0]
    member = np.zeros((rows, width), dtype=bool)
    for j in range(idx.shape[1]):
        col = idx[:, j]
        ok = col != PAD
        lp = np.where(ok, pos[np.maximum(col, 0)], -1)
        ok &= lp >= 0
        member[np.flatnonzero(ok), lp[ok]] = True
    return member


def penalties(move_cost: int, units: int, num_nodes: int, levels: int) -> list[int]:
    """Penalty per violated unit for each priority level, each above everything the lower levels can add.

    Level 0 outranks ``units`` moves; each further level outranks ``units`` units of the level below, as far as
    the int64 cost range allows (then each level is at least 4x the one below it).
    """
    out = []
    base = move_cost * (units + 1)
    for _ in range(levels):
        out.append(base)
        factor = units + 1
        while factor > 4 and base * factor * (num_nodes + 1) * 4 > COST_BOUND:
            factor //= 2
        base = base * max(factor, 4)
    return out


def apply_changes(replicas: np.ndarray, removed: dict[int, list[int]], added: dict[int, list[int]]) -> np.ndarray:
    """New lists: kept replicas stay in place, an added broker takes a removed one's slot (in id order), extras are
    appended and surplus slots dropped. ``removed`` / ``added`` map a row to broker ids."""
    rows = sorted(set(removed) | set(added))
    width = replicas.shape[1]
    for r in rows:
        width = max(width, int((replicas[r] != PAD).sum()) - len(removed.get(r, ())) + len(added.get(r, ())))
    out = np.full((replicas.shape[0], width), PAD, dtype=np.int32)
    out[:, : replicas.shape[1]] = replicas
    for r in rows:
        gone = set(removed.get(r, ()))
        new = sorted(added.get(r, ()))
        lst = []
        for x in (int(v) for v in replicas[r] if v != PAD):
            if x not in gone:
                lst.append(x)
            elif new:
                lst.append(new.pop(0))
        lst.extend(new)
        out[r] = PAD
        out[r, : len(lst)] = lst
    return out


@dataclass
class StageInput:
    """What every stage reads first: brokers, live positions, broker-index matrix, movable rows."""

    b: Brokers
    N: int
    live_idx: np.ndarray
    lpos: np.ndarray
    NL: int
    idx: np.ndarray
    mov: np.ndarray
    Pm: int

    @staticmethod
    def of(state: ClusterState, movable: np.ndarray) -> "StageInput":
        b = state.brokers
        live_idx, lpos = live_positions(b.live)
        mov = np.flatnonzero(movable)
        return StageInput(b=b, N=len(b), live_idx=live_idx, lpos=lpos, NL=len(live_idx), idx=state.replica_index,
                          mov=mov, Pm=len(mov))


def share_intervals(totals: np.ndarray, weight_live: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group (e.g. topic) and live broker: [floor, ceil] of the group's total times the broker's weight share,
    flattened group-major."""
    q = np.asarray(totals)[:, None] * (weight_live / weight_live.sum())[None, :]
    return np.floor(q + 1e-9).astype(np.int64).ravel(), np.ceil(q - 1e-9).astype(np.int64).ravel()
