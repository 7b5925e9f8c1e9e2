"""The typer application: registers the commands and turns bad input into one line and exit code 2.

Interrupts end in one line too: Ctrl-C (SIGINT) is ``flowbalance: interrupted``, exit 130; SIGTERM is
``flowbalance: terminated``, exit 143. Both delete the temporary files of an unfinished write first.
"""
from __future__ import annotations

import signal
import sys

try:  # Ctrl-C while the command line loads (numpy, typer, ...): one line, not an import traceback
    import typer

    try:  # typer >= 0.20 vendors click as typer._click
        from typer._click import exceptions as cx
    except ImportError:  # pragma: no cover - older typer depends on click
        from click import exceptions as cx

    from flowbalance import __version__
    from flowbalance.errors import InputError, PlanningError, RequestError
    from .options import CLI_FLAGS
    from flowbalance.verify import PlanVerificationError
    from flowbalance.formats.writers import remove_pending

    from .batches import batches
    from .check import check
    from .compare import compare
    from .fleet import fleet
    from .frontier import frontier_command
    from .generate import generate
    from .place import place_command
    from .plan import plan_command
    from .render import escape_controls
    from .report import report
    from .status import status
except KeyboardInterrupt:  # pragma: no cover - timing dependent
    sys.stderr.write("flowbalance: interrupted\n")
    raise SystemExit(130) from None

_Abort = getattr(cx, "Abort", KeyboardInterrupt)  # typer's vendored click may not export Abort

app = typer.Typer(
    name="flowbalance",
    help="Plan Kafka partition reassignments with the fewest replica moves (flow networks).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"flowbalance {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version and exit."),
) -> None:
    """Plan Kafka partition reassignments with the fewest replica moves (flow networks)."""


app.command("check")(check)
app.command("generate")(generate)
app.command("plan")(plan_command)
app.command("place")(place_command)
app.command("compare")(compare)
app.command("frontier")(frontier_command)
app.command("batches")(batches)
app.command("report")(report)
app.command("status")(status)
app.command("fleet")(fleet)


def _fail(text: str) -> int:
    sys.stderr.write(f"flowbalance: error: {escape_controls(text)}\n")
    return 2


class Terminated(BaseException):
    """Raised by the SIGTERM handler ``main`` installs; a BaseException like KeyboardInterrupt, so no
    ``except Exception`` on the way swallows it and every ``finally`` and ``with`` block runs."""


def _on_sigterm(signum, frame) -> None:
    raise Terminated()


def _interrupted(what: str, code: int) -> int:
    """Delete unfinished temporary files and say so in one line; further signals are ignored meanwhile."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        _set_handler(sig, signal.SIG_IGN)
    remove_pending()
    sys.stderr.write(f"flowbalance: {what}\n")
    return code


def _set_handler(sig: int, handler):
    """Install ``handler``; the previous one, or None where handlers cannot be set (not the main thread)."""
    try:
        return signal.signal(sig, handler)
    except (ValueError, OSError):  # pragma: no cover - not the main thread
        return None


def main(argv: list[str] | None = None) -> int:
    """Console entry point: run the app; bad input and usage errors end in one line on stderr, exit 2.

    SIGTERM is turned into :class:`Terminated` while the command runs (the previous handlers are restored
    after, for callers that run ``main`` in-process). SIGINT keeps Python's KeyboardInterrupt (Spark installs
    its own SIGINT handler, which cancels the jobs and raises KeyboardInterrupt too).
    """
    previous = {signal.SIGINT: signal.getsignal(signal.SIGINT), signal.SIGTERM: _set_handler(signal.SIGTERM, _on_sigterm)}
    try:
        _run(argv)
    finally:
        for sig, handler in previous.items():
            if handler is not None:
                _set_handler(sig, handler)
    return 0  # pragma: no cover - _run always raises SystemExit


def _run(argv: list[str] | None) -> int:
    """Run the app and turn every way it can end into an exit code (raises SystemExit)."""
    try:
        rc = app(args=argv, prog_name="flowbalance", standalone_mode=False)
        if rc == 130:  # typer turns a KeyboardInterrupt inside a command into exit code 130
            return _exit(_interrupted("interrupted", 130))
    except SystemExit:
        raise
    except KeyboardInterrupt:
        return _exit(_interrupted("interrupted", 130))
    except Terminated:
        return _exit(_interrupted("terminated", 143))
    except RequestError as err:  # the library names fields and parameters; the user typed flags
        return _exit(_fail(err.as_flags(CLI_FLAGS).line(CLI_FLAGS)))
    except InputError as err:
        return _exit(_fail(err.line(CLI_FLAGS)))
    except PlanningError as err:
        return _exit(_fail(str(err)))
    except PlanVerificationError as err:
        # a bug, never an output: nothing was written (verification runs before any file is)
        sys.stderr.write(f"flowbalance: internal error: the plan failed verification ({escape_controls(str(err))}); "
                         "nothing was written. Please report this with the input files.\n")
        return _exit(3)
    except cx.NoArgsIsHelpError as err:
        typer.echo(err.ctx.get_help() if err.ctx else "")
        return _exit(0)
    except cx.UsageError as err:
        cmd = err.ctx.command_path if err.ctx else "flowbalance"
        return _exit(_fail(f"{cmd}: {err.format_message()}{_given(err, argv)}"))
    except cx.ClickException as err:
        return _exit(_fail(err.format_message()))
    except _Abort as err:
        if isinstance(err.__context__, KeyboardInterrupt):
            return _exit(_interrupted("interrupted", 130))
        return _exit(_fail("aborted"))
    except BrokenPipeError:
        return _exit(0)
    return _exit(rc if isinstance(rc, int) else 0)


def _given(err: Exception, argv: list[str] | None) -> str:
    """" (got VALUE)" for a bad option value, found in the command line, so the message names the value."""
    param = getattr(err, "param", None)
    names = list(getattr(param, "opts", []) or [])
    args = list(sys.argv[1:] if argv is None else argv)
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                return f" (got {args[i + 1]!r})"
            if a.startswith(n + "="):
                return f" (got {a[len(n) + 1:]!r})"
    return ""


def _exit(code: int) -> int:
    sys.stdout.flush()
    raise SystemExit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
