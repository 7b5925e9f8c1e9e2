"""Interrupts: Ctrl-C (SIGINT) ends in ``flowbalance: interrupted`` and exit 130, SIGTERM in ``flowbalance:
terminated`` and exit 143; never a traceback, never a ``.flowbalance-*.tmp`` left behind, never a partial file
under an output's final name.

Real signals are sent to real processes: one whose fsync is slowed (so the signal lands while a temporary file
exists, found by polling the folder), and one planning a generated cluster large enough to be interrupted.
In-process tests raise the interrupt from inside the write to check every file of a multi-file write.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from flowbalance.formats import writers
from flowbalance_cli.app import Terminated

from .conftest import ROOT, TESTDATA

K = TESTDATA / "kafka"
EXPECTED = {signal.SIGINT: (130, "flowbalance: interrupted"), signal.SIGTERM: (143, "flowbalance: terminated")}

# the CLI with os.fsync slowed down: a write stays in its temporary file long enough to be interrupted
SLOW_FSYNC = (
    "import os, sys, time\n"
    "real = os.fsync\n"
    "def slow(fd):\n"
    "    time.sleep(60)\n"
    "    real(fd)\n"
    "os.fsync = slow\n"
    "from flowbalance_cli.app import main\n"
    "main(sys.argv[1:])\n"
)


def _temps(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".flowbalance-") and p.name.endswith(".tmp"))


def _spawn(args: list[str]) -> subprocess.Popen:
    """A child with the ordinary SIGINT disposition (a test run started in the background inherits it ignored)."""
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for(cond, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the process ended before the signal (exit {proc.returncode}): {err}")
        if time.monotonic() > end:
            proc.kill()
            pytest.fail("timed out waiting for the process")
        time.sleep(0.02)


def _assert_one_line(proc: subprocess.Popen, sig: int) -> None:
    out, err = proc.communicate(timeout=60)
    code, line = EXPECTED[sig]
    assert proc.returncode == code, (proc.returncode, err)
    assert err == line + "\n", err
    assert "Traceback" not in out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_during_a_write_removes_the_temporary_files(tmp_path, sig):
    out = tmp_path / "cluster"
    proc = _spawn([sys.executable, "-c", SLOW_FSYNC, "generate", "--brokers", "6", "--topics", "20",
                   "--formats", "json,brokers,describe", "-o", str(out)])
    _wait_for(lambda: out.is_dir() and _temps(out), proc)
    proc.send_signal(sig)
    _assert_one_line(proc, sig)
    assert list(out.iterdir()) == [], "no temporary file and no output under its final name"


def _big_cluster(tmp_path_factory):
    folder = tmp_path_factory.mktemp("big")
    res = subprocess.run([sys.executable, "-m", "flowbalance_cli", "generate", "--brokers", "200", "--racks", "4",
                          "--topics", "2000", "--partitions", "30", "--skew", "0.3", "-o", str(folder)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stderr
    return folder


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    return _big_cluster(tmp_path_factory)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process (Linux ``/proc``); 0 when it cannot be read."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_while_planning_a_large_cluster(tmp_path, big, sig):
    """Planning 180,000 replicas takes seconds: the signal arrives mid-plan, once the process has used more CPU
    than its start-up and the reading of its input take (wall time would depend on the machine's load).

    ``--per-topic strict``: a signal is handled when the running flow solve returns (OR-Tools holds the
    interpreter), and the default's stage-1 solve on this cluster can take most of a minute on a loaded machine."""
    out = tmp_path / "plan.json"
    proc = _spawn([sys.executable, "-m", "flowbalance_cli", "plan", str(big / "assignment.json"), "--brokers",
                   str(big / "brokers.csv"), "--remove", "3", "--per-topic", "strict", "-o", str(out),
                   "--rollback", str(tmp_path / "rb.json")])
    _wait_for(lambda: _cpu_seconds(proc.pid) > 3.0, proc, timeout=120)
    assert proc.poll() is None, "the plan finished before the signal: use a larger cluster"
    proc.send_signal(sig)
    _assert_one_line(proc, sig)
    assert list(tmp_path.iterdir()) == []
    assert _still_running(str(out)) == [], "a forked child outlived the plan"


def _still_running(marker: str, wait: float = 5.0) -> list[int]:
    """Processes whose command line names ``marker`` (a forked child has its parent's), after up to ``wait``
    seconds for them to end."""
    deadline = time.monotonic() + wait
    while True:
        found = []
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmd and pid != os.getpid():
                found.append(pid)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_a_stop_signal_ends_a_forked_child_without_the_callers_handler(tmp_path):
    """The second core's child (``flowbalance.forked``) dies at once on SIGTERM: the caller's Python handler
    (here one that leaves a file; the CLI's would clean up and report) never runs in it, and the caller gets
    ForkFailed (then runs the call itself)."""
    from flowbalance.forked import Forked, ForkFailed

    marker = tmp_path / "handler-ran"
    previous = signal.signal(signal.SIGTERM, lambda *_: marker.write_text(str(os.getpid())))
    try:
        child = Forked(lambda: time.sleep(30))
        time.sleep(0.3)
        os.kill(child.pid, signal.SIGTERM)
        started = time.monotonic()
        with pytest.raises(ForkFailed):
            child.result()
        assert time.monotonic() - started < 10
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert not marker.exists()


# ---- in-process: the interrupt raised from inside a three-file write ---------------------------------------


@pytest.mark.parametrize("exc, code, line", [(KeyboardInterrupt, 130, "flowbalance: interrupted"),
                                             (Terminated, 143, "flowbalance: terminated")])
@pytest.mark.parametrize("at", [1, 2, 3])
def test_interrupt_inside_a_write_leaves_nothing(tmp_path, run_cli, monkeypatch, exc, code, line, at):
    real = os.fsync
    calls = []

    def fsync(fd):
        calls.append(fd)
        if len(calls) == at:
            raise exc()
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    outs = [tmp_path / "plan.json", tmp_path / "rollback.json", tmp_path / "election.json"]
    rc, out, err = run_cli("plan", K / "assignment.json", "--brokers", K / "brokers.csv", "--remove", "2",
                           "-o", outs[0], "--rollback", outs[1], "--election", outs[2])
    assert (rc, err) == (code, line + "\n")
    assert list(tmp_path.iterdir()) == []
    assert not writers._PENDING


def test_handlers_are_restored_after_main(run_cli):
    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    rc, _, _ = run_cli("check", K / "assignment.json", "--json")
    assert rc in (0, 1)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_remove_pending_deletes_tracked_temporaries(tmp_path):
    stray = tmp_path / ".flowbalance-x.tmp"
    stray.write_text("half")
    writers._PENDING.add(str(stray))
    assert writers.remove_pending() == 1
    assert not stray.exists() and not writers._PENDING


def test_ctrl_c_during_a_fleet_run_is_one_line(tmp_path):
    """Spark running: the interrupt lands in a py4j call, which py4j reports through logging; the command still
    ends in its one line, exit 130, and no plan files."""
    pytest.importorskip("pyspark")
    out = tmp_path / "out"
    proc = _spawn([sys.executable, "-m", "flowbalance_cli", "fleet", str(TESTDATA / "fleet"), "-o", str(out)])
    _wait_for(lambda: (out / "spark.log").exists(), proc, timeout=120)
    time.sleep(3)  # into the jobs
    if proc.poll() is not None:
        pytest.skip("the fleet finished before the interrupt")
    proc.send_signal(signal.SIGINT)
    _assert_one_line(proc, signal.SIGINT)
    assert not list(out.glob("*/plan.json"))
