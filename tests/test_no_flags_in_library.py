"""The library (``flowbalance/``) names parameters and fields in its errors and warnings, never a command-line flag;
the command layer (``flowbalance_cli``) shows its own flag to the user.

Statically: every string (and f-string part) inside a ``raise``, an ``...Error(...)`` call or a
``warnings.append(...)`` under ``flowbalance/`` is searched for a flag (``--name``, or ``-x`` as an error's source);
the flags of Kafka's own tools (``kafka-log-dirs --describe``) are names of inputs, not ours, and are allowed.
Behaviourally: the same bad value gives ``FUNCTION: parameter: ...`` from the library and ``--flag: ...`` (one line,
exit 2) from the command line."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from flowbalance.batches import check_options, split_plan
from flowbalance.errors import InputError
from flowbalance.formats.writers import reassignment_json
from flowbalance.generate import generate_cluster
from flowbalance.model import Brokers, ClusterState

from .conftest import ROOT
from .test_bad_input import assert_one_line

LIBRARY = ROOT / "flowbalance"
LONG_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]*")
SHORT_FLAG = re.compile(r"^-[A-Za-z]$")
KAFKA_TOOL_FLAGS = re.compile(r"kafka-[a-z-]+(?: --[a-z][a-z-]*)+")  # "kafka-topics --describe": Kafka's, not ours

# Flags still named in library messages whose modules (and whose command-line callers) belong to others' work in
# progress: each entry must still be found (so the list only shrinks), and nothing else may be.
PENDING: set[tuple[str, str]] = set()  # every library message names parameters now


def _is_message_site(node: ast.AST) -> bool:
    """A node whose strings reach the user: a raise, an error's construction, a warning appended to a list."""
    if isinstance(node, ast.Raise):
        return True
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    if name.endswith("Error"):
        return True
    owner = func.value if isinstance(func, ast.Attribute) else None
    owner_name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
    return name in ("append", "warn") and "warn" in owner_name.lower()


def _error_sources(node: ast.AST) -> list[str]:
    """The first argument of an ``...Error(...)`` call when it is a string (InputError's source)."""
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name.endswith("Error") and isinstance(node.args[0].value, str):
            return [node.args[0].value]
    return []


def flags_in(source: str) -> set[tuple[int, str]]:
    """(line, flag) for every flag named in a message of ``source`` (Python text)."""
    found: set[tuple[int, str]] = set()
    for site in (n for n in ast.walk(ast.parse(source)) if _is_message_site(n)):
        for node in ast.walk(site):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = KAFKA_TOOL_FLAGS.sub("", node.value)
                found.update((node.lineno, f) for f in LONG_FLAG.findall(text))
            found.update((node.lineno, s) for s in _error_sources(node) if SHORT_FLAG.match(s))
    return found


def library_flags() -> dict[tuple[str, str], list[int]]:
    """(module path under flowbalance/, flag) -> the lines that name it."""
    out: dict[tuple[str, str], list[int]] = {}
    for path in sorted(LIBRARY.rglob("*.py")):
        rel = path.relative_to(LIBRARY).as_posix()
        for line, flag in flags_in(path.read_text(encoding="utf-8")):
            out.setdefault((rel, flag), []).append(line)
    return out


def test_the_scanner_finds_flags_in_every_kind_of_message():
    """The oracle for the scan below: each site names a flag in a different way, and each is found."""
    sample = '''
def f(x, warnings):
    raise InputError("--brokers", "", "bad")
    err = RequestError("remove", f"use --remove {x} instead")
    warnings.append(f"{x}: give --sizes")
    raise ValueError("see --help")
    raise InputError("-o", "", "exists")
    raise InputError(x, "", "expected kafka-topics --describe text")
    note = "--not-a-message"
    raise InputError("brokers", "", "a -- b, well-known -x")
'''
    assert sorted(f for _, f in flags_in(sample)) == ["--brokers", "--help", "--remove", "--sizes", "-o"]


def test_library_messages_name_no_command_line_flag():
    found = library_flags()
    new = {f"flowbalance/{p}:{min(lines)}: {flag}" for (p, flag), lines in found.items() if (p, flag) not in PENDING}
    assert not new, "library messages naming a flag (name the parameter; the CLI maps it):\n" + "\n".join(sorted(new))
    fixed = PENDING - found.keys()
    assert not fixed, f"no longer found, remove from PENDING: {sorted(fixed)}"


