"""Reader for ``kafka-topics --describe`` text: a header line per topic, then one line per partition.

Lines are read by their field names, not by their separators: the same output turns up with its TABs turned into
runs of spaces (copied through a web page or a ticket), TABs and spaces mixed, CRLF line ends, indented, without a
space after the colon (``Topic:foo``, Kafka 0.9), with Kafka 0.8's lower-case keys (``topic: x  partition: 0``),
after log lines (``[2024-08-13 00:12:27,203] WARN ...``) and between Confluent's ``==> Describe topic ...`` lines.

A key is a word and a colon at the start of a line or after whitespace (``Adding Replicas`` and ``Removing
Replicas`` are two words); its value runs up to the next key. ``Configs:`` is the last field of a header line and
its value (which may hold ``:``, ``=``, JSON and spaces) runs to the end of the line. Unknown keys are ignored.
A partition line has ``Partition:`` and ``Replicas:``; a header line has ``PartitionCount:``.

Besides the replica lists the reader returns what the describe says about each partition (``PartitionStatus``):
leaderless, offline, under-replicated, the replicas being added or removed by a reassignment in progress,
Confluent's observers and placement constraints, and each topic's declared partition count, which it checks
against the partition lines (a describe cut short is an error, not a smaller cluster).

The per-line work is one regular-expression split; the values are checked and converted column by column
afterwards, and only when a bulk check fails are the lines walked one by one to name the first bad one.
"""
from __future__ import annotations

import re
from collections import Counter
from itertools import repeat
from operator import itemgetter
from typing import NoReturn

import numpy as np

from ..errors import InputError
from .logdirs import gc_paused
from .raw import PartitionStatus, RawAssignment, replicas_matrix, topic_name_problem, validate_raw

KNOWN_KEYS = frozenset({
    "Topic", "TopicId", "PartitionCount", "ReplicationFactor", "Configs", "Partition", "Leader", "Replicas", "Isr",
    "Elr", "LastKnownElr", "Offline", "Adding Replicas", "Removing Replicas", "Observers", "LiveObservers",
})
_BULK_KEYS = frozenset({"Topic", "Partition", "Leader", "Replicas", "Isr", "Elr", "LastKnownElr", "TopicId"})
_LIST_KEYS = ("Adding Replicas", "Removing Replicas", "Observers", "LiveObservers", "Offline")
# the usual partition line's keys (its values are single tokens, no value holds a ":"): read without the regex
_USUAL = ["Topic:", "Partition:", "Leader:", "Replicas:", "Isr:"]
_USUAL_ELR = _USUAL + ["Elr:", "LastKnownElr:"]  # Kafka 3.7+ (KIP-966)
_USUAL_OFFLINE = _USUAL + ["Offline:"]  # Confluent Server, with nothing offline
_LEADERLESS = frozenset({"none", "None", "-1"})
_MAX_ID = 2**31 - 1
_PLACEMENT = "confluent.placement.constraints"

# a key: a word and a colon (or the two-word "Adding Replicas:" / "Removing Replicas:") at a token boundary
_KEY = re.compile(r"(?:^|(?<=\s))((?:[Aa]dding|[Rr]emoving)\s+[Rr]eplicas|[A-Za-z][A-Za-z0-9_]*):")
_CONFIGS = re.compile(r"(?:^|(?<=\s))[Cc]onfigs:")
_LOG_LINE = re.compile(r"\s*\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d")  # log4j: "[2024-08-13 00:12:27,203] WARN ..."


def read_describe(text: str, source: str) -> RawAssignment:
    """Parse a describe: the partitions in line order, with their status (``RawAssignment.status``)."""
    with gc_paused():  # a few hundred thousand small lists, none in a cycle (see logdirs.gc_paused)
        return _read(text, source)


