"""Which plan a report describes: the tool's version, a time, every input file with its SHA-256, and the request.

The command line gathers the paths and the request; this module hashes the files and writes the plain dict the
report carries as ``identity`` (``report --json`` and the page's identity block). The output depends only on its
inputs: the time is the plan's own (its sidecar's ``created``) when there is one, else ``SOURCE_DATE_EPOCH`` when
that is set (the reproducible-builds convention), else none.
"""
from __future__ import annotations

import hashlib
import os
import time
from typing import Iterable, Mapping

from .planmeta import request_json
from .request import PlanRequest

_CHUNK = 1 << 20
LATEST_EPOCH = 253402300799  # 9999-12-31T23:59:59Z, the last second every platform's gmtime accepts


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of the file's bytes (hex), read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def request_changes(req: PlanRequest) -> dict:
    """The request's fields that differ from the defaults, as the sidecar writes them (``planmeta.request_json``),
    in field order; a value written as the default's text (the budget "0" the command line passes for 0) is the
    default."""
    given, plain = request_json(req), request_json(PlanRequest())
    return {k: v for k, v in given.items()
            if not (v == plain[k] or (not isinstance(v, list) and str(v) == str(plain[k])))}


def source_date(env: Mapping[str, str]) -> str | None:
    """``SOURCE_DATE_EPOCH`` (seconds since 1970) from ``env`` as an ISO UTC time, or None when unset, not an
    integer or past year 9999 (the command line refuses such a value before this is reached)."""
    raw = env.get("SOURCE_DATE_EPOCH", "").strip()
    if not (raw.isascii() and raw.isdigit()) or int(raw) > LATEST_EPOCH:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(raw)))


def report_identity(inputs: Iterable[tuple[str, str | os.PathLike]], *, request: PlanRequest | None = None,
                    request_from: str | None = None, created: str | None = None,
                    created_from: str | None = None) -> dict:
    """The report's ``identity``: ``tool``, ``version``, ``created`` and ``created_from`` (what the time is: "plan
    sidecar", "SOURCE_DATE_EPOCH", or null with no time), ``inputs`` (role, path as given, sha256, bytes; in the
    order given), ``request`` (the fields that differ from the defaults; null when none is given) and ``request_from``
    (what the caller says it came from: "plan sidecar" or "options")."""
    from . import __version__

    files = [{"role": role, "path": str(path), "sha256": file_sha256(path), "bytes": os.path.getsize(path)}
             for role, path in inputs]
    return {"tool": "flowbalance", "version": __version__, "created": created,
            "created_from": created_from if created is not None else None, "inputs": files,
            "request": request_changes(request) if request is not None else None,
            "request_from": request_from if request is not None else None}
