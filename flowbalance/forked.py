"""One call run in a forked child process, its result sent back through a pipe: the second core for work that
holds the GIL (OR-Tools' solvers hold it, so threads would run one at a time).

A fork shares the parent's arrays copy on write, so the call needs no arguments sent; only its result travels
(pickled). Used only where the parent waits for the result or throws it away, never for work with side effects
outside the result: the plans are the same with or without it (``PROCESSES = 1`` turns it off). Not in a process
with other threads (a fork copies only the calling thread: a lock another thread holds would stay held)."""
from __future__ import annotations

import os
import pickle
import select
import signal
import threading
from typing import Any, Callable

PROCESSES = 2 if hasattr(os, "fork") and len(os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity")
                                              else range(os.cpu_count() or 1)) >= 2 else 1


STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


class ForkFailed(RuntimeError):
    """The child died or sent nothing: the caller runs the call itself."""


def can_fork() -> bool:
    """Whether a second process may be forked here: two cores, ``fork`` available, no other thread."""
    return PROCESSES >= 2 and threading.active_count() == 1


class Forked:
    """``fn()`` running in a forked child from construction; ``result()`` waits for its value (ForkFailed when
    the child failed; ``result_or`` then computes it here), ``ready()`` says whether it has one without waiting,
    ``cancel()`` ends it when the value is no longer wanted, ``alongside(g)`` runs ``g()`` here meanwhile and
    cancels the child when ``g`` raises."""

    def __init__(self, fn: Callable[[], Any]):
        read_end, write_end = os.pipe()
        # SIGINT and SIGTERM are held across the fork: the child must not raise the caller's KeyboardInterrupt (or
        # a CLI's exception for SIGTERM) into the caller's code, which would clean up and report twice
        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            self.pid = os.fork()
            if self.pid == 0:  # the child: run, send, never return into the caller
                code = 1
                try:
                    if threading.current_thread() is threading.main_thread():
                        for sig in STOP_SIGNALS:  # a stop signal ends the child at once
                            signal.signal(sig, signal.SIG_DFL)
                    signal.pthread_sigmask(signal.SIG_SETMASK, held)
                    os.close(read_end)
                    with os.fdopen(write_end, "wb") as pipe:
                        pickle.dump(fn(), pipe, protocol=pickle.HIGHEST_PROTOCOL)
                    code = 0
                finally:
                    os._exit(code)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        os.close(write_end)
        self.pipe = os.fdopen(read_end, "rb")

    def ready(self) -> bool:
        """Whether ``result()`` would return without waiting for the child to compute: it has written its value,
        or ended without one."""
        return bool(select.select([self.pipe], [], [], 0)[0])

    def result(self) -> Any:
        try:
            data = self.pipe.read()
        finally:  # closed before the wait: a child still writing fails at once instead of blocking
            self.pipe.close()
            _, status = os.waitpid(self.pid, 0)
        if status != 0 or not data:
            raise ForkFailed(f"forked process {self.pid} ended with status {status}")
        return pickle.loads(data)

    def result_or(self, fallback: Callable[[], Any]) -> Any:
        """The child's value, or ``fallback()`` (the same call, run here) when the child failed."""
        try:
            return self.result()
        except ForkFailed:
            return fallback()

    def alongside(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` run in this process while the child works; the child is ended when ``fn`` raises."""
        try:
            return fn()
        except BaseException:
            self.cancel()
            raise

    def cancel(self) -> None:
        self.pipe.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)
