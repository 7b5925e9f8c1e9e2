"""docs/library.md runs as written, and docs/method.md's certificate example says what the code computes.

library.md: every ```python block runs, in order, in one namespace (in a temporary directory that sees the
repository's testdata, so the files the examples write land there). A ```text block right after a python block is
exactly what that block prints; a block that prints must show its output. So the doc cannot drift from the code.
"""
from __future__ import annotations

import contextlib
import io
import itertools
import json
import re

import flowbalance as fb

from .conftest import ROOT

FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.S | re.M)


def examples(text: str) -> list[tuple[str, str | None]]:
    """(code, expected output or None) for each python block; the output is a text block that follows it with
    nothing but blank lines between."""
    blocks = list(FENCE.finditer(text))
    out = []
    for i, m in enumerate(blocks):
        if m.group(1) != "python":
            continue
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        follows = nxt is not None and nxt.group(1) == "text" and not text[m.end():nxt.start()].strip()
        out.append((m.group(2), nxt.group(2) if follows else None))
    return out


def test_examples_are_found():
    """The extraction itself: a doc without python blocks, or without outputs to compare, fails here."""
    found = examples((ROOT / "docs" / "library.md").read_text())
    assert len(found) >= 5
    assert sum(expected is not None for _, expected in found) >= 5
    sample = "```python\nprint(1)\n```\n\n```text\n1\n```\n```python\nx = 2\n```\n```sh\nls\n```\n"
    assert examples(sample) == [("print(1)\n", "1\n"), ("x = 2\n", None)]


def test_library_doc_runs_and_prints_what_it_shows(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "testdata").symlink_to(ROOT / "testdata")
    namespace: dict = {"__name__": "library_md"}
    for n, (code, expected) in enumerate(examples((ROOT / "docs" / "library.md").read_text()), 1):
        where = f"python block {n} ({code.splitlines()[0]!r})"
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(code, f"library.md block {n}", "exec"), namespace)
        printed = buf.getvalue()
        if expected is None:
            assert printed == "", f"{where} prints but the doc shows no output block:\n{printed}"
        else:
            assert printed == expected, f"{where}: the doc shows\n{expected}\nthe code prints\n{printed}"
    # the files example 1 writes are the plan's
    assert json.loads((tmp_path / "plan.json").read_text())["partitions"] == [
        {"topic": "x.y.z.t", "partition": 1, "replicas": [8, 1]}, {"topic": "x.y.z.t", "partition": 4, "replicas": [12, 1]}]


# ---- docs/method.md: the certificate's worked example ----------------------------------------------------------

RACK = {0: "a", 1: "b", 2: "c", 3: "a", 4: "b"}
LISTS = [[2, 3], [1, 2], [3, 1], [4, 3]]  # topic t, partitions 0..3; broker 4 is removed


def _example(disable_rack_aware: bool = False) -> fb.ClusterState:
    assignment = json.dumps({"version": 1, "partitions": [
        {"topic": "t", "partition": i, "replicas": r} for i, r in enumerate(LISTS)]})
    brokers = "id,rack\n" + "".join(f"{b},{r}\n" for b, r in RACK.items())
    return fb.load_texts(("current.json", assignment), brokers=("brokers.csv", brokers),
                         disable_rack_aware=disable_rack_aware).state


def _fewest_by_enumeration() -> int:
    """Independent oracle: every rack-rule placement of the 4 partitions on brokers 0-3 (one replica per rack),
    the fewest arrivals among those with 2 replicas on every broker."""
    sets = [s for s in itertools.combinations(range(4), 2) if RACK[s[0]] != RACK[s[1]]]
    best = None
    for plan in itertools.product(sets, repeat=len(LISTS)):
        counts = [sum(b in s for s in plan) for b in range(4)]
        if counts != [2, 2, 2, 2]:
            continue
        moves = sum(len(set(s) - set(old)) for s, old in zip(plan, LISTS))
        best = moves if best is None else min(best, moves)
    return best


def test_method_md_certificate_example():
    text = " ".join((ROOT / "docs" / "method.md").read_text().split())
    for i, r in enumerate(LISTS):
        assert f"t-{i} {r}" in text, (i, r)
    state = _example()
    p = fb.plan(state, fb.PlanRequest(remove=(4,)))
    v = p.certificate.moves_verdict
    assert v.moves == _fewest_by_enumeration() == 3
    assert (v.closed_bound, v.min_moves, v.by_flow, v.proven) == (2, 2, True, True)
    assert v.text() in text
    assert fb.plan_files(p).plan.replace("\n", "") in text.replace(" ", "")
    flat = fb.plan(_example(disable_rack_aware=True), fb.PlanRequest(remove=(4,))).certificate.moves_verdict
    assert flat.text() in text and flat.moves == flat.closed_bound == 2
    # report --plan: the same verdict with the same flags, another one without them
    marked = fb.mark_removed(state, [4])
    for current, request in ((marked, fb.PlanRequest(remove=(4,))), (marked, fb.PlanRequest(per_topic=False)),
                             (state, fb.PlanRequest())):
        cert = fb.certify_plan(current, p.after.with_brokers(current.brokers), request)
        assert cert.moves_verdict.text() in text, request
    assert fb.certify_plan(marked, p.after, fb.PlanRequest(remove=(4,))).moves_verdict == v


def test_method_md_seed_within_racks():
    loaded = fb.load_cluster(ROOT / "testdata/seed/assignment.json", brokers=ROOT / "testdata/seed/brokers.csv")
    v = fb.plan(loaded.state, fb.PlanRequest(remove=(19,))).certificate.moves_verdict
    assert v.bound_for == "balance within racks"
    assert v.text() in " ".join((ROOT / "docs" / "method.md").read_text().split())

