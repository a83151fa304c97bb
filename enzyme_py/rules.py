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
    """Give the external scalar function `symbol` (as called in the IR, e.g. a C function
    declared with `numba.types.ExternalFunction`) a derivative, used by both modes.

    `partials(m, args, res)` returns one partial derivative per operand (`None` for an
    operand without one), built with the emitter `m` from the call's operands `args` and its
    result `res`: `m.call(name, *xs)`, `m.neg`, `m.add`, `m.sub`, `m.mul`, `m.div`, `m.square`,
    `m.recip`, `m.const(like, value)`, `m.select(m.fcmp(pred, a, b), a, b)`.
    Example, d/dx j0(x) = -j1(x):

        enzyme_py.register_rule("j0", lambda m, args, res: [m.neg(m.call("j1", args[0]))])

    Rules are for scalar functions only; a second rule for the same symbol raises ValueError.
    """
    if lookup(symbol) is not None:
        raise ValueError(f"a derivative rule for '{symbol}' is already registered")
    defrule(symbol)(partials)


__all__ = ["register_rule"]