# ---- the same bad value from the library and from the command line -----------------------------------------


def test_generate_names_the_parameter_and_the_cli_the_flag(run_cli, tmp_path):
    with pytest.raises(InputError) as err:
        generate_cluster(brokers=0, topics=1, partitions=1, rf=1)
    assert str(err.value) == "generate_cluster: brokers: must be an integer from 1 to 100000 (got 0)"
    code, out, stderr = run_cli("generate", "--brokers", "0", "-o", tmp_path / "g")
    line = assert_one_line(code, out, stderr, "--brokers: must be an integer from 1 to 100000 (got 0)")
    assert "generate_cluster" not in line
    assert not (tmp_path / "g").exists()


@pytest.mark.parametrize("kw, args, library, cli", [
    (dict(skew=0.5, layout="balanced"), ["--skew", "0.5", "--layout", "balanced"],
     "generate_cluster: skew: only the random layout can be skewed (use layout='random') (got 0.5)",
     "--skew: only the random layout can be skewed (use --layout random) (got 0.5)"),
    (dict(rack_aware=True), ["--rack-aware"],
     "generate_cluster: rack_aware: needs racks (racks=K)", "--rack-aware: needs racks (--racks K)"),
])
def test_a_remedy_names_the_parameter_and_the_cli_the_flag(run_cli, tmp_path, kw, args, library, cli):
    with pytest.raises(InputError) as err:
        generate_cluster(brokers=3, topics=1, partitions=1, rf=1, **kw)
    assert str(err.value) == library
    code, out, stderr = run_cli("generate", "--brokers", "3", "--rf", "1", *args, "-o", tmp_path / "g")
    assert assert_one_line(code, out, stderr) == f"flowbalance: error: {cli}"


def test_the_replica_limit_names_all_three_parameters_and_flags(run_cli, tmp_path):
    with pytest.raises(InputError) as err:
        generate_cluster(brokers=3, topics=2_000_000, partitions=100, rf=3)  # also above MAX_TOPICS: product first
    assert str(err.value).startswith("generate_cluster: topics x partitions x rf: 2,000,000 x 100 x 3 = ")
    code, out, stderr = run_cli("generate", "--brokers", "3", "--topics", "2000000", "--partitions", "100",
                                "-o", tmp_path / "g")
    assert_one_line(code, out, stderr, "--topics x --partitions x --rf: 2,000,000 x 100 x 3 = ")


def test_batch_limits_name_the_parameter_and_the_cli_the_flag(run_cli, tmp_path):
    with pytest.raises(InputError) as err:
        check_options(None, None, "random")
    assert str(err.value).startswith("split_plan: order: unknown order")
    code, out, stderr = run_cli("batches", tmp_path / "p.json", "--current", tmp_path / "a.json", "--order", "random",
                                "-o", tmp_path / "b")
    line = assert_one_line(code, out, stderr, "--order: unknown order", "'random'")
    assert "split_plan" not in line


def _one_move(tmp_path: Path) -> tuple[ClusterState, ClusterState]:
    """A current assignment without sizes (written to a.json) and a plan (p.json) that moves t-0 from broker 1 to 3."""
    brokers = Brokers.build(np.array([1, 2, 3]))
    current = ClusterState.build(brokers, ["t", "t"], [0, 1], np.array([[1, 2], [3, 1]]))
    final = ClusterState.build(brokers, ["t", "t"], [0, 1], np.array([[3, 2], [3, 1]]))
    (tmp_path / "a.json").write_text(reassignment_json(current))
    (tmp_path / "p.json").write_text(reassignment_json(final))
    return current, final


def test_a_warning_names_the_parameter_and_the_cli_the_flag(run_cli, tmp_path):
    current, final = _one_move(tmp_path)
    res = split_plan(current, final, max_bytes_per_batch=10)  # no sizes: the byte limit cannot split
    assert [w.split(":")[0] for w in res.warnings] == ["max_bytes_per_batch"]
    code, _, stderr = run_cli("batches", tmp_path / "p.json", "--current", tmp_path / "a.json",
                              "--max-bytes-per-batch", "10", "-o", tmp_path / "b", "-q")
    assert code == 0, stderr
    assert "--max-bytes-per-batch: partition sizes are unknown" in stderr
    assert "max_bytes_per_batch" not in stderr
