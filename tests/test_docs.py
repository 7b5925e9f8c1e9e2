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
