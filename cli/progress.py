"""Progress on stderr for long runs: a rich bar of named steps, only on a terminal, only after about a second.

Quick runs print nothing; piped output (or ``--quiet``) never shows it. The bar is transient: it is gone when
the command ends, so it never mixes with the report.
"""
from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

DELAY = 1.0


class Steps:
    """Call ``step(name)`` at the start of each step; ``close()`` at the end (or use as a context manager)."""

    def __init__(self, total: int, *, enabled: bool = True, delay: float = DELAY):
        self.total = total
        self.enabled = enabled and sys.stderr.isatty()
        self.delay = delay
        self.t0 = time.perf_counter()
        self.done = 0
        self.progress: Progress | None = None
        self.task = None

    def step(self, name: str) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self.progress is None and time.perf_counter() - self.t0 >= self.delay:
            self.progress = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                                     TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self.progress.start()
            self.task = self.progress.add_task(name, total=self.total, completed=self.done - 1)
        if self.progress is not None:
            self.progress.update(self.task, description=name, completed=min(self.done - 1, self.total))

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def __enter__(self) -> "Steps":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