def _read(text: str, source: str) -> RawAssignment:
    cols = _Columns()
    heads = _Headers()
    rows, lines = cols.rows, cols.lines
    for lineno, line in enumerate(text.split("\n"), start=1):
        if "artition" not in line and "eplicas" not in line:
            continue  # neither a header nor a partition line (a cheap test before the split)
        # the usual line, whatever its separators: "Topic: t Partition: 0 Leader: 1 Replicas: 1,2 Isr: 1,2"
        tok = line.split()
        if tok[0::2] == _USUAL and len(tok) == 10 and line.count(":") == 5:
            rows.append(tok[1::2])
            lines.append(lineno)
            continue
        if tok[0::2] == _USUAL_ELR and len(tok) == 14 and line.count(":") == 7 or \
                tok[0::2] == _USUAL_OFFLINE and len(tok) == 11 and line.count(":") == 6:
            rows.append(tok[1:10:2])
            lines.append(lineno)
            continue
        if "[" in line and _LOG_LINE.match(line):
            continue
        fields = line_fields(line, lineno, source)
        if "PartitionCount" in fields:
            heads.add(fields, lineno, source)
        elif "Partition" in fields or "Replicas" in fields:
            cols.add(fields, lineno, line, source)
    if not lines:
        raise InputError(source, "", "no partition lines (\"Topic: ... Partition: ... Replicas: ...\") found")
    raw = cols.build(source, heads)
    validate_raw(raw)
    heads.check_counts(raw.topic_names, source)
    return raw


def line_fields(line: str, lineno: int, source: str) -> dict[str, str]:
    """The known fields of one line: canonical key -> value (not stripped). Unknown keys are dropped; a known key
    twice on a line is an InputError."""
    configs = None
    if "onfigs:" in line:
        m = _CONFIGS.search(line)
        if m:
            line, configs = line[: m.start()], line[m.end():]
    parts = _KEY.split(line)
    keys = parts[1::2]
    fields = dict(zip(keys, parts[2::2]))
    if len(fields) != len(keys) or not fields.keys() <= KNOWN_KEYS:
        fields = _canonical(keys, parts[2::2], lineno, source)
    if configs is not None:
        fields["Configs"] = configs
    return fields


def _canonical(keys: list[str], values: list[str], lineno: int, source: str) -> dict[str, str]:
    """Fields under their canonical names ("topic" -> "Topic", "adding  replicas" -> "Adding Replicas")."""
    out: dict[str, str] = {}
    for key, value in zip(keys, values):
        name = " ".join(w[:1].upper() + w[1:] for w in key.split())
        if name not in KNOWN_KEYS:
            continue
        if name in out:
            raise InputError(source, f"line {lineno}: {name}", "field appears twice on one line", value.strip())
        out[name] = value
    return out


class _Headers:
    """Topic header lines: declared partition counts and placement constraints."""

    def __init__(self) -> None:
        self.declared: dict[str, int] = {}
        self.at: dict[str, int] = {}
        self.constrained: set[str] = set()

    def add(self, fields: dict[str, str], lineno: int, source: str) -> None:
        topic = fields.get("Topic", "").strip()
        if not topic:
            raise InputError(source, f"line {lineno}", "header line (PartitionCount:) without a topic name (Topic:)")
        problem = topic_name_problem(topic)
        if problem:
            raise InputError(source, f"line {lineno}: Topic", problem, topic)
        value = fields["PartitionCount"].strip()
        if not _digits(value) or len(value) > 10:
            raise InputError(source, f"line {lineno}: PartitionCount", "expected a non-negative integer", value)
        count = int(value)
        if self.declared.get(topic, count) != count:
            raise InputError(source, f"line {lineno}: PartitionCount",
                             f"topic {topic} has another header (line {self.at[topic]}) with PartitionCount: "
                             f"{self.declared[topic]}", count)
        self.declared[topic] = count
        self.at.setdefault(topic, lineno)
        if _PLACEMENT in fields.get("Configs", ""):
            self.constrained.add(topic)

    def check_counts(self, topics: list[str], source: str) -> None:
        """Every topic with a header has as many partition lines as its PartitionCount says."""
        if not self.declared:
            return
        have = Counter(topics)
        for topic, want in self.declared.items():
            got = have.get(topic, 0)
            if got != want:
                line = "line" if got == 1 else "lines"
                raise InputError(source, f"topic {topic}", f"header says PartitionCount: {want} but {got} partition "
                                 f"{line} follow" + (" (truncated?)" if got < want else ""))


