"""What stage 1 balances to, shared by its networks (pooled, split): the broker and (topic, broker) intervals,
the racks, and the live replicas of the partitions that may move.

Fixed (not movable) partitions count toward every broker's total, so the broker intervals are returned less
their load; a broker whose fixed load is above its share is held at it and the others share the rest
(``targets.load_intervals``). When the rack rule fixes every rack's total, the targets are shares within each rack and the lower
bound is recomputed for them (``rack_forced_intervals``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..controls import closed_caps, topic_caps
from ..model import ClusterState
from ..targets import capped_share_intervals, intervals, load_intervals, min_arrivals
from .common import StageInput, rack_forced_intervals, share_intervals, widen


@dataclass
class StageTargets:
    """Intervals and indices for one stage-1 solve; arrays over live positions unless named otherwise."""

    si: StageInput
    trf: np.ndarray  # target RF per partition (all rows)
    kp: np.ndarray  # target RF per movable partition
    fixed_c: np.ndarray  # replicas of fixed partitions per broker (all brokers)
    total: int
    lo: np.ndarray  # broker intervals (all brokers), fixed load included
    hi: np.ndarray
    use_racks: bool
    rack_of_live: np.ndarray  # rack position of each live broker (0 without racks)
    K: int  # racks (1 without)
    forced: bool  # the rack rule fixes every rack's total
    tpos: np.ndarray  # topic position of each movable partition (0 for all without per-topic targets)
    Tm: int  # topics (1 without per-topic targets)
    tcount: np.ndarray  # movable partitions per topic position
    tlo: np.ndarray | None  # (topic, live broker) intervals, topic-major; None without per-topic targets
    thi: np.ndarray | None
    c_tb: np.ndarray | None  # current live replicas per (topic, live broker)
    sub: np.ndarray  # broker index of each movable partition's replicas
    kr: np.ndarray  # the live replicas of movable partitions: row in ``sub`` ...
    kc: np.ndarray  # ... column ...
    kb: np.ndarray  # ... and live position
    lower_bound: int | None

    @property
    def per_topic(self) -> bool:
        return self.tlo is not None


def stage_targets(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray, *, per_topic: bool, racks: bool,
                  count_targets: bool, topic_slack: int, lower_bound: int | None,
                  achieved: ClusterState | None = None) -> StageTargets:
    """The targets of one stage-1 solve (see ``balance_pooled`` for the parameters)."""
    si = StageInput.of(state, movable)
    b, N, live_idx, lpos, NL, idx, mov, Pm = si.b, si.N, si.live_idx, si.lpos, si.NL, si.idx, si.mov, si.Pm
    live = b.live
    trf = np.asarray(target_rf, dtype=np.int64)
    fidx = idx[~movable]
    fixed_c = np.bincount(fidx[fidx >= 0], minlength=N).astype(np.int64)
    total = int(trf.sum())
    cap = closed_caps(state)  # brokers closed to new replicas: at most what they hold (controls.py)
    # fixed load is a floor: a broker holding more of it than its share is held there, the others share the rest
    lo, hi = load_intervals(total, b.weight, live, cap, fixed_c)
    floors_bind = bool((hi != intervals(total, b.weight, live)[1]).any()) if cap is None else False
    if not count_targets:
        lo, hi = np.zeros_like(lo), np.where(live, total, 0)
    use_racks = racks and b.has_racks
    rack_live = b.rack[live_idx] if use_racks else np.zeros(NL, dtype=np.int64)
    _, rack_of_live = np.unique(rack_live, return_inverse=True)
    K = int(rack_of_live.max()) + 1 if (use_racks and NL) else 1
    topics_m, tpos_of = (np.unique(state.topic[mov], return_inverse=True) if Pm
                         else (np.zeros(0, np.int64), np.zeros(0, np.int64)))
    per_topic = per_topic and Pm > 0
    Tm = len(topics_m) if per_topic else 1
    tpos = tpos_of if per_topic else np.zeros(Pm, dtype=np.int64)
    kp = trf[mov]
    sub = idx[mov]
    kr, kc = np.nonzero(sub >= 0)
    kb = lpos[sub[kr, kc]]
    ok = kb >= 0
    kr, kc, kb = kr[ok], kc[ok], kb[ok]
    tcount = np.bincount(tpos, minlength=Tm).astype(np.int64)
    tlo = thi = c_tb = tcap = None
    if per_topic:
        rt = np.bincount(tpos, weights=kp, minlength=Tm).astype(np.int64)
        c_tb = np.bincount(tpos[kr] * NL + kb, minlength=Tm * NL)
        tcap = topic_caps(state, live_idx, c_tb)
        tlo, thi = _capped(widen(*capped_share_intervals(rt, b.weight[live_idx], tcap), topic_slack), tcap)
    forced = (rack_forced_intervals(b, live_idx, rack_of_live, K, kp, fixed_c, tpos if per_topic else None, Tm,
                                    cap, tcap) if (use_racks and count_targets) else None)
    if forced is not None:
        lo, hi = forced[0], forced[1]
        if per_topic:
            tlo, thi = _capped(widen(forced[2], forced[3], topic_slack), tcap)
        # the lower bounds for these targets (M* and the per-topic sum, as in targets.min_arrivals)
        c_all = np.bincount(idx[idx >= 0], minlength=N)
        lower_bound = min_arrivals(c_all, total, lo, hi, live)
        if per_topic:
            clip = np.clip(c_tb, tlo, thi)
            short = rt - np.bincount(np.repeat(np.arange(Tm), NL), weights=clip, minlength=Tm)
            lower_bound = max(lower_bound, int(np.maximum(clip - c_tb, 0).sum() + np.maximum(short, 0).sum()))
    if (cap is not None or floors_bind) and lower_bound is not None and forced is None:
        # the caller's bound is for the uncapped, unfloored targets: the broker totals' bound for these (a valid
        # bound whether per-topic targets are hard or graded; a pruned attempt is kept only when it reaches it)
        lower_bound = min_arrivals(np.bincount(idx[idx >= 0], minlength=N), total, lo, hi, live)
    if achieved is not None:
        # hard intervals widened to an earlier plan's counts: that plan is feasible, and any plan found is at
        # least as balanced at every broker and (topic, broker)
        aidx = achieved.replica_index
        c_new = np.bincount(aidx[aidx >= 0], minlength=N).astype(np.int64)
        lo, hi = np.minimum(lo, c_new), np.maximum(hi, c_new)
        if per_topic:
            asub = aidx[mov]
            ar, ac = np.nonzero(asub >= 0)
            c_after = np.bincount(tpos[ar] * NL + lpos[asub[ar, ac]], minlength=Tm * NL)
            tlo, thi = np.minimum(tlo, c_after), np.maximum(thi, c_after)
    return StageTargets(si=si, trf=trf, kp=kp, fixed_c=fixed_c, total=total, lo=lo, hi=hi, use_racks=use_racks,
                        rack_of_live=rack_of_live, K=K, forced=forced is not None, tpos=tpos, Tm=Tm, tcount=tcount,
                        tlo=tlo, thi=thi, c_tb=c_tb, sub=sub, kr=kr, kc=kc, kb=kb, lower_bound=lower_bound)


def _capped(bounds: tuple[np.ndarray, np.ndarray], tcap: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Per-topic intervals (flattened) no higher than the closed brokers' ceilings (a slack never lifts them)."""
    lo, hi = bounds
    if tcap is None:
        return lo, hi
    cap = tcap.ravel()
    hi = np.where(cap >= 0, np.minimum(hi, cap), hi)
    return np.minimum(lo, hi), hi
