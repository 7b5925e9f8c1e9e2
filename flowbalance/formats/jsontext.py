"""JSON parsing with precise error positions: orjson for speed, the stdlib parser only to locate an error."""
from __future__ import annotations

import json

import orjson

from ..errors import InputError


def parse_json(text: str | bytes, source: str, *, line_offset: int = 0) -> object:
    """Parse JSON text; on error raise InputError naming line and column (shifted by ``line_offset``)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(
            source, f"line {err.lineno + line_offset} column {err.colno}", f"malformed JSON: {err.msg}"
        ) from None
    except RecursionError:
        raise InputError(source, "", "malformed JSON: nested too deeply") from None
    except ValueError:  # not a JSONDecodeError: an integer of more than 4300 digits
        raise InputError(source, "", "malformed JSON: a number is too long") from None
    raise InputError(source, "", "malformed JSON: invalid text (for example a non-UTF-8 byte or a number out of range)")


def dumps_str(value: str) -> str:
    """A JSON string literal (quoted and escaped)."""
    return orjson.dumps(value).decode()
