"""The vectorized log-dirs reader against a plain entry-by-entry reference: same results, same errors."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowbalance.errors import InputError
from flowbalance.formats.dumps import logdirs_text
from flowbalance.formats.jsontext import parse_json
from flowbalance.formats.logdirs import read_logdirs, sizes_for
from flowbalance.generate import generate_cluster


# ---------------------------------------------------------------- reference: one entry at a time


def reference_read(text: str, source: str):
    """(sizes, dirs, replica_sizes, warnings) by the reader's rules, walking every entry in Python."""
    offset = lineno = 0
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith("{"):
            break
        offset += len(line)
        lineno += 1
    else:
        raise InputError(source, "", "no JSON line found (expected kafka-log-dirs --describe output)")
    doc = parse_json(text[offset:], source, line_offset=lineno)
    if not isinstance(doc, dict) or "brokers" not in doc:
        raise InputError(source, "brokers", "missing field (expected {\"version\":1,\"brokers\":[...]})")
    if not isinstance(doc["brokers"], list):
        raise InputError(source, "brokers", "wrong type: expected a list", type(doc["brokers"]).__name__)
    replicas: dict = {}
    dirs: dict = {}
    for bi, b in enumerate(doc["brokers"]):
        at = f"brokers[{bi}]"
        if not isinstance(b, dict):
            raise InputError(source, at, "wrong type: expected an object", type(b).__name__)
        if "broker" not in b:
            raise InputError(source, f"{at}.broker", "missing field")
        if type(b["broker"]) is not int:
            raise InputError(source, f"{at}.broker", "broker id must be an integer", b["broker"])
        lds = b.get("logDirs", [])
        if not isinstance(lds, list):
            raise InputError(source, f"{at}.logDirs", "wrong type: expected a list", type(lds).__name__)
        dirs.setdefault(b["broker"], set())
        for di, d in enumerate(lds):
            dat = f"{at}.logDirs[{di}]"
            if not isinstance(d, dict):
                raise InputError(source, dat, "wrong type: expected an object", type(d).__name__)
            if type(d.get("logDir")) is not str:
                raise InputError(source, f"{dat}.logDir", "wrong type: expected a string", d.get("logDir"))
            dirs[b["broker"]].add(d["logDir"])
            parts = d.get("partitions", [])
            if not isinstance(parts, list):
                raise InputError(source, f"{dat}.partitions", "wrong type: expected a list", type(parts).__name__)
            for pi, p in enumerate(parts):
                pat = f"{dat}.partitions[{pi}]"
                if not isinstance(p, dict):
                    raise InputError(source, pat, "wrong type: expected an object", type(p).__name__)
                if p.get("isFuture") is True:
                    continue
                name = p.get("partition")
                if type(name) is not str:
                    raise InputError(source, f"{pat}.partition", "wrong type: expected \"topic-N\"", name)
                topic, dash, num = name.rpartition("-")
                if not dash or not topic or not (num.isascii() and num.isdigit()):
                    raise InputError(source, f"{pat}.partition", "expected \"topic-N\"", name)
                size = p.get("size")
                if isinstance(size, float) and size.is_integer() and abs(size) >= 2**63:
                    raise InputError(source, f"{pat}.size", "size out of range", int(size))
                if type(size) is not int:
                    raise InputError(source, f"{pat}.size", "wrong type: expected an integer", size)
                if size < 0:
                    raise InputError(source, f"{pat}.size", "size must not be negative", size)
                if size > 2**63 - 1:
                    raise InputError(source, f"{pat}.size", "size out of range (above 2^63 - 1 bytes)", size)
                replicas.setdefault((topic, int(num)), []).append(size)
    sizes, warnings = {}, []
    for key in sorted(replicas):
        hi, lo = max(replicas[key]), min(replicas[key])
        sizes[key] = hi  # the largest replica wins
        if len(replicas[key]) > 1 and hi > 2 * max(lo, 1) and hi - lo > 1024 * 1024:
            warnings.append(f"{source}: {key[0]}-{key[1]}: replica sizes differ more than 2x ({lo} .. {hi} bytes);"
                            " using the largest")
    dirs = {b: sorted(dirs[b]) for b in sorted(dirs)}
    return sizes, dirs, replicas, warnings


