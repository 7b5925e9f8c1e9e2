"""The topics file of ``flowbalance place``: several topics to place at once, as CSV with a header.

    topic,partitions,rf
    orders,12,3
    payments,6,3
    clicks,+4,

``partitions`` is N (create the topic with N partitions of RF ``rf``) or +N (append N partitions to an existing
topic: ``rf`` empty, the topic keeps its own). Blank lines and lines starting with ``#`` are skipped; the topics
are placed in file order. Every bad value is an ``InputError`` naming the file, the line and the column.
"""
from __future__ import annotations

import csv
import io

from ..errors import InputError, RequestError
from ..place import NewTopic

HEADER = ["topic", "partitions", "rf"]


def read_topics(text: str, source: str) -> tuple[NewTopic, ...]:
    """The items of a topics file (``source`` names it in errors), validated one by one."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise InputError(source, "", "no topics (expected a header topic,partitions,rf and one line per topic)")
    n0, head = lines[0]
    cells = [c.strip().lower() for c in next(csv.reader(io.StringIO(head)))]
    if cells != HEADER:
        raise InputError(source, f"line {n0}", f"expected the header {','.join(HEADER)}", head)
    items = tuple(_item(n, line, source) for n, line in lines[1:])
    if not items:
        raise InputError(source, "", "no topics after the header")
    return items


def _item(n: int, line: str, source: str) -> NewTopic:
    """One line as a ``NewTopic``; a field error becomes ``source: line n: column: ...``."""
    cells = [c.strip() for c in next(csv.reader(io.StringIO(line)))]
    if len(cells) != 3:
        raise InputError(source, f"line {n}", "expected 3 columns: topic,partitions,rf", line)
    topic, count, rf = cells
    add = count.startswith("+")
    number = _integer(count[1:] if add else count, source, n, "partitions")
    if add and rf:
        raise InputError(source, f"line {n}: rf", "added partitions (+N) take the topic's replication factor: "
                         "leave rf empty", rf)
    item = NewTopic(topic, number, None if add else _integer(rf, source, n, "rf"), add=add)
    try:
        return item.validate()
    except RequestError as err:
        column = {"add_partitions": "partitions"}.get(err.place, err.place)
        raise InputError(source, f"line {n}: {column}", err.message, err.value, has_value=err.has_value) from None


def _integer(text: str, source: str, n: int, column: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        raise InputError(source, f"line {n}: {column}", "expected a positive integer", text)
    return int(text)
