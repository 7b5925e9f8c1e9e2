"""The operator's report of a cluster, or of a plan (before → after), as plain data.

One dict feeds the terminal view (rich), ``--json`` (schema in docs/report.schema.json) and the HTML page:
per broker before → after, leader distribution under each single-broker and each rack failure, the moves with
their lower bound, and warnings an operator should see before executing anything.
"""
from __future__ import annotations

import numpy as np

from .dirs import dirs_summary
from .disk_warning import disk_worse_warning

from .certificate import Certificate, certificate_fields, certify
from .metrics import StateMetrics, compare, measure
from .model import ClusterState
from .report_moves import leader_pairs, transfers
from .summary import num, partition_name

BIG_PARTITION_FACTOR = 10  # a partition above 10x the median size (and above 1 GiB) is "very large"
BIG_PARTITION_MIN = 1 << 30
MAX_LISTED = 20


def _failover_rows(mb: StateMetrics, ma: StateMetrics | None, rack: bool) -> dict:
    fb = mb.rack_failover if rack else mb.failover
    fa = (ma.rack_failover if rack else ma.failover) if ma is not None else None
    after = {f: (a, b, s) for f, a, b, s in zip(fa.failed, fa.min, fa.max, fa.spread)} if fa is not None else {}
    rows = []
    for f, a, b, s in zip(fb.failed, fb.min, fb.max, fb.spread):
        row = {"failed": f, "before": {"min": int(a), "max": int(b), "spread": num(float(s))}, "after": None}
        if f in after:
            a2, b2, s2 = after[f]
            row["after"] = {"min": int(a2), "max": int(b2), "spread": num(float(s2))}
        rows.append(row)
    wb = fb.worst
    out = {"worst_before": {"failed": wb[0], "spread": num(wb[1])}, "worst_after": None, "table": rows}
    if fa is not None:
        wa = fa.worst
        out["worst_after"] = {"failed": wa[0], "spread": num(wa[1])}
    return out


def _per_broker(before: ClusterState, mb: StateMetrics, ma: StateMetrics | None,
                cert: Certificate | None = None, targets: tuple | None = None) -> list[dict]:
    """One row per broker; its target interval is the certificate's (within its rack when the rack rule fixes
    every rack's total) when there is a plan, else ``targets`` (what a plan would aim at,
    ``flowbalance.planner.request_targets``), else the cluster-wide share."""
    b = before.brokers
    if cert is not None:
        lo, hi = cert.targets.lo, cert.targets.hi
    elif targets is not None:
        lo, hi = targets
    else:
        lo, hi = (ma or mb).replica_lo, (ma or mb).replica_hi
    rows = []
    for i in range(len(b)):
        r = int(b.rack[i])
        cap = int(b.capacity[i])

        def pair(x_b, x_a):
            return [int(x_b[i]) if x_b is not None else None, int(x_a[i]) if x_a is not None else None]

        rows.append({
            "broker": int(b.ids[i]),
            "rack": b.rack_names[r] if r >= 0 else None,
            "removed": bool(b.removed[i]),
            "replicas": pair(mb.replicas, ma.replicas if ma else None),
            "leaders": pair(mb.leaders, ma.leaders if ma else None),
            "bytes": pair(mb.bytes, ma.bytes if ma else None),
            "target_replicas": [int(lo[i]), int(hi[i])],
            "capacity_bytes": cap if cap >= 0 else None,
        })
    return rows


