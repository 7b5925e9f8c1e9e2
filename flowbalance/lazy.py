"""Modules imported when first used: OR-Tools' CP-SAT module costs about 0.3 s to import (it imports pandas),
and most plans never solve a CP-SAT model, so ``plan``'s start-up should not pay for it."""
from __future__ import annotations

import importlib
from types import ModuleType


class LazyModule:
    """A stand-in for the module ``name``: the first attribute read imports it; later reads go straight to it."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str):
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


cp_model = LazyModule("ortools.sat.python.cp_model")
