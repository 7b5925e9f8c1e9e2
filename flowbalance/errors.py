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
