"""Every kind of bad input ends in one line naming the file, place and value; exit 2; no traceback; no output."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from .conftest import TESTDATA

SEED = TESTDATA / "seed"


def _write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


def _parts(*items) -> str:
    return json.dumps({"version": 1, "partitions": list(items)})


def P(topic="t", partition=0, replicas=(1, 2), **extra):
    d = {"topic": topic, "partition": partition, "replicas": list(replicas)}
    d.update(extra)
    return d


def assert_one_line(code, out, err, *needles):
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and "Traceback" not in out
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    for n in needles:
        assert str(n) in lines[0], (n, lines[0])
    return lines[0]


CASES = {
    # name: (file name, file text, extra args, needles expected in the message)
    "malformed_json": ("a.json", '{"partitions": [\n  {"topic": "t",, "partition": 0}\n]}', [], ["a.json", "line 2 column", "malformed JSON"]),
    "unknown_format": ("a.txt", "this is not kafka output\n", [], ["a.txt", "unknown format"]),
    "missing_field": ("a.json", _parts({"topic": "t", "partition": 0}), [], ["a.json", "partitions[0].replicas", "missing field"]),
    "missing_partitions": ("a.json", '{"version":1}', [], ["a.json", "partitions", "missing field"]),
    "wrong_type_partition": ("a.json", _parts(P(partition="0")), [], ["a.json", "partitions[0].partition", "'0'"]),
    "wrong_type_replicas": ("a.json", _parts({"topic": "t", "partition": 0, "replicas": "1,2"}), [], ["a.json", "partitions[0].replicas", "'1,2'"]),
    "negative_partition": ("a.json", _parts(P(), P(partition=-3)), [], ["a.json", "partitions[1].partition", "-3"]),
    "duplicate_partition": ("a.json", _parts(P(), P(replicas=(2, 1)), P(partition=1)), [], ["a.json", "partitions[1]", "duplicate partition", "t-0"]),
    "broker_twice": ("a.json", _parts(P(replicas=(1, 2, 1))), [], ["a.json", "partitions[0].replicas", "broker 1 appears twice", "[1, 2, 1]"]),
    "empty_replicas": ("a.json", _parts(P(), P(partition=1, replicas=())), [], ["a.json", "partitions[1].replicas", "empty replica list"]),
    "log_dirs_mismatch": ("a.json", _parts(P(log_dirs=["any"])), [], ["a.json", "partitions[0].log_dirs", "has 1 entries but replicas has 2"]),
    "non_integer_broker": ("a.json", _parts(P(replicas=(1, "2"))), [], ["a.json", "partitions[0].replicas", "integer", "'2'"]),
    "float_broker": ("a.json", _parts(P(replicas=(1, 2.5))), [], ["a.json", "partitions[0].replicas", "2.5"]),
    "negative_broker": ("a.json", _parts(P(replicas=(1, -2))), [], ["a.json", "partitions[0].replicas", "-2"]),
    "describe_bad_replicas": ("d.txt", "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,x\tIsr: 1\n", [], ["d.txt", "line 1", "Replicas", "'1,x'"]),
    "describe_bad_partition": ("d.txt", "\tTopic: t\tPartition: zero\tLeader: 1\tReplicas: 1,2\tIsr: 1\n", [], ["d.txt", "line 1", "Partition", "'zero'"]),
    "generate_without_json": ("g.txt", "Current partition replica assignment\n\n", [], ["g.txt", "no JSON"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_assignment(name, tmp_path, run_cli):
    fname, text, extra, needles = CASES[name]
    path = _write(tmp_path, fname, text)
    code, out, err = run_cli("check", path, *extra)
    assert_one_line(code, out, err, *needles)


def test_unreadable_file(tmp_path, run_cli):
    code, out, err = run_cli("check", tmp_path / "missing.json")
    assert_one_line(code, out, err, "missing.json", "cannot read")
    code, out, err = run_cli("check", tmp_path)
    assert_one_line(code, out, err, str(tmp_path), "directory")


def test_not_utf8(tmp_path, run_cli):
    p = tmp_path / "bin.json"
    p.write_bytes(b'{"partitions": [\n\xff\xfe]}')
    code, out, err = run_cli("check", p)
    assert_one_line(code, out, err, "bin.json", "line 2", "UTF-8")


def test_replica_on_unlisted_broker(tmp_path, run_cli):
    a = _write(tmp_path, "a.json", _parts(P(replicas=(1, 2)), P(partition=1, replicas=(2, 42))))
    b = _write(tmp_path, "b.csv", "id,rack\n1,a\n2,b\n")
    code, out, err = run_cli("check", a, "--brokers", b)
    assert_one_line(code, out, err, "a.json", "partitions[1].replicas", "broker 42 is not listed in", "b.csv")


def test_some_brokers_without_rack(tmp_path, run_cli):
    a = _write(tmp_path, "a.json", _parts(P(replicas=(1, 2))))
    b = _write(tmp_path, "b.csv", "id,rack\n1,a\n2,\n")
    code, out, err = run_cli("check", a, "--brokers", b)
    assert_one_line(code, out, err, "b.csv", "broker 2", "no rack", "--disable-rack-aware")
    code, out, err = run_cli("check", a, "--brokers", b, "--disable-rack-aware")
    assert code in (0, 1), err


def test_duplicate_broker_id(tmp_path, run_cli):
    a = _write(tmp_path, "a.json", _parts(P(replicas=(1, 2))))
    b = _write(tmp_path, "b.json", json.dumps([{"id": 1, "rack": "a"}, {"id": 2, "rack": "b"}, {"id": 1, "rack": "c"}]))
    code, out, err = run_cli("check", a, "--brokers", b)
    assert_one_line(code, out, err, "b.json", "[2]", "duplicate broker id", "1")
    c = _write(tmp_path, "c.csv", "1,a\n2,b\n2,a\n")
    code, out, err = run_cli("check", a, "--brokers", c)
    assert_one_line(code, out, err, "c.csv", "line 3", "duplicate broker id")


def test_broker_file_bad_values(tmp_path, run_cli):
    a = _write(tmp_path, "a.json", _parts(P(replicas=(1, 2))))
    for name, text, needles in [
        ("w.csv", "1,a,-1\n2,b\n", ["w.csv", "line 1", "weight", "'-1'"]),
        ("i.csv", "x1,a\n2,b\n", ["i.csv", "line 1", "integer", "'x1'"]),
        ("c.json", json.dumps([{"id": 1, "capacity_bytes": -5}, {"id": 2}]), ["c.json", "[0].capacity_bytes", "-5"]),
        ("t.json", json.dumps([{"id": "1"}, {"id": 2}]), ["t.json", "[0].id", "'1'"]),
        ("m.json", json.dumps({"1": 5}), ["m.json", "rack must be a string", "5"]),
    ]:
        b = _write(tmp_path, name, text)
        code, out, err = run_cli("check", a, "--brokers", b)
        assert_one_line(code, out, err, *needles)


def test_negative_size(tmp_path, run_cli):
    a = _write(tmp_path, "a.json", _parts(P(replicas=(1, 2))))
    s = _write(tmp_path, "s.txt", "Querying\nReceived\n" + json.dumps({"version": 1, "brokers": [{"broker": 1, "logDirs": [
        {"logDir": "/d", "error": None, "partitions": [{"partition": "t-0", "size": -10, "offsetLag": 0, "isFuture": False}]}]}]}))
    code, out, err = run_cli("check", a, "--sizes", s)
    assert_one_line(code, out, err, "s.txt", "brokers[0].logDirs[0].partitions[0].size", "-10")


def test_bad_logdirs_partition_name(tmp_path, run_cli):
    a = _write(tmp_path, "a.json", _parts(P(replicas=(1, 2))))
    s = _write(tmp_path, "s.txt", "q\nr\n" + json.dumps({"version": 1, "brokers": [{"broker": 1, "logDirs": [
        {"logDir": "/d", "error": None, "partitions": [{"partition": "nodash", "size": 1, "offsetLag": 0, "isFuture": False}]}]}]}))
    code, out, err = run_cli("check", a, "--sizes", s)
    assert_one_line(code, out, err, "s.txt", "partition", "'nodash'")


@pytest.mark.parametrize("args,needles", [
    (["--max-replica-spread", "0"], ["--max-replica-spread", "0"]),
    (["--max-failover-spread", "-1"], ["--max-failover-spread", "-1"]),
    (["--remove", "99"], ["--remove", "unknown broker", "99"]),
    (["--remove", "a,b"], ["--remove", "'a,b'"]),
    (["--remove", "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19"], ["--remove", "every broker"]),
    (["--format", "yaml"], ["--format", "'yaml'"]),
    (["--no-such-flag"], ["--no-such-flag"]),
])
def test_option_values_out_of_range(args, needles, run_cli):
    code, out, err = run_cli("check", SEED / "assignment.json", "--brokers", SEED / "brokers.csv", *args)
    assert_one_line(code, out, err, *needles)


def test_generate_bad_values_write_nothing(tmp_path, run_cli):
    out_dir = tmp_path / "gen"
    code, out, err = run_cli("generate", "--brokers", "3", "--topics", "2", "--partitions", "4", "--rf", "5", "-o", out_dir)
    assert_one_line(code, out, err, "--rf", "5")
    assert not out_dir.exists() or not any(out_dir.iterdir())
    code, out, err = run_cli("generate", "--brokers", "3", "--topics", "2", "--partitions", "4-x", "--rf", "2", "-o", out_dir)
    assert_one_line(code, out, err, "--partitions", "4-x")
    assert not out_dir.exists() or not any(out_dir.iterdir())


def test_partition_number_out_of_range(tmp_path, run_cli):
    a = _write(tmp_path, "a.json", _parts(P(partition=2**31)))
    code, out, err = run_cli("check", a)
    assert_one_line(code, out, err, "a.json", "partitions[0].partition", "out of range", str(2**31))