def _warnings(state: ClusterState, m: StateMetrics, label: str) -> list[dict]:
    """Things to look at before executing: each with a kind, a message and the partitions or brokers concerned."""
    b = state.brokers
    out: list[dict] = []
    live = b.live
    n_live = int(live.sum())
    n_racks = len(np.unique(b.rack[live])) if b.has_racks and n_live else 0
    rf = state.rf
    over_brokers = np.flatnonzero(rf > n_live)
    if len(over_brokers):
        out.append({"kind": "rf_above_brokers", "state": label,
                    "message": f"{len(over_brokers)} partitions have RF above the {n_live} live brokers",
                    "items": [partition_name(state, int(r)) for r in over_brokers[:MAX_LISTED]]})
    if n_racks:
        over_racks = np.flatnonzero(rf > n_racks)
        if len(over_racks):
            out.append({"kind": "rack_rule_impossible", "state": label,
                        "message": f"{len(over_racks)} partitions have RF above the {n_racks} racks: some replicas "
                                   "must share a rack (the rack rule spreads them as evenly as the brokers allow)",
                        "items": [partition_name(state, int(r)) for r in over_racks[:MAX_LISTED]]})
    if len(m.rack_violations):
        out.append({"kind": "rack_violations", "state": label,
                    "message": f"{len(m.rack_violations)} partitions break the rack rule (more replicas in one "
                               "rack than an even spread over the racks needs)",
                    "items": [partition_name(state, int(r)) for r in m.rack_violations[:MAX_LISTED]]})
    if state.has_sizes:
        sz = state.size[state.size >= 0]
        med = float(np.median(sz)) if len(sz) else 0.0
        big = np.flatnonzero((state.size > BIG_PARTITION_FACTOR * med) & (state.size > BIG_PARTITION_MIN))
        if len(big):
            big = big[np.argsort(-state.size[big], kind="stable")]
            out.append({"kind": "very_large_partitions", "state": label,
                        "message": f"{len(big)} partitions are above {BIG_PARTITION_FACTOR}x the median size "
                                   "(slow to move; consider moving them alone)",
                        "items": [partition_name(state, int(r)) for r in big[:MAX_LISTED]]})
    if m.bytes is not None:
        cap = b.capacity
        over = np.flatnonzero((cap >= 0) & (m.bytes > cap))
        if len(over):
            out.append({"kind": "above_disk_capacity", "state": label,
                        "message": f"{len(over)} brokers hold more bytes than their disk capacity",
                        "items": [int(b.ids[i]) for i in over[:MAX_LISTED]]})
    return out


def _status_warnings(state: ClusterState, status) -> list[dict]:
    """Partitions a describe shows in flight, unhealthy or placed by Confluent (``flowbalance.status``)."""
    if status is None:
        return []
    out = []
    for kind, mask, message in (
        ("in_flight", status.in_flight, "being reassigned right now: Replicas shows the temporary union; a new "
                                        "plan would override the move in progress"),
        ("leaderless", status.leaderless, "without a leader (Leader: none or -1)"),
        ("offline", status.offline & ~status.leaderless, "with offline replicas"),
        ("under_replicated", status.under_replicated & ~status.offline & ~status.leaderless & ~status.in_flight,
         "under-replicated (ISR smaller than the replicas)"),
        ("placement_constrained", status.pinned_by_placement,
         "placed by Confluent placement constraints or with observers (never moved by flowbalance)"),
    ):
        rows = np.flatnonzero(mask)
        if len(rows):
            out.append({"kind": kind, "state": "before", "message": f"{len(rows)} partitions {message}",
                        "items": [partition_name(state, int(r)) for r in rows[:MAX_LISTED]]})
    return out


def _all_warnings(before, mb, after, ma) -> list[dict]:
    """Warnings of the current state, then those of the plan that are not the same warning again (and the plan's
    own: disk use made markedly less even)."""
    out = _warnings(before, mb, "before")
    if after is not None:
        seen = {(w["kind"], tuple(w["items"])) for w in out}
        out += [w for w in _warnings(after, ma, "after") if (w["kind"], tuple(w["items"])) not in seen]
        disk = disk_worse_warning(after, mb, ma)
        out += [disk] if disk is not None else []
        out += _emptied_warning(after, mb, ma)
    return out


def _emptied_warning(after: ClusterState, mb: StateMetrics, ma: StateMetrics) -> list[dict]:
    """Brokers the plan empties that the report was not told are leaving: their targets are not zero, so the
    certificate judges the plan against the wrong request (the plan was made to remove them)."""
    b = after.brokers
    gone = np.flatnonzero((mb.replicas > 0) & (ma.replicas == 0) & ~b.removed)
    if not len(gone):
        return []
    ids = [int(x) for x in b.ids[gone]]
    return [{"kind": "emptied_not_removed", "state": "after",
             "message": f"the plan empties {len(ids)} broker{'s' if len(ids) > 1 else ''} the report was not told "
                        f"{'are' if len(ids) > 1 else 'is'} leaving: certified as if they stay (targets above 0); give the plan's sidecar or name "
                        "them as removed for the plan's own verdict",
             "items": ids[:MAX_LISTED]}]


