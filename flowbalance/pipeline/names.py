"""Cluster names are folder names in the output: one rule for every source (dump folders, ``fleet.json`` keys,
the ``cluster`` column of tables), so that no name can point outside ``-o``, hide in a listing or act as an option.

A name is usable when it is non-empty, at most ``MAX_LENGTH`` characters, has no ``/`` or ``\\``, is not ``.`` or
``..``, has no control or format characters (below 0x20, 0x7f, Unicode categories Cc, Cf, Zl, Zp, and Cs: a lone
surrogate, which a JSON ``\\ud800`` escape can produce, is no file name) and does not start with ``-``.
No pyspark here: the check also runs inside Spark tasks.
"""
from __future__ import annotations

import unicodedata

from ..errors import InputError

MAX_LENGTH = 200
_BAD_CATEGORIES = ("Cc", "Cf", "Cs", "Zl", "Zp")


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a cluster name (a short phrase), or None when it can."""
    if not isinstance(name, str) or name == "":
        return "must not be empty"
    if len(name) > MAX_LENGTH:
        return f"must be at most {MAX_LENGTH} characters (it has {len(name)})"
    if "/" in name or "\\" in name:
        return "must not contain / or \\"
    if name in (".", ".."):
        return "must not be . or .."
    for ch in name:
        if ord(ch) < 0x20 or ord(ch) == 0x7F or unicodedata.category(ch) in _BAD_CATEGORIES:
            return f"must not contain control characters ({ch!r})"
    if name.startswith("-"):
        return "must not start with -"
    return None


def check_name(name: object, source: str) -> None:
    """Raise InputError "SOURCE: cluster name: WHY (got 'NAME')" when ``name`` is not usable."""
    problem = name_problem(name)
    if problem is not None:
        raise InputError(source, "cluster name", problem, "" if name is None else name, has_value=True)


def name_error(name: object, source: str) -> str | None:
    """The one-line reason ``check_name`` would raise, or None when the name is usable."""
    try:
        check_name(name, source)
    except InputError as err:
        return err.line()
    return None