def reference_sizes_for(state_topics, topic, partition, sizes):
    out = np.full(len(partition), -1, dtype=np.int64)
    for i in range(len(partition)):
        v = sizes.get((state_topics[topic[i]], int(partition[i])))
        if v is not None:
            out[i] = v
    return out


def outcome_fast(text: str):
    try:
        ld = read_logdirs(text, "l.txt")
    except (InputError, ValueError) as err:
        return ("error", type(err).__name__, str(err))
    for d in (ld.sizes, ld.replica_sizes):  # plain Python values, not numpy scalars
        assert all(type(t) is str and type(p) is int for t, p in d)
    assert all(type(v) is int for v in ld.sizes.values())
    assert all(type(v) is list and all(type(x) is int for x in v) for v in ld.replica_sizes.values())
    return ("ok", list(ld.sizes.items()), list(ld.dirs.items()), list(ld.replica_sizes.items()), ld.warnings)


def outcome_reference(text: str):
    try:
        sizes, dirs, replicas, warnings = reference_read(text, "l.txt")
    except (InputError, ValueError) as err:
        return ("error", type(err).__name__, str(err))
    return ("ok", list(sizes.items()), list(dirs.items()), list(replicas.items()), warnings)


# ---------------------------------------------------------------- random documents

TOPICS = ["t", "my-topic", "a-1", "x", "tópico", 'q"uote', "zz-9-9"]
NUMBER = st.one_of(st.integers(0, 6), st.integers(0, 10**6), st.just(10**25))  # 10**25: beyond int64
MIB = 1024 * 1024
SIZE = st.one_of(  # near the warning's edges (more than 2x and more than 1 MiB apart), and beyond int64
    st.sampled_from([0, 1, 2, 3, MIB, MIB + 2, 3 * MIB, 6 * MIB, 6 * MIB + 1, 10**12, 2**63 - 1, 2**63, 2**64 - 1]),
    st.integers(0, 10**13),
)
BAD_VALUES = {
    "partition": ["nodash", "-5", "t-", "t-x", "t-+1", "t- 1", "t-²", "t-٣", 5, None, ["t-1"]],
    "size": [-1, 1.5, True, "7", None, 2**64],  # 2**64 is read as a float
    "entry": [[], "t-1", 3, None],
    "broker": ["1", None, 1.0, "missing"],
    "logDirs": [{}, "d", 7],
    "logDir": [None, 5, ["d"]],
    "partitions": [{}, "p", None],
    "broker object": [[], 1],
}


@st.composite
def entries(draw):
    topic = draw(st.sampled_from(TOPICS))
    number = draw(NUMBER)
    digits = str(number).zfill(draw(st.sampled_from([0, 0, 0, 3])))  # "t-007" is the same partition as "t-7"
    entry = {"partition": f"{topic}-{digits}", "size": draw(SIZE), "offsetLag": 0}
    future = draw(st.sampled_from(["absent", False, True, 1, None]))  # only `true` marks a future copy
    if future != "absent":
        entry["isFuture"] = future
    if draw(st.booleans()):  # another key order
        entry = dict(reversed(list(entry.items())))
    return entry


@st.composite
def documents(draw):
    brokers = []
    for _ in range(draw(st.integers(0, 5))):
        dirs = [
            {"logDir": draw(st.sampled_from(["/d1", "/d2", "/data/kafka"])), "error": None,
             "partitions": draw(st.lists(entries(), max_size=8))}
            for _ in range(draw(st.integers(0, 2)))
        ]
        broker = {"broker": draw(st.integers(0, 3)), "logDirs": dirs}  # ids may repeat: dirs merge
        if not dirs and draw(st.booleans()):
            del broker["logDirs"]
        brokers.append(broker)
    if brokers and draw(st.booleans()):
        _spoil(draw, brokers)
    return {"version": 1, "brokers": brokers}


