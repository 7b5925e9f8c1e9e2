"""Bytes and disk balance on generated clusters with heavy-tailed partition sizes (``python -m benchmarks bytes``).

Every scenario is planned five ways: count-only (the default), ``objective="bytes"``, ``balance="count+bytes"``,
both together, and ``balance="bytes"``. Per plan: moves against M*, bytes moved, disk max/mean before and after,
whether every broker is within the 1.05 tolerance, the bytes lower bound of the certificate and the gap to it, and
the planner's own time (``Plan.seconds``).

Scenarios (fixed seeds, nothing cached):

* rebalance a skewed random cluster (RF 3, ``skew 0.5``) of 12 / 24 / 48 brokers, Pareto sizes alpha 2.0 and 1.5,
  plus one seed chosen because a single partition is larger than 1.05 x a broker's mean disk (the tolerance cannot
  be reached; the certificate counts the brokers whose limit it raised);
* grow a 24-broker, 3-rack, rack-aware cluster (``skew 0``) by 2 brokers;
* remove 1 broker from that cluster;
* scale: count-only and count+bytes on 100 brokers / 300 topics and 200 brokers / 600 topics, with the time of
  every step.

``--quick`` (or ``FLOWBALANCE_BENCH_QUICK=1``) runs only the smallest scenario, for a smoke test.
"""
from __future__ import annotations

import time

import numpy as np

GiB = 1 << 30
TOLERANCE = 1.05

MODES = (
    ("count-only (default)", {}),
    ("objective bytes", dict(objective="bytes")),
    ("count+bytes", dict(balance="count+bytes")),
    ("count+bytes + objective bytes", dict(balance="count+bytes", objective="bytes")),
    ("bytes", dict(balance="bytes")),
)

HEADER = f"""\
Bytes benchmark: five planning modes per cluster, partition sizes Pareto(alpha) with mean 1 GiB.
  moves / M*      replicas moved, and the certificate's lower bound on moves (M*, or the per-topic / within-rack
                  bound when that is the binding one)
  GiB moved       bytes copied by the plan
  bytes LB        the certificate's lower bound on bytes, and the gap (moved - LB) / LB:
                    [F] least bytes over all fewest-move plans (objective bytes; for count-only, the same bound,
                        shown when count-only also made the fewest moves)
                    [D] least bytes for any plan with every broker under the final disk limits (disk balance);
                        it ignores count balance, so for count+bytes much of the gap is the price of count balance
  disk max/mean   largest broker disk / mean broker disk, before -> after; 'within' = every broker at or under
                  {TOLERANCE} x mean (n over = brokers above it); 'raised' = brokers whose limit had to be raised to a
                  single partition larger than the tolerance (certificate.disk.limit_raised)
  replica spread  max - min replicas per broker after (count balance)
  seconds         Plan.seconds['total'] and its slowest step"""


def _cluster(**kw):
    from flowbalance.generate import generate_cluster

    return generate_cluster(rf=3, sizes=True, **kw)


