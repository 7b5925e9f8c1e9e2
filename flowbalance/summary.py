"""Plain-data views of metrics (dicts and lists) for JSON output and for the terminal renderers."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .certificate import certificate_fields
from .metrics import StateMetrics, spread, topic_spread
from .model import ClusterState
from .targets import intervals


@dataclass(frozen=True)
class Thresholds:
    """What ``check`` calls balanced. Spreads are max - min per broker (relative to each broker's share when weighted)."""

    replica_spread: int = 1
    topic_spread: int | None = 1  # None: per-topic balance not checked
    leader_spread: int = 1
    failover_spread: int | None = None  # None: not checked


def _meets(counts: np.ndarray, total: int, state: ClusterState, limit: int) -> bool:
    """Equal weights: spread <= limit. Weights: each live broker within its interval widened by limit - 1."""
    b = state.brokers
    live = b.live
    if not b.weighted:
        return spread(counts, b.weight, live) <= limit + 1e-9
    lo, hi = intervals(total, b.weight, live)
    slack = limit - 1
    c = counts[live]
    return bool(np.all((c >= lo[live] - slack) & (c <= hi[live] + slack)))


def evaluate(state: ClusterState, m: StateMetrics, th: Thresholds) -> dict[str, bool]:
    """Each check's pass/fail; the cluster is balanced when all pass."""
    checks = {
        "replicas": _meets(m.replicas, m.num_replicas, state, th.replica_spread),
        "leaders": _meets(m.leaders, m.num_partitions, state, th.leader_spread),
        "racks": len(m.rack_violations) == 0,
        "removed_brokers_empty": m.replicas_on_removed == 0,
    }
    if th.topic_spread is not None:
        if state.brokers.weighted:
            checks["topics"] = topic_spread(state, slack=th.topic_spread - 1).unbalanced_topics == 0
        else:
            checks["topics"] = m.topic.spread <= th.topic_spread + 1e-9
    if th.failover_spread is not None:
        checks["failover"] = m.failover.worst[1] <= th.failover_spread + 1e-9
    return checks


def format_bytes(n: int | None) -> str:
    """1536 -> "1.5 KiB" (binary units, one decimal); None -> "-"."""
    if n is None:
        return "-"
    x = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(x) < 1024 or unit == "PiB":
            return f"{x:.0f} {unit}" if unit == "B" else f"{x:.1f} {unit}"
        x /= 1024
    return str(n)


def num(x):
    """A number as plain JSON: integral floats as int, numpy scalars as Python ones, None kept."""
    if x is None:
        return None
    if isinstance(x, (float, np.floating)) and float(x).is_integer():
        return int(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    return float(x) if isinstance(x, np.floating) else x


def partition_name(state: ClusterState, row: int) -> str:
    return f"{state.topics[state.topic[row]]}-{int(state.partition[row])}"


def metrics_dict(state: ClusterState, m: StateMetrics, *, max_listed: int = 20) -> dict:
    """Every metric of one state as JSON-ready data (the schema is documented in docs/formats.md)."""
    b = state.brokers
    rack_names = [b.rack_names[r] if r >= 0 else None for r in b.rack]
    per_broker = []
    for i in range(len(b)):
        row = {
            "broker": int(b.ids[i]),
            "rack": rack_names[i],
            "removed": bool(b.removed[i]),
            "weight": num(float(b.weight[i])),
            "replicas": int(m.replicas[i]),
            "target_min": int(m.replica_lo[i]),
            "target_max": int(m.replica_hi[i]),
            "leaders": int(m.leaders[i]),
            "bytes": int(m.bytes[i]) if m.bytes is not None else None,
            "capacity_bytes": int(b.capacity[i]) if b.capacity[i] >= 0 else None,
        }
        per_broker.append(row)
    worst_f, worst_fs = m.failover.worst
    worst_r, worst_rs = m.rack_failover.worst
    viol = m.rack_violations
    from .dirs import dirs_summary

    return {
        "log_dirs": dirs_summary(state),
        "cluster": {
            "brokers": len(b),
            "live_brokers": int(b.live.sum()),
            "removed_brokers": [int(x) for x in b.ids[b.removed]],
            "racks": list(b.rack_names),
            "topics": len(state.topics),
            "partitions": m.num_partitions,
            "replicas": m.num_replicas,
            "sizes_known": m.bytes is not None,
        },
        "replicas": {
            "spread": num(m.replica_spread),
            "min": int(m.replicas[b.live].min()) if b.live.any() else 0,
            "max": int(m.replicas[b.live].max()) if b.live.any() else 0,
            "on_removed_brokers": m.replicas_on_removed,
        },
        "topics": {
            "worst_spread": num(m.topic.spread),
            "worst_topic": m.topic.worst_topic,
            "unbalanced_topics": m.topic.unbalanced_topics,
        },
        "leaders": {
            "spread": num(m.leader_spread),
            "min": int(m.leaders[b.live].min()) if b.live.any() else 0,
            "max": int(m.leaders[b.live].max()) if b.live.any() else 0,
        },
        "bytes": None if m.bytes is None else {
            "spread": num(m.bytes_spread),
            "total": int(m.bytes.sum()),
            "max_over_mean": num(round(float(m.bytes[b.live].max() / max(m.bytes[b.live].mean(), 1)), 4)),
        },
        "failover": {
            "worst_broker": worst_f,
            "worst_spread": num(worst_fs),
            "table": [{k: num(v) for k, v in r.items()} for r in m.failover.rows()],
        },
        "rack_failover": {
            "worst_rack": worst_r,
            "worst_spread": num(worst_rs),
            "table": [{k: num(v) for k, v in r.items()} for r in m.rack_failover.rows()],
        },
        "rack_violations": {
            "count": int(len(viol)),
            "partitions": [partition_name(state, int(r)) for r in viol[:max_listed]],
        },
        "min_moves": m.min_moves,
        "per_broker": per_broker,
    }


def _dirs_fields(p) -> dict | None:
    """The plan's log directories (JBOD): intra-broker moves and bytes against their lower bound, the worst spread
    within a broker before and after; None when the directories are not known."""
    from .dirs import dirs_summary, spread_floor

    m = p.dir_moves
    if m is None:
        return None
    from .dir_balance import emptied_dirs

    gone = emptied_dirs(p.after.dirs, p.request.remove_log_dirs) if p.request.remove_log_dirs else None
    before, after = dirs_summary(p.before), dirs_summary(p.after, gone)
    return {
        "balance": bool(p.request.balance_dirs),
        "tolerance": float(p.request.dir_tolerance) if p.request.balance_dirs else None,
        "removed_dirs": list(p.request.remove_log_dirs),
        "intra_broker_moves": len(m),
        "bytes_moved": m.bytes_moved,
        "bytes_lower_bound": m.lower_bound_bytes,
        "within_limits": m.within_limits,
        "worst_spread_bytes": [before["worst_spread_bytes"] if before else None,
                               after["worst_spread_bytes"] if after else None],
        "worst_max_over_mean": [before["worst_max_over_mean"] if before else None,
                                after["worst_max_over_mean"] if after else None],
        "spread_lower_bound_bytes": spread_floor(p.after),
    }


def plan_summary(p) -> dict:
    """The short summary of a Plan (``flowbalance plan`` prints it; ``--json`` gives it whole)."""
    mb, ma, c, cert = p.metrics_before, p.metrics_after, p.changes, p.certificate
    fb, fa = mb.failover.worst, ma.failover.worst
    return {
        "empty": p.is_empty,
        "skipped_by_precheck": p.prechecked,
        "strategy": p.strategy,
        "stages": list(p.stages_run),
        **certificate_fields(cert),
        "bytes_to_move": c.bytes_moved,
        "changed_partitions": int(len(c.changed_rows)),
        "reorder_only_partitions": c.reorder_only,
        "rf_changed_partitions": c.rf_changed,
        "leader_changes": c.leader_changes,
        "leader_lower_bound": cert.leader_lower_bound,
        "replica_spread": [num(mb.replica_spread), num(ma.replica_spread)],
        "replicas_on_removed_brokers": [mb.replicas_on_removed, ma.replicas_on_removed],
        "topic_spread": [num(mb.topic.spread), num(ma.topic.spread)],
        "leader_spread": [num(mb.leader_spread), num(ma.leader_spread)],
        "failover_worst_spread": [num(fb[1]), num(fa[1])],
        "failover_worst_broker": [fb[0], fa[0]],
        "rack_violations": [int(len(mb.rack_violations)), int(len(ma.rack_violations))],
        "disk_max_over_mean": ([num(mb.bytes_max_over_mean), num(ma.bytes_max_over_mean)]
                               if mb.bytes is not None else None),
        "disk_warning": _disk_warning(p),
        "log_dirs": _dirs_fields(p),
        "bytes_objective": None if cert.bytes_objective is None else {
            "moves": cert.bytes_objective.moves,
            "bytes_moved": cert.bytes_objective.bytes_moved,
            "lower_bound": cert.bytes_objective.lower_bound,
            "quantum_bytes": cert.bytes_objective.quantum,
            "exact": cert.bytes_objective.exact,
        },
        "disk": None if cert.disk is None else {
            "balance": cert.disk.balance,
            "tolerance": cert.disk.tolerance,
            "max_over_mean": [cert.disk.max_over_mean_before, cert.disk.max_over_mean_after],
            "within_tolerance": cert.disk.within_tolerance,
            "limit_raised_brokers": cert.disk.limit_raised,
            "bytes_moved": cert.disk.bytes_moved,
            "bytes_lower_bound": cert.disk.bytes_lower_bound,
            "gap": _gap(cert.disk.bytes_moved, cert.disk.bytes_lower_bound),
            "method": cert.disk.method,
            "exact": cert.disk.exact,
        },
        "notes": list(cert.notes),
        "seconds": {k: round(v, 3) for k, v in p.seconds.items()},
        **_controls(p),
    }


def _disk_warning(p) -> dict | None:
    """The plan's ``disk_balance_worse`` warning (``flowbalance.disk_warning``), the one ``report`` shows."""
    from .disk_warning import disk_worse_warning

    return disk_worse_warning(p.after, p.metrics_before, p.metrics_after)


def _controls(p) -> dict:
    """The operator controls' entries, present only when the request used them (plain plans keep their keys)."""
    from .controls import demote_fields

    req, out = p.request, {}
    if req.exclude_brokers or p.before.brokers.no_new.any():
        b = p.before.brokers
        out["excluded_brokers"] = [int(x) for x in b.ids[b.no_new]]
    if req.pin:
        out["pinned_patterns"] = list(req.pin)
    if req.demote:
        out["demote"] = demote_fields(p.before, p.after, req.demote)
    return out


def _gap(value: int, bound: int) -> float | None:
    """(value - bound) / bound, rounded; None when the bound is 0."""
    return round((value - bound) / bound, 4) if bound > 0 else None


def spreads_of(m: StateMetrics) -> dict:
    """The spreads several plans are compared by (``compare``, ``frontier``): replicas, per topic, leaders,
    broker and rack failover, rack violations."""
    return {
        "replica_spread": num(m.replica_spread),
        "topic_spread": num(m.topic.spread),
        "leader_spread": num(m.leader_spread),
        "failover_worst_spread": num(m.failover.worst[1]),
        "rack_failover_worst_spread": num(m.rack_failover.worst[1]) if len(m.rack_failover.failed) else None,
        "rack_violations": int(len(m.rack_violations)),
    }


def compare_summary(plans: dict) -> dict:
    """Several plans of the same input side by side (``flowbalance compare``): the current state once, then
    per strategy the moves, bytes and the spreads after."""
    first = next(iter(plans.values()))
    mb = first.metrics_before

    def spreads(m: StateMetrics) -> dict:
        return {**spreads_of(m), "replicas_on_removed_brokers": m.replicas_on_removed}

    out = {"current": spreads(mb), "strategies": {}}
    for name, p in plans.items():
        c, cert = p.changes, p.certificate
        out["strategies"][name] = {
            **certificate_fields(cert),
            "bytes_to_move": c.bytes_moved,
            "changed_partitions": int(len(c.changed_rows)),
            "leader_changes": c.leader_changes,
            "empty": p.is_empty,
            **spreads(p.metrics_after),
            "seconds": round(p.seconds.get("total", 0.0), 3),
        }
    return out
