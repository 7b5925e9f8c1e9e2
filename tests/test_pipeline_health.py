"""Stage 3 of the fleet pipeline (``flowbalance.pipeline.health``, Spark SQL) against the library's numpy metrics.

One fleet of small random clusters (brokers, racks, rack-aware or not, RF, skew, sizes, removed brokers, weights,
and edge cases: an idle broker, a single live broker, no live broker, > 128 brokers with decimal weights, racks of
unequal size with RF above the racks and a rack emptied by removals (the generalized rack rule), and clusters where
the order of float additions or the rounding rule changes a result) is turned into the normalized
tables, measured once on a real local Spark, and every number, per cluster and per broker, must EQUAL
``metrics.measure`` / ``summary.evaluate(..., Thresholds())`` of the state that ``rows.rows_state`` builds from the
same rows: two independent implementations, numpy and Spark SQL. The two float primitives the SQL needs (numpy's
pairwise sum, Python's rounding) are also checked on their own.
"""
from __future__ import annotations

import functools
import math
import operator
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("pyspark")

from flowbalance.generate import generate_cluster  # noqa: E402
from flowbalance.metrics import _clean, measure  # noqa: E402
from flowbalance.model import PAD, Brokers, ClusterState  # noqa: E402
from flowbalance.pipeline import rows  # noqa: E402
from flowbalance.pipeline.health import (  # noqa: E402
    HEALTH_BROKERS, HEALTH_CLUSTERS, _clean as sql_clean, _pairwise_sum, _rack_rule, health)
from flowbalance.racks import distinct_rack_bounds  # noqa: E402
from flowbalance.summary import Thresholds, evaluate  # noqa: E402

DECIMAL_WEIGHTS = [0.1, 0.7, 1.3, 0.2, 2.9, 0.3, 1.1, 0.6, 1.7, 0.9, 0.35, 1.05]


def _weighted(state: ClusterState, weights) -> ClusterState:
    """The same cluster with these broker weights (through ``Brokers.build``)."""
    b = state.brokers
    racks = [b.rack_names[r] if r >= 0 else None for r in b.rack]
    return state.with_brokers(Brokers.build(b.ids, racks, list(weights), None, b.removed))


def _removed(state: ClusterState, ids) -> ClusterState:
    return state.with_brokers(state.brokers.with_removed(ids))


