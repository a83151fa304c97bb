"""Which Numba functions the user asked not to inline: `@njit(inline="never")` written out
(Numba's default is the same word, but then it is absent from the dispatcher's options).
Such a callee stays a call in the captured module, and the pass differentiates it as a
function of its own, once per (callee, activities) (`ir_passes/diff/callees.py`)."""
from __future__ import annotations

import sys

from numba.core.dispatcher import Dispatcher

from ir_passes.known.calls import demangle_numba

__all__ = ["explicitly_noinline"]


def explicitly_noinline(symbol: str) -> bool:
    """Whether `symbol` is a compiled signature of a module-level (or class-level) `@njit`
    function whose options say `inline="never"` (found by its demangled `module.qualname`;
    other functions, e.g. closures, are inlined as usual)."""
    name = demangle_numba(symbol)
    if name is None or "<" in name:
        return False
    dispatcher = _lookup(name.split("."))
    return isinstance(dispatcher, Dispatcher) and \
        dispatcher.targetoptions.get("inline") == "never"


def _lookup(parts: list[str]) -> object:
    """The object named by `parts` (a module's name, then attributes), None if none is."""
    for split in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:split]))
        if module is None:
            continue
        obj: object = module
        for attr in parts[split:]:
            obj = getattr(obj, attr, None)
        return obj
    return None