def _spoil(draw, brokers):
    """Put one bad value somewhere (the reference says which error comes first)."""
    kind = draw(st.sampled_from(sorted(BAD_VALUES)))
    bad = draw(st.sampled_from(BAD_VALUES[kind]))
    bi = draw(st.integers(0, len(brokers) - 1))
    b = brokers[bi]
    if kind == "broker object":
        brokers[bi] = bad
    elif kind == "broker":
        if bad == "missing":
            del b["broker"]
        else:
            b["broker"] = bad
    elif kind == "logDirs":
        b["logDirs"] = bad
    elif b.get("logDirs"):
        d = draw(st.sampled_from(b["logDirs"]))
        if kind in ("logDir", "partitions"):
            d[kind] = bad
        elif d["partitions"]:
            pi = draw(st.integers(0, len(d["partitions"]) - 1))
            if kind == "entry":
                d["partitions"][pi] = bad
            else:
                d["partitions"][pi][kind] = bad


HEADS = st.sampled_from([
    "Querying brokers for log directories information\nReceived log directory information from brokers 0,1\n",
    "",
    "status {not json}\n  \n",
    "a\r\nb\r\n   ",
])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents(), head=HEADS, ascii_only=st.booleans())
def test_read_logdirs_matches_the_reference(doc, head, ascii_only):
    text = head + json.dumps(doc, ensure_ascii=ascii_only) + "\n"
    assert outcome_fast(text) == outcome_reference(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=documents(), data=st.data())
def test_sizes_for_matches_the_reference(doc, data):
    text = json.dumps(doc)
    try:
        ld = read_logdirs(text, "l")
    except (InputError, ValueError):
        return
    # a state with some of the log-dirs topics and some others, partitions present or missing
    state_topics = tuple(sorted(data.draw(st.sets(st.sampled_from(TOPICS + ["other", "t-1"]), min_size=1))))
    n = data.draw(st.integers(0, 30))
    topic = np.array(data.draw(st.lists(st.integers(0, len(state_topics) - 1), min_size=n, max_size=n)), dtype=np.int32)
    partition = np.array(data.draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)), dtype=np.int32)
    try:
        expected = reference_sizes_for(state_topics, topic, partition, ld.sizes)
    except OverflowError:  # a size above int64 for a partition in the state: both fail
        try:
            sizes_for(state_topics, topic, partition, ld)
        except OverflowError:
            return
        raise AssertionError("sizes_for accepted a size above int64")
    np.testing.assert_array_equal(sizes_for(state_topics, topic, partition, ld), expected)


def test_largest_replica_wins_across_brokers_and_future_copies_are_skipped():
    doc = {"version": 1, "brokers": [
        {"broker": 2, "logDirs": [{"logDir": "/b", "partitions": [
            {"partition": "t-0", "size": 5, "isFuture": False},
            {"partition": "t-0", "size": 10**12, "isFuture": True},
            {"partition": "a-b-7", "size": 3 * 2**20}]}]},
        {"broker": 1, "logDirs": [{"logDir": "/a", "partitions": [
            {"partition": "t-00", "size": 9}, {"partition": "a-b-07", "size": 1}]}]},
    ]}
    ld = read_logdirs("q\nr\n" + json.dumps(doc), "l")
    assert list(ld.sizes.items()) == [(("a-b", 7), 3 * 2**20), (("t", 0), 9)]
    assert list(ld.replica_sizes.items()) == [(("t", 0), [5, 9]), (("a-b", 7), [3 * 2**20, 1])]
    assert ld.dirs == {1: ["/a"], 2: ["/b"]}
    assert ld.warnings == ["l: a-b-7: replica sizes differ more than 2x (1 .. 3145728 bytes); using the largest"]
    state = sizes_for(("a-b", "t", "u"), np.array([0, 0, 1, 2]), np.array([7, 8, 0, 0]), ld)
    assert state.tolist() == [3 * 2**20, -1, 9, -1]


