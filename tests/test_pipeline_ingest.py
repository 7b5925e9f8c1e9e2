"""Tables input: the Spark SQL pre-check that clears clusters without a Python pass (on real Spark)."""
from __future__ import annotations

import pandas as pd

from flowbalance.generate import generate_cluster
from flowbalance.pipeline import rows
from flowbalance.pipeline.ingest import _suspects


def _fleet() -> dict[str, dict[str, pd.DataFrame]]:
    """Clusters as rows: valid ones, and one per way ``rows_state`` refuses rows."""
    def cluster(name: str, seed: int, racks: int = 0) -> dict[str, pd.DataFrame]:
        st = generate_cluster(brokers=6, racks=racks, topics=3, partitions=(2, 5), rf=3, sizes=True, seed=seed)
        return rows.state_rows(name, st)

    f = {f"ok{i}": cluster(f"ok{i}", i, racks=2 * (i % 2)) for i in range(4)}
    kinds = ["no-brokers", "no-replicas", "broker-twice", "some-racks", "position-gap", "position-twice",
             "position-high", "replica-twice", "unknown-broker", "sizes-only"]
    bad = {k: cluster(k, 10 + i, racks=2) for i, k in enumerate(kinds)}
    bad["no-brokers"]["brokers"] = bad["no-brokers"]["brokers"].iloc[:0]
    bad["no-replicas"]["replicas"] = bad["no-replicas"]["replicas"].iloc[:0]
    b = bad["broker-twice"]["brokers"]
    bad["broker-twice"]["brokers"] = pd.concat([b, b.iloc[:1]], ignore_index=True)
    bad["some-racks"]["brokers"].loc[0, "rack"] = None
    r = bad["position-gap"]["replicas"]
    r.loc[r.position == 2, "position"] = 3
    r = bad["position-twice"]["replicas"]
    r.loc[r.index[r.position == 2][:1], "position"] = 1
    r = bad["position-high"]["replicas"]
    r.loc[r.index[r.position == 2][:1], "position"] = 64  # beyond one bit per position
    r = bad["replica-twice"]["replicas"]
    first = r.index[r.position == 1][0]
    r.loc[first, "broker"] = r.loc[first - 1, "broker"]
    r = bad["unknown-broker"]["replicas"]
    r.loc[r.index[0], "broker"] = 999
    bad["sizes-only"]["brokers"] = bad["sizes-only"]["brokers"].iloc[:0]
    bad["sizes-only"]["replicas"] = bad["sizes-only"]["replicas"].iloc[:0]
    return {**f, **bad}


def test_suspects_hold_every_cluster_rows_state_refuses_and_no_valid_one(spark):
    fleet = _fleet()
    refused = set()
    for name, t in fleet.items():
        try:
            rows.rows_state(t["brokers"], t["replicas"], t["sizes"])
        except ValueError:
            refused.add(name)
    assert refused == {n for n in fleet if not n.startswith("ok")}
    frames = {k: spark.createDataFrame(pd.concat([t[k] for t in fleet.values()], ignore_index=True), schema=ddl)
              for k, ddl in (("brokers", rows.BROKERS), ("replicas", rows.REPLICAS), ("sizes", rows.SIZES))}
    assert _suspects(frames["brokers"], frames["replicas"], frames["sizes"]) == sorted(refused)
