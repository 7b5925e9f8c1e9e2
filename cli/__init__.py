"""The flowbalance command line (typer). Installed as the package ``flowbalance_cli``.

``SOURCE_DATE_EPOCH`` (the time on a report page without a plan sidecar) is checked here, before anything imports
numpy: numpy's f2py, which scipy imports, reads it at import time and stops with a traceback on a value that is
not whole seconds in range. A bad value ends in one line and exit code 2, as any bad input does."""
import os as _os
import sys as _sys

_LATEST = 253402300799  # 9999-12-31T23:59:59Z, the last second every platform's gmtime accepts


def _check_source_date() -> None:
    raw = _os.environ.get("SOURCE_DATE_EPOCH")
    if raw is None or (raw.strip().isascii() and raw.strip().isdigit() and int(raw) <= _LATEST):
        return
    shown = "'" + raw.encode("unicode_escape").decode("ascii") + "'"  # controls as escapes, never raw
    _sys.stderr.write("flowbalance: error: SOURCE_DATE_EPOCH: must be whole seconds since 1970-01-01 UTC, "
                      f"at most {_LATEST} (got {shown})\n")
    raise SystemExit(2)


_check_source_date()
