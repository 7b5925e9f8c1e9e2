"""The template strategy: lay every selected topic on rotation-order templates, matched to its partitions.

Per (topic, target RF) (or per RF alone with ``per_topic=False``), in topic order, take the next run of templates from one shared sequence (so leaders
and pairs balance across topics), then match the topic's partitions onto them (fewest moves, then leader,
then first-follower changes). Placement and replica order come from the templates together.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import PlanningError
from ..model import PAD, ClusterState
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

    @property
    def certified(self) -> bool:
        """True when the moves are provably the fewest any matching onto these templates can reach."""
        return self.sparse_groups == 0 or self.moves == self.bound


def place_by_templates(state: ClusterState, target_rf: np.ndarray, movable: np.ndarray, *, per_topic: bool = True,
                       dense_limit: int = DENSE_LIMIT) -> TemplateResult:
    """Per topic by default; ``per_topic=False`` matches all selected partitions of one RF at once (any template
    for any partition: fewer moves, but per-topic leader balance is no longer built in)."""
    b = state.brokers
    N = len(b)
    racks = b.has_racks
    seq = TemplateSequence(broker_order(b, racks), b.rack if racks else None)
    cur = state.replica_index.astype(np.int64)
    cur = np.where((cur >= 0) & b.removed[np.maximum(cur, 0)], PAD, cur)  # removed brokers never match
    width = max(int(target_rf.max(initial=1)), state.replicas.shape[1])
    new = np.full((state.num_partitions, width), PAD, dtype=np.int32)
    new[:, : state.replicas.shape[1]] = state.replicas
    moves = bound = groups = sparse = 0
    rows_all = np.flatnonzero(movable)
    # groups in topic order, then RF; rows inside a group stay in partition order
    topic_key = state.topic[rows_all].astype(np.int64) if per_topic else np.zeros(len(rows_all), dtype=np.int64)
    key = topic_key * (width + 1) + target_rf[rows_all]
    order = np.argsort(key, kind="stable")
    rows_sorted, key_sorted = rows_all[order], key[order]
    cuts = np.flatnonzero(np.diff(key_sorted)) + 1
    for rows in np.split(rows_sorted, cuts):
        if not len(rows):
            continue
        k = int(target_rf[rows[0]])
        if len(rows) > TOPIC_LIMIT:
            what = (f"topic {state.topics[state.topic[rows[0]]]} has" if per_topic else
                    f"the cluster-wide matching (per-topic balance off) of RF {k} has")
            raise PlanningError(
                f"{what} {len(rows):,} partitions; the template strategy matches groups of up to {TOPIC_LIMIT:,} "
                f"partitions (use the flow strategy)")
        try:
            tmpl = seq.take(k, len(rows))
        except NoValidTemplate:
            raise PlanningError(
                f"the template strategy found too few rack-valid templates for RF {k} on these racks "
                f"({_rack_sizes(b)} live brokers per rack); use the flow strategy") from None
        c = cur[rows]
        pick, exact = match(c, tmpl, dense_limit=dense_limit)
        chosen = tmpl[pick]
        held = (c[:, :, None] == chosen[:, None, :]).any(axis=1).sum(axis=1)
        moves += int((k - held).sum())
        bound += _arrivals_bound(c, chosen, N)
        groups += 1
        sparse += not exact
        new[rows] = PAD
        new[rows, :k] = b.ids[chosen]
    return TemplateResult(replicas=new, moves=moves, bound=bound, groups=groups, sparse_groups=sparse)


def _arrivals_bound(cur: np.ndarray, tmpl: np.ndarray, n: int) -> int:
    """Replicas that must arrive whatever the matching: per broker, template count above current count."""
    have = np.bincount(cur[cur >= 0], minlength=n)
    need = np.bincount(tmpl.reshape(-1), minlength=n)
    return int(np.maximum(need - have, 0).sum())


def _rack_sizes(b) -> str:
    """Live brokers per rack, e.g. "a: 4, b: 1", for messages."""
    ids, n = np.unique(b.rack[b.live], return_counts=True)
    return ", ".join(f"{b.rack_names[i]}: {c}" for i, c in zip(ids.tolist(), n.tolist()))
