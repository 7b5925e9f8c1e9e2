"""Operator controls on the command line and in fleet.json: bad input ends in one line naming the flag (or the
fleet key) and the value, exit code 2, nothing written; the controls work end to end."""
from __future__ import annotations

import json

import pytest

import flowbalance as fb
from flowbalance.errors import InputError

ROWS = [("orders", 0, [1, 2]), ("orders", 1, [2, 3]), ("orders", 2, [3, 4]), ("orders", 3, [4, 1]),
        ("orders", 4, [1, 3]), ("clicks", 0, [1, 2]), ("clicks", 1, [3, 4])]


def _write(tmp_path, rows=ROWS):
    doc = {"version": 1, "partitions": [{"topic": t, "partition": p, "replicas": r} for t, p, r in rows]}
    (tmp_path / "a.json").write_text(json.dumps(doc))
    return tmp_path / "a.json"


BAD = [
    (["--exclude-brokers", "9"], "--exclude-brokers", "unknown broker", "9"),
    (["--exclude-brokers", "x"], "--exclude-brokers", "non-negative integers", "'x'"),
    (["--demote", "9"], "--demote", "unknown broker", "9"),
    (["--demote", "1,1"], "--demote", "listed twice", "'1,1'"),
    (["--pin", "("], "--pin", "invalid regular expression", "'('"),
    (["--pin", "nothing.*"], "--pin", "matches no partition", "'nothing.*'"),
    (["--pin", "orders:0,orders:9"], "--pin", "matches no partition", "'orders:9'"),
    (["--pin", "orders:x"], "--pin", "TOPIC:PARTITION", "'orders:x'"),
    (["--pin", "@empty.txt"], "--pin", "no pattern", "'@empty.txt'"),
    (["--pin", "@missing.txt"], "--pin", "cannot read", "'@missing.txt'"),
    (["--pin", "orders:0", "--remove", "1"], "--pin", "removed broker", "'orders:0'"),
    (["--demote", "1", "--remove", "2"], "--demote/--remove", "no replica moves", "'2'"),
    (["--demote", "1", "--replication-factor", "3"], "--demote/--replication-factor", "no replica moves", "3"),
    (["--demote", "1", "--extra-moves", "5"], "--demote/--extra-moves", "no replica moves", "'5'"),
    (["--exclude-brokers", "2", "--remove", "2"], "--exclude-brokers/--remove", "also named in remove", "2"),
    (["--exclude-brokers", "2", "--strategy", "template"], "--exclude-brokers/--strategy", "flow only", "'2'"),
]


@pytest.mark.parametrize("args,flag,what,value", BAD, ids=[" ".join(b[0]) for b in BAD])
def test_bad_controls_end_in_one_line(tmp_path, monkeypatch, run_cli, args, flag, what, value):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path)
    (tmp_path / "empty.txt").write_text("# nothing\n\n")
    code, out, err = run_cli("plan", "a.json", "-o", "p.json", "-q", *args)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1, err
    assert lines[0].startswith(f"flowbalance: error: {flag}:"), err
    assert what in lines[0] and f"(got {value})" in lines[0], err
    assert not (tmp_path / "p.json").exists()