def _skewed(n: int, topics: int, alpha: float, seed: int):
    return _cluster(brokers=n, topics=topics, partitions=(n // 2, 2 * n), skew=0.5, size_alpha=alpha, seed=seed)


def _racked(alpha: float, grow: int = 0):
    """24 brokers in 3 racks, rack-aware, random layout without skew; ``grow`` new brokers listed in the broker
    table (racks are in use, so a new broker needs its rack, as in a broker file)."""
    state = _cluster(brokers=24, racks=3, rack_aware=True, topics=100, partitions=(12, 48), skew=0.0,
                     size_alpha=alpha, seed=24)
    b = state.brokers
    for i in range(grow):
        b = b.with_added([24 + i], rack=f"r{i % 3}")
    return state.with_brokers(b)


def scenarios(quick: bool = False) -> list[tuple[str, object, dict]]:
    out = []
    for n, topics in ((12, 40), (24, 100), (48, 200)):
        for alpha in (2.0, 1.5):
            out.append((f"rebalance {n} brokers / {topics} topics, skew 0.5, alpha {alpha:g}",
                        _skewed(n, topics, alpha, seed=n), {}))
            if quick:
                return out
    out.append(("rebalance 48 brokers / 200 topics, skew 0.5, alpha 1.5, seed 34 (one partition > tolerance)",
                _skewed(48, 200, 1.5, seed=34), {}))
    for alpha in (2.0, 1.5):
        out.append((f"grow 24 -> 26 brokers, 3 racks rack-aware, skew 0, alpha {alpha:g}",
                    _racked(alpha, grow=2), dict(add=[24, 25])))
    for alpha in (2.0, 1.5):
        out.append((f"remove 1 of 24 brokers, 3 racks rack-aware, skew 0, alpha {alpha:g}",
                    _racked(alpha), dict(remove=[23])))
    return out


def _largest_over_mean(state) -> float:
    """The largest partition over the mean broker disk (live brokers after the request)."""
    n = int(state.brokers.live.sum())
    return float(state.size.max()) / (float((state.size * state.rf).sum()) / n)


def _rack_floor(state) -> str:
    """With one replica per rack (RF = racks, rack-aware), each rack holds 1/R of the bytes whatever the plan: a
    rack with fewer brokers than its share puts a floor under max/mean."""
    b = state.brokers
    live = b.live
    if not b.has_racks:
        return ""
    racks = np.unique(b.rack[live])
    if not (state.rf == len(racks)).all():
        return ""
    n_r = np.bincount(b.rack[live])[racks]
    floor = int(live.sum()) / (len(racks) * int(n_r.min()))
    return (f"; racks of {'/'.join(str(int(x)) for x in n_r)} brokers with one replica per rack: disk max/mean "
            f"cannot go below {floor:.3f}")


def _disk(p) -> tuple[float, float, bool, int]:
    """Max/mean before and after, within tolerance, brokers above it: from the certificate when there is one,
    otherwise with the planner's own helpers (the same definitions)."""
    from flowbalance.metrics import disk_max_over_mean_of as _max_over_mean, disk_use as _disk_use

    after = p.after
    b = after.brokers
    d = _disk_use(after)
    share = d.sum() * b.weight[b.live] / b.weight[b.live].sum()
    over = int((d[b.live] > np.floor(TOLERANCE * share + 1e-6)).sum()) + int((d[~b.live] > 0).sum())
    dc = p.certificate.disk
    if dc is not None:
        return dc.max_over_mean_before, dc.max_over_mean_after, dc.within_tolerance, over
    return _max_over_mean(p.before), _max_over_mean(after), over == 0, over


def _slowest(seconds: dict) -> str:
    k = max((k for k in seconds if k != "total"), key=seconds.get)
    return f"{k} {seconds[k]:.2f}"


def _bound(p, fewest_lb: tuple[int, int] | None) -> tuple[str, int | None]:
    """The bytes lower bound that applies to this plan, and its kind."""
    c = p.certificate
    if c.disk is not None and c.disk.bytes_lower_bound:
        return "D", c.disk.bytes_lower_bound
    if c.bytes_objective is not None:
        return "F", c.bytes_objective.lower_bound
    if fewest_lb is not None and p.changes.moves == fewest_lb[0]:
        return "F", fewest_lb[1]
    return "", None


def _row(name, p, fewest_lb) -> tuple:
    c = p.certificate
    moved = int(p.changes.bytes_moved or 0)
    kind, lb = _bound(p, fewest_lb)
    if lb is None:
        lb_s, gap_s = "-", "-"
    else:
        lb_s = f"{lb / GiB:,.1f} [{kind}]"
        gap_s = f"{100 * (moved - lb) / lb:.2f}%" if lb else ("0.00%" if moved == 0 else "-")
    before, after, within, over = _disk(p)
    raised = c.disk.limit_raised if c.disk is not None else "-"
    within_s = "yes" if within else f"no ({over} over)"
    return (name, p.changes.moves, c.lower_bound, f"{moved / GiB:,.1f}", lb_s, gap_s, f"{before:.3f} -> {after:.3f}",
            within_s, raised, p.metrics_after.replica_spread, f"{p.seconds['total']:.2f}", _slowest(p.seconds))


def _table(head, rows) -> None:
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(f"{x:g}" if isinstance(x, (float, np.floating)) else str(x) for x in r) + " |")


def run_scenarios(quick: bool = False) -> None:
    from flowbalance.planner import plan

    head = ("mode", "moves", "M* (LB)", "GiB moved", "bytes LB (GiB)", "gap", "disk max/mean", "within 1.05",
            "raised", "replica spread", "seconds", "slowest step")
    for name, state, kw in scenarios(quick):
        plans = [(mode, plan(state, **kw, **extra)) for mode, extra in MODES]
        obj = dict(plans)["objective bytes"]
        fewest_lb = (obj.changes.moves, obj.certificate.bytes_objective.lower_bound) \
            if obj.certificate.bytes_objective is not None else None
        print(f"\n### {name}")
        print(f"{state.num_replicas:,} replicas, {int(state.brokers.live.sum())} brokers before the request; "
              f"largest partition = {_largest_over_mean(plans[0][1].before):.3f} x mean broker disk"
              f"{_rack_floor(plans[0][1].before)}")
        _table(head, [_row(mode, p, fewest_lb) for mode, p in plans])


SCALE = ((100, 300), (200, 600))
STEPS = ("replicas", "bytes", "disk", "leaders", "followers", "verify")


def run_scale() -> None:
    from flowbalance.planner import plan

    print("\n### scale: skew 0.5, alpha 2.0, partitions per topic brokers/2 .. 2 x brokers")
    head = ("cluster", "replicas", "mode", "moves", "M*", "GiB moved", "bytes LB (GiB)", "gap", "disk max/mean",
            "within 1.05", *[f"{s} s" for s in STEPS], "total s")
    rows = []
    for n, topics in SCALE:
        state = _skewed(n, topics, 2.0, seed=n)
        for mode, extra in (MODES[0], MODES[2]):
            p = plan(state, **extra)
            r = _row(mode, p, None)
            rows.append((f"{n} brokers / {topics} topics", f"{state.num_replicas:,}", *r[:8],
                         *[f"{p.seconds[s]:.2f}" if s in p.seconds else "-" for s in STEPS],
                         f"{p.seconds['total']:.2f}"))
            print(f"  {n} brokers, {mode}: {p.seconds['total']:.1f} s", flush=True)
    _table(head, rows)


def bench_bytes(quick: bool = False) -> None:
    print(HEADER)
    t = time.perf_counter()
    run_scenarios(quick)
    if not quick:
        run_scale()
    print(f"\nbytes benchmark wall time: {time.perf_counter() - t:.1f} s")
