"""The template strategy: lay every selected topic on rotation-order templates, matched to its partitions.

Per (topic, target RF) (or per RF alone with ``per_topic=False``), in topic order, take the next run of templates
from one shared sequence (so leaders and pairs balance across topics); bring the templates' replica counts to the
flow strategy's count targets (``balance``: a partial block, mixed RFs, uneven racks and broker weights leave them
uneven); then match each group's partitions onto its templates (fewest moves, then leader, then first-follower
changes). Placement and replica order come from the templates together.

A cluster already balanced (nothing must change, replica counts within their targets, leaders balanced) is
returned as it is: the templates would only trade moves for their own layout.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..certificate import count_targets
from ..errors import PlanningError
from ..metrics import rack_violations, replica_counts
from ..model import PAD, ClusterState
from ..resolve import rows_on_removed
from ..targets import within
from .balance import TemplateCounts, balance_templates
from .matching import DENSE_LIMIT, TOPIC_LIMIT, match
from .sequence import NoValidTemplate, TemplateSequence, broker_order


@dataclass
class TemplateResult:
    """New replica matrix, and how good the matching is: moves against the templates' own lower bound."""

    replicas: np.ndarray
    moves: int  # replica arrivals the matched templates need
    bound: int  # Σ over (topic, RF) groups and brokers of max(0, template count - current count)
    groups: int
    sparse_groups: int  # groups above the dense limit, matched over candidate pairs
    adjusted: int = 0  # template slots given to another broker to meet the count targets
    kept_input: bool = False  # the cluster was already balanced: returned unchanged

    @property
    def certified(self) -> bool:
        """True when the moves are provably the fewest any matching onto these templates can reach."""
        return self.sparse_groups == 0 or self.moves == self.bound


def place_by_templates(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray, *, per_topic: bool = True,
                       dense_limit: int = DENSE_LIMIT) -> TemplateResult:
    """Per topic by default; ``per_topic=False`` matches all selected partitions of one RF at once (any template
    for any partition: fewer moves, but per-topic leader balance is no longer built in)."""
    if already_balanced(state, target_rf, movable, per_topic):
        return TemplateResult(replicas=state.replicas.copy(), moves=0, bound=0, groups=0, sparse_groups=0,
                              kept_input=True)
    b = state.brokers
    cur = state.replica_index.astype(np.int64)
    cur = np.where((cur >= 0) & b.removed[np.maximum(cur, 0)], PAD, cur)  # removed brokers never match
    groups = _groups(state, target_rf, movable, per_topic)
    tmpls = _take_templates(state, target_rf, groups, per_topic)
    curs = [cur[rows] for rows in groups]
    adjusted = _balance_counts(state, target_rf, movable, tmpls, curs)
    width = max(int(target_rf.max(initial=1)), state.replicas.shape[1])
    new = np.full((state.num_partitions, width), PAD, dtype=np.int32)
    new[:, : state.replicas.shape[1]] = state.replicas
    moves = bound = sparse = 0
    for rows, tmpl, c in zip(groups, tmpls, curs):
        k = tmpl.shape[1]
        pick, exact = match(c, tmpl, dense_limit=dense_limit)
        chosen = tmpl[pick]
        held = (c[:, :, None] == chosen[:, None, :]).any(axis=1).sum(axis=1)
        moves += int((k - held).sum())
        bound += _arrivals_bound(c, chosen, len(b))
        sparse += not exact
        new[rows] = PAD
        new[rows, :k] = b.ids[chosen]
    return TemplateResult(replicas=new, moves=moves, bound=bound, groups=len(groups), sparse_groups=sparse,
                          adjusted=adjusted)