def test_pin_file_and_exclude_and_demote_work(tmp_path, monkeypatch, run_cli):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, ROWS + [("orders", 5, [1, 2]), ("orders", 6, [1, 3]), ("orders", 7, [1, 4])])
    (tmp_path / "pins.txt").write_text("# held\nclicks:0\norders:0,orders:5\n")
    code, out, err = run_cli("plan", "a.json", "-o", "p.json", "--pin", "@pins.txt", "--exclude-brokers", "2",
                             "--remove", "4", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["pinned_patterns"] == ["clicks:0", "orders:0,orders:5"] and data["excluded_brokers"] == [2]
    moved = {(e["topic"], e["partition"]): e["replicas"] for e in json.loads((tmp_path / "p.json").read_text())
             ["partitions"]}
    assert not {("clicks", 0), ("orders", 0), ("orders", 5)} & set(moved) and moved
    before = {(t, p): r for t, p, r in ROWS + [("orders", 5, [1, 2]), ("orders", 6, [1, 3]), ("orders", 7, [1, 4])]}
    assert all(2 not in r or 2 in before[k] for k, r in moved.items())
    code, out, err = run_cli("plan", "a.json", "-o", "d.json", "--demote", "1", "--election", "e.json")
    assert code == 0, err
    assert "Demote 1:" in out and "0 partitions could not be demoted" in out
    # the moves line says the counts were not planned, not "not reachable ... or not attempted"
    assert "this request moves no replica toward them (reordering only)" in out and "not attempted" not in out
    plan = json.loads((tmp_path / "d.json").read_text())["partitions"]
    assert plan and all(e["replicas"][0] != 1 for e in plan)
    assert len(json.loads((tmp_path / "e.json").read_text())["partitions"]) == len(plan)


def test_fleet_json_request_fields():
    req = fb.PlanRequest.from_json({"exclude_brokers": "3,4", "pin": ["orders", "clicks:0"], "demote": [5]},
                                   "fleet.json: clusters.c1")
    assert req.exclude_brokers == (3, 4) and req.pin == ("orders", "clicks:0") and req.demote == (5,)
    assert fb.PlanRequest.from_json({"pin": "orders"}, "x").pin == ("orders",)
    for entry, key in (({"pin": 3}, "pin"), ({"exclude_brokers": "a"}, "exclude_brokers"),
                       ({"demote": [1], "remove": [2]}, "demote/remove"), ({"pin": [""]}, "pin")):
        with pytest.raises(InputError) as err:
            fb.PlanRequest.from_json(entry, "fleet.json: clusters.c1")
        assert f"fleet.json: clusters.c1.{key}" in str(err.value) or f"clusters.c1: {key}" in str(err.value), \
            str(err.value)


# ---- one certificate for a plan made with the controls: plan, report --plan (sidecar or flags), compare, fleet --

CONTROL_CASES = [
    ("exclude-pin", ("--exclude-brokers", "3", "--pin", "clicks"), {"exclude_brokers": [3], "pin": ["clicks"]}),
    ("remove-exclude", ("--remove", "5", "--exclude-brokers", "1"), {"remove": [5], "exclude_brokers": [1]}),
    ("replace-pin", ("--replace", "4:9", "--pin", "orders:5,clicks:1"),
     {"replace": {"4": 9}, "pin": ["orders:5,clicks:1"]}),
]


@pytest.mark.parametrize("name,flags,fleet", CONTROL_CASES, ids=[c[0] for c in CONTROL_CASES])
def test_every_view_certifies_a_controlled_plan_alike(name, flags, fleet, run_cli, tmp_path):
    """``report --plan`` without request flags certifies for the request in the plan's sidecar (the replaced
    broker removed, the closed broker capped, the pins held), so it prints what ``plan`` printed; so do ``report``
    given the same flags, ``compare`` and the fleet's planning task (whose plan is byte-identical)."""
    from .test_certificate_agreement import (KAFKA, KAFKA_RACKS, SHOWN_EVERYWHERE, VERDICT_KEYS, Case, _args,
                                             _cli_json, _fleet_row, _report_view)

    folder = KAFKA
    if "--replace" in flags:  # the new broker listed with its rack, as report needs it
        folder = tmp_path / "kafka"
        folder.mkdir()
        (folder / "assignment.json").write_bytes((KAFKA / "assignment.json").read_bytes())
        racks = json.loads((KAFKA / "racks.json").read_text())
        (folder / "racks.json").write_text(json.dumps({**racks, "9": racks["4"]}))
    case = Case(name, "kafka", KAFKA_RACKS, fleet=fleet)
    inputs = _args(case, folder)
    out = tmp_path / "p.json"
    planned = _cli_json(run_cli, "plan", *inputs, *flags, "-o", out)
    assert (tmp_path / "p.meta.json").exists()
    code, text, err = run_cli("report", *inputs, "--plan", out, "--json")
    assert code == 0, err
    assert "certified for the request" in err and str(out) in err
    by_sidecar = _report_view(json.loads(text)["moves"])
    report_flags = tuple(f for i, f in enumerate(flags) if not (f == "--replace" or
                                                               (i and flags[i - 1] == "--replace")))
    views = {"report (sidecar)": by_sidecar, "compare": _cli_json(run_cli, "compare", *inputs, *flags)["strategies"]["flow"],
             "fleet": _fleet_row(case, folder, "flow")}
    if "--replace" not in flags:  # report takes no --replace: with flags, it certifies what the flags say
        views["report (flags)"] = _report_view(_cli_json(run_cli, "report", *inputs, *report_flags, "--plan",
                                                         out)["moves"])
    for view_name, view in views.items():
        keys = [k for k in VERDICT_KEYS if k in view]
        assert SHOWN_EVERYWHERE <= set(keys), view_name
        assert {k: view[k] for k in keys} == {k: planned[k] for k in keys}, view_name
    assert views["fleet"]["plan_json"] == out.read_text()


def test_report_refuses_controls_without_a_plan(tmp_path, monkeypatch, run_cli):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path)
    code, out, err = run_cli("report", "a.json", "--exclude-brokers", "2")
    assert code == 2 and err.strip().splitlines() == [
        "flowbalance: error: --exclude-brokers: only with --plan (it says what the plan was made with) (got '2')"]


def test_certify_plan_removes_a_replaced_broker():
    """The library's ``certify_plan`` of a plan file made with ``replace`` (read back: the file does not say
    which broker left) gives that plan's own certificate."""
    from flowbalance.certificate import certificate_fields
    from flowbalance.generate import generate_cluster
    from flowbalance.planfile import plan_from_text

    state = generate_cluster(brokers=8, racks=0, topics=4, partitions=(6, 12), rf=3, layout="random", seed=3)
    req = fb.PlanRequest(replace=((int(state.brokers.ids[2]), 99),))
    p = fb.plan(state, req)
    assert p.changes.moves
    after = plan_from_text(fb.plan_files(p).plan, "plan.json", state).final
    got = fb.certify_plan(state, after, req)
    assert certificate_fields(got) == certificate_fields(p.certificate)


def test_fleet_demotes_as_the_command_line_does(run_cli, tmp_path):
    """``"demote": [4]`` in fleet.json plans what ``plan --demote 4`` plans, byte for byte, and the moves verdict
    and leader changes agree."""
    from .test_certificate_agreement import KAFKA, KAFKA_RACKS, Case, _args, _cli_json, _fleet_row

    case = Case("demote", "kafka", KAFKA_RACKS, fleet={"demote": [4]})
    out = tmp_path / "d.json"
    planned = _cli_json(run_cli, "plan", *_args(case, KAFKA), "--demote", "4", "-o", out)
    row = _fleet_row(case, KAFKA, "flow")
    assert row["plan_json"] == out.read_text()
    assert all(e["replicas"][0] != 4 for e in json.loads(row["plan_json"])["partitions"])
    assert (row["moves"], row["leader_changes"], row["lower_bound"]) == (0, planned["leader_changes"],
                                                                         planned["lower_bound"])