class _Columns:
    """The partition lines' values as printed, one row [topic, partition, leader, replicas, isr] per line (stripped;
    None for a missing Leader or Isr), converted column by column by ``build``."""

    def __init__(self) -> None:
        self.lines: list[int] = []
        self.rows: list[list[str | None]] = []
        self.extra: list[tuple[int, int, dict[str, str]]] = []  # (row, line, fields) of lines with list fields

    def add(self, fields: dict[str, str], lineno: int, line: str, source: str) -> None:
        """A partition line that the usual-line test did not take."""
        for key in ("Partition", "Replicas", "Topic"):
            if key not in fields:
                raise InputError(source, f"line {lineno}", f"a partition line without a {key}: field", line.strip())
        leader, isr = fields.get("Leader"), fields.get("Isr")
        self.rows.append([fields["Topic"].strip(), fields["Partition"].strip(),
                          None if leader is None else leader.strip(), fields["Replicas"].strip(),
                          None if isr is None else isr.strip()])
        self.lines.append(lineno)
        if not fields.keys() <= _BULK_KEYS and any(fields[k].strip() for k in _LIST_KEYS if k in fields):
            self.extra.append((len(self.lines) - 1, lineno, fields))  # a list field that is not empty

    def build(self, source: str, heads: _Headers) -> RawAssignment:
        n = len(self.lines)
        lines = np.asarray(self.lines, dtype=np.int64)
        topics, pvals, lvals, rvals, ivals = (list(map(itemgetter(k), self.rows)) for k in range(5))
        pnum = _partitions(pvals, self.lines, source)
        flat, lengths = _id_lists(rvals, self.lines, "Replicas", source, allow_empty=False)
        leaderless = _leaders(lvals, self.lines, source)
        if ivals == rvals:  # the healthy usual case: every ISR is the replica list
            has_isr, isr_len = np.ones(n, dtype=bool), lengths
        elif None not in ivals:
            has_isr = np.ones(n, dtype=bool)
            _, isr_len = _id_lists(ivals, self.lines, "Isr", source, allow_empty=True, ids=False)
        else:
            has_isr = np.array([v is not None for v in ivals], dtype=bool)
            isr_len = np.zeros(n, dtype=np.int64)
            rows = np.flatnonzero(has_isr)
            if len(rows):
                _, isr_len[rows] = _id_lists([v for v in ivals if v is not None], lines[rows].tolist(), "Isr",
                                             source, allow_empty=True, ids=False)
        under = has_isr & (isr_len < lengths)
        lists = self._extra_lists(flat, lengths, under, source)
        status = PartitionStatus(
            leaderless=leaderless,
            offline=lists["Offline"].max(axis=1) >= 0,
            under_replicated=under,
            adding=lists["Adding Replicas"],
            removing=lists["Removing Replicas"],
            observers=lists["Observers"],
            constrained_topics=frozenset(heads.constrained),
            declared=dict(heads.declared),
        )
        return RawAssignment(source=source, topic_names=topics, partition=pnum,
                             replicas=replicas_matrix(lengths, flat), had_log_dirs=False, origin="line",
                             origin_pos=lines, status=status)

    def _extra_lists(self, flat: np.ndarray, lengths: np.ndarray, under: np.ndarray,
                     source: str) -> dict[str, np.ndarray]:
        """The list fields of the few lines that have them, as -1 padded matrices over all rows.

        Checks that Adding and Removing Replicas are among Replicas (Kafka prints the union of old and new
        replicas while a reassignment runs), and corrects ``under`` for observers: Confluent's observers are
        listed in Replicas but never join the ISR, so only the other replicas count."""
        n = len(lengths)
        starts = np.cumsum(lengths) - lengths
        found: dict[str, tuple[list[int], list[int], list[int]]] = {k: ([], [], []) for k in
                                                                    ("Adding Replicas", "Removing Replicas",
                                                                     "Observers", "Offline")}
        for row, lineno, fields in self.extra:
            got = {k: _id_list(fields[k].strip(), lineno, k, source) for k in _LIST_KEYS if k in fields}
            reps = flat[starts[row]: starts[row] + lengths[row]].tolist()
            for key in ("Adding Replicas", "Removing Replicas"):
                stray = [b for b in got.get(key, ()) if b not in reps]
                if stray:
                    raise InputError(source, f"line {lineno}: {key}", f"broker {stray[0]} is not in Replicas",
                                     fields[key].strip())
            obs = got.get("Observers", [])
            obs = obs + [b for b in got.get("LiveObservers", ()) if b not in obs]
            got["Observers"] = obs
            if obs and under[row]:
                isr = set(_id_list(fields["Isr"].strip(), lineno, "Isr", source))
                under[row] = any(b not in isr and b not in obs for b in reps)
            for key, (rows, lens, ids) in found.items():
                if got.get(key):
                    rows.append(row)
                    lens.append(len(got[key]))
                    ids.extend(got[key])
        out = {}
        for key, (rows, lens, ids) in found.items():
            full = np.zeros(n, dtype=np.int64)
            full[rows] = lens
            out[key] = replicas_matrix(full, np.asarray(ids, dtype=np.int64))
        return out


