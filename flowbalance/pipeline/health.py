"""Stage 3 of the fleet pipeline: health of every cluster and every broker, in Spark SQL.

``health(brokers, replicas, sizes)`` takes the normalized tables of ``rows`` (``BROKERS``, ``REPLICAS``,
``SIZES``) of a whole fleet and returns two DataFrames, computed with the DataFrame API and Spark SQL
higher-order functions only (no UDF, nothing collected to the driver, no loop over clusters), so a fleet is
measured in parallel:

* per cluster (``HEALTH_CLUSTERS``): the numbers ``flowbalance check`` reports, and whether it calls the cluster
  balanced with its default thresholds (``summary.Thresholds()`` judged as ``summary.evaluate`` does);
* per broker (``HEALTH_BROKERS``): counts, bytes, and the survivors' leader spread when that broker fails.

Rack violations follow the rack rule of ``flowbalance.racks`` (RF above the racks, racks of unequal size): its
bounds are a small table per (cluster, RF), broadcast to the partitions, each compared in SQL (``_RACK_BAD``).

Every number equals the library's ``metrics.measure(state)`` on the same cluster (``rows.rows_state`` builds the
state from the same rows): the float expressions are the library's, operation for operation, and its rounding
(``metrics._clean``) is done here too. Two details make that bit-exact:

* numpy sums float64 arrays by *pairwise summation* (blocks of at most 128 summed in 8 lanes, split at a
  multiple of 8 below the half), so a sum of weights such as 0.1 + 0.7 + ... depends on that order;
  ``_pairwise_sum`` does the same in SQL, over the very array numpy sums (the live brokers' weights; or every
  broker's, 0 for the removed ones, in broker-id order);
* Python's ``round(x, 3)`` rounds the exact binary value half to even, unlike Spark's ``round``/``bround``
  (which round the shortest decimal string); ``_clean`` decides it with exact integer arithmetic.

Input rows are taken as valid (stage 1 checks them): unique brokers per cluster, replica positions 0, 1, ...
without a broker twice. A broker whose ``state`` is ``removed`` is not live (like ``flowbalance check
--remove``); a missing weight is 1.0 and a missing state ``live``, as in ``rows.rows_state``. Replicas on a broker
missing from the broker table are ignored, and a cluster with brokers but no replicas gets zeros (the library
refuses both).
"""
from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from ..summary import Thresholds

HEALTH_CLUSTERS = (
    "cluster string, brokers int, live_brokers int, partitions long, replicas long, replica_spread double, "
    "topic_spread double, unbalanced_topics long, leader_spread double, bytes_spread double, "
    "rack_violations long, replicas_on_removed long, failover_worst_spread double, failover_worst_broker int, "
    "rack_failover_worst_spread double, min_moves long, balanced boolean"
)
HEALTH_BROKERS = (
    "cluster string, broker int, rack string, removed boolean, replicas long, leaders long, bytes long, "
    "failover_spread double, failover_min long, failover_max long"
)

THRESHOLDS = Thresholds()  # what ``flowbalance check`` calls balanced by default
_EPS = "CAST(1e-9 AS DOUBLE)"  # targets._EPS, and the 1e-9 tolerances of metrics and summary
_TWO62 = 4611686018427387904  # 2**62


# ---- numpy's and Python's float behaviour, in SQL --------------------------------------------------------


def _let(value: str, name: str, body: str) -> str:
    """``body`` with ``name`` bound to ``value`` (evaluated once): a one-element transform."""
    return f"transform(array({value}), {name} -> {body})[0]"


def _leaf_sum(arr: str, s: str, n: str) -> str:
    """numpy's pairwise_sum of the block ``arr[s : s + n]`` (n <= 128): below 8 a plain left-to-right sum; else
    8 lanes (lane j adds elements j, j + 8, ... of the largest multiple m of 8 in n), combined as
    ((0+1)+(2+3))+((4+5)+(6+7)), then the last n - m elements added one by one."""
    plain = f"aggregate(slice({arr}, {s} + 1, {n}), 0D, (pa, pv) -> pa + pv)"
    m = f"({n} - {n} % 8)"
    lane = [f"aggregate(sequence({j}, {m} - 1, 8), 0D, (la, li) -> la + {arr}[{s} + li])" for j in range(8)]
    tree = (f"((({lane[0]} + {lane[1]}) + ({lane[2]} + {lane[3]})) + "
            f"(({lane[4]} + {lane[5]}) + ({lane[6]} + {lane[7]})))")
    blocked = f"aggregate(slice({arr}, {s} + 1 + {m}, {n} % 8), {tree}, (ra, rv) -> ra + rv)"
    return f"IF({n} < 8, {plain}, {blocked})"


