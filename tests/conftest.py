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


# Spark settings for the tests' shared session: the fleets in tests are a few small clusters, for which one shuffle
# partition and no adaptive re-planning take about half the time of the defaults (same results: the standalone and
# spark-submit tests run with the defaults and compare their outputs with the shared session's).
SPARK_TEST_CONF = {"spark.sql.shuffle.partitions": "1", "spark.sql.adaptive.enabled": "false"}
# JVM options for the JVMs the tests start: a test's JVM lives for a few small jobs, for which the C2 compiler's
# threads cost about a third of the CPU (measured: a cold `flowbalance fleet` run 43 -> 31 CPU-seconds, same wall
# time); C1 alone needs a larger code cache than its 48 MB default, or it stops compiling half-way.
FAST_JVM = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"


def fast_jvm_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a subprocess whose Spark driver JVM (spark-submit's ``SPARK_SUBMIT_OPTS``) and standalone master or
    worker (``SPARK_DAEMON_JAVA_OPTS``) start with ``FAST_JVM``; the command line under test stays as it is."""
    return dict(env, SPARK_SUBMIT_OPTS=f"{env.get('SPARK_SUBMIT_OPTS', '')} {FAST_JVM}".strip(),
                SPARK_DAEMON_JAVA_OPTS=f"{env.get('SPARK_DAEMON_JAVA_OPTS', '')} {FAST_JVM}".strip())


@pytest.fixture(scope="session")
def spark():
    """One real local Spark session per test process (Java 17 and the ``spark`` extra are required); under
    pytest-xdist one per worker. An in-process ``flowbalance fleet`` run reuses it (``session.start`` returns the
    running session)."""
    from flowbalance.pipeline.session import driver_java_options, start

    java = f"{driver_java_options(True)} {FAST_JVM}"  # start's own options (quiet log4j, the collector), FAST_JVM
    s = start("local[2]", app="flowbalance-tests", shuffle_partitions=1,
              conf={"spark.ui.enabled": "false", "spark.driver.extraJavaOptions": java, **SPARK_TEST_CONF})
    yield s
    s.stop()


def restore_spark_conf(spark) -> None:
    """Put the test settings back on the shared session: ``session.start`` (called by an in-process ``flowbalance
    fleet``) sets its own shuffle partitions on the running session."""
    for key, value in SPARK_TEST_CONF.items():
        spark.conf.set(key, value)
