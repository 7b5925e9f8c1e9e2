"""``flowbalance plan`` writes, for every case of ``tests/golden_cases.py``, the same plan, rollback and election
files byte for byte as the planner did when the goldens were made (``scripts/make_golden.py``, at 997e437).

A failure means the planner's output changed: intended changes regenerate the goldens (and say why in the
commit); a changed input file (generator or testdata) fails first, on its own message."""
from __future__ import annotations

import difflib
import pytest

from .conftest import ROOT, TESTDATA
from .golden_cases import CASES, INPUTS_RECORD, OUTPUTS, build_inputs, input_hashes, plan_argv

GOLDEN = ROOT / "testdata" / "golden"


def test_every_case_has_its_goldens_and_nothing_else():
    names = sorted(c.name for c in CASES)
    assert len(set(names)) == len(names), "two cases share a name"
    assert sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()) == names
    for name in names:
        assert sorted(p.name for p in (GOLDEN / name).iterdir()) == sorted((*OUTPUTS, INPUTS_RECORD)), name


def _diff(got: bytes, want: bytes, name: str) -> str:
    """The first lines of a unified diff golden -> got, for the failure message."""
    lines = difflib.unified_diff(want.decode(errors="replace").splitlines(), got.decode(errors="replace").splitlines(),
                                 f"golden/{name}", f"now/{name}", lineterm="", n=1)
    return "\n".join(list(lines)[:40])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_plan_matches_golden(case, tmp_path, monkeypatch, run_cli):
    monkeypatch.chdir(tmp_path)
    build_inputs(case, tmp_path, TESTDATA, lambda argv: run_cli(*argv)[0])
    golden = GOLDEN / case.name
    assert input_hashes(case, tmp_path) == (golden / INPUTS_RECORD).read_text(encoding="utf-8"), \
        "the case's inputs changed (testdata file or `flowbalance generate`), not the planner's output"
    code, _, err = run_cli(*plan_argv(case))
    assert code == 0, err
    for name in OUTPUTS:
        got, want = (tmp_path / name).read_bytes(), (golden / name).read_bytes()
        assert got == want, f"{name} differs from the golden:\n{_diff(got, want, name)}"