def _pairwise_sum(arr: str) -> str:
    """SQL for ``np.sum`` of the non-null array<double> ``arr`` (an identifier), bit for bit: numpy's pairwise
    summation.

    Up to 128 elements that is one ``_leaf_sum``. Above, numpy recurses (``n2 = n // 2 - (n // 2) % 8``; result
    sum(first n2) + sum(rest)), which depends only on the length: the leaves are found by repeated splitting,
    each carrying how many ancestors it completes (its trailing run of right-child steps), then summed on a
    stack, left + right, in the recursion's order."""
    half = "CAST(pn.n DIV 2 - (pn.n DIV 2) % 8 AS INT)"
    leaves = (
        f"aggregate(sequence(1, CAST(ceil(log2(size({arr}))) AS INT)), "
        f"array(named_struct('s', 0, 'n', size({arr}), 'r', 0)), "
        f"(pacc, pit) -> flatten(transform(pacc, pn -> IF(pn.n > 128, array("
        f"named_struct('s', pn.s, 'n', {half}, 'r', 0), "
        f"named_struct('s', pn.s + {half}, 'n', pn.n - {half}, 'r', pn.r + 1)), array(pn)))))"
    )
    push = f"concat(pst, array({_leaf_sum(arr, 'plf.s', 'plf.n')}))"
    combine = "IF(pk = 0, ps, concat(slice(ps, 1, size(ps) - 2), array(ps[size(ps) - 2] + ps[size(ps) - 1])))"
    stack = (f"aggregate({leaves}, CAST(array() AS array<double>), "
             f"(pst, plf) -> aggregate(sequence(0, plf.r), {push}, (ps, pk) -> {combine}))[0]")
    return f"IF(size({arr}) <= 128, {_leaf_sum(arr, '0', f'size({arr})')}, {stack})"


def _round3(x: str) -> str:
    """Python's ``round(x, 3)`` of the double ``x`` (an identifier): its exact binary value rounded half to even at
    3 decimals, then the nearest double. With a = |x|, n = floor(a), the fraction a - n is exact and so is
    m = (a - n) * 2**62 as an integer (for a >= 2**-10; below, m is truncated, which could only matter within
    2**-62 of 0.0005); the digit k = 1000 m div 2**62 and the tie are decided in decimals, and the result is
    parsed back from its decimal text (Double.parseDouble rounds correctly, as Python's float() does).
    Needs |x| < 2**52 (larger doubles are integers, which ``_clean`` returns before)."""
    d = f"CAST({_TWO62} AS DECIMAL(20,0))"
    step1 = (f"named_struct('n', floor(abs({x})), 'p', CAST(CAST((abs({x}) - CAST(floor(abs({x})) AS DOUBLE)) "
             f"* CAST({_TWO62} AS DOUBLE) AS BIGINT) AS DECIMAL(20,0)) * 1000)")
    step2 = f"named_struct('n', ru.n, 'k', ru.p DIV {d}, 'r2', (ru.p - CAST(ru.p DIV {d} AS DECIMAL(20,0)) * {d}) * 2)"
    step3 = f"rv.n * 1000 + rv.k + CASE WHEN rv.r2 > {d} THEN 1 WHEN rv.r2 < {d} THEN 0 ELSE rv.k % 2 END"
    text = "CAST(concat(CAST(rN DIV 1000 AS STRING), '.', lpad(CAST(rN % 1000 AS STRING), 3, '0')) AS DOUBLE)"
    val = _let(_let(_let(step1, "ru", step2), "rv", step3), "rN", text)
    return f"IF({x} < 0, -{val}, {val})"


def _clean_all(xs: list[str]) -> str:
    """``metrics._clean`` of each double in ``xs`` (null stays null), as one array: the integer when within 1e-9
    of it, else 3 decimals as Python's ``round(x, 3)``. (One array keeps a single copy of the expression.)"""
    body = f"IF(cx IS NULL, NULL, IF(abs(cx - rint(cx)) < {_EPS}, rint(cx), {_round3('cx')}))"
    return f"transform(array({', '.join(f'CAST({x} AS DOUBLE)' for x in xs)}), cx -> {body})"


def _clean(x: str) -> str:
    return f"{_clean_all([x])}[0]"


