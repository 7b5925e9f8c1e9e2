"""The docs name every command, and the commands they show parse."""
from __future__ import annotations

import re
import shlex

from flowbalance_cli.app import app

from .conftest import ROOT


def _names():
    return sorted(c.name for c in app.registered_commands)


def test_every_command_has_a_section_with_its_help():
    text = (ROOT / "docs" / "commands.md").read_text()
    for name in _names():
        assert f"## `flowbalance {name}`" in text, name
        assert f"Usage: flowbalance {name} " in text, name


def test_every_flag_in_the_quickstart_and_workflow_exists(run_cli):
    seen = 0
    for doc in ("quickstart.md", "workflow.md"):
        text = (ROOT / "docs" / doc).read_text().replace("\\\n", " ")
        blocks = "\n".join(re.findall(r"```sh\n(.*?)```", text, flags=re.S))  # the shell examples only
        for line in re.findall(r"^\s*(flowbalance \w+ .*)$", blocks, flags=re.M):
            words = shlex.split(line.split("#")[0].replace("$BOOTSTRAP", "b:9092"))
            cmd = words[1]
            seen += 1
            code, out, _ = run_cli(cmd, "--help")
            assert code == 0
            for w in words[2:]:
                if w.startswith("--"):
                    assert w.split("=")[0] in out, (doc, cmd, w)
    assert seen >= 8  # the examples were found


def test_help_blocks_in_commands_md_are_the_commands_help():
    """commands.md shows each command's --help as printed at 80 columns: it may not drift from the code."""
    import os
    import subprocess
    import sys

    text = (ROOT / "docs" / "commands.md").read_text()
    env = dict(os.environ, COLUMNS="80", TERM="dumb", NO_COLOR="1")
    env.pop("FORCE_COLOR", None)
    for name in _names():
        got = subprocess.run([sys.executable, "-m", "flowbalance_cli", name, "--help"], capture_output=True,
                             text=True, env=env, cwd=ROOT).stdout.rstrip() + "\n"
        block = re.search(r"```\n(Usage: flowbalance " + name + r" .*?)```", text, flags=re.S)
        assert block is not None, name
        assert block.group(1) == got.replace("Usage: python -m flowbalance_cli", "Usage: flowbalance"), name


def test_readme_library_example_runs_and_prints_what_it_says(capsys, monkeypatch):
    """The README's Python block runs as shown, and each ``print(...)  # text`` prints that text."""
    monkeypatch.chdir(ROOT)
    block = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    assert block is not None
    code = block.group(1)
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - our own documentation
    printed = capsys.readouterr().out.splitlines()
    said = [m.group(1) for m in re.finditer(r"^print\(.*\)\s+# (.*)$", code, flags=re.M)]
    assert said and printed == said


def test_every_package_is_in_pyproject():
    """A wheel holds only the packages pyproject.toml lists: every folder with an __init__.py must be there."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "flowbalance").rglob("__init__.py")}
    found |= {"flowbalance_cli"} if (ROOT / "cli" / "__init__.py").exists() else set()
    assert found <= listed, sorted(found - listed)
