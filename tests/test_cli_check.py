"""``flowbalance check``: the seed example, exit codes, JSON output, help and version."""
from __future__ import annotations

import json
import subprocess
import sys

from .conftest import TESTDATA

SEED = TESTDATA / "seed"
K = TESTDATA / "kafka"


def test_seed_remove_19_reports_m_star_1(run_cli):
    code, out, err = run_cli("check", SEED / "assignment.json", "--brokers", SEED / "brokers.csv", "--remove", "19", "--json")
    assert code == 1, err
    data = json.loads(out)
    assert data["min_moves"] == 1
    assert data["replicas"]["on_removed_brokers"] == 1
    assert data["cluster"]["removed_brokers"] == [19]
    assert data["rack_violations"]["count"] == 0
    assert data["balanced"] is False
    assert data["checks"]["removed_brokers_empty"] is False


def test_seed_without_removal_is_balanced_for_replicas(run_cli):
    code, out, err = run_cli("check", SEED / "assignment.json", "--brokers", SEED / "brokers.csv", "--json")
    data = json.loads(out)
    assert data["min_moves"] == 0
    assert data["checks"]["replicas"] and data["checks"]["topics"] and data["checks"]["racks"]
    # 10 leaders over 20 brokers: each broker leads 0 or 1 -> spread 1, passes
    assert data["leaders"]["spread"] == 1 and data["checks"]["leaders"]
    assert code == 0


def test_failover_threshold_changes_exit_code(run_cli):
    args = ["check", SEED / "assignment.json", "--brokers", SEED / "brokers.csv"]
    assert run_cli(*args, "--max-failover-spread", "1")[0] == 0
    code, out, err = run_cli(*args, "--max-failover-spread", "0")
    assert code == 1 and "failover" in out


def test_terminal_table_mentions_every_metric(run_cli):
    code, out, err = run_cli("check", K / "assignment.json", "--brokers", K / "brokers.json", "--sizes", K / "logdirs.txt")
    assert code in (0, 1)
    for word in ("replicas per broker", "per-topic spread", "leaders per broker", "bytes per broker",
                 "failover, one broker down", "failover, one rack down", "rack violations", "M*"):
        assert word in out, word
    assert "\x1b[" not in out  # plain text when not on a terminal


def test_json_is_deterministic_and_lists_every_broker(run_cli):
    args = ("check", K / "describe.txt", "--brokers", K / "brokers.csv", "--sizes", K / "logdirs.txt", "--json")
    first = run_cli(*args)[1]
    second = run_cli(*args)[1]
    assert first == second
    data = json.loads(first)
    assert [r["broker"] for r in data["per_broker"]] == [1, 2, 3, 4, 5, 6]
    assert data["bytes"] is not None and data["cluster"]["sizes_known"]
    assert len(data["failover"]["table"]) == 6
    assert {r["failed"] for r in data["rack_failover"]["table"]} == {"us-east-1a", "us-east-1b", "us-east-1c"}


def test_help_and_version_on_every_command(run_cli):
    code, out, _ = run_cli("--version")
    assert code == 0 and out.startswith("flowbalance ")
    for cmd in ("check", "generate"):
        code, out, _ = run_cli(cmd, "--help")
        assert code == 0 and "--help" in out
    code, out, _ = run_cli("--help")
    assert code == 0 and "check" in out and "generate" in out


def test_console_script_runs_as_a_process():
    exe = [sys.executable, "-m", "flowbalance_cli", "check", str(SEED / "assignment.json"), "--json"]
    proc = subprocess.run(exe, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cluster"]["partitions"] == 10


def test_json_output_matches_the_documented_schema(run_cli):
    import jsonschema

    schema = json.loads((TESTDATA.parent / "docs" / "check.schema.json").read_text())
    for args in (
        ("check", SEED / "assignment.json", "--brokers", SEED / "brokers.csv", "--remove", "19", "--json"),
        ("check", K / "describe.txt", "--brokers", K / "brokers.csv", "--sizes", K / "logdirs.txt", "--json"),
        ("check", K / "assignment.json", "--json"),
    ):
        code, out, err = run_cli(*args)
        jsonschema.validate(json.loads(out), schema)