def already_balanced(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray, per_topic: bool) -> bool:
    """Nothing must change (RF, removed brokers, rack rule), every broker's replica count is within the flow
    strategy's count targets (its weighted share, within its rack when the rack rule fixes every rack's total).
    Such a cluster keeps its replica sets: the templates could only move data for the sake of their own layout
    (uneven leaders and pairs are then reordered by the chain's leader and follower stages, moving nothing).
    ``per_topic`` is accepted for the caller's symmetry; replica counts per topic are not a target here."""
    if not np.array_equal(np.asarray(target_rf), state.rf) or rows_on_removed(state).any():
        return False
    if len(rack_violations(state)):
        return False
    b = state.brokers
    targets = count_targets(state, target_rf, movable, False)
    return within(replica_counts(state), targets.lo, targets.hi, b.live)


def _groups(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray, per_topic: bool) -> list[np.ndarray]:
    """Rows of each matching group: (topic, target RF) in topic order, or RF alone; partition order inside."""
    rows_all = np.flatnonzero(movable)
    width = max(int(target_rf.max(initial=1)), state.replicas.shape[1])
    topic_key = state.topic[rows_all].astype(np.int64) if per_topic else np.zeros(len(rows_all), dtype=np.int64)
    key = topic_key * (width + 1) + target_rf[rows_all]
    order = np.argsort(key, kind="stable")
    rows_sorted, key_sorted = rows_all[order], key[order]
    cuts = np.flatnonzero(np.diff(key_sorted)) + 1
    return [rows for rows in np.split(rows_sorted, cuts) if len(rows)]


def _take_templates(state: ClusterState, target_rf: np.ndarray, groups: list[np.ndarray],
                    per_topic: bool) -> list[np.ndarray]:
    """Each group's run of the shared sequence (broker indices [rows, RF]), in group order."""
    b = state.brokers
    racks = b.has_racks
    seq = TemplateSequence(broker_order(b, racks), b.rack if racks else None)
    out = []
    for rows in groups:
        k = int(target_rf[rows[0]])
        if len(rows) > TOPIC_LIMIT:
            what = (f"topic {state.topics[state.topic[rows[0]]]} has" if per_topic else
                    f"the cluster-wide matching (per-topic balance off) of RF {k} has")
            raise PlanningError(
                f"{what} {len(rows):,} partitions; the template strategy matches groups of up to {TOPIC_LIMIT:,} "
                f"partitions (use the flow strategy)")
        try:
            out.append(seq.take(k, len(rows)))
        except NoValidTemplate:
            raise PlanningError(
                f"the template strategy found too few rack-valid templates for RF {k} on these racks "
                f"({_rack_sizes(b)} live brokers per rack); use the flow strategy") from None
    return out


def _balance_counts(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray, tmpls: list[np.ndarray],
                    curs: list[np.ndarray]) -> int:
    """Give template slots to other brokers until every live broker's count meets the flow strategy's targets."""
    b = state.brokers
    targets = count_targets(state, target_rf, movable, False)
    fixed_rows = state.replica_index[~movable]
    fixed = np.bincount(fixed_rows[fixed_rows >= 0], minlength=len(b)).astype(np.int64)
    tc = TemplateCounts(tmpls, curs, fixed, targets.lo, targets.hi, b, targets.within_racks)
    changed = balance_templates(tc)
    if b.has_racks and not tc.settled():  # the rack rule keeps some rack from its share: even out within racks
        tc.retarget_within_racks()
        changed += balance_templates(tc)
    return changed


def _arrivals_bound(cur: np.ndarray, tmpl: np.ndarray, n: int) -> int:
    """Replicas that must arrive whatever the matching: per broker, template count above current count."""
    have = np.bincount(cur[cur >= 0], minlength=n)
    need = np.bincount(tmpl.reshape(-1), minlength=n)
    return int(np.maximum(need - have, 0).sum())


def _rack_sizes(b) -> str:
    """Live brokers per rack, e.g. "a: 4, b: 1", for messages."""
    ids, n = np.unique(b.rack[b.live], return_counts=True)
    return ", ".join(f"{b.rack_names[i]}: {c}" for i, c in zip(ids.tolist(), n.tolist()))
