"""Progress on stderr for long runs: the current step's name, a bar of steps and the elapsed time, drawn by a small
child process so that it keeps moving while a solver holds the interpreter.

Only on a terminal, only after about a second: quick runs print nothing, and piped output (or ``--quiet``) never
shows it. The parent sends one line per step to the child's stdin; the child redraws four times a second from its
own clock (the parent's start time on the shared monotonic clock), so a solve that keeps the parent's GIL for
30 s shows 0:00:01, 0:00:02, ... rather than a frozen ``0:00:00``. The bar is transient: the child clears it when
told to close (or when the parent's pipe closes), before the command prints its report.
"""
from __future__ import annotations

import subprocess
import sys
import time

DELAY = 1.0
REFRESH = 4  # redraws per second
CLOSE_WAIT = 2.0  # seconds the parent waits for the child to clear the bar


class Steps:
    """Call ``step(name)`` at the start of each step; ``close()`` at the end (or use as a context manager)."""

    def __init__(self, total: int, *, enabled: bool = True, delay: float = DELAY):
        self.total = total
        self.enabled = enabled and sys.stderr.isatty()
        self.delay = delay
        self.done = 0
        self.child: subprocess.Popen | None = None
        if self.enabled:
            self.child = _start_child(total, delay, time.monotonic())

    def step(self, name: str) -> None:
        self.done += 1
        self._send(f"{min(self.done - 1, self.total)}\t{_one_line(name)}\n")

    def _send(self, line: str) -> None:
        if self.child is None:
            return
        try:
            self.child.stdin.write(line)
            self.child.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):  # the display is gone: the run goes on without it
            self.child = None

    def close(self) -> None:
        if self.child is None:
            return
        child, self.child = self.child, None
        try:
            child.stdin.close()  # end of input: the child clears the bar and exits
            child.wait(timeout=CLOSE_WAIT)
        except (OSError, subprocess.TimeoutExpired):
            child.kill()

    def __enter__(self) -> "Steps":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _one_line(name: str) -> str:
    """The step's name on one line, controls shown as escapes (it is drawn on the operator's terminal)."""
    from .render import escape_controls

    return " ".join(escape_controls(name).split())


def _start_child(total: int, delay: float, started: float) -> subprocess.Popen | None:
    """The display process (``python -m flowbalance_cli.progress TOTAL DELAY STARTED``), or None when it cannot
    start (the run goes on without a display)."""
    try:
        return subprocess.Popen([sys.executable, "-m", "flowbalance_cli.progress", str(total), repr(delay),
                                 repr(started)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                                encoding="utf-8", errors="replace")
    except OSError:
        return None


def _display(total: int, delay: float, started: float) -> None:
    """The child: read ``DONE<TAB>NAME`` lines from stdin (a thread) and draw from its own clock until EOF."""
    import threading

    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn

    state = {"done": 0, "name": "starting", "open": True}

    def read() -> None:
        for line in sys.stdin:
            done, _, name = line.rstrip("\n").partition("\t")
            state["done"], state["name"] = int(done), name
        state["open"] = False

    threading.Thread(target=read, daemon=True).start()
    while state["open"] and time.monotonic() - started < delay:
        time.sleep(0.05)
    if not state["open"]:
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
               TextColumn("{task.fields[elapsed]}"))
    with Progress(*columns, console=Console(stderr=True, highlight=False), transient=True,
                  refresh_per_second=REFRESH) as bar:
        task = bar.add_task("", total=total, elapsed="")
        while state["open"]:
            bar.update(task, description=escape(state["name"]), completed=state["done"],
                       elapsed=_clock(time.monotonic() - started))
            time.sleep(1 / REFRESH)


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


if __name__ == "__main__":
    _display(int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]))
