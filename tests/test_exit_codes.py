"""Exit codes as docs/commands.md documents them: a plan that fails its own verification is exit 3, one line,
nothing written; the documented table names every code the CLI uses."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import flowbalance.planner as planmod
from flowbalance.verify import PlanVerificationError
from flowbalance_cli.app import main

ROOT = Path(__file__).resolve().parent.parent


def test_failed_verification_is_exit_3_and_writes_nothing(tmp_path, monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise PlanVerificationError("a replica lands on a removed broker")

    monkeypatch.setattr(planmod, "verify_plan", broken)
    out = tmp_path / "plan.json"
    with pytest.raises(SystemExit) as e:
        main(["plan", str(ROOT / "testdata/seed/assignment.json"), "--brokers", str(ROOT / "testdata/seed/brokers.csv"),
              "--remove", "19", "-o", str(out)])
    err = capsys.readouterr().err
    assert e.value.code == 3
    assert err.count("\n") == 1 and err.startswith("flowbalance: internal error:") and "removed broker" in err
    assert "Traceback" not in err and not out.exists() and not list(tmp_path.iterdir())


def test_exit_code_table_is_documented():
    text = (ROOT / "docs/commands.md").read_text()
    table = text[text.index("## Exit codes"):]
    documented = {int(c) for c in re.findall(r"^\| `(\d+)` \|", table, flags=re.M)}
    assert {0, 1, 2, 3, 130, 143} <= documented
