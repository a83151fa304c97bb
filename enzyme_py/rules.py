"""Custom derivative rules for external scalar functions the pass cannot see into.

A rule gives the partial derivatives of a scalar function called by symbol (scalar operands,
a float result: e.g. a C function declared with `numba.types.ExternalFunction`), written in the
`MathEmitter` vocabulary shared with the built-in rules:

    enzyme_py.register_rule("j0", lambda m, args, res: [m.neg(m.call("j1", args[0]))])

`args` are the call's operands, `res` its result; return one partial per operand (`None`
for an operand with no derivative). Forward and reverse mode both use it. Functions taking
arrays (Numba's LAPACK helpers behind `np.linalg`, containers) and Numba-compiled functions
cannot be described this way and are refused, naming `register_derivative` (custom.py), which
takes rules written as `@njit` functions; the BLAS helpers behind `A @ B`, `np.dot` and
`np.linalg.norm` of a vector are differentiated already.
"""
from __future__ import annotations

from ir_passes.api import Partials, defrule, lookup
from ir_passes.known.calls import demangle_numba, known_problem
from ir_passes.known.model import known_call

_REGISTERED: dict[str, Partials] = {}     # what register_rule was given, by symbol


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
    why = _not_scalar(symbol)
    if why is not None:
        raise ValueError(why)
    if lookup(symbol) is not None:
        raise ValueError(f"a derivative rule for '{symbol}' is already registered")
    defrule(symbol)(partials)
    _REGISTERED[symbol] = partials


def registered_rules() -> dict[str, Partials]:
    """The rules given to `register_rule` so far (the disk cache's fingerprint reads them)."""
    return dict(_REGISTERED)


def _not_scalar(symbol: str) -> str | None:
    """Why `symbol` cannot take a rule, when it is known not to be an external scalar
    function; the message names `register_derivative`, which takes rules for functions with
    array arguments and for `@njit` functions."""
    use = "enzyme_py.register_derivative(f, forward=..., reverse=...)"
    problem = known_problem(symbol)
    if problem is not None:
        return (f"register_rule takes the partial derivatives of a scalar function; '{symbol}' "
                f"is not one: {problem.what}. {problem.hint}. Functions of your own taking "
                f"arrays get a derivative with {use}")
    python_name = demangle_numba(symbol)
    if python_name is not None:
        return (f"'{symbol}' is the Numba-compiled function {python_name}: its body is "
                f"differentiated directly, it needs no rule; to give it a derivative of your "
                f"own, use {use}")
    if known_call(symbol) is not None:
        return (f"register_rule takes the partial derivatives of a scalar function; '{symbol}' "
                f"is not one: a library function with its own derivative (use {use} for "
                "functions of your own)")
    return None


__all__ = ["register_rule", "registered_rules"]
