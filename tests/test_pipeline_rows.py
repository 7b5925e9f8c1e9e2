"""The fleet's planning input: one row per partition (its replicas as an array) makes the very state that the
replica rows make (``rows.parts_state`` against ``rows.rows_state``), refuses what they refuse with the same
reason, and a planning task's Arrow batches give each cluster the PLANNED row ``plan_cluster`` gives on the long
rows (no Spark here: the task function on batches built by hand)."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowbalance.generate import generate_cluster
from flowbalance.pipeline import fleetplan, rows
from flowbalance.pipeline.ingest import LONG_COLUMNS, _long


def _cluster(seed: int, racks: int, sized: float, removed: bool, weights: bool):
    state = generate_cluster(brokers=8, racks=racks, rack_aware=racks >= 3, topics=4, partitions=(1, 9),
                             rf=3, sizes=sized > 0, seed=seed)
    t = rows.state_rows("c", state)
    rng = np.random.default_rng(seed)
    if sized:  # some partitions without a size row
        t["sizes"] = t["sizes"][rng.random(len(t["sizes"])) < sized].reset_index(drop=True)
    if removed:
        t["brokers"].loc[0, "state"] = "removed"
    if weights:
        t["brokers"]["weight"] = rng.choice([0.5, 1.0, 2.0], len(t["brokers"]))
    # any row order
    return {k: v.sample(frac=1.0, random_state=seed).reset_index(drop=True) for k, v in t.items()}


def _parts(t: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One row per partition, built here from the replica rows: topic, partition, brokers by position, size."""
    r = t["replicas"].sort_values(["topic", "partition", "position"])
    parts = (r.groupby(["topic", "partition"], sort=False)["broker"].agg(list).reset_index()
             .rename(columns={"broker": "replicas"}))
    size = t["sizes"].groupby(["topic", "partition"])["bytes"].max()
    parts["bytes"] = [int(size.get((a, b), -1)) for a, b in zip(parts.topic, parts.partition)]
    return parts.sample(frac=1.0, random_state=1).reset_index(drop=True)


def _from_parts(brokers: pd.DataFrame, parts: pd.DataFrame, lead: int = 0):
    """``parts_state`` through an Arrow list array, sliced ``lead`` rows in (offsets not starting at 0)."""
    pad = [[0]] * lead
    arr = pa.array(pad + [list(map(int, x)) for x in parts.replicas], type=pa.list_(pa.int32())).slice(lead)
    return rows.parts_state(brokers, parts.topic.to_numpy(dtype=object), parts.partition.to_numpy(),
                            arr.offsets.to_numpy(), arr.values.to_numpy(), parts.bytes.to_numpy())


def _same_state(a, b) -> None:
    assert a.topics == b.topics
    for f in ("topic", "partition", "replicas", "size"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    for f in ("ids", "rack", "weight", "capacity", "removed"):
        assert np.array_equal(getattr(a.brokers, f), getattr(b.brokers, f)), f
    assert a.brokers.rack_names == b.brokers.rack_names and a.had_log_dirs == b.had_log_dirs


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([0, 2, 3]), st.sampled_from([0.0, 0.6, 1.0]), st.booleans(),
       st.booleans(), st.integers(0, 3))
def test_one_row_per_partition_makes_the_state_the_replica_rows_make(seed, racks, sized, removed, weights, lead):
    t = _cluster(seed, racks, sized, removed, weights)
    _same_state(_from_parts(t["brokers"], _parts(t), lead), rows.rows_state(t["brokers"], t["replicas"], t["sizes"]))


