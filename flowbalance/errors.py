"""Errors for bad input: one line that names the file (or flag), the place and the value."""
from __future__ import annotations


class InputError(Exception):
    """Bad user input. ``str(err)`` is the one line shown to the operator (exit code 2)."""

    def __init__(self, source: str, place: str, message: str, value: object = None, *, has_value: bool | None = None):
        self.source = source
        self.place = place
        self.message = message
        self.value = value
        self.has_value = (value is not None) if has_value is None else has_value
        super().__init__(self.line())

    def line(self) -> str:
        where = self.source if not self.place else f"{self.source}: {self.place}"
        text = f"{where}: {self.message}"
        if self.has_value:
            shown = repr(self.value)
            if len(shown) > 80:
                shown = shown[:77] + "..."
            text += f" (got {shown})"
        return text


class PlanningError(Exception):
    """A request that cannot be satisfied (for example RF above the number of brokers): exit code 2."""


class RequestError(InputError):
    """Bad value in a plan request (``PlanRequest``): names the request field(s), never a command-line flag.

    The command line shows it under the flag that set the field (``relabel``), the fleet under
    ``fleet.json: clusters.NAME: field``; the library's own line is ``request: field: message (got value)``."""

    def __init__(self, fields: str | tuple[str, ...], message: str, value: object = None, *,
                 has_value: bool | None = None):
        self.fields = (fields,) if isinstance(fields, str) else tuple(fields)
        super().__init__("request", "/".join(self.fields), message, value, has_value=has_value)

    def under(self, source: str) -> InputError:
        """The same error under another source, the fields as the place (``fleet.json: clusters.NAME``)."""
        return InputError(source, self.place, self.message, self.value, has_value=self.has_value)

    def as_flags(self, flags: dict[str, str]) -> InputError:
        """The same error named by the flags that set its fields (the command line)."""
        shown = "/".join(flags.get(f, f) for f in self.fields)
        return InputError(shown, "", self.message, self.value, has_value=self.has_value)
