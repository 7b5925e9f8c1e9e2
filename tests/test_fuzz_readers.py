"""Fuzz every reader with mutations of valid dumps: it returns a result that holds the invariants, or it raises
one-line InputError, and nothing else (no ValueError, IndexError, KeyError, RecursionError, ...).

The mutations work on tokens (words, runs of whitespace, single punctuation) and characters: delete, duplicate or
swap a token, replace a number, insert a character that matters to some format ("-", ":", TAB, CR, NUL, "{",
'"', ...) or any Unicode character, truncate. Runs are derandomized so CI sees the same cases every time.
"""
from __future__ import annotations

import os
import re

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowbalance.errors import InputError
from flowbalance.formats.brokerfile import read_broker_file
from flowbalance.formats.describe import read_describe
from flowbalance.formats.dumps import brokers_csv, brokers_json, describe_text, generate_text, logdirs_text
from flowbalance.formats.logdirs import LogDirs, read_logdirs
from flowbalance.formats.raw import RawAssignment
from flowbalance.formats.reassignment import CURRENT_MARK, read_generate_output, read_reassignment_json
from flowbalance.formats.sizes import read_sizes
from flowbalance.formats.writers import reassignment_json
from flowbalance.generate import generate_cluster
from flowbalance.load import read_assignment
from flowbalance.model import PAD, Brokers

