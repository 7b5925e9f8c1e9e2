"""Reader for ``--sizes``: ``kafka-log-dirs --describe`` output, or a plain table of partition sizes.

The table is CSV (rows ``topic,partition,bytes``, an optional header naming exactly those columns, blank lines
and ``#`` comment lines ignored) or JSON (a list of ``{"topic", "partition", "bytes"}`` objects, or
``{"partitions": [...]}`` holding such a list). Which one a file is, is told from its text (``read_sizes``).

Like the log-dirs reader, each table reader has a bulk path for files with millions of rows (whole columns
checked at once) and an entry-by-entry walk. The bulk path either returns exactly what the walk would, or
None when it finds anything unusual (a bad value, a comment between rows, a stray carriage return); the walk
then reads the file again and names the first bad row, or returns the sizes when nothing was bad after all.
"""
from __future__ import annotations

import csv
import io
import re
from itertools import repeat

from ..errors import InputError
from .csvrows import csv_rows
from .jsontext import parse_json
from .logdirs import LogDirs, gc_paused, read_logdirs

HEADER = ("topic", "partition", "bytes")
FIELDS = frozenset(HEADER)
_COLUMNS = "topic,partition,bytes"
_MAX_BYTES = 2**63 - 1  # sizes are int64 in the cluster model
_MAX_PARTITION = 2**31 - 1  # as the assignment readers allow
_LEGAL = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"  # Kafka's topic name characters
_LEGAL_TEXT = "letters, digits, '.', '_' and '-'"
_MAX_TOPIC_LENGTH = 249

# what tells kafka-log-dirs output apart from a table
_STATUS_LINES = ("Querying brokers for log directories", "Received log directory information")
_BROKERS_KEY = re.compile(r'"brokers"\s*:')  # in valid JSON, a string followed by ":" is an object key


def read_sizes(text: str, source: str) -> LogDirs:
    """Partition sizes from ``--sizes`` text: kafka-log-dirs output, a sizes JSON or a sizes CSV (detected).

    A table has no log dirs: the result's ``dirs`` is empty.
    """
    kind = detect_sizes_format(text)
    if kind == "logdirs":
        return read_logdirs(text, source)
    with gc_paused():  # a million new tuples and strings, none in a cycle (see logdirs.gc_paused)
        sizes = _from_json(text, source) if kind == "json" else _from_csv(text, source)
    return LogDirs(source=source, sizes=sizes, dirs={})


def detect_sizes_format(text: str) -> str:
    """``"logdirs"``, ``"json"`` (a sizes table) or ``"csv"``.

    kafka-log-dirs output is a JSON object with a ``"brokers"`` key, usually after two status lines
    ("Querying brokers for log directories information", "Received log directory information from brokers
    ..."). Any text whose JSON starts on a later line is taken as log-dirs output too (a CSV line cannot start
    with "{"), so that its reader explains what is wrong with it.
    """
    head = text.lstrip()
    if head.startswith("["):
        return "json"
    if head.startswith("{"):
        return "logdirs" if _BROKERS_KEY.search(text) else "json"
    if any(mark in text for mark in _STATUS_LINES) or _has_json_line(text):
        return "logdirs"
    return "csv"


def _has_json_line(text: str) -> bool:
    """True when some line starts with "{" (after blanks)."""
    at = text.find("{")
    while at >= 0:
        line_start = text.rfind("\n", 0, at) + 1
        if not text[line_start:at].strip():
            return True
        at = text.find("{", at + 1)
    return False


def _no_rows(source: str) -> InputError:
    return InputError(source, "", f"no partition sizes listed (expected rows {_COLUMNS}, a JSON list of "
                                  "{\"topic\", \"partition\", \"bytes\"} objects, or kafka-log-dirs --describe output)")


def _illegal(topics_joined: str) -> bool:
    """True when the (joined) topic names hold a character Kafka does not allow in a topic name."""
    return not topics_joined.isascii() or bool(topics_joined.encode("ascii").translate(None, _LEGAL))


def _ascii_digits(s: str) -> bool:
    return s.isascii() and s.isdigit()


def _bulk_sizes(topics: list, parts: list, nbytes: list) -> dict[tuple[str, int], int] | None:
    """The sizes by (topic, partition) when every value is good (CSV: strings; JSON: already typed), else None."""
    n = len(topics)
    if not n or "" in topics or _illegal("".join(topics)) or "." in topics or ".." in topics or \
            max(map(len, topics)) > _MAX_TOPIC_LENGTH:
        return None
    if isinstance(parts[0], str):  # CSV columns: all strings of ASCII digits, not too long for int()
        for col in (parts, nbytes):
            if "" in col or not _ascii_digits("".join(col)) or max(map(len, col)) > 19:
                return None
        parts = list(map(int, parts))
        nbytes = list(map(int, nbytes))
    if min(parts) < 0 or max(parts) > _MAX_PARTITION or min(nbytes) < 0 or max(nbytes) > _MAX_BYTES:
        return None
    sizes = dict(zip(zip(topics, parts), nbytes))
    return sizes if len(sizes) == n else None  # shorter: a partition is listed twice


