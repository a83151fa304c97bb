"""Custom derivative rules for external functions the pass cannot see into.

A rule gives the partial derivatives of a scalar function called by symbol (e.g. a C
function declared with `numba.types.ExternalFunction`), written in the `MathEmitter`
vocabulary shared with the built-in rules:

    enzyme_py.register_rule("j0", lambda m, args, res: [m.neg(m.call("j1", args[0]))])

`args` are the call's operands, `res` its result; return one partial per operand (`None`
for an operand with no derivative). Forward and reverse mode both use it.
"""
from __future__ import annotations

from ir_passes.diff.rules import defrule, lookup
from ir_passes.diff.rules.registry import Partials


def register_rule(symbol: str, partials: Partials) -> None:
    if lookup(symbol) is not None:
        raise ValueError(f"a derivative rule for '{symbol}' is already registered")
    defrule(symbol)(partials)


__all__ = ["register_rule"]
