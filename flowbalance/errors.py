"""Errors for bad input: one line that names the file (or parameter), the place and the value.

The library names parameters and request fields, never command-line flags; the command line shows the flags
instead (``InputError.line(flags)``, ``RequestError.as_flags``)."""
from __future__ import annotations


class InputError(Exception):
    """Bad user input. ``str(err)`` is the one line shown to the operator (exit code 2)."""

    def __init__(self, source: str, place: str, message: str, value: object = None, *, has_value: bool | None = None,
                 remedy: tuple[str, object] | None = None):
        self.source = source
        self.place = place
        self.message = message
        self.value = value
        self.has_value = (value is not None) if has_value is None else has_value
        self.remedy = remedy  # (parameter, value or None for any value): the option that would accept this input
        super().__init__(self.line())

    def line(self, flags: dict[str, str] | None = None) -> str:
        """The one line. ``flags`` (parameter → flag) words the remedy for the command line."""
        where = self.source if not self.place else f"{self.source}: {self.place}"
        text = f"{where}: {self.message}"
        if self.remedy is not None:
            text += f" ({_remedy_text(self.remedy, flags)})"
        if self.has_value:
            shown = repr(self.value)
            if len(shown) > 80:
                shown = shown[:77] + "..."
            text += f" (got {shown})"
        return text


def _remedy_text(remedy: tuple[str, object], flags: dict[str, str] | None) -> str:
    name, value = remedy
    if flags is not None and name in flags:
        return f"use {flags[name]}" + ("" if value is None or value is True else f" {value}")
    return f"set {name}" + ("" if value is None else f"={value!r}")


class PlanningError(Exception):
    """A request that cannot be satisfied (for example RF above the number of brokers): exit code 2."""


class RequestError(InputError):
    """Bad value in a plan request (``PlanRequest``): names the request field(s), never a command-line flag.

    The command line shows it under the flag that set the field (``relabel``), the fleet under
    ``fleet.json: clusters.NAME.field``; the library's own line is ``request: field: message (got value)``."""

    def __init__(self, fields: str | tuple[str, ...], message: str, value: object = None, *,
                 has_value: bool | None = None, source: str = "request", remedy: tuple[str, object] | None = None):
        self.fields = (fields,) if isinstance(fields, str) else tuple(fields)
        super().__init__(source, "/".join(self.fields), message, value, has_value=has_value, remedy=remedy)

    def under(self, source: str) -> InputError:
        """The same error at a path under another source: ``fleet.json: clusters.NAME`` → ``...NAME.field``."""
        return InputError(f"{source}.{self.place}", "", self.message, self.value, has_value=self.has_value, remedy=self.remedy)

    def as_flags(self, flags: dict[str, str]) -> InputError:
        """The same error named by the flags that set its fields (the command line)."""
        shown = "/".join(flags.get(f, f) for f in self.fields)
        return InputError(shown, "", self.message, self.value, has_value=self.has_value, remedy=self.remedy)