def test_it_refuses_what_the_replica_rows_refuse_with_the_same_reason():
    t = _cluster(3, 2, 1.0, False, False)
    parts = _parts(t)
    twice = parts.copy()
    twice.at[0, "replicas"] = [twice.replicas[0][0]] * 2 + twice.replicas[0][2:]
    unknown = parts.copy()
    unknown.at[1, "replicas"] = [999] + unknown.replicas[1][1:]
    for bad in (twice, unknown):
        rep = pd.DataFrame([(a, b, i, x) for a, b, xs in zip(bad.topic, bad.partition, bad.replicas)
                            for i, x in enumerate(xs)], columns=["topic", "partition", "position", "broker"])
        with pytest.raises(ValueError) as want:
            rows.rows_state(t["brokers"], rep, t["sizes"])
        with pytest.raises(ValueError) as got:
            _from_parts(t["brokers"], bad)
        assert str(got.value) == str(want.value)
    with pytest.raises(ValueError, match="no replicas"):
        _from_parts(t["brokers"], parts.iloc[:0])


def _plan_input(name: str, t: dict[str, pd.DataFrame], request: dict, rank: int) -> pa.RecordBatch:
    """A cluster's PLAN_INPUT rows as a planning task gets them (with ``_rank``)."""
    parts = _parts(t)
    frames = [t["brokers"].assign(kind="brokers"),
              parts.assign(kind="parts", bytes=parts.bytes.where(parts.bytes >= 0, None)),
              pd.DataFrame({"kind": ["clusters"], "had_log_dirs": [False], "request": [json.dumps(request)]})]
    df = pd.concat(frames, ignore_index=True).assign(cluster=name, _rank=rank)
    cols = {c: df[c] if c in df else None for c in fleetplan.PLAN_INPUT_COLUMNS}
    types = {"string": pa.string(), "int": pa.int32(), "array<int>": pa.list_(pa.int32()), "double": pa.float64(),
             "long": pa.int64(), "boolean": pa.bool_()}
    schema = pa.schema([(c.strip().split(" ")[0], types[c.strip().split(" ")[1]])
                        for c in (fleetplan.PLAN_INPUT + ", _rank int").split(",")])
    data = {c: (cols[c].tolist() if cols[c] is not None else [None] * len(df)) for c in fleetplan.PLAN_INPUT_COLUMNS}
    data["_rank"] = df["_rank"].tolist()
    data = {k: [None if x is pd.NA or (isinstance(x, float) and np.isnan(x)) else x for x in v] for k, v in data.items()}
    return pa.RecordBatch.from_pydict(data, schema=schema)


def test_a_planning_task_gives_each_cluster_the_row_plan_cluster_gives():
    fleet = {"b": (_cluster(5, 0, 1.0, False, False), {"remove": [1]}), "a": (_cluster(6, 2, 0.6, True, True), {}),
             "c": (_cluster(7, 3, 0.0, False, False), {"replication_factor": 2})}
    batches = [_plan_input(n, t, req, rank) for rank, (n, (t, req)) in enumerate(fleet.items())]
    # rows of one cluster may come in several batches, mixed with others'
    mixed = pa.Table.from_batches(batches)
    mixed = mixed.take(np.random.default_rng(0).permutation(mixed.num_rows)).to_batches(max_chunksize=7)
    got = list(fleetplan.plan_batches(mixed))
    assert [g["cluster"].iloc[0] for g in got] == list(fleet)  # in _rank order
    for g, (name, (t, req)) in zip(got, fleet.items()):
        long = pd.concat([_long(k, t[k].assign(cluster=name)) for k in ("brokers", "replicas", "sizes")]
                         + [_long("clusters", pd.DataFrame({"cluster": [name], "had_log_dirs": [False],
                                                             "request": [json.dumps(req)]}))], ignore_index=True)
        want = fleetplan.plan_cluster(long[LONG_COLUMNS])
        g, want = g.iloc[0].to_dict(), want.iloc[0].to_dict()
        for d in (g, want):  # the sidecar's creation time is the only field that may differ
            d["meta_json"] = re.sub(r'"created":"[^"]*"', "", d["meta_json"] or "")
        assert g["ok"] and want["ok"], (g["reason"], want["reason"])
        for k in fleetplan.PLANNED_COLUMNS:
            if k != "seconds":
                assert g[k] == want[k] or (pd.isna(g[k]) and pd.isna(want[k])), k
