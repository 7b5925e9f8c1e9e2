"""A costly fixture value computed once per test run, also under pytest-xdist (whose workers each have their own
module and session fixtures): the first worker to ask computes it in a folder every worker can read and pickles it;
the others wait for it and load it, so a Spark run is neither repeated nor a reason to start a JVM in a second
worker. This is pytest-xdist's documented recipe ("making session-scoped fixtures execute only once")."""
from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")


def once_per_run(tmp_path_factory, name: str, compute: Callable[[Path], T]) -> T:
    """``compute(folder)`` once per run of the suite; its value must pickle and its files stay under ``folder``.
    Without xdist it simply runs in a fresh temporary folder."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return compute(tmp_path_factory.mktemp(name))
    import fcntl  # POSIX only (the xdist docs use the filelock package, not a dependency here)

    root = tmp_path_factory.getbasetemp().parent / f"once-{name}"  # the run's folder, shared by its workers
    root.mkdir(exist_ok=True)
    value_file, folder = root / "value.pickle", root / "files"
    with open(root / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if compute raises
        if value_file.exists():
            return pickle.loads(value_file.read_bytes())
        if folder.exists():  # left by a worker whose compute failed: start afresh
            shutil.rmtree(folder)
        folder.mkdir()
        value = compute(folder)
        value_file.write_bytes(pickle.dumps(value))
        return value
