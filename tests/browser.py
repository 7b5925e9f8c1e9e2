"""Headless Chromium for the HTML tests: found (a failure when CI requires it, else a skip), and run on a page."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def chromium() -> str:
    """The browser's executable; fails when ``FLOWBALANCE_REQUIRE_BROWSER`` is set (CI) and it is missing."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("FLOWBALANCE_REQUIRE_BROWSER"):
            pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("chromium not installed; .ci/run installs it and sets FLOWBALANCE_REQUIRE_BROWSER")
    return exe


def flags(tmp_path: Path) -> list[str]:
    """Headless, offline, with its own profile under ``tmp_path``."""
    return ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}"]


def dump_dom(page: Path, tmp_path: Path) -> str:
    """The DOM Chromium built from ``page`` (asserts the browser exited cleanly)."""
    dom = subprocess.run([chromium(), *flags(tmp_path), "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    return dom.stdout
