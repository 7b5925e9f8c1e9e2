"""Shared fixtures: paths to test data and a helper that runs the CLI in-process."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTDATA = ROOT / "testdata"


@pytest.fixture
def run_cli(capsys):
    """Run ``flowbalance ARGS`` in-process; return (exit code, stdout, stderr)."""
    from flowbalance_cli.app import main

    def run(*args: str):
        try:
            main([str(a) for a in args])
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


@pytest.fixture(scope="session")
def spark():
    """One real local Spark session per test process (Java 17 and the ``spark`` extra are required)."""
    from flowbalance.pipeline.session import start

    s = start("local[2]", app="flowbalance-tests", shuffle_partitions=4, conf={"spark.ui.enabled": "false"})
    yield s
    s.stop()