# ---------------------------------------------------------------- CSV


def _skip(rec: list[str]) -> bool:
    """A blank line (no field holds more than spaces) or a comment line (its first non-blank character is "#")."""
    return not rec or rec[0].lstrip().startswith("#") or not "".join(rec).strip()


def _skip_line(line: str) -> bool:
    """``_skip`` for a line without quotes (whose fields are ``line.split(",")``)."""
    return line.lstrip().startswith("#") or not line.replace(",", "").strip()


_ASCII_SPACES = " \t\r\x0b\x0c\x1c\x1d\x1e\x1f"  # what str.strip removes besides \n and non-ASCII spaces


def _is_header(rec: list[str]) -> bool:
    return tuple(f.strip().lower() for f in rec) == HEADER


def _reader(text: str):
    # newline="": lines end at \n, \r\n or \r, and quoted fields may hold line breaks (as the csv module wants)
    return csv.reader(io.StringIO(text, newline=""), skipinitialspace=True)


def _from_csv(text: str, source: str) -> dict[tuple[str, int], int]:
    sizes = None
    try:
        columns = _csv_columns(text)
        if columns is not None:
            sizes = _bulk_sizes(*columns)
    except csv.Error:
        pass  # the walk names the line
    return sizes if sizes is not None else _walk_csv(text, source)


def _csv_columns(text: str) -> tuple[list[str], list[str], list[str]] | None:
    """The three columns (stripped) of the data rows, or None when a row does not have three fields.

    Without quotes the text is split at newlines and commas (several times faster than the csv module);
    with quotes the csv module splits it. Either way the rows are those the walk sees.
    """
    if '"' not in text:
        if "\r" in text and text.count("\r") != text.count("\r\n"):
            return None  # a lone \r ends a line for the csv module: leave such files to the walk
        rows = text.split("\n")
        if not rows[-1].strip():
            rows.pop()  # the end of the last line
        # comments are usually at the top: only the lines up to the last "#" are looked at one by one
        last = text.rfind("#")
        k = 0 if last < 0 else text.count("\n", 0, last) + 1
        head, rows = [r for r in rows[:k] if not _skip_line(r)], rows[k:]
        if set(map(str.count, rows, repeat(","))) != {2}:  # blank lines (or bad rows)
            rows = [r for r in rows if not _skip_line(r)]
            if set(map(str.count, rows, repeat(","))) - {2}:
                return None
        if set(map(str.count, head, repeat(","))) - {2}:
            return None
        rows = head + rows if head else rows
        if not rows:
            return None
        if _is_header(rows[0].split(",")):
            rows = rows[1:]
        elif rows[0].split(",")[0].strip().lower() == "topic":
            return None  # a header with other columns: the walk says so
        if not rows:
            return None
        flat = ",".join(rows).split(",")
        topics, parts, nbytes = flat[0::3], flat[1::3], flat[2::3]
    else:
        recs = list(_reader(text))
        if "#" in text or set(map(len, recs)) != {3}:
            recs = [r for r in recs if not _skip(r)]
        if recs and _is_header(recs[0]):
            recs = recs[1:]
        elif recs and recs[0][0].strip().lower() == "topic":
            return None
        if not recs or set(map(len, recs)) != {3}:
            return None
        topics, parts, nbytes = map(list, zip(*recs))
    if not text.isascii() or any(c in text for c in _ASCII_SPACES):
        topics, parts, nbytes = (list(map(str.strip, col)) for col in (topics, parts, nbytes))
    return topics, parts, nbytes


def _walk_csv(text: str, source: str) -> dict[tuple[str, int], int]:
    """Read the CSV row by row: the sizes, or an InputError for the first bad row."""
    sizes: dict[tuple[str, int], int] = {}
    seen_at: dict[tuple[str, int], int] = {}
    first = True
    for line, rec in csv_rows(text, source, skipinitialspace=True):  # line: the row's last line
        if _skip(rec):
            continue
        if first:
            first = False
            if _is_header(rec):
                continue
            if rec[0].strip().lower() == "topic":
                raise InputError(source, f"line {line}", f"the header must name the columns {_COLUMNS}",
                                 ",".join(rec))
        rec = [f.strip() for f in rec]
        if len(rec) < 3:
            raise InputError(source, f"line {line}", f"missing column {HEADER[len(rec)]} (expected {_COLUMNS})",
                             ",".join(rec))
        if len(rec) > 3:
            raise InputError(source, f"line {line}", f"too many columns (expected {_COLUMNS})", ",".join(rec))
        topic, ptext, btext = rec
        _check_topic(topic, source, f"line {line}: topic")
        if not _ascii_digits(ptext):
            raise InputError(source, f"line {line}: partition", "partition must be a non-negative integer", ptext)
        if len(ptext.lstrip("0")) > 10 or int(ptext) > _MAX_PARTITION:
            raise InputError(source, f"line {line}: partition", "partition number out of range (0 .. 2147483647)",
                             ptext)
        if not _ascii_digits(btext):
            negative = btext.startswith("-") and _ascii_digits(btext[1:])
            raise InputError(source, f"line {line}: bytes",
                             "bytes must not be negative" if negative else "bytes must be an integer", btext)
        if len(btext.lstrip("0")) > 19 or int(btext) > _MAX_BYTES:
            raise InputError(source, f"line {line}: bytes", "bytes out of range (above 2^63 - 1)", btext)
        key = (topic, int(ptext))
        if key in seen_at:
            raise InputError(source, f"line {line}", f"duplicate partition (also at line {seen_at[key]})",
                             f"{topic}-{key[1]}")
        seen_at[key] = line
        sizes[key] = int(btext)
    if not sizes:
        raise _no_rows(source)
    return sizes


