"""`register_derivative` for a scalar external function (`numba.types.ExternalFunction`:
float and integer arguments, a float result), called from `@njit` code as a plain C call
(`call double @symbol(...)`).

Such a call is a value, not memory: the pass differentiates it with the scalar rule registry
(one partial derivative per operand), like a libm function. Each partial is a small
`numba.cfunc` (C ABI, linked into derivatives like the rules of `@njit` functions) evaluating
the user's rule at a unit seed: `d f / d x_k = f_rev(x..., 1.0)[k]`, or, with only a forward
rule, the tangent of `f_fwd` along the k-th unit vector. Both modes use the same partials.
"""
from __future__ import annotations

from numba import cfunc, types

from ir_passes.diff.rules import defrule, lookup

from .numba_bridge.custom_calls import register_library


def register_external(f: types.ExternalFunction, forward, reverse) -> None:
    sig, name = f.sig, f.symbol
    if not (isinstance(sig.return_type, types.Float) and all(
            t == sig.return_type or isinstance(t, (types.Integer, types.Boolean))
            for t in sig.args)):
        raise TypeError(f"register_derivative({name}): external functions of scalars "
                        f"returning a float (with float arguments of that type) are supported, "
                        f"not {sig}")
    if lookup(name) is not None:
        raise ValueError(f"a derivative rule for '{name}' is already registered")
    floats = [k for k, t in enumerate(sig.args) if isinstance(t, types.Float)]
    _check_count(name, "forward", forward, len(sig.args) + len(floats))
    _check_count(name, "reverse", reverse, len(sig.args) + 1)
    partials = {k: _partial(sig, k, floats.index(k), forward, reverse) for k in floats}

    def rule(m, args, res):
        return [m.helper(partials[k], res.type, *args) if k in partials else None
                for k in range(len(args))]

    defrule(name)(rule)


def _check_count(name: str, mode: str, rule, expected: int) -> None:
    if rule is None:
        return
    count = rule.py_func.__code__.co_argcount
    if count != expected:
        raise TypeError(f"register_derivative({name}): the {mode} rule "
                        f"{rule.py_func.__qualname__} takes {count} parameters, expected "
                        f"{expected}")


def _partial(sig, k: int, position: int, forward, reverse) -> str:
    """The symbol of a C function computing the partial derivative for operand `k`."""
    params = [f"a{i}" for i in range(len(sig.args))]
    if reverse is not None:
        body = f"rule({', '.join(params)}, 1.0)[{position}]"
    else:
        args = []
        for i, p in enumerate(params):
            args.append(p)
            if isinstance(sig.args[i], types.Float):
                args.append("1.0" if i == k else "0.0")
        body = f"rule({', '.join(args)})[1]"
    namespace = {"rule": reverse if reverse is not None else forward}
    exec(f"def partial({', '.join(params)}):\n    return {body}\n", namespace)
    compiled = cfunc(sig, error_model="numpy")(namespace["partial"])
    register_library(compiled.native_name, compiled._library)
    return compiled.native_name