def _spread(vals: str, ws: str, total: str, wsum: str) -> str:
    """``metrics.spread`` before ``_clean``: max - min of (v - total * w / wsum) over the masked brokers, whose
    values and weights are the array<double> ``vals`` and ``ws``; ``total`` is the (double) sum of the values and
    ``wsum`` numpy's sum of ``ws``. All four are identifiers or field accesses."""
    dev = f"zip_with({vals}, {ws}, (dv, dw) -> dv - ({total} * dw) / {wsum})"
    body = "array_max(sd) - array_min(sd)"
    return (f"IF(size({vals}) = 0, 0D, IF({wsum} <= 0, array_max({vals}) - array_min({vals}), "
            f"{_let(dev, 'sd', body)}))")


def _intervals(arr: str, val: str, total: str, wsum: str) -> str:
    """``targets.intervals`` of the live brokers in ``arr`` (``wsum``: numpy's sum of the weights with 0 for the
    removed brokers): structs (c, lo, hi) with c = ``val`` written on ``x``."""
    q = f"IF({wsum} <= 0, 0D, (CAST({total} AS DOUBLE) * x.w) / {wsum})"
    lo = f"floor(x.q + {_EPS})"
    return (f"transform(transform({arr}, x -> named_struct('c', {val}, 'q', {q})), "
            f"x -> named_struct('c', x.c, 'lo', {lo}, 'hi', greatest(ceil(x.q - {_EPS}), {lo})))")


def _within(iv: str, slack: int) -> str:
    return f"forall({iv}, y -> y.c >= y.lo - {slack} AND y.c <= y.hi + {slack})"


def _meets(weighted: str, iv: str, cleaned_spread: str, limit: int) -> str:
    """``summary._meets``: spread <= limit for equal weights, else every live broker within its interval
    widened by limit - 1."""
    return f"IF({weighted}, {_within(iv, limit - 1)}, {cleaned_spread} <= {limit} + {_EPS})"


def _x(sql: str):
    return F.expr(sql)


# ---- the rack rule (flowbalance.racks), per (cluster, RF) ---------------------------------------------------
# (SQL names are case-insensitive: no lambda variable below shares a name with a column, such as l and L.)


def _live_rack_sizes(b: DataFrame, racks: DataFrame) -> DataFrame:
    """(cluster, sz): the racks holding a live broker and how many (``racks.live_rack_sizes``), as an array of
    structs (rack, s), for the clusters with racks (``has_racks``) and a live broker only. A rack is named by its
    number ``rid`` in ``b``, as in the partitions' replicas."""
    return (b.where(~F.col("removed")).groupBy("cluster", F.col("rid").alias("rack")).agg(F.count(F.lit(1)).alias("s"))
            .join(racks.where("has_racks"), "cluster")
            .groupBy("cluster").agg(F.collect_list(F.struct("rack", "s")).alias("sz")))


def _rack_rule(sizes: DataFrame, kmax: DataFrame) -> DataFrame:
    """(cluster, k, L, bounds, nlo) for k = 1, 2, ... up to ``kmax`` (cluster, kmax) and up to the live brokers
    (above, no placement exists and nothing counts), for the clusters with live racks (``sizes``):
    ``racks.distinct_rack_bounds`` in SQL, once per k (a few rows per cluster, however many partitions).

    L, the level, is the smallest integer with Σ_r min(s_r, L) >= k (searched over 0..max s_r: a few thousand
    steps at most, once per k); hi_r = min(s_r, L), lo_r = max(min(s_r, L - 1), k - Σ_{q≠r} hi_q) clipped to
    [0, hi_r]; ``bounds`` maps each live rack to (lo, hi) and ``nlo`` counts the racks with lo_r > 0."""
    reach = "aggregate(sz, 0L, (a, x) -> a + least(x.s, lvl))"
    lo = "least(hx.hi, greatest(0L, greatest(least(hx.s, greatest(L - 1, 0L)), k - (hsum - hx.hi))))"
    return (kmax.join(sizes, "cluster")
            .select("cluster", "sz", _x("least(kmax, aggregate(sz, 0L, (a, x) -> a + x.s))").alias("top"))
            .select("cluster", "sz", "top", F.explode(_x("sequence(1, CAST(greatest(top, 1) AS INT))")).alias("k"))
            .where(F.col("k") <= F.col("top"))
            .select("cluster", "k", "sz", _x(
                f"array_min(filter(sequence(0L, array_max(transform(sz, x -> x.s))), lvl -> {reach} >= k))"
            ).alias("L"))
            .select("cluster", "k", "L",
                    _x("transform(sz, x -> named_struct('rack', x.rack, 's', x.s, 'hi', least(x.s, L)))").alias("hs"))
            .select("cluster", "k", "L", "hs", _x("aggregate(hs, 0L, (a, hx) -> a + hx.hi)").alias("hsum"))
            .select("cluster", "k", "L",
                    _x(f"transform(hs, hx -> named_struct('rack', hx.rack, 'lo', {lo}, 'hi', hx.hi))").alias("bd"))
            .select("cluster", "k", "L",
                    _x("map_from_entries(transform(bd, d -> struct(d.rack, named_struct('lo', d.lo, 'hi', d.hi))))")
                    .alias("bounds"),
                    _x("size(filter(bd, d -> d.lo > 0))").alias("nlo")))


