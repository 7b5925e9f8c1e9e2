"""What the machine costs beyond its cores: how long fresh memory takes to touch the first time.

Why: on a virtual machine whose host backs guest memory lazily (and takes freed pages back: a balloon device's
free page reporting), the first write to a page the guest has not used lately costs a trip to the host. On the
2-core VM of docs/performance.md that is 1.1-2.6 s per GiB (over one day), against 0.2 s per GiB for memory used
before; a plan at 1,000,000 replicas touches about 1 GiB fresh, at 3,000,000 about 3 GiB, so the same code's
times move by seconds with the machine's state. Each benchmark prints this figure beside its machine line, so
two runs can be told apart by it; the planner is never tuned to it.

Most of that cost is the kernel's transparent huge pages: numpy advises them for large arrays (its default on
Linux), and with the kernel's ``defrag`` setting at ``madvise`` a fresh huge page may first be compacted. Session 32
measured 1.56-5.11 s per GiB with numpy's advice against 0.42-0.45 s without (``NUMPY_MADVISE_HUGEPAGE=0``), and
memory used before 0.14 against 0.42 s. Planning with the advice off was measured and not adopted
(docs/performance.md): of five 1,000,000-replica cases two planned 1-2 s faster and three the same, while the
fleet's many small plans took about 10 % more CPU. The line prints both figures.
"""
from __future__ import annotations

import os
import subprocess
import sys

_PROBE = """
import time
import numpy as np
n = {mib} * 2 ** 17  # int64 words
t = time.perf_counter(); a = np.ones(n, np.int64); fresh = time.perf_counter() - t
del a
t = time.perf_counter(); a = np.ones(n, np.int64); reused = time.perf_counter() - t
print(fresh * 1024 / {mib}, reused * 1024 / {mib})
"""


def first_touch(mib: int = 512, huge_pages: bool = True) -> tuple[float, float] | None:
    """(seconds per GiB to write fresh memory the first time, the same after the process freed it), measured on
    ``mib`` MiB in a fresh process, with numpy advising huge pages (its default) or not; None when the probe
    fails."""
    env = {**os.environ, "NUMPY_MADVISE_HUGEPAGE": "1" if huge_pages else "0"}
    res = subprocess.run([sys.executable, "-c", _PROBE.format(mib=int(mib))], capture_output=True, text=True, env=env)
    try:
        fresh, reused = (float(x) for x in res.stdout.split())
    except ValueError:
        return None
    return fresh, reused


def describe() -> str:
    """The machine line's memory part: "fresh memory 2.45 s/GiB (reused 0.21; without huge pages 0.44)"."""
    got, small = first_touch(), first_touch(huge_pages=False)
    if got is None:
        return "fresh memory: probe failed"
    return (f"fresh memory {got[0]:.2f} s/GiB (reused {got[1]:.2f}; "
            + ("without huge pages: probe failed)" if small is None else f"without huge pages {small[0]:.2f})"))