def _digits(s: str) -> bool:
    """Plain ASCII digits ("²" and other Unicode digits are not numbers here)."""
    return s.isascii() and s.isdigit()


def _partitions(values: list[str], lines: list[int], source: str) -> np.ndarray:
    """Partition numbers: each distinct value checked and converted once."""
    known: dict[str, int] = {}
    for v in set(values):
        if _digits(v) and len(v) <= 10 and int(v) <= _MAX_ID:
            known[v] = int(v)
    if len(known) < len(set(values)):
        for v, lineno in zip(values, lines):
            if v in known:
                continue
            place = f"line {lineno}: Partition"
            if v.startswith("-") and _digits(v[1:]):
                raise InputError(source, place, "partition number must not be negative", int(v))
            if _digits(v):
                raise InputError(source, place, "partition number out of range (0 .. 2147483647)", v)
            raise InputError(source, place, "expected an integer", v)
    return np.fromiter(map(known.__getitem__, values), dtype=np.int64, count=len(values))


def _leaders(values: list[str | None], lines: list[int], source: str) -> np.ndarray:
    """bool [P]: no leader ("none" or -1). A missing Leader field is taken as a leader; anything else that is not
    a broker id is an InputError."""
    for v in set(values):
        if v is None or v in _LEADERLESS or (_digits(v) and len(v) <= 10 and int(v) <= _MAX_ID):
            continue
        lineno = lines[values.index(v)]
        raise InputError(source, f"line {lineno}: Leader", "expected a broker id, -1 or none", v)
    if _LEADERLESS.isdisjoint(values):
        return np.zeros(len(values), dtype=bool)
    return np.fromiter(map(_LEADERLESS.__contains__, values), dtype=bool, count=len(values))


def _id_lists(values: list[str], lines: list[int], key: str, source: str, *, allow_empty: bool,
              ids: bool = True) -> tuple[np.ndarray | None, np.ndarray]:
    """Comma-separated broker id lists (stripped values) -> (the ids concatenated, each list's length).

    One check on all values joined; when it fails, ``_raise_bad_list`` names the first bad line. With
    ``ids=False`` only the lengths are returned (the ids are checked but not converted)."""
    joined = ",".join(values)
    if allow_empty and "" in values:
        joined = ",".join(filter(None, values))
    if joined:
        ok = _digits(joined.replace(",", "")) and ",," not in joined and joined[:1] != "," and joined[-1:] != ","
    else:
        ok = allow_empty  # every list is empty
    tokens = joined.split(",") if ok and joined else []
    longest = max(map(len, tokens)) if tokens else 0
    out = None
    if ok and longest > 9:  # up to 9 digits is always below 2^31; longer ones are compared
        ok = longest <= 10 and max(map(int, tokens)) <= _MAX_ID
    if not ok:
        _raise_bad_list(values, lines, key, source, allow_empty)
    if ids:
        out = np.array(list(map(int, tokens)), dtype=np.int64) if tokens else np.empty(0, dtype=np.int64)
    counts = np.fromiter(map(str.count, values, repeat(",")), dtype=np.int64, count=len(values)) + 1
    if allow_empty:
        counts[np.fromiter(map(len, values), dtype=np.int64, count=len(values)) == 0] = 0
    return out, counts


def _raise_bad_list(values: list[str], lines: list[int], key: str, source: str, allow_empty: bool) -> NoReturn:
    for v, lineno in zip(values, lines):
        if v or not allow_empty:
            _id_list(v, lineno, key, source, allow_empty=allow_empty)
    raise AssertionError(f"{source}: a bulk {key} check failed but no line is bad")  # the checks disagree: a bug


def _id_list(value: str, lineno: int, key: str, source: str, *, allow_empty: bool = True) -> list[int]:
    """One stripped comma-separated list of broker ids (empty: []), or an InputError naming line and field."""
    place = f"line {lineno}: {key}"
    if not value:
        if allow_empty:
            return []
        raise InputError(source, place, "empty replica list", value)
    out = []
    for tok in value.split(","):
        if tok.startswith("-") and _digits(tok[1:]):
            raise InputError(source, place, "broker id must not be negative", int(tok))
        if not _digits(tok):
            raise InputError(source, place, "broker ids must be integers", value)
        if len(tok) > 10 or int(tok) > _MAX_ID:
            raise InputError(source, place, "broker id out of range (0 .. 2147483647)", value)
        out.append(int(tok))
    return out