# Whether a partition (``reps``, joined with its ``_rack_rule`` row: nulls when the rule does not apply) breaks
# the rule, as ``metrics.rack_violations``: a rack holds more than hi_r (a rack without live brokers: more than
# L), or every replica is on a live rack and one holds fewer than lo_r, i.e. it holds fewer than lo_r of a rack
# it is on, or it is on fewer than the nlo racks with lo_r > 0. O(k^2) per partition, on the racks it holds.
# At level 1 (RF <= live racks: at most one replica per rack, and every live rack when RF = live racks) that is
# two replicas in one rack, checked first as such: the common case, and the cheaper expression.
_RACK_BAD = ("bounds IS NOT NULL AND IF(L = 1, size(array_distinct(transform(reps, x -> x.rack))) < size(reps), "
             + _let(
    "transform(array_distinct(transform(reps, x -> x.rack)), "
    "r -> named_struct('c', size(filter(reps, x -> x.rack = r)), 'b', try_element_at(bounds, r)))", "rc",
    "exists(rc, y -> y.c > coalesce(y.b.hi, L)) OR (forall(rc, y -> y.b IS NOT NULL) AND "
    "(exists(rc, y -> y.c < y.b.lo) OR size(filter(rc, y -> y.b.lo > 0)) < nlo))") + ")")


# ---- the stage --------------------------------------------------------------------------------------------


def health(brokers: DataFrame, replicas: DataFrame, sizes: DataFrame | None = None) -> tuple[DataFrame, DataFrame]:
    """(per-cluster health, per-broker health) of every cluster of the tables; columns as ``HEALTH_CLUSTERS``
    and ``HEALTH_BROKERS``. Spreads are rounded as the library does; ``bytes``/``bytes_spread`` are null for a
    cluster without sizes, ``rack_failover_worst_spread`` without racks (or without a live broker), and the
    failover columns of a removed broker. Both come from the same rows per cluster (``_fleet_health``), cached
    (and computed here) so that collecting the second does not compute them again; the partitions, which three
    parts of that computation read, are cached meanwhile."""
    clusters, per_broker, parts = health_and_parts(brokers, replicas, sizes)
    parts.unpersist()
    return clusters, per_broker


def health_and_parts(brokers: DataFrame, replicas: DataFrame,
                     sizes: DataFrame | None = None) -> tuple[DataFrame, DataFrame, DataFrame]:
    """``health``, and the partitions it measured, still cached (the caller unpersists them): one row per
    partition (``cluster, topic, partition``), ``reps`` its replicas in position order (structs of ``position,
    broker, rack, live``), ``size`` its largest size row (null without one). The planning stage reads its
    clusters' partitions from them rather than from the replica rows again."""
    per_cluster, parts = _fleet_health(brokers, replicas, sizes)
    per_cluster = per_cluster.cache()
    per_cluster.count()
    clusters = per_cluster.select(
        "cluster", F.col("n").alias("brokers"), F.col("live_n").alias("live_brokers"),
        F.col("P").alias("partitions"), F.col("R").alias("replicas"),
        "replica_spread", "topic_spread", "unbalanced_topics", "leader_spread", "bytes_spread", "rack_violations",
        F.col("on_removed").alias("replicas_on_removed"), "failover_worst_spread", "failover_worst_broker",
        "rack_failover_worst_spread", "min_moves", "balanced")
    per_broker = (per_cluster.select("cluster", "has_sizes", F.explode(_x(
        "transform(bl, x -> named_struct('b', x, 'f', try_element_at(fmap, x.broker)))")).alias("e"))
        .select("cluster", F.col("e.b.broker").alias("broker"), F.col("e.b.rack").alias("rack"),
                (~F.col("e.b.live")).alias("removed"), F.col("e.b.replicas").alias("replicas"),
                F.col("e.b.leaders").alias("leaders"),
                F.when(F.col("has_sizes"), F.col("e.b.bytes")).alias("bytes"),
                _x(_clean("e.f.raw")).alias("failover_spread"),
                F.col("e.f.fmin").alias("failover_min"), F.col("e.f.fmax").alias("failover_max")))
    return (clusters.select([F.col(f.name).cast(f.dataType).alias(f.name) for f in _schema(HEALTH_CLUSTERS)]),
            per_broker.select([F.col(f.name).cast(f.dataType).alias(f.name) for f in _schema(HEALTH_BROKERS)]),
            parts)