def _two_brokers():
    return {"version": 1, "brokers": [
        {"broker": 1, "logDirs": [{"logDir": "/a", "partitions": [
            {"partition": "t-0", "size": 1, "isFuture": False}, {"partition": "u-3", "size": 2, "isFuture": False}]}]},
        {"broker": 2, "logDirs": [{"logDir": "/b", "partitions": [
            {"partition": "t-0", "size": 4, "isFuture": False}, {"partition": "t-1", "size": 8, "isFuture": False}]}]},
    ]}


@pytest.mark.parametrize("kind,bad", [(k, v) for k, vs in BAD_VALUES.items() for v in vs])
@pytest.mark.parametrize("where", [0, 1])
def test_each_bad_value_gives_the_same_outcome(kind, bad, where):
    doc = _two_brokers()
    b = doc["brokers"][where]
    entry = b["logDirs"][0]["partitions"][1]
    if kind == "broker object":
        doc["brokers"][where] = bad
    elif kind == "broker" and bad == "missing":
        del b["broker"]
    elif kind in ("broker", "logDirs"):
        b[kind] = bad
    elif kind in ("logDir", "partitions"):
        b["logDirs"][0][kind] = bad
    elif kind == "entry":
        b["logDirs"][0]["partitions"][1] = bad
    else:
        entry[kind] = bad
    text = "q\nr\n" + json.dumps(doc)
    fast = outcome_fast(text)
    assert fast == outcome_reference(text)
    assert fast[0] == "error" or bad == "t-٣"  # "٣" is a digit that int() reads as 3


@pytest.mark.parametrize("sizes", [[3 * MIB, 6 * MIB], [3 * MIB, 6 * MIB + 1], [0, MIB], [0, MIB + 1], [1, 3, 5 * MIB],
                                   [10**12, 2**63], [2**63, 2**64 - 1], [7]])
def test_size_warning_edges(sizes):
    doc = {"version": 1, "brokers": [
        {"broker": i, "logDirs": [{"logDir": "/d", "partitions": [{"partition": "t-1", "size": z}]}]}
        for i, z in enumerate(sizes)]}
    text = json.dumps(doc)
    assert outcome_fast(text) == outcome_reference(text)


@pytest.mark.parametrize("text", [
    "q\n  {\"brokers\": [}\n",
    "q\r\n\t{\"brokers\": [1,]}",
    "{ x",
    "status {not json}\n   {\"version\":1,\"brokers\":[{\"broker\":1,\"logDirs\":[]}],}\n",
    "no json here\n",
    "",
    "q\n[]\n",
    "q\n  {\"version\": 1}\n",
    "q\n{\"brokers\": {}}\n",
])
def test_malformed_documents_give_the_same_error(text):
    fast = outcome_fast(text)
    assert fast == outcome_reference(text)
    assert fast[0] == "error"


def test_first_error_in_document_order_wins():
    doc = {"version": 1, "brokers": [
        {"broker": 1, "logDirs": [{"logDir": "/a", "partitions": [{"partition": "t-0", "size": -3}]}]},
        {"broker": "2", "logDirs": []},
    ]}
    text = json.dumps(doc)
    assert outcome_fast(text) == outcome_reference(text)
    assert "brokers[0].logDirs[0].partitions[0].size" in outcome_fast(text)[2]


def test_generated_cluster_matches_the_reference():
    cluster = generate_cluster(brokers=30, topics=12, partitions=20, rf=3, sizes=True, seed=4)
    text = logdirs_text(cluster)
    assert outcome_fast(text) == outcome_reference(text)
    ld = read_logdirs(text, "l")
    got = sizes_for(cluster.topics, cluster.topic, cluster.partition, ld)
    np.testing.assert_array_equal(got, reference_sizes_for(cluster.topics, cluster.topic, cluster.partition, ld.sizes))
    np.testing.assert_array_equal(got, cluster.size)
