"""``benchmarks/fleet_floor.py``: its Spark step really runs (a fresh JVM in a child process, as the benchmark starts
it) on a small snapshot laid out as the fleet benchmark's, and its CPU seconds include the JVM's."""
import json
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.fleet_floor import floor_seconds, tree_cpu
from flowbalance.generate import generate_cluster
from flowbalance.pipeline.rows import state_rows

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("pyspark")


def _snapshot(tmp: Path) -> Path:
    """Two generated clusters as brokers / replicas / sizes tables and a metrics folder (Spark's own layout)."""
    parts: dict[str, list] = {"brokers": [], "replicas": [], "sizes": []}
    metrics = []
    t0 = datetime(2026, 11, 1)
    for i, name in enumerate(("a", "b")):
        st = generate_cluster(brokers=6, topics=3, partitions=(4, 8), rf=3, sizes=True, seed=40 + i)
        for k, v in state_rows(name, st).items():
            parts[k].append(v)
        for p in range(st.num_partitions):
            for h in range(3):
                metrics.append((name, st.topics[st.topic[p]], int(st.partition[p]), t0 + timedelta(hours=h),
                                float(10 * p + h), float(h)))
    for k, v in parts.items():
        pd.concat(v, ignore_index=True).to_parquet(tmp / f"{k}.parquet", index=False)
    (tmp / "metrics").mkdir()
    pd.DataFrame(metrics, columns=["cluster", "topic", "partition", "timestamp", "bytes_in", "bytes_out"]).to_parquet(
        tmp / "metrics" / "part-0.parquet", index=False, coerce_timestamps="us")
    return tmp


def test_spark_step_times_each_step_with_the_jvm(tmp_path):
    snap = _snapshot(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "benchmarks.fleet_floor", str(snap), "local[1]"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    steps = json.loads(proc.stdout.strip().splitlines()[-1])
    assert list(steps) == ["start", "weights", "tables"]
    assert all(wall > 0 and cpu > 0 for wall, cpu in steps.values())
    # starting Spark is mostly the JVM's work: a Python process alone starts in well under a CPU second
    assert steps["start"][1] > 1.0


def test_tree_cpu_counts_a_busy_child(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 0.6: pass\ninput()"],
                             stdin=subprocess.PIPE, text=True)
    try:
        import os
        import time

        before = tree_cpu(os.getpid())
        deadline = time.time() + 20
        while tree_cpu(child.pid) < 0.5 and time.time() < deadline:
            time.sleep(0.05)
        assert tree_cpu(child.pid) >= 0.5
        assert tree_cpu(os.getpid()) - before >= 0.4  # the child is in this process's tree
    finally:
        child.communicate("\n", timeout=20)


def test_floor_is_the_work_over_the_cores():
    assert floor_seconds(40.0, 100.0, 2) == 70.0
    assert np.isclose(floor_seconds(0.0, 3.0, 3), 1.0)
