"""``--sizes`` as a plain table (CSV or JSON): the same sizes as kafka-log-dirs output, detection, bad input."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowbalance.errors import InputError
from flowbalance.formats import sizes as sizes_mod
from flowbalance.formats.dumps import logdirs_text
from flowbalance.formats.sizes import detect_sizes_format, read_sizes
from flowbalance.formats.writers import reassignment_json
from flowbalance.generate import generate_cluster
from flowbalance.load import load_cluster, load_texts
from flowbalance.model import Brokers, ClusterState

from .test_bad_input import assert_one_line

TOPICS = ("orders.v2", "user_events-eu", "a-1", "Clicks", "x")  # dots, underscores, dashes, a dash and digits


def _cluster() -> ClusterState:
    """A small cluster with sizes, its topic names using every legal kind of character."""
    rng = np.random.default_rng(7)
    names, parts, reps = [], [], []
    for t, n in zip(TOPICS, (3, 4, 2, 5, 1)):
        for p in range(n):
            names.append(t)
            parts.append(p)
            reps.append(rng.choice(4, size=2, replace=False) + 1)
    size = rng.integers(0, 10**12, size=len(names))
    size[0] = 0
    return ClusterState.build(Brokers.build(np.arange(1, 5)), names, parts, np.array(reps), size)


def _rows(state: ClusterState):
    return [(state.topics[t], p, s) for t, p, s in zip(state.topic.tolist(), state.partition.tolist(), state.size.tolist())]


def _write(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    return p


@pytest.fixture
def cluster(tmp_path):
    state = _cluster()
    assignment = _write(tmp_path, "assignment.json", reassignment_json(state))
    logdirs = _write(tmp_path, "logdirs.txt", logdirs_text(state))
    return state, assignment, logdirs


def _csv_variants(rows) -> dict[str, str]:
    rev = rows[::-1]  # order does not matter
    return {
        "plain": "".join(f"{t},{p},{b}\n" for t, p, b in rows),
        "header": "topic,partition,bytes\n" + "".join(f"{t},{p},{b}\n" for t, p, b in rev),
        "header_any_case_spaces": " Topic , PARTITION,Bytes \n" + "".join(f"{t} , {p} ,{b}\n" for t, p, b in rows),
        "comments_blank_crlf": ("# sizes from the monitoring export\r\n\r\n  # another comment, with commas\r\n"
                                + "".join(f"{t},{p},{b}\r\n" + ("\r\n" if i % 3 == 0 else "")
                                          for i, (t, p, b) in enumerate(rows))
                                + "# the end\r\n"),
        "quoted": '"topic","partition","bytes"\n' + "".join(f'"{t}","{p}","{b}"\n' for t, p, b in rows),
        "some_quoted_no_final_newline": "\n".join(f'"{t}", {p},"{b}"' if i % 2 else f"{t},{p},{b}"
                                                  for i, (t, p, b) in enumerate(rows)),
        "leading_zeros": "".join(f"{t},{p:03d},{b:015d}\n" for t, p, b in rows),
    }


def _json_variants(rows) -> dict[str, str]:
    objs = [{"topic": t, "partition": p, "bytes": b} for t, p, b in rows]
    return {
        "json_list": json.dumps(objs),
        "json_object": json.dumps({"partitions": [dict(reversed(list(o.items()))) for o in objs]}, indent=2),
        "json_leading_blank": "\n  " + json.dumps(objs[::-1]),
    }


def test_every_table_format_gives_the_log_dirs_sizes(cluster, tmp_path):
    state, assignment, logdirs = cluster
    from_logdirs = load_cluster(assignment, sizes=logdirs)
    assert from_logdirs.state.log_dirs  # log-dirs output keeps each broker's dirs
    np.testing.assert_array_equal(from_logdirs.state.size, state.size)
    rows = _rows(state)
    for name, text in {**_csv_variants(rows), **_json_variants(rows)}.items():
        path = _write(tmp_path, f"{name}.txt", text)
        loaded = load_cluster(assignment, sizes=path)
        np.testing.assert_array_equal(loaded.state.size, from_logdirs.state.size, err_msg=name)
        assert loaded.state.log_dirs == {}, name  # a table has no log dirs
        assert loaded.state.had_log_dirs == from_logdirs.state.had_log_dirs, name
        assert loaded.warnings == [], (name, loaded.warnings)
        assert str(path) in loaded.inputs


def test_table_keeps_had_log_dirs_of_the_assignment(tmp_path):
    state = _cluster()
    assignment = _write(tmp_path, "a.json", reassignment_json(state, log_dirs=True))
    sizes = _write(tmp_path, "s.csv", "".join(f"{t},{p},{b}\n" for t, p, b in _rows(state)))
    loaded = load_cluster(assignment, sizes=sizes).state
    assert loaded.had_log_dirs and loaded.log_dirs == {}
    np.testing.assert_array_equal(loaded.size, state.size)


def test_load_texts_reads_a_table_too():
    """The fleet pipeline passes (name, text) pairs to load_texts."""
    state = _cluster()
    text = "".join(f"{t},{p},{b}\n" for t, p, b in _rows(state))
    loaded = load_texts(("c/assignment.json", reassignment_json(state)), sizes=("c/logdirs.txt", text))
    np.testing.assert_array_equal(loaded.state.size, state.size)


def test_a_generated_cluster(tmp_path):
    state = generate_cluster(brokers=6, topics=5, partitions=(1, 30), rf=3, sizes=True, seed=3)
    assignment = _write(tmp_path, "a.json", reassignment_json(state))
    csv_text = "topic,partition,bytes\n" + "".join(f"{t},{p},{b}\n" for t, p, b in _rows(state))
    a = load_cluster(assignment, sizes=_write(tmp_path, "l.txt", logdirs_text(state))).state
    b = load_cluster(assignment, sizes=_write(tmp_path, "s.csv", csv_text)).state
    np.testing.assert_array_equal(a.size, b.size)
    np.testing.assert_array_equal(b.size, state.size)


def test_extra_and_missing_partitions_warn(cluster, tmp_path):
    state, assignment, _ = cluster
    rows = _rows(state)
    kept = rows[2:]  # two partitions without a size
    extra = [("gone-topic", 0, 5), ("orders.v2", 99, 7), ("x", 1, 8)]
    path = _write(tmp_path, "s.csv", "".join(f"{t},{p},{b}\n" for t, p, b in kept + extra))
    loaded = load_cluster(assignment, sizes=path)
    assert loaded.warnings == [
        f"{path}: no size for 2 of {len(rows)} partitions (taken as unknown)",
        f"{path}: 3 partitions are not in the assignment (ignored)",
    ]
    assert (loaded.state.size[:2] == -1).all() and (loaded.state.size[2:] >= 0).all()
    # the same wording as for kafka-log-dirs output
    ld = _write(tmp_path, "l.txt", logdirs_text(replace(state, size=np.r_[-1, -1, state.size[2:]])))
    assert load_cluster(assignment, sizes=ld).warnings == [
        f"{ld}: no size for 2 of {len(rows)} partitions (taken as unknown)"]


# ---------------------------------------------------------------- detection


LOGDIRS_DOC = {"version": 1, "brokers": [{"broker": 1, "logDirs": [{"logDir": "/d", "error": None, "partitions": [
    {"partition": "t-0", "size": 5, "offsetLag": 0, "isFuture": False}]}]}]}


@pytest.mark.parametrize("text, kind", [
    ("Querying brokers for log directories information\nReceived log directory information from brokers 1\n"
     + json.dumps(LOGDIRS_DOC), "logdirs"),
    (json.dumps(LOGDIRS_DOC), "logdirs"),  # no status lines
    ("q\nr\n" + json.dumps(LOGDIRS_DOC), "logdirs"),  # other status lines
    ("Querying brokers for log directories information\n", "logdirs"),  # status lines only (its reader says what is missing)
    ("  \n" + json.dumps({"version": 1, "brokers": []}, indent=1), "logdirs"),
    ('[{"topic": "t", "partition": 0, "bytes": 5}]', "json"),
    ('{"partitions": [{"topic": "brokers", "partition": 0, "bytes": 5}]}', "json"),  # a topic named brokers
    ('\n {"partitions": []}', "json"),
    ("t,0,5\n", "csv"),
    ("# a comment {with braces}\nt,0,5\n", "csv"),
    ("", "csv"),
])
def test_detection(text, kind):
    assert detect_sizes_format(text) == kind


def test_log_dirs_output_still_reads_as_before():
    ld = read_sizes("q\nr\n" + json.dumps(LOGDIRS_DOC), "l")
    assert ld.sizes == {("t", 0): 5} and ld.dirs == {1: ["/d"]}


# ---------------------------------------------------------------- bad input

BAD = {
    # name: (file name, text, needles in the message: file, place, value)
    "bytes_not_integer": ("s.csv", "t,0,5\nt,1,1.5\n", ["s.csv", "line 2: bytes", "integer", "'1.5'"]),
    "bytes_word": ("s.csv", "topic,partition,bytes\nt,0,big\n", ["s.csv", "line 2: bytes", "'big'"]),
    "bytes_negative": ("s.csv", "# c\nt,0,-10\n", ["s.csv", "line 2: bytes", "must not be negative", "'-10'"]),
    "bytes_empty": ("s.csv", "t,0,\n", ["s.csv", "line 1: bytes", "''"]),
    "bytes_too_big": ("s.csv", f"t,0,{2**63}\n", ["s.csv", "line 1: bytes", "out of range", str(2**63)]),
    "partition_negative": ("s.csv", "t,0,1\nt,-1,5\n", ["s.csv", "line 2: partition", "non-negative integer", "'-1'"]),
    "partition_word": ("s.csv", "t,zero,5\n", ["s.csv", "line 1: partition", "'zero'"]),
    "partition_unicode_digit": ("s.csv", "t,²,5\n", ["s.csv", "line 1: partition", "'²'"]),
    "partition_too_big": ("s.csv", f"t,{2**31},5\n", ["s.csv", "line 1: partition", "out of range", str(2**31)]),
    "duplicate": ("s.csv", "a.b,0,1\na.b,1,2\n\na.b,00,3\n", ["s.csv", "line 4", "duplicate partition",
                                                               "also at line 1", "'a.b-0'"]),
    "duplicate_quoted": ("s.csv", 't,0,1\n"t","0","2"\n', ["s.csv", "line 2", "duplicate partition", "'t-0'"]),
    "missing_column": ("s.csv", "t,0,1\nt,1\n", ["s.csv", "line 2", "missing column bytes", "'t,1'"]),
    "one_column": ("s.csv", "t-0\n", ["s.csv", "line 1", "missing column partition", "'t-0'"]),
    "too_many_columns": ("s.csv", "t,0,1,9\n", ["s.csv", "line 1", "too many columns", "'t,0,1,9'"]),
    "other_header": ("s.csv", "topic,partition,size\nt,0,1\n", ["s.csv", "line 1", "header", "'topic,partition,size'"]),
    "empty_topic": ("s.csv", "t,0,1\n,1,2\n", ["s.csv", "line 2: topic", "empty topic name"]),
    "illegal_topic": ("s.csv", "my topic,0,1\n", ["s.csv", "line 1: topic", "not a Kafka topic name", "'my topic'"]),
    "empty_file": ("s.csv", "", ["s.csv", "no partition sizes listed"]),
    "header_and_comments_only": ("s.csv", "# nothing yet\ntopic,partition,bytes\n\n",
                                 ["s.csv", "no partition sizes listed"]),
    "malformed_json": ("s.json", '[{"topic": "t",, "partition": 0}]', ["s.json", "line 1 column", "malformed JSON"]),
    "json_bytes_string": ("s.json", json.dumps([{"topic": "t", "partition": 0, "bytes": "5"}]),
                          ["s.json", "[0].bytes", "integer", "'5'"]),
    "json_bytes_float": ("s.json", json.dumps({"partitions": [{"topic": "t", "partition": 0, "bytes": 1},
                                                              {"topic": "t", "partition": 1, "bytes": 2.5}]}),
                         ["s.json", "partitions[1].bytes", "2.5"]),
    "json_bytes_negative": ("s.json", json.dumps({"partitions": [{"topic": "t", "partition": 0, "bytes": -3}]}),
                            ["s.json", "partitions[0].bytes", "must not be negative", "-3"]),
    "json_bytes_bool": ("s.json", json.dumps([{"topic": "t", "partition": 0, "bytes": True}]),
                        ["s.json", "[0].bytes", "True"]),
    "json_partition_negative": ("s.json", json.dumps([{"topic": "t", "partition": 0, "bytes": 1},
                                                      {"topic": "t", "partition": -2, "bytes": 1}]),
                                ["s.json", "[1].partition", "negative", "-2"]),
    "json_partition_string": ("s.json", json.dumps([{"topic": "t", "partition": "0", "bytes": 1}]),
                              ["s.json", "[0].partition", "'0'"]),
    "json_duplicate": ("s.json", json.dumps({"partitions": [{"topic": "t", "partition": 0, "bytes": 1},
                                                            {"topic": "u", "partition": 0, "bytes": 1},
                                                            {"topic": "t", "partition": 0, "bytes": 2}]}),
                       ["s.json", "partitions[2]", "duplicate partition", "also at partitions[0]", "'t-0'"]),
    "json_missing_key": ("s.json", json.dumps([{"topic": "t", "partition": 0}]),
                         ["s.json", "[0].bytes", "missing field"]),
    "json_unknown_key": ("s.json", json.dumps([{"topic": "t", "partition": 0, "bytes": 1, "size": 1}]),
                         ["s.json", "[0].size", "unknown field"]),
    "json_unknown_top_key": ("s.json", json.dumps({"partitions": [], "version": 1}),
                             ["s.json", "version", "unknown field"]),
    "json_no_partitions": ("s.json", json.dumps({"sizes": []}), ["s.json", "partitions", "missing field"]),
    "json_entry_not_object": ("s.json", json.dumps([["t", 0, 1]]), ["s.json", "[0]", "expected an object", "'list'"]),
    "json_empty": ("s.json", "[]", ["s.json", "no partition sizes listed"]),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_table_names_file_place_and_value(name, tmp_path):
    fname, text, needles = BAD[name]
    assignment = _write(tmp_path, "a.json", reassignment_json(_cluster()))
    path = _write(tmp_path, fname, text)
    with pytest.raises(InputError) as info:
        load_cluster(assignment, sizes=path)
    message = str(info.value)
    assert "\n" not in message
    for n in needles:
        assert n in message, (n, message)
    assert message.startswith(str(path))


def test_json_string_is_read_as_csv():
    """A file that starts with a quote is CSV (a quoted first field), so a JSON string is a one-column row."""
    with pytest.raises(InputError, match="line 1: missing column partition"):
        read_sizes('"t,0,1"', "s")


@pytest.mark.parametrize("name", ["bytes_negative", "duplicate", "json_unknown_key", "empty_file"])
def test_cli_bad_sizes_file_is_one_line(name, tmp_path, run_cli):
    fname, text, needles = BAD[name]
    assignment = _write(tmp_path, "a.json", reassignment_json(_cluster()))
    path = _write(tmp_path, fname, text)
    code, out, err = run_cli("check", assignment, "--sizes", path)
    assert_one_line(code, out, err, *needles)
    assert out == ""


def test_cli_entry_point_bad_bytes(tmp_path):
    """The real command line (a new process): exit 2, one line on stderr, no traceback."""
    assignment = _write(tmp_path, "a.json", reassignment_json(_cluster()))
    sizes = _write(tmp_path, "sizes.csv", "topic,partition,bytes\norders.v2,0,12.5\n")
    proc = subprocess.run([sys.executable, "-m", "flowbalance_cli", "check", str(assignment), "--sizes", str(sizes)],
                          capture_output=True, text=True, timeout=120)
    assert_one_line(proc.returncode, proc.stdout, proc.stderr, "sizes.csv", "line 2: bytes", "'12.5'")


def test_cli_reads_a_table(tmp_path, run_cli):
    state = _cluster()
    assignment = _write(tmp_path, "a.json", reassignment_json(state))
    sizes = _write(tmp_path, "s.csv", "".join(f"{t},{p},{b}\n" for t, p, b in _rows(state)))
    code, out, err = run_cli("check", assignment, "--sizes", sizes, "--json")
    assert code in (0, 1), err
    doc = json.loads(out)
    assert doc["bytes"]["total"] == int((state.size * state.rf).sum())  # every replica's bytes


# ---------------------------------------------------------------- the bulk readers against the walks

TOPIC_TEXT = ["t", "a.b", "x_y-1", "T", " t ", '"t"', '"a,b"', '"q""q"', "my topic", "tópico", "", "#t", "topic"]
NUM_TEXT = ["0", "1", "7", "007", " 3", "3 ", "-1", "1.5", "", "x", "²", "+4", "1_0", str(2**31), str(2**63 - 1),
            str(2**63), "0" * 30 + "9", "9" * 30, '"5"']
EXTRA_LINES = ["", "   ", ",,", " , , ", "# comment", "  # comment, with, commas", "topic,partition,bytes",
               " Topic , Partition , BYTES ", "topic,partition,size", "t,0", "t,0,1,2", "t", "a\rb,0,1"]


@st.composite
def csv_texts(draw):
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.integers(0, 4)) == 0:
            lines.append(draw(st.sampled_from(EXTRA_LINES)))
        else:
            t = draw(st.sampled_from(TOPIC_TEXT[:4])) if draw(st.integers(0, 3)) else draw(st.sampled_from(TOPIC_TEXT))
            p = draw(st.sampled_from(["0", "1", "2"])) if draw(st.integers(0, 3)) else draw(st.sampled_from(NUM_TEXT))
            b = str(draw(st.integers(0, 10**12))) if draw(st.integers(0, 3)) else draw(st.sampled_from(NUM_TEXT))
            sep = draw(st.sampled_from([",", ",", ", ", " ,"]))
            lines.append(sep.join([t, p, b]))
    end = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    return end.join(lines) + draw(st.sampled_from(["", end, end + end, "  "]))


def _outcome(fn, *args):
    try:
        return ("ok", sorted(fn(*args).items()))
    except InputError as err:
        return ("error", str(err))


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(csv_texts())
def test_csv_bulk_matches_the_walk(text):
    assert _outcome(sizes_mod._from_csv, text, "s") == _outcome(sizes_mod._walk_csv, text, "s")


JSON_BAD = [None, -1, 1.5, True, "3", [], {}, 2**31, 2**63, 2**63 - 1, "", "a b", "tópico"]


@st.composite
def json_entries(draw):
    entries = []
    for _ in range(draw(st.integers(0, 8))):
        e = {"topic": draw(st.sampled_from(["t", "a.b", "x_y-1"])), "partition": draw(st.integers(0, 3)),
             "bytes": draw(st.integers(0, 10**15))}
        if draw(st.integers(0, 5)) == 0:
            key = draw(st.sampled_from(["topic", "partition", "bytes", "extra"]))
            if draw(st.booleans()) and key != "extra":
                del e[key]
            else:
                e[key] = draw(st.sampled_from(JSON_BAD))
        entries.append(e)
    if entries and draw(st.integers(0, 9)) == 0:
        entries[draw(st.integers(0, len(entries) - 1))] = draw(st.sampled_from([[], "t", 3, None]))
    return entries


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(json_entries(), st.booleans())
def test_json_bulk_matches_the_walk(entries, wrapped):
    doc, prefix = ({"partitions": entries}, "partitions") if wrapped else (entries, "")
    text = json.dumps(doc, ensure_ascii=False)
    walked = json.loads(text)["partitions"] if wrapped else json.loads(text)
    assert _outcome(sizes_mod._from_json, text, "s") == _outcome(sizes_mod._walk_json, walked, prefix, "s")


def test_a_large_table_reads_by_the_bulk_path(monkeypatch):
    """100,000 rows with a comment and a header: the bulk path, not the walk, reads them, in either format."""
    n = 100_000
    rows = [(f"topic-{i // 50:04d}", i % 50, i * 1000) for i in range(n)]
    text = "# export\ntopic,partition,bytes\n" + "".join(f"{t},{p},{b}\n" for t, p, b in rows)

    def no_walk(*_):
        raise AssertionError("the walk ran")

    monkeypatch.setattr(sizes_mod, "_walk_csv", no_walk)
    monkeypatch.setattr(sizes_mod, "_walk_json", no_walk)
    expected = {(t, p): b for t, p, b in rows}
    assert read_sizes(text, "s").sizes == expected
    assert read_sizes(text.replace("\n", "\r\n"), "s").sizes == expected
    quoted = "# export\n" + "".join(f'"{t}","{p}","{b}"\n' for t, p, b in rows)  # the csv module splits it
    assert read_sizes(quoted, "s").sizes == expected
    js = json.dumps({"partitions": [{"topic": t, "partition": p, "bytes": b} for t, p, b in rows]})
    assert read_sizes(js, "s").sizes == expected