def _racked(sizes: dict[str, int], removed: list[int], parts: int, seed: int) -> ClusterState:
    """Brokers 101, 102, ... filling racks of the given (unequal) sizes in order, some removed, and ``parts``
    partitions over three topics, each on a random set of distinct brokers (removed ones included) of a random RF
    from 1 to every broker: RF above the racks (and above the live brokers) with even and uneven rack spreads."""
    racks = [r for r, n in sizes.items() for _ in range(n)]
    ids = np.arange(101, 101 + len(racks))
    b = Brokers.build(ids, racks).with_removed(removed)
    rng = np.random.default_rng(seed)
    mat = np.full((parts, len(ids)), PAD, dtype=np.int64)
    for i in range(parts):
        k = int(rng.integers(1, len(ids) + 1))
        mat[i, :k] = rng.permutation(ids)[:k]
    topics = [f"t{i % 3}" for i in range(parts)]
    return ClusterState.build(b, topics, np.arange(parts) // 3, mat)


def _fleet() -> dict[str, ClusterState]:
    g = generate_cluster
    f: dict[str, ClusterState] = {}
    f["c00-skew-sizes"] = g(brokers=6, topics=4, partitions=(2, 8), rf=3, skew=1.5, sizes=True, seed=1)
    f["c01-rack-aware"] = g(brokers=9, racks=3, rack_aware=True, topics=5, partitions=(1, 6), rf=3, seed=2)
    f["c02-removed"] = _removed(g(brokers=12, racks=2, topics=6, partitions=(2, 10), rf=2, skew=0.5, sizes=True,
                                  seed=3), [3, 8])
    f["c03-rf1"] = g(brokers=3, topics=2, partitions=(1, 5), rf=1, seed=4)
    f["c04-balanced"] = g(brokers=6, racks=3, rack_aware=True, layout="balanced", topics=4, partitions=6, rf=3,
                          sizes=True, seed=5)
    f["c05-balanced-norack"] = g(brokers=5, layout="balanced", topics=3, partitions=(3, 7), rf=2, seed=6)
    f["c06-weighted"] = _removed(_weighted(g(brokers=7, racks=2, topics=4, partitions=(2, 8), rf=2, sizes=True,
                                             seed=7), [1, 2, 1.5, 0.5, 1, 3, 2]), [2])
    f["c07-weighted-decimal"] = _weighted(g(brokers=10, topics=5, partitions=(2, 9), rf=3, skew=1.0, seed=8),
                                          DECIMAL_WEIGHTS[:10])
    idle = g(brokers=4, racks=2, topics=3, partitions=(2, 5), rf=2, sizes=True, seed=9)
    f["c08-idle-broker"] = idle.with_brokers(idle.brokers.with_added([100], rack="r1"))  # holds no replica
    f["c09-single-live"] = _removed(g(brokers=4, racks=2, topics=2, partitions=(2, 4), rf=2, seed=10), [0, 1, 2])
    part = g(brokers=8, racks=3, topics=5, partitions=(2, 8), rf=3, skew=3.0, sizes=True, seed=11)
    size = part.size.copy()
    size[::3] = -1  # some sizes unknown
    f["c10-racks-partial-sizes"] = _removed(replace(part, size=size), [7])
    f["c11-equal-weights-2"] = _weighted(g(brokers=4, racks=2, rack_aware=True, layout="balanced", topics=2,
                                           partitions=4, rf=2, seed=12), [2.0] * 4)
    f["c12-no-live"] = _removed(g(brokers=3, racks=3, topics=2, partitions=(1, 3), rf=2, seed=13), [0, 1, 2])
    wide = g(brokers=150, racks=3, topics=3, partitions=(20, 40), rf=2, skew=0.3, sizes=True, seed=14)
    rng = np.random.default_rng(14)
    f["c13-wide-decimal"] = _removed(_weighted(wide, rng.choice(DECIMAL_WEIGHTS, 150)), [5, 77])
    # weighted yet balanced: every broker within its [floor, ceil] interval (summary._meets' weighted rule)
    f["c14-weighted-balanced"] = _weighted(g(brokers=4, layout="balanced", topics=3, partitions=8, rf=2, seed=15),
                                           [1, 1, 1, 1.001])
    # decimal weights whose sums depend on the order of the additions: summed left to right instead of as numpy
    # does, a failover spread rounds to 1.812 instead of 1.813 (c15) and the worst broker is another one (c16)
    f["c15-sum-order-rounding"] = _weighted(g(brokers=10, topics=2, partitions=(2, 8), rf=2, seed=221),
                                            [1.1, 1.1, 0.3, 0.3, 0.45, 0.2, 0.15, 0.1, 0.3, 1.1])
    f["c16-sum-order-argmax"] = _weighted(g(brokers=13, topics=2, partitions=(2, 8), rf=2, seed=115),
                                          [0.15, 0.3, 1.3, 0.3, 1.1, 1.1, 0.35, 0.1, 0.1, 0.1, 0.2, 1.3, 1.3])
    # a failover spread whose double is just above 2.0125 (repr "2.0125"): Python's round(x, 3) gives 2.013,
    # Spark's bround(x, 3), which rounds that text half to even, 2.012
    f["c17-rounding-tie"] = _weighted(g(brokers=6, topics=1, partitions=(1, 8), rf=1, seed=3985),
                                      [0.25, 1.6, 1.6, 0.25, 0.3, 0.2])
    # the generalized rack rule: RF above the racks over racks of unequal size (3 + 3 + 1: RF 4 is 2, 1, 1 or
    # 1, 2, 1; RF 5 is 2, 2, 1), a rack whose two brokers are removed (3 + 2 live, the third rack capped at the
    # level L, 2 from RF 3 on, and no lower bound checked for partitions on it), and equal live racks beside a
    # rack whose removed brokers still hold replicas
    f["c18-uneven-racks"] = _racked({"a": 3, "b": 3, "c": 1}, [], 60, seed=18)
    f["c19-rack-emptied"] = _racked({"a": 3, "b": 2, "c": 2}, [106, 107], 60, seed=19)
    f["c20-rack-half-removed"] = _racked({"a": 4, "b": 2, "c": 2}, [101, 102], 60, seed=20)
    return f


@pytest.fixture(scope="module")
def fleet(spark):
    """(library state, metrics and checks per cluster; Spark cluster rows; Spark broker rows; output schemas),
    measured once."""
    states = _fleet()
    frames = {k: [] for k in ("brokers", "replicas", "sizes")}
    for name, st in states.items():
        for k, df in rows.state_rows(name, st).items():
            frames[k].append(df)
    rng = np.random.default_rng(0)
    tables = {}
    for k, parts in frames.items():
        df = pd.concat(parts, ignore_index=True)
        tables[k] = df.iloc[rng.permutation(len(df))].reset_index(drop=True)  # any row order
    lib = {}
    for name in states:
        one = {k: df[df.cluster == name] for k, df in tables.items()}
        st = rows.rows_state(one["brokers"], one["replicas"], one["sizes"])
        m = measure(st)
        lib[name] = (st, m, evaluate(st, m, Thresholds()))
    b = spark.createDataFrame(tables["brokers"], schema=rows.BROKERS)
    r = spark.createDataFrame(tables["replicas"], schema=rows.REPLICAS)
    s = spark.createDataFrame(tables["sizes"], schema=rows.SIZES)
    hc, hb = health(b, r, s)
    clusters = {row.cluster: row.asDict() for row in hc.collect()}
    brokers = {(row.cluster, row.broker): row.asDict() for row in hb.collect()}
    return lib, clusters, brokers, (hc.schema, hb.schema)


def _expected_cluster(st: ClusterState, m, checks: dict) -> dict:
    b = st.brokers
    worst_broker, worst = m.failover.worst
    return {
        "brokers": len(b),
        "live_brokers": int(b.live.sum()),
        "partitions": m.num_partitions,
        "replicas": m.num_replicas,
        "replica_spread": m.replica_spread,
        "topic_spread": m.topic.spread,
        "unbalanced_topics": m.topic.unbalanced_topics,
        "leader_spread": m.leader_spread,
        "bytes_spread": m.bytes_spread,
        "rack_violations": len(m.rack_violations),
        "replicas_on_removed": m.replicas_on_removed,
        "failover_worst_spread": worst,
        "failover_worst_broker": worst_broker,
        "rack_failover_worst_spread": m.rack_failover.worst[1] if len(m.rack_failover.failed) else None,
        "min_moves": m.min_moves,
        "balanced": all(checks.values()),
    }


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return float(a) == float(b)


def test_every_cluster_number_equals_measure(fleet):
    lib, clusters, _, _ = fleet
    assert set(clusters) == set(lib)
    bad = []
    for name, (st, m, checks) in lib.items():
        want = _expected_cluster(st, m, checks)
        got = clusters[name]
        bad += [(name, k, want[k], got[k]) for k in want if not _same(want[k], got[k])]
    assert not bad, "cluster, column, library, spark:\n" + "\n".join(map(str, bad))


def test_every_broker_number_equals_measure(fleet):
    lib, _, brokers, _ = fleet
    assert len(brokers) == sum(len(st.brokers) for st, _, _ in lib.values())
    bad = []
    for name, (st, m, _) in lib.items():
        b = st.brokers
        rack_names = [b.rack_names[r] if r >= 0 else None for r in b.rack]
        fail = {r["failed"]: r for r in m.failover.rows()}
        for i, bid in enumerate(b.ids.tolist()):
            f = fail.get(bid)
            want = {
                "rack": rack_names[i],
                "removed": bool(b.removed[i]),
                "replicas": int(m.replicas[i]),
                "leaders": int(m.leaders[i]),
                "bytes": None if m.bytes is None else int(m.bytes[i]),
                "failover_spread": None if f is None else f["spread"],
                "failover_min": None if f is None else f["min"],
                "failover_max": None if f is None else f["max"],
            }
            got = brokers[(name, bid)]
            bad += [(name, bid, k, want[k], got[k]) for k in want
                    if not (want[k] == got[k] if isinstance(want[k], (str, bool)) else _same(want[k], got[k]))]
    assert not bad, "cluster, broker, column, library, spark:\n" + "\n".join(map(str, bad))


def test_the_fleet_covers_the_cases(fleet):
    """Guards the fixture: the comparisons above see every kind of cluster they are meant to."""
    lib, clusters, brokers, _ = fleet
    assert {c["balanced"] for c in clusters.values()} == {True, False}
    weighted = {name for name, (st, _, _) in lib.items() if st.brokers.weighted}
    assert {clusters[name]["balanced"] for name in weighted} == {True, False}
    assert any(st.brokers.has_racks for st, _, _ in lib.values())
    assert any(m.bytes is None for _, m, _ in lib.values()) and any(m.bytes is not None for _, m, _ in lib.values())
    assert any(st.has_sizes and (st.size < 0).any() for st, _, _ in lib.values())
    assert any(m.rack_violations.size for _, m, _ in lib.values())
    assert any(m.topic.unbalanced_topics for _, m, _ in lib.values())
    assert any(not float(m.replica_spread).is_integer() for _, m, _ in lib.values())  # a weighted spread
    assert any(not float(x).is_integer() for _, m, _ in lib.values() for x in m.failover.spread)
    assert any(row["replicas"] == 0 and not row["removed"] for row in brokers.values())  # an idle broker
    assert {c["live_brokers"] for c in clusters.values()} >= {0, 1}
    assert max(c["brokers"] for c in clusters.values()) > 128  # numpy's pairwise sum splits the blocks


def _old_rule(st: ClusterState) -> int:
    """The rule the fleet used before the generalization: two replicas in one rack although RF <= live racks."""
    b = st.brokers
    live_racks = len(set(b.rack[b.live].tolist()))
    idx = st.replica_index
    return sum(1 for row in idx if len(set(b.rack[row[row >= 0]].tolist())) < (row >= 0).sum() <= live_racks)


def test_the_fleet_covers_the_rack_rule(fleet):
    """Guards the fixture for the rack rule: RF above the live racks over racks of unequal live size, breaking
    the rule and keeping it, a rack emptied by a removal holding replicas, and clusters where the old
    "two replicas in one rack while RF <= racks" count differs from the library's (so the comparison with
    ``measure`` above tells the two rules apart)."""
    lib, clusters, _, _ = fleet
    above_bad = above_ok = emptied = emptied_two_ok = 0
    differs = []
    for name, (st, m, _) in lib.items():
        b = st.brokers
        if not b.has_racks:
            continue
        live_sizes = np.bincount(b.rack[b.live], minlength=len(b.rack_names))
        dead = np.flatnonzero((live_sizes == 0) & (np.bincount(b.rack, minlength=len(b.rack_names)) > 0))
        nz = live_sizes[live_sizes > 0]
        above = (st.rf > len(nz)) & (st.rf <= nz.sum())
        if len(set(nz.tolist())) > 1:
            bad = np.isin(np.arange(st.num_partitions), m.rack_violations)
            above_bad += int((above & bad).sum())
            above_ok += int((above & ~bad).sum())
        if len(dead) and b.live.any():
            idx = st.replica_index
            on_dead = np.isin(np.where(idx >= 0, b.rack[np.maximum(idx, 0)], -1), dead).sum(axis=1)
            emptied += int((on_dead > 0).sum())
            # two replicas in an emptied rack, within its cap L: not a violation (a cap of 1 would call it one)
            ok = ~np.isin(np.arange(st.num_partitions), m.rack_violations)
            emptied_two_ok += int(((on_dead >= 2) & ok & (st.rf <= b.live.sum())).sum())
        if _old_rule(st) != len(m.rack_violations):
            differs.append(name)
        assert clusters[name]["rack_violations"] == len(m.rack_violations)
    assert above_bad and above_ok and emptied and emptied_two_ok
    assert {"c18-uneven-racks", "c19-rack-emptied", "c20-rack-half-removed"} <= set(differs)


def test_rack_rule_sql_equals_distinct_rack_bounds(spark):
    """The per-(cluster, RF) table of the rule (level L, lo and hi per live rack) equals
    ``racks.distinct_rack_bounds`` on random unequal rack sizes, for every RF from 1 to the largest given (kmax)
    or to the live brokers if fewer (above, no row: the rule does not apply)."""
    rng = np.random.default_rng(7)
    sizes, kmax, want = [], [], {}
    for c in range(150):
        s = rng.integers(1, 7, int(rng.integers(1, 6))).tolist()
        if c % 10 == 0:
            s = [int(rng.integers(1, 400)), 1, 2]  # a large rack: the level search spans many steps
        name = f"c{c}"
        names = [f"r{j}" for j in range(len(s))]
        sizes.append((name, [(r, n) for r, n in zip(names, s)]))
        top = int(rng.integers(1, sum(s) + 3))  # below, at or above the live brokers
        kmax.append((name, top))
        uniq, _, level, lo, hi = distinct_rack_bounds(np.arange(1, sum(s) + 3), np.array(s))
        for j, kk in enumerate(uniq.tolist()):
            if kk <= min(top, sum(s)):
                want[(name, kk)] = (int(level[j]), {r: (int(lo[j, i]), int(hi[j, i])) for i, r in enumerate(names)})
    sz = spark.createDataFrame(sizes, "cluster string, sz array<struct<rack: string, s: long>>")
    kd = spark.createDataFrame(kmax + [("absent", 3)], "cluster string, kmax int")  # a cluster without racks
    got = {(r.cluster, r.k): (r.L, {x: (v.lo, v.hi) for x, v in r.bounds.items()}, r.nlo)
           for r in _rack_rule(sz, kd).collect()}
    assert set(got) == set(want)
    bad = [(key, want[key], got[key]) for key in want
           if got[key][:2] != want[key] or got[key][2] != sum(lo > 0 for lo, _ in want[key][1].values())]
    assert not bad
    assert any(lo != hi for _, bd in want.values() for lo, hi in bd.values())  # ranges, not only fixed counts
    assert any(len(set(hi for _, hi in bd.values())) > 1 for _, bd in want.values())  # unequal caps


def test_output_schemas(fleet):
    from pyspark.sql.types import _parse_datatype_string

    _, _, _, (hc, hb) = fleet
    for got, ddl in ((hc, HEALTH_CLUSTERS), (hb, HEALTH_BROKERS)):
        want = _parse_datatype_string(ddl)
        assert [(f.name, f.dataType) for f in got.fields] == [(f.name, f.dataType) for f in want.fields]


def test_sizes_table_optional(spark):
    """Without a sizes table the byte columns are null and the rest is unchanged."""
    st = _removed(generate_cluster(brokers=5, racks=2, topics=3, partitions=(2, 5), rf=2, seed=21), [4])
    t = rows.state_rows("x", st)
    b = spark.createDataFrame(t["brokers"], schema=rows.BROKERS)
    r = spark.createDataFrame(t["replicas"], schema=rows.REPLICAS)
    hc, hb = health(b, r)
    (c,) = hc.select("bytes_spread", "replica_spread", "leader_spread", "min_moves", "balanced").collect()
    m = measure(st)
    assert c.bytes_spread is None and {x.bytes for x in hb.select("bytes").collect()} == {None}
    balanced = all(evaluate(st, m, Thresholds()).values())
    assert tuple(c)[1:] == (m.replica_spread, m.leader_spread, m.min_moves, balanced)


def test_pairwise_sum_is_numpys_sum_bit_for_bit(spark):
    """Sums of weights depend on the order of the additions; the SQL sum is numpy's (pairwise) one."""
    rng = np.random.default_rng(3)
    lengths = list(range(0, 20)) + [31, 64, 127, 128, 129, 136, 255, 256, 300, 1000, 1100]
    arrays = [(rng.random(n) * rng.choice([1e-3, 1.0, 1e3], n)).tolist() for n in lengths]
    df = spark.createDataFrame([(i, a) for i, a in enumerate(arrays)], "i int, a array<double>")
    got = dict(df.selectExpr("i", f"{_pairwise_sum('a')} AS s").collect())
    for i, a in enumerate(arrays):
        assert got[i] == float(np.sum(np.array(a))), lengths[i]
    # neither a left-to-right nor an exact sum would pass: the test above tells them apart
    assert any(functools.reduce(operator.add, a, 0.0) != got[i] for i, a in enumerate(arrays))
    assert any(math.fsum(a) != got[i] for i, a in enumerate(arrays))


def test_clean_rounds_as_python(spark):
    """metrics._clean: integers within 1e-9, else Python's round(x, 3) of the exact binary value (half to even),
    which Spark's round/bround do not do."""
    rng = np.random.default_rng(5)
    values = [0.0, 1.0, 2.5, 0.0625, 0.5625, 0.1875, 2.6745, 2.675, 1.0005, 0.0005, 0.00049999, 1e-10, 3 - 1e-12,
              3 + 5e-10, 7.0000000011, 123456789.0625, 2.0 ** 45 + 0.5, 1234.5675, 19688405814.000122, 0.3333333333,
              2 / 3, 1e-3, 0.0015, 0.0025, 4.4445, 9.9995, 99.9995, -0.0625, -2.6745, -7.5]
    values += (rng.random(300) * rng.choice([1.0, 10.0, 1e4, 1e9], 300)).tolist()
    values += (np.round(rng.random(200) * 100, 4)).tolist()  # many ties in decimal, none in binary
    values += (rng.integers(0, 1 << 20, 200) / 16.0).tolist()  # exact binary ties at the 4th decimal
    df = spark.createDataFrame([(i, v) for i, v in enumerate(values)], "i int, x double")
    res = df.selectExpr("i", f"{sql_clean('x')} AS c", "bround(x, 3) AS b").collect()
    got = {row.i: row.c for row in res}
    bad = [(v, _clean(v), got[i]) for i, v in enumerate(values) if _clean(v) != got[i]]
    assert not bad
    assert any(round(values[row.i], 3) != row.b for row in res)  # Spark's own rounding would not do
    assert df.selectExpr(f"{sql_clean('CAST(NULL AS DOUBLE)')} AS c").first().c is None