def build_report(before, after: ClusterState | None = None, *, certificate: Certificate | None = None,
                 metrics: tuple[StateMetrics, StateMetrics] | None = None, changes=None, status=None,
                 targets: tuple[np.ndarray, np.ndarray] | None = None, identity: dict | None = None) -> dict:
    """The report of a ``Plan`` (``build_report(p)``), of ``before`` alone, or of ``before`` → ``after`` (same
    partitions, same brokers): the dict ``report --json`` prints (schema: docs/report.schema.json).

    ``certificate``: the plan's (``flowbalance.certify_plan`` for a plan read from a file); without one, the
    plan is certified here as a plan of every partition with per-topic balance. ``metrics`` (before, after) and
    ``changes`` are the planner's, when it already measured them (no second pass over a large cluster).
    ``status`` (a ``flowbalance.status.ClusterStatus`` from a describe) adds its partitions in flight, unhealthy
    or placed by Confluent to the warnings. ``targets`` (lo, hi per broker) is the target column without a plan:
    what a plan would aim at (``flowbalance.planner.request_targets``); the cluster-wide share when None. ``identity``
    (``flowbalance.identity.report_identity``): which inputs and request the report describes."""
    if hasattr(before, "certificate") and hasattr(before, "after"):  # a Plan
        p = before
        return build_report(p.before, p.after, certificate=p.certificate, metrics=(p.metrics_before, p.metrics_after),
                            changes=p.changes, status=status, identity=identity)
    target_rf = after.rf if after is not None else None
    if metrics is not None:
        mb, ma = metrics
    else:
        mb = measure(before, target_rf=target_rf)
        ma = measure(after) if after is not None else None
    b = before.brokers
    c = cert = None
    if after is not None:
        c = changes if changes is not None else compare(before, after)
        cert = certificate if certificate is not None else certify(
            before, after, after.rf.astype(np.int64), np.ones(before.num_partitions, bool), True, changes=c,
            metrics_before=mb)
    rep = {
        "cluster": {
            "brokers": len(b), "live_brokers": int(b.live.sum()),
            "removed_brokers": [int(x) for x in b.ids[b.removed]],
            "racks": list(b.rack_names), "topics": len(before.topics),
            "partitions": before.num_partitions, "replicas": [before.num_replicas,
                                                              after.num_replicas if after is not None else None],
            "sizes_known": before.has_sizes,
        },
        "has_plan": after is not None,
        "per_broker": _per_broker(before, mb, ma, cert, targets),
        "spreads": {
            key: [num(f(mb)), num(f(ma)) if ma is not None else None]
            for key, f in (("replicas", lambda m: m.replica_spread), ("topics", lambda m: m.topic.spread),
                           ("leaders", lambda m: m.leader_spread), ("bytes", lambda m: m.bytes_spread),
                           ("failover", lambda m: m.failover.worst[1]),
                           ("rack_failover", lambda m: m.rack_failover.worst[1]))
        },
        "failover": _failover_rows(mb, ma, rack=False),
        "rack_failover": _failover_rows(mb, ma, rack=True) if len(mb.rack_failover.failed) else None,
        "moves": None,
        "log_dirs": [dirs_summary(before), dirs_summary(after) if after is not None else None],
        "warnings": _status_warnings(before, status) + _all_warnings(before, mb, after, ma),
    }
    if cert is not None:
        rep["moves"] = _moves(c, cert)
    return {**rep, **_review(before, after, c, rep, identity)}


def _review(before, after, c, rep: dict, identity: dict | None) -> dict:
    """The keys the review page needs beyond the tables: the plan's one verdict line (the certificate's moves
    verdict, as every view prints it), the identity, what moves where, and the (leader, first follower) pairs."""
    plan = rep["moves"] is not None
    return {"verdict": rep["moves"]["verdict"] if plan else None, "identity": identity,
            "transfers": transfers(before, after, c.changed_rows) if plan else None,
            "leader_pairs": leader_pairs(before, after, rep["failover"])}


def _moves(c, cert: Certificate) -> dict:
    """The report's ``moves``: what changes, and the certificate's verdict (the same keys as ``plan --json``)."""
    f = certificate_fields(cert)
    return {
        "replica_moves": c.moves,
        **{k: f[k] for k in ("min_moves", "lower_bound", "bound_for", "bound_by_flow", "closed_form_bound",
                             "targets_met", "proven_optimal", "optimality", "verdict", "per_topic",
                             "failover")},
        "bytes_to_move": c.bytes_moved,
        "leader_changes": c.leader_changes,
        "changed_partitions": int(len(c.changed_rows)),
        "reorder_only_partitions": c.reorder_only,
        "rf_changed_partitions": c.rf_changed,
    }