# FUZZ_EXAMPLES=50000 runs a longer, random (not derandomized) search; CI runs the same 2,000 cases each time
_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "2000"))
_FIXED = "FUZZ_EXAMPLES" not in os.environ
FUZZ = settings(max_examples=_EXAMPLES, deadline=None, derandomize=_FIXED, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ---------------------------------------------------------------- seeds: small valid dumps of every format

_CLUSTERS = [
    generate_cluster(brokers=4, racks=2, topics=2, partitions=(1, 3), rf=2, sizes=True, seed=1),
    generate_cluster(brokers=5, topics=1, partitions=2, rf=3, sizes=True, first_broker_id=7, seed=2),
]

_STATUS_DESCRIBE = (
    "[2024-08-13 00:12:27,203] WARN [AdminClient clientId=adminclient-1] using Metadata API\n"
    "Topic: a\tTopicId: x1\tPartitionCount: 3\tReplicationFactor: 2\tConfigs: min.insync.replicas=1\n"
    "\tTopic: a\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,2\tAdding Replicas: 3\tRemoving Replicas: 2\n"
    "\tTopic: a\tPartition: 1\tLeader: none\tReplicas: 2,1\tIsr: \tOffline: 2,1\n"
    "\tTopic: a\tPartition: 2\tLeader: -1\tReplicas: 1,3\tIsr: 3\tElr: N/A\tLastKnownElr: N/A\n"
    "==> Describe topic b\n"
    "Topic:b PartitionCount:1 ReplicationFactor:4 Configs:confluent.placement.constraints={\"version\":1}\n"
    "  Topic: b Partition: 0  Leader: 2  Replicas: 2,1,3,4  Isr: 2,1  Offline:   Observers: 3,4\n"
    "topic: c\tpartition: 0\tleader: 2\treplicas: 1,2,0\tisr: 2\n"
)

_EXECUTE_TAIL = ("\n\nSave this to use as the --reassignment-json-file option during rollback\n"
                 "Successfully started partition reassignments for topic-0000-0\n")


def _sizes_csv(state) -> str:
    rows = [f"{state.topics[t]},{p},{z}" for t, p, z in zip(state.topic.tolist(), state.partition.tolist(),
                                                            state.size.tolist())]
    return "topic,partition,bytes\n" + "\n".join(rows) + "\n"


def _sizes_json(state) -> str:
    rows = [f'{{"topic":"{state.topics[t]}","partition":{p},"bytes":{z}}}'
            for t, p, z in zip(state.topic.tolist(), state.partition.tolist(), state.size.tolist())]
    return '{"partitions":[' + ",".join(rows) + "]}\n"


SEEDS: dict[str, list[str]] = {
    "json": [reassignment_json(c) for c in _CLUSTERS] + [reassignment_json(_CLUSTERS[0], log_dirs=True)],
    "generate": [generate_text(c) for c in _CLUSTERS],
    "execute": [f"{CURRENT_MARK}\n\n{reassignment_json(c, log_dirs=True)}{_EXECUTE_TAIL}" for c in _CLUSTERS],
    "describe": [describe_text(c) for c in _CLUSTERS] + [_STATUS_DESCRIBE],
    "brokers_csv": [brokers_csv(c.brokers) for c in _CLUSTERS] + ["id,rack,weight,capacity_bytes\n1,a,2,100\n2,b,1,\n"],
    "brokers_json": [brokers_json(c.brokers) for c in _CLUSTERS] + ['{"1": "a", "2": "b"}'],
    "logdirs": [logdirs_text(c) for c in _CLUSTERS],
    "sizes_csv": [_sizes_csv(c) for c in _CLUSTERS],
    "sizes_json": [_sizes_json(c) for c in _CLUSTERS],
}

# ---------------------------------------------------------------- mutations

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
_INSERTS = ["-", ":", "\t", "\r", "\x00", "{", "}", '"', ",", "\n", " ", "[", "#", "-1", "²", "\u2028"]
_NUMBERS = ["0", "1", "-1", "00", "2147483648", "9" * 25, "1.5", "1e3", "", "x", "²"]
_KINDS = ("delete", "duplicate", "swap", "number", "insert", "insert_char", "truncate", "replace_char")


def mutate(text: str, ops: list[tuple[str, int, int, str, str]]) -> str:
    """Apply the mutations in turn: positions are taken modulo the current length."""
    for kind, a, b, ins, char in ops:
        toks = _TOKEN.findall(text)
        if not toks:
            return text + ins
        i, j = a % len(toks), b % len(toks)
        if kind == "delete":
            del toks[i]
        elif kind == "duplicate":
            toks.insert(i, toks[i])
        elif kind == "swap":
            toks[i], toks[j] = toks[j], toks[i]
        elif kind == "number":
            digits = [k for k, t in enumerate(toks) if t.isdigit()]
            if digits:
                toks[digits[a % len(digits)]] = _NUMBERS[b % len(_NUMBERS)]
        elif kind == "insert":
            toks.insert(i, ins)
        elif kind == "insert_char":
            toks.insert(i, char)
        elif kind == "truncate":
            return text[: a % (len(text) + 1)]
        else:  # replace one character
            k = a % len(text)
            text = text[:k] + char + text[k + 1:]
            continue
        text = "".join(toks)
    return text


_OP = st.tuples(st.sampled_from(_KINDS), st.integers(0, 10**6), st.integers(0, 10**6), st.sampled_from(_INSERTS),
                st.characters(blacklist_categories=("Cs",)))


def mutated(fmt: str) -> st.SearchStrategy[str]:
    """A seed of format ``fmt`` with one to three mutations."""
    return st.builds(mutate, st.sampled_from(SEEDS[fmt]), st.lists(_OP, min_size=1, max_size=3))


def outcome(reader, text: str, *args):
    """The reader's result, or None when it raised InputError (which must be one line)."""
    try:
        return reader(text, "in.txt", *args)
    except InputError as err:
        line = str(err)
        assert "\n" not in line and "\r" not in line, line
        assert line.startswith("in.txt")
        return None


# ---------------------------------------------------------------- invariants

_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")


def valid_topic(name: str) -> bool:
    return bool(_TOPIC.fullmatch(name)) and name not in (".", "..")


def check_assignment(raw: RawAssignment) -> None:
    """What every assignment reader promises about a result it returns."""
    n = len(raw.partition)
    reps = raw.replicas
    assert n > 0 and len(raw.topic_names) == n and reps.shape[0] == n and len(raw.origin_pos) == n
    used = reps != PAD
    assert used[:, 0].all(), "an empty replica list"
    assert not (np.diff(used.astype(np.int8), axis=1) > 0).any(), "padding inside a list"
    assert (reps[used] >= 0).all() and (reps[used] <= 2**31 - 1).all()
    assert ((raw.partition >= 0) & (raw.partition <= 2**31 - 1)).all()
    for row in reps.tolist():
        ids = [b for b in row if b != PAD]
        assert len(set(ids)) == len(ids), row
    assert len(set(zip(raw.topic_names, raw.partition.tolist()))) == n
    assert all(valid_topic(t) for t in set(raw.topic_names))
    if raw.status is not None:
        check_status(raw)


def check_status(raw: RawAssignment) -> None:
    s = raw.status
    n = len(raw.partition)
    for mask in (s.leaderless, s.offline, s.under_replicated):
        assert mask.dtype == bool and mask.shape == (n,)
    for lists in (s.adding, s.removing, s.observers):
        assert lists.shape[0] == n and lists.dtype == np.int64
        assert ((lists == PAD) | (lists >= 0)).all()
    for i in range(n):
        row = set(raw.replicas[i].tolist()) - {PAD}
        assert set(s.removing[i].tolist()) - {PAD} <= row
        assert set(s.adding[i].tolist()) - {PAD} <= row
    assert s.constrained_topics <= set(s.declared)  # constraints are read from header lines
    assert all(type(v) is int and v >= 0 for v in s.declared.values())


def check_brokers(b: Brokers) -> None:
    ids = b.ids.tolist()
    assert len(ids) > 0 and ids == sorted(set(ids)) and ids[0] >= 0
    assert np.isfinite(b.weight).all() and (b.weight > 0).all()
    assert ((b.capacity == -1) | (b.capacity > 0)).all()


def check_sizes(ld: LogDirs, table: bool) -> None:
    for (topic, p), z in ld.sizes.items():
        assert type(topic) is str and topic and type(p) is int and p >= 0 and type(z) is int and z >= 0
        if table:
            assert valid_topic(topic), topic
    for key, zs in ld.replica_sizes.items():
        assert ld.sizes[key] == max(zs)


# ---------------------------------------------------------------- one fuzz per reader


@FUZZ
@given(mutated("json"))
def test_fuzz_reassignment_json(text):
    raw = outcome(read_reassignment_json, text)
    if raw is not None:
        check_assignment(raw)


@FUZZ
@given(mutated("generate"))
def test_fuzz_generate_output(text):
    raw = outcome(read_generate_output, text)
    if raw is not None:
        check_assignment(raw)


@FUZZ
@given(mutated("execute"))
def test_fuzz_execute_output(text):
    raw = outcome(read_generate_output, text)
    if raw is not None:
        check_assignment(raw)


@FUZZ
@given(mutated("describe"))
def test_fuzz_describe(text):
    raw = outcome(read_describe, text)
    if raw is not None:
        check_assignment(raw)
        assert raw.status is not None


@settings(FUZZ, max_examples=max(_EXAMPLES // 4, 1))
@given(st.sampled_from(sorted(SEEDS)).flatmap(lambda fmt: mutated(fmt)))
def test_fuzz_detection_and_any_assignment_reader(text):
    """Any mutated dump of any format through format detection: an assignment or a one-line error."""
    raw = outcome(read_assignment, text)
    if raw is not None:
        check_assignment(raw)


@FUZZ
@given(mutated("brokers_csv"))
def test_fuzz_broker_csv(text):
    b = outcome(read_broker_file, text)
    if b is not None:
        check_brokers(b)


@FUZZ
@given(mutated("brokers_json"))
def test_fuzz_broker_json(text):
    b = outcome(read_broker_file, text)
    if b is not None:
        check_brokers(b)


@FUZZ
@given(mutated("logdirs"))
def test_fuzz_logdirs(text):
    ld = outcome(read_logdirs, text)
    if ld is not None:
        check_sizes(ld, table=False)


@FUZZ
@given(mutated("sizes_csv"))
def test_fuzz_sizes_csv(text):
    ld = outcome(read_sizes, text)
    if ld is not None:
        check_sizes(ld, table=not ld.dirs and "brokers" not in text)


@FUZZ
@given(mutated("sizes_json"))
def test_fuzz_sizes_json(text):
    ld = outcome(read_sizes, text)
    if ld is not None:
        check_sizes(ld, table=not ld.dirs and "brokers" not in text)


# ---------------------------------------------------------------- whitespace does not change a describe

_RUN = re.compile(r"[ \t]+")
_SEPARATORS = ["\t", " ", "  ", "     ", " \t", "\t\t", "\t \t"]


def respace(text: str, choices: list[int], crlf: bool, indent: str) -> str:
    """``text`` with each run of spaces and TABs replaced by another non-empty one (chosen in turn from
    ``choices``), optionally CRLF line ends and extra indentation."""
    k = iter(range(10**9))
    out = _RUN.sub(lambda m: _SEPARATORS[choices[next(k) % len(choices)] % len(_SEPARATORS)], text)
    out = "\n".join(indent + line if line else line for line in out.split("\n"))
    return out.replace("\n", "\r\n") if crlf else out


def same_read(a: RawAssignment, b: RawAssignment) -> None:
    assert a.topic_names == b.topic_names
    np.testing.assert_array_equal(a.partition, b.partition)
    np.testing.assert_array_equal(a.replicas, b.replicas)
    np.testing.assert_array_equal(a.origin_pos, b.origin_pos)
    for name in ("leaderless", "offline", "under_replicated", "adding", "removing", "observers"):
        np.testing.assert_array_equal(getattr(a.status, name), getattr(b.status, name), err_msg=name)
    assert a.status.constrained_topics == b.status.constrained_topics
    assert a.status.declared == b.status.declared


@FUZZ
@given(st.sampled_from(SEEDS["describe"]), st.lists(st.integers(0, 100), min_size=1, max_size=20), st.booleans(),
       st.sampled_from(["", " ", "\t", "   "]))
def test_describe_whitespace_variants_read_the_same(seed, choices, crlf, indent):
    original = read_describe(seed, "d.txt")
    same_read(original, read_describe(respace(seed, choices, crlf, indent), "d.txt"))


def test_mutations_reach_errors_and_results():
    """The mutations are neither all harmless nor all fatal: some of each, for every format (a fuzz whose
    inputs never read, or never fail, tests little)."""
    import random

    rng = random.Random(7)
    readers = {"json": read_reassignment_json, "generate": read_generate_output, "execute": read_generate_output,
               "describe": read_describe, "brokers_csv": read_broker_file, "brokers_json": read_broker_file,
               "logdirs": read_logdirs, "sizes_csv": read_sizes, "sizes_json": read_sizes}
    for fmt, reader in readers.items():
        results = set()
        for _ in range(200):
            ops = [(rng.choice(_KINDS), rng.randrange(10**6), rng.randrange(10**6), rng.choice(_INSERTS),
                    chr(rng.randrange(32, 0x3000)))]
            results.add(outcome(reader, mutate(rng.choice(SEEDS[fmt]), ops)) is None)
        assert results == {True, False}, fmt