def _check_topic(topic: object, source: str, place: str) -> None:
    if type(topic) is not str:
        raise InputError(source, place, "wrong type: expected a string", topic)
    if not topic:
        raise InputError(source, place, "empty topic name", topic)
    if _illegal(topic):
        raise InputError(source, place, f"not a Kafka topic name (allowed: {_LEGAL_TEXT})", topic)
    if topic in (".", "..") or len(topic) > _MAX_TOPIC_LENGTH:
        raise InputError(source, place, f"not a Kafka topic name (\".\", \"..\" and names longer than "
                         f"{_MAX_TOPIC_LENGTH} are not allowed)", topic)


def _field_name(name: str) -> str:
    """A JSON key as a place in a message: quoted unless it is a plain word (a key may hold a line break)."""
    return name if name.isidentifier() else repr(name)


# ---------------------------------------------------------------- JSON


def _from_json(text: str, source: str) -> dict[tuple[str, int], int]:
    doc = parse_json(text, source)
    if isinstance(doc, dict):
        if "partitions" not in doc:
            raise InputError(source, "partitions", "missing field (expected {\"partitions\": [...]}, a list of "
                             "{\"topic\", \"partition\", \"bytes\"} objects, or kafka-log-dirs --describe output)")
        unknown = sorted(set(doc) - {"partitions"})
        if unknown:
            raise InputError(source, _field_name(unknown[0]), "unknown field (known: partitions)")
        entries, prefix = doc["partitions"], "partitions"
        if not isinstance(entries, list):
            raise InputError(source, "partitions", "wrong type: expected a list", type(entries).__name__)
    elif isinstance(doc, list):
        entries, prefix = doc, ""
    else:
        raise InputError(source, "top level", "expected a list of {\"topic\", \"partition\", \"bytes\"} objects "
                         "or {\"partitions\": [...]}", type(doc).__name__)
    sizes = None
    if entries and set(map(type, entries)) == {dict} and set(map(len, entries)) == {3}:
        topics, parts, nbytes = ([*map(dict.get, entries, repeat(k))] for k in HEADER)
        # three keys each, all three known ones present (not None: null is a wrong type anyway)
        if set(map(type, topics)) == {str} and set(map(type, parts)) == {int} == set(map(type, nbytes)):
            sizes = _bulk_sizes(topics, parts, nbytes)
    return sizes if sizes is not None else _walk_json(entries, prefix, source)


def _walk_json(entries: list, prefix: str, source: str) -> dict[tuple[str, int], int]:
    """Read the entries one by one: the sizes, or an InputError for the first bad entry."""
    sizes: dict[tuple[str, int], int] = {}
    seen_at: dict[tuple[str, int], str] = {}
    for i, e in enumerate(entries):
        place = f"{prefix}[{i}]"
        if type(e) is not dict:
            raise InputError(source, place, "wrong type: expected an object", type(e).__name__)
        unknown = sorted(set(e) - FIELDS)
        if unknown:
            raise InputError(source, f"{place}.{_field_name(unknown[0])}", "unknown field (known: topic, partition, bytes)")
        for k in HEADER:
            if k not in e:
                raise InputError(source, f"{place}.{k}", "missing field")
        topic, p, b = e["topic"], e["partition"], e["bytes"]
        _check_topic(topic, source, f"{place}.topic")
        _json_int(p, source, f"{place}.partition", "partition number", _MAX_PARTITION, "(0 .. 2147483647)")
        _json_int(b, source, f"{place}.bytes", "bytes", _MAX_BYTES, "(above 2^63 - 1)")
        key = (topic, p)
        if key in seen_at:
            raise InputError(source, place, f"duplicate partition (also at {seen_at[key]})", f"{topic}-{p}")
        seen_at[key] = place
        sizes[key] = b
    if not sizes:
        raise _no_rows(source)
    return sizes


def _json_int(v: object, source: str, place: str, what: str, most: int, range_text: str) -> None:
    """A JSON integer from 0 to ``most``, or an InputError naming the place."""
    if type(v) is not int:
        raise InputError(source, place, "wrong type: expected an integer", v)
    if v < 0:
        raise InputError(source, place, f"{what} must not be negative", v)
    if v > most:
        raise InputError(source, place, f"{what} out of range {range_text}", v)