def _schema(ddl: str):
    from pyspark.sql.types import _parse_datatype_string

    return _parse_datatype_string(ddl).fields


def _fleet_health(brokers: DataFrame, replicas: DataFrame, sizes: DataFrame | None) -> tuple[DataFrame, DataFrame]:
    """One row per cluster: every cluster number (named as in the output, or n, live_n, P, R, on_removed), the
    brokers in id order (``bl``), the failover result per live broker (``fmap``: id -> raw spread, min, max); and
    the cached partitions it reads (to unpersist once it is computed)."""
    th = THRESHOLDS
    live = ~F.col("removed")
    b = brokers.select(
        "cluster", F.col("broker").cast("int").alias("broker"), "rack",
        F.coalesce(F.col("weight").cast("double"), F.lit(1.0)).alias("w"),
        (F.coalesce(F.col("state"), F.lit("live")) == "removed").alias("removed"))
    # each rack by a number within its cluster (``rid``), so that a partition's replicas are fixed-width columns
    b = b.withColumn("rid", F.when(F.col("rack").isNotNull(),
                                   F.dense_rank().over(Window.partitionBy("cluster").orderBy("rack"))))
    # racks count only when every broker has one (Brokers.has_racks)
    racks = b.groupBy("cluster").agg(
        ((F.count(F.lit(1)) > 0) & (F.count("rack") == F.count(F.lit(1)))).alias("has_racks"))

    # ---- partitions: replicas in position order (with rack number and liveness), size. The replicas of a
    # partition are gathered as one column per position (a hash aggregate of fixed-width values: no per-partition
    # list to sort), then made an array without the positions a partition does not have (or whose broker is not
    # in the broker table). The widest partition sets the number of columns (one small job, run here).
    r = replicas.select("cluster", "topic", F.col("partition").cast("int").alias("partition"),
                        F.col("position").cast("int").alias("position"), F.col("broker").cast("int").alias("broker"))
    width = max(int(r.agg(F.max("position")).first()[0] or 0) + 1, 1)
    rb = r.join(F.broadcast(b.select("cluster", "broker", "rid", live.alias("live"))), ["cluster", "broker"])
    at = [F.col("position") == i for i in range(width)]
    slots = [c for i in range(width) for c in (F.max(F.when(at[i], F.col("broker"))).alias(f"_b{i}"),
                                               F.max(F.when(at[i], F.col("rid"))).alias(f"_r{i}"),
                                               F.max(F.when(at[i], F.col("live"))).alias(f"_l{i}"))]
    reps = ", ".join(f"named_struct('position', {i}, 'broker', _b{i}, 'rack', _r{i}, 'live', _l{i})"
                     for i in range(width))
    parts = (rb.groupBy("cluster", "topic", "partition").agg(*slots)
             .select("cluster", "topic", "partition", _x(f"filter(array({reps}), x -> x.broker IS NOT NULL)")
                     .alias("reps")))
    if sizes is not None:
        sz = (sizes.select("cluster", "topic", F.col("partition").cast("int").alias("partition"), "bytes")
              .groupBy("cluster", "topic", "partition").agg(F.max("bytes").cast("long").alias("size")))
        parts = parts.join(sz, ["cluster", "topic", "partition"], "left")
    else:
        parts = parts.withColumn("size", F.lit(None).cast("long"))
    parts = parts.join(racks, "cluster").cache()  # read by the broker counts, the cluster totals and the events
    # the rack rule per (cluster, RF), for every RF up to the cluster's largest: a small table, broadcast to the
    # partitions (in the one branch below that needs it). The largest RF comes from the positions (one cheap
    # aggregate) rather than from ``parts``, whose collect_list Spark would compute once more.
    kmax = replicas.groupBy("cluster").agg((F.max(F.col("position").cast("int")) + 1).alias("kmax"))
    rule = F.broadcast(_rack_rule(_live_rack_sizes(b, racks), kmax))

    # ---- per broker: replicas, leaders, bytes (unknown or negative sizes count 0, as byte_counts does)
    counts = (parts.select("cluster", "size", F.explode("reps").alias("x"))
              .groupBy("cluster", F.col("x.broker").alias("broker"))
              .agg(F.count(F.lit(1)).alias("replicas"),
                   F.count_if(F.col("x.position") == 0).alias("leaders"),
                   F.sum(F.coalesce(F.greatest("size", F.lit(0)), F.lit(0))).cast("long").alias("bytes")))
    bk = b.join(counts, ["cluster", "broker"], "left").fillna(0, ["replicas", "leaders", "bytes"])

    # ---- per cluster: its brokers as one array in id order, partition totals, numpy's sums of the weights
    pc = parts.withColumn("k", F.size("reps")).join(rule, ["cluster", "k"], "left").groupBy("cluster").agg(
        F.count(F.lit(1)).alias("P"), F.sum(F.size("reps")).cast("long").alias("R"),
        F.bool_or(F.coalesce(F.col("size") >= 0, F.lit(False))).alias("has_sizes"),
        F.count_if(_x(_RACK_BAD)).alias("rack_violations"))
    cl = (bk.groupBy("cluster").agg(
        F.count(F.lit(1)).cast("int").alias("n"),
        F.count_if(live).cast("int").alias("live_n"),
        F.min(F.when(live, F.col("w"))).alias("wmin"),
        F.max(F.when(live, F.col("w"))).alias("wmax"),
        F.array_sort(F.collect_list(F.struct("broker", "rack", "w", live.alias("live"), "replicas", "leaders",
                                             "bytes", "rid"))).alias("bl"))
          .join(pc, "cluster", "left")
          .fillna(0, ["P", "R", "rack_violations"]).fillna(False, ["has_sizes"])
          .select("*", _x("filter(bl, x -> x.live)").alias("lv"))
          .select("*",
                  ((F.col("live_n") > 0) & (F.col("wmin") != F.col("wmax"))).alias("weighted"),
                  _x("transform(lv, x -> x.w)").alias("w_live"),
                  _x("IF(has_sizes, transform(lv, x -> CAST(x.bytes AS DOUBLE)), CAST(array() AS array<double>))")
                  .alias("b_live"),
                  _x("aggregate(filter(bl, x -> NOT x.live), 0L, (a, x) -> a + x.replicas)").alias("on_removed"))
          .select("*",
                  # [live weights, every weight with 0 for removed brokers, live bytes] summed as numpy does
                  _x(f"transform(array(w_live, transform(bl, x -> IF(x.live, x.w, 0D)), b_live), "
                     f"sa -> {_pairwise_sum('sa')})").alias("sums"))
          .select("*", F.col("sums")[0].alias("S_live"), F.col("sums")[1].alias("S_all"))
          .select("*",
                  # spread(): values and int(sum) of the live brokers' replicas, leaders and bytes
                  _x("transform(array("
                     "named_struct('v', transform(lv, x -> CAST(x.replicas AS DOUBLE)), "
                     "'t', CAST(aggregate(lv, 0L, (a, x) -> a + x.replicas) AS DOUBLE)), "
                     "named_struct('v', transform(lv, x -> CAST(x.leaders AS DOUBLE)), "
                     "'t', CAST(aggregate(lv, 0L, (a, x) -> a + x.leaders) AS DOUBLE)), "
                     "named_struct('v', b_live, 't', CAST(CAST(sums[2] AS BIGINT) AS DOUBLE))), "
                     f"sp -> {_spread('sp.v', 'w_live', 'sp.t', 'S_live')})").alias("raw"),
                  _x(_intervals("lv", "x.replicas", "R", "S_all")).alias("iv_r"),
                  _x(_intervals("lv", "x.leaders", "P", "S_all")).alias("iv_l")))

    # ---- the counts behind failover and topic balance, as one table of maps per (cluster, kind, key):
    #   F, failed broker f: partitions f leads, by first follower (pair_matrix row M[f, :]);
    #   R, failed rack k: partitions led in k, by their first replica outside k;
    #   T, topic t: its replicas on each live broker (counted from the replica rows).
    # Every live broker has an F row and every live rack (with racks known) an R row, even with no count; those
    # rows alone are kept for F and R (a removed leader, or a rack without live brokers, fails no one). Each
    # cluster has one C row, which carries the cluster's own numbers to the end.
    ev = "named_struct('kind', '{k}', 'key', CAST({key} AS STRING), 'sub', {sub})"
    none = "CAST(NULL AS INT)"
    pair = ev.format(k="F", key="reps[0].broker", sub="reps[1].broker")
    # the new leader when the leader's rack fails: the first replica outside that rack
    heir = _let("try_element_at(filter(reps, x -> x.rack != reps[0].rack), 1).broker", "hr",
                f"IF(hr IS NULL, NULL, {ev.format(k='R', key='reps[0].rack', sub='hr')})")
    events = parts.select("cluster", F.explode(_x(
        f"array(IF(size(reps) < 2, NULL, {pair}), IF(has_racks, {heir}, NULL))")).alias("e"))
    topics = (rb.where("live").groupBy("cluster", "topic", "broker").count()
              .select("cluster", F.lit("T").alias("kind"), F.col("topic").alias("key"), F.col("broker").alias("sub"),
                      "count"))
    present = b.join(racks, "cluster").select("cluster", F.explode(_x(
        f"array({ev.format(k='C', key='NULL', sub=none)}, "
        f"IF(removed, NULL, {ev.format(k='F', key='broker', sub=none)}), "
        f"IF(has_racks AND NOT removed, {ev.format(k='R', key='rid', sub=none)}, NULL))")).alias("e"))
    maps = (events.unionByName(present).where(F.col("e").isNotNull())
            .groupBy("cluster", *[F.col(f"e.{x}").alias(x) for x in ("kind", "key", "sub")]).count()
            .unionByName(topics)
            .groupBy("cluster", "kind", "key")
            .agg(F.map_from_entries(F.collect_list(F.when(F.col("sub").isNotNull(), F.struct("sub", "count"))))
                 .alias("m"),
                 F.sum(F.when(F.col("sub").isNotNull(), F.col("count"))).alias("tot"),
                 F.bool_or(F.col("sub").isNull()).alias("present"))
            .where((F.col("kind") == "T") | F.col("present")))

    # failed broker f: leaders plus M[f, :], over the live brokers other than f (metrics.broker_failover)
    surv_f = "bl[i].live AND bl[i].broker != f"
    # failed rack k: leaders plus the partitions gained, over the live brokers outside k (metrics.rack_failover)
    surv_k = "x.live AND CAST(x.rid AS STRING) != key"
    gained = "CAST(x.leaders + coalesce(try_element_at(m, x.broker), 0L) AS DOUBLE)"
    out = f"y.c < floor(y.q + {_EPS}) - {{s}} OR y.c > ceil(y.q - {_EPS}) + {{s}}"
    tslack = 0 if th.topic_spread is None else th.topic_spread - 1
    topic_spread = _let("transform(tv, y -> y.c - y.q)", "td", "array_max(td) - array_min(td)")
    carry = [c for c in cl.columns if c not in ("cluster", "sums", "w_live", "b_live", "wmin", "wmax")]
    per_key = (maps.join(cl, "cluster")
               .select("cluster", "kind", "key", "m", "tot", "bl", "lv", "live_n", "S_live",
                       _x("IF(kind = 'F', CAST(key AS INT), NULL)").alias("f"),
                       F.when(F.col("kind") == "C", F.struct(*carry)).alias("cres"))
               .select("cluster", "kind", "f", "live_n", "cres",
                       _x(f"CASE kind WHEN 'F' THEN filter(transform(bl, x -> {gained}), (x, i) -> {surv_f}) "
                          f"WHEN 'R' THEN transform(filter(bl, x -> {surv_k}), x -> {gained}) END").alias("va"),
                       _x(f"CASE kind WHEN 'F' THEN filter(transform(bl, x -> x.w), (x, i) -> {surv_f}) "
                          f"WHEN 'R' THEN transform(filter(bl, x -> {surv_k}), x -> x.w) END").alias("vw"),
                       # numpy sums the failover weights over every broker, 0 for the non-survivors
                       _x(f"CASE kind WHEN 'F' THEN transform(bl, (x, i) -> IF({surv_f}, x.w, 0D)) "
                          f"WHEN 'R' THEN transform(filter(bl, x -> {surv_k}), x -> x.w) END").alias("ws"),
                       _x("IF(kind = 'T', transform(lv, x -> named_struct('c', coalesce(try_element_at(m, x.broker), "
                          "0L), 'q', CAST(tot AS DOUBLE) * (x.w / S_live))), NULL)").alias("tv"))
               .select("cluster", "kind", "f", "live_n", "cres", "va", "vw", "tv",
                       _x(f"IF(kind IN ('F', 'R'), {_pairwise_sum('ws')}, NULL)").alias("S"),
                       # the failover totals: exact integer sums (R: int() of them, as spread() does)
                       _x("IF(kind IN ('F', 'R'), aggregate(va, 0D, (a, x) -> a + x), NULL)").alias("tot"))
               .select("cluster", "kind", "f", "cres",
                       _x(f"CASE kind WHEN 'T' THEN {topic_spread} "
                          f"WHEN 'F' THEN IF(live_n < 2, 0D, {_spread('va', 'vw', 'tot', 'S')}) "
                          f"WHEN 'R' THEN {_spread('va', 'vw', 'CAST(CAST(tot AS BIGINT) AS DOUBLE)', 'S')} END")
                       .alias("raw"),
                       _x("IF(kind = 'F', IF(live_n < 2, 0L, CAST(array_min(va) AS BIGINT)), NULL)").alias("fmin"),
                       _x("IF(kind = 'F', IF(live_n < 2, 0L, CAST(array_max(va) AS BIGINT)), NULL)").alias("fmax"),
                       _x(f"kind = 'T' AND exists(tv, y -> {out.format(s=0)})").alias("bad"),
                       _x(f"kind = 'T' AND exists(tv, y -> {out.format(s=tslack)})").alias("bad_check")))
    is_f, is_t = F.col("kind") == "F", F.col("kind") == "T"
    agg = per_key.groupBy("cluster").agg(
        F.first("cres", ignorenulls=True).alias("cres"),
        F.max(F.when(is_f, F.col("raw"))).alias("fw_raw"),
        # numpy argmax: the largest raw spread, ties to the first (smallest) broker id
        F.max_by(F.when(is_f, F.col("f")), F.when(is_f, F.struct(F.col("raw"), -F.col("f"))))
        .alias("failover_worst_broker"),
        # max of the cleaned rack spreads = cleaned max (the rounding is monotone)
        F.max(F.when(F.col("kind") == "R", F.col("raw"))).alias("rw_raw"),
        F.max(F.when(is_t, F.col("raw"))).alias("ts_raw"),
        F.count_if("bad").alias("unbalanced_topics"),
        F.count_if("bad_check").alias("unbalanced_check"),
        F.map_from_entries(F.collect_list(F.when(is_f, F.struct("f", F.struct("raw", "fmin", "fmax")))))
        .alias("fmap"))

    # ---- the cluster numbers
    c = (agg.select("cluster", "cres.*", "fw_raw", "failover_worst_broker", "rw_raw", "unbalanced_topics",
                    "unbalanced_check", "fmap", F.coalesce("ts_raw", F.lit(0.0)).alias("ts_raw"))
         .select("*", _x(_clean_all(["raw[0]", "raw[1]", "IF(has_sizes, raw[2], NULL)", "ts_raw",
                                     "coalesce(fw_raw, 0D)", "rw_raw"])).alias("cleaned"))
         .select("*", *[F.col("cleaned")[i].alias(name) for i, name in enumerate(
             ["replica_spread", "leader_spread", "bytes_spread", "topic_spread", "failover_worst_spread",
              "rack_failover_worst_spread"])],
                 # targets.min_arrivals: targets clipped into the intervals, plus what they fall short of R
                 _x(_let("transform(iv_r, y -> named_struct('c', y.c, 't', least(greatest(y.c, y.lo), y.hi)))", "ct",
                         "aggregate(ct, 0L, (a, y) -> a + greatest(y.t - y.c, 0L)) "
                         "+ greatest(R - aggregate(ct, 0L, (a, y) -> a + y.t), 0L)")).alias("min_moves")))
    checks = [
        _meets("weighted", "iv_r", "replica_spread", th.replica_spread),
        _meets("weighted", "iv_l", "leader_spread", th.leader_spread),
        "rack_violations = 0",
        "on_removed = 0",
    ]
    if th.topic_spread is not None:
        checks.append(f"IF(weighted, unbalanced_check = 0, topic_spread <= {th.topic_spread} + {_EPS})")
    if th.failover_spread is not None:
        checks.append(f"failover_worst_spread <= {th.failover_spread} + {_EPS}")
    return c.select("*", _x(" AND ".join(f"({x})" for x in checks)).alias("balanced")), parts
