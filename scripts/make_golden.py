"""Write the golden files of ``tests/golden_cases.py``: for each case, build its inputs in a temporary folder,
run ``flowbalance plan`` in-process, and copy the plan, rollback and election files (with the sha256 of the
inputs) to ``testdata/golden/<case>/``.

``--src DIR`` imports ``flowbalance`` and the CLI (``DIR/cli`` as ``flowbalance_cli``) from another checkout,
for example a ``git worktree`` of the commit whose behaviour is frozen, while the cases and the testdata files
they copy come from this checkout:

    git worktree add /tmp/golden-src 997e437
    .venv/bin/python scripts/make_golden.py --src /tmp/golden-src
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def use_checkout(src: Path) -> None:
    """Make ``import flowbalance`` / ``import flowbalance_cli`` load ``src``'s code (ahead of the editable
    install, which maps both to the main checkout), and fail if they do not."""
    sys.path.insert(0, str(src))
    spec = importlib.util.spec_from_file_location("flowbalance_cli", src / "cli" / "__init__.py",
                                                  submodule_search_locations=[str(src / "cli")])
    module = importlib.util.module_from_spec(spec)
    sys.modules["flowbalance_cli"] = module
    spec.loader.exec_module(module)
    import flowbalance
    import flowbalance_cli.app

    for mod in (flowbalance, flowbalance_cli.app):
        if not Path(mod.__file__).resolve().is_relative_to(src.resolve()):
            raise SystemExit(f"{mod.__name__} was imported from {mod.__file__}, not from {src}")


def load_cases():
    """``tests/golden_cases.py`` of this checkout, by path (``--src`` may have a ``tests`` package of its own)."""
    spec = importlib.util.spec_from_file_location("golden_cases", ROOT / "tests" / "golden_cases.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["golden_cases"] = module
    spec.loader.exec_module(module)
    return module


def run_cli(argv: list[str]) -> tuple[int, str]:
    """``flowbalance ARGV`` in-process: (exit code, stderr)."""
    from flowbalance_cli.app import main

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            main(argv)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return code, err.getvalue()


def make_case(gc, case, out: Path) -> None:
    """Run one case in a fresh folder and copy its outputs and input hashes to ``out/<case>/``."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix=f"golden-{case.name}-") as tmp:
        folder = Path(tmp)
        os.chdir(folder)
        try:
            gc.build_inputs(case, folder, ROOT / "testdata", lambda argv: run_cli(argv)[0])
            hashes = gc.input_hashes(case, folder)
            code, err = run_cli(gc.plan_argv(case))
        finally:
            os.chdir(here)
        if code != 0:
            raise SystemExit(f"{case.name}: flowbalance {' '.join(gc.plan_argv(case))} exited {code}: {err.strip()}")
        target = out / case.name
        target.mkdir(parents=True, exist_ok=True)
        for name in gc.OUTPUTS:
            shutil.copyfile(folder / name, target / name)
        (target / gc.INPUTS_RECORD).write_text(hashes, encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, help="Checkout to import flowbalance and its CLI from (default: installed).")
    ap.add_argument("--out", type=Path, default=ROOT / "testdata" / "golden", help="Folder of the golden files.")
    ap.add_argument("cases", nargs="*", help="Case names (default: all; the folder is then rewritten).")
    args = ap.parse_args(argv)
    if args.src is not None:
        use_checkout(args.src)
    gc = load_cases()
    cases = [c for c in gc.CASES if not args.cases or c.name in args.cases]
    unknown = set(args.cases) - {c.name for c in cases}
    if unknown:
        raise SystemExit(f"unknown cases: {', '.join(sorted(unknown))}")
    out = args.out.resolve()
    if not args.cases and out.exists():
        shutil.rmtree(out)
    import flowbalance

    print(f"flowbalance from {Path(flowbalance.__file__).parent}")
    for case in cases:
        make_case(gc, case, out)
        print(f"  {case.name}")
    print(f"{len(cases)} cases in {out}")


if __name__ == "__main__":
    main()
