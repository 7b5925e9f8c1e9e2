"""CSV rows with their line numbers, for the broker file and the sizes table: a malformed row is one InputError."""
from __future__ import annotations

import csv
import io
from typing import Iterator

from ..errors import InputError


def csv_rows(text: str, source: str, **dialect) -> Iterator[tuple[int, list[str]]]:
    """(line number of the row's last line, fields) per row. ``newline=""``: lines end at \\n, \\r\\n or \\r and
    quoted fields may hold line breaks, as the csv module wants (a lone \\r would otherwise be a csv.Error)."""
    reader = csv.reader(io.StringIO(text, newline=""), **dialect)
    while True:
        try:
            rec = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise InputError(source, f"line {reader.line_num}", f"malformed CSV: {err}") from None
        yield reader.line_num, rec
