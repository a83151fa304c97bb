"""User rules for functions called from differentiated code: `register_derivative` (a
derivative written as `@njit` functions) and `inactive` (no derivative at all).

    @njit
    def log1pexp(x):                       # called from a function you differentiate
        return x + np.log1p(np.exp(-x)) if x > 0 else np.log1p(np.exp(x))

    @njit
    def log1pexp_fwd(x, t_x):              # (value, tangent)
        return log1pexp(x), t_x / (1.0 + np.exp(-x))

    @njit
    def log1pexp_rev(x, d_ret):            # the gradients of the float parameters
        return (d_ret / (1.0 + np.exp(-x)),)

    enzyme_py.register_derivative(log1pexp, forward=log1pexp_fwd, reverse=log1pexp_rev)

Register before deriving the functions that call `f` (a derivative already compiled keeps
what it saw).
"""
from __future__ import annotations

import inspect

from numba import njit, types
from numba.core.dispatcher import Dispatcher

from ir_passes.diff.rules import defrule

from .custom_external import register_external
from .numba_bridge.custom_calls import Rules, add_rules


def register_derivative(f, forward=None, reverse=None) -> None:
    """Use `forward` and `reverse` (`@njit` functions) for calls to `f` instead of
    differentiating its body: an `@njit` function, or a `numba.types.ExternalFunction` of
    scalars returning a float (see custom_external.py).

    With f's float scalars `x`, float arrays `a` and other parameters `n` (integers, booleans,
    integer arrays: no derivative), in f's order:
    - `forward(x, t_x, a, t_a, n, ...)` returns `(value, tangent)`;
    - `reverse(x, a, d_a, n, ..., d_ret)` adds the adjoint of `a` into `d_a` and returns the
      tuple of the gradients of the float scalars (`()` if none).
    Inactive arguments get zero tangents and zeroed shadows. `f` must return a float and only
    read its arrays. Either rule may be omitted (that mode is then refused).
    """
    external = isinstance(f, types.ExternalFunction)
    if not external and not isinstance(f, Dispatcher):
        raise TypeError(f"register_derivative: f must be a numba.njit function or a "
                        f"numba.types.ExternalFunction, got {type(f).__name__}{_EXTERNAL_HINT}")
    name = f.symbol if external else f.py_func.__qualname__
    if forward is None and reverse is None:
        raise TypeError(f"register_derivative({name}): give forward=, reverse= or both")
    for rule, mode in ((forward, "forward"), (reverse, "reverse")):
        if rule is not None:
            _njit_name(rule, f"the {mode} rule", "register_derivative")
    if external:
        return register_external(f, _unchecked(forward), _unchecked(reverse))
    n = len(_parameters(f.py_func, name))
    for rule, mode in ((forward, "forward"), (reverse, "reverse")):
        if rule is not None:
            _check_rule(rule, mode, name, n)
    add_rules(Rules(f, _unchecked(forward), _unchecked(reverse)))


def inactive(f) -> None:
    """Calls to `f` have no derivative (logging, random numbers, counters): their results are
    constants. `f` is an `@njit` function (it must not write arrays that carry derivatives) or
    a scalar `numba.types.ExternalFunction`."""
    if isinstance(f, types.ExternalFunction):
        return _inactive_external(f)
    if not isinstance(f, Dispatcher):
        raise TypeError(f"inactive: f must be a numba.njit function or a "
                        f"numba.types.ExternalFunction, got {type(f).__name__}{_EXTERNAL_HINT}")
    _njit_name(f, "f", "inactive")
    add_rules(Rules(f, inactive=True))


def _inactive_external(f: types.ExternalFunction) -> None:
    sig = f.sig
    if not (isinstance(sig.return_type, types.Float) and all(
            isinstance(t, (types.Float, types.Integer, types.Boolean)) for t in sig.args)):
        raise TypeError(f"inactive({f.symbol}): only external functions of scalars returning "
                        f"a float are supported, not {sig}")
    defrule(f.symbol)(lambda m, args, res: [None] * len(args))


_EXTERNAL_HINT = (" (a ctypes or cffi function is called through a pointer: declare its "
                  "symbol as numba.types.ExternalFunction(name, signature) and call and "
                  "register that)")


def _unchecked(rule: Dispatcher | None) -> Dispatcher | None:
    """The rule compiled with error_model='numpy': a division by zero gives inf or nan, as in
    the derivative code the pass writes, instead of an exception the derivative cannot raise."""
    if rule is None:
        return None
    options = {k: v for k, v in rule.targetoptions.items() if k != "nopython"}
    options["error_model"] = "numpy"
    return njit(**options)(rule.py_func)


def _njit_name(f, role: str, api: str) -> str:
    if not isinstance(f, Dispatcher):
        raise TypeError(f"{api}: {role} must be a numba.njit function, got "
                        f"{type(f).__name__}")
    return f.py_func.__qualname__


def _parameters(py_func, name: str) -> list[str]:
    params = inspect.signature(py_func).parameters.values()
    if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        raise TypeError(f"{name} takes *args, **kwargs or keyword-only parameters; "
                        "register_derivative needs plain positional parameters")
    return [p.name for p in params]


def _check_rule(rule, mode: str, name: str, n: int) -> None:
    rule_name = _njit_name(rule, f"the {mode} rule", "register_derivative")
    count = len(_parameters(rule.py_func, rule_name))
    low, high = (n, 2 * n) if mode == "forward" else (n + 1, 2 * n + 1)
    if low <= count <= high:
        return
    if mode == "forward":
        what = ("f's parameters, each float and float array followed by its tangent "
                "(e.g. fwd(x, t_x, n) for f(x, n) with a float x and an integer n)")
    else:
        what = ("f's parameters, each float array followed by its shadow, then d_ret "
                "(e.g. rev(x, a, d_a, d_ret) for f(x, a) with a float x and a float array a)")
    raise TypeError(f"register_derivative({name}): the {mode} rule {rule_name} takes {count} "
                    f"parameters; for {name}, with {n}, it takes {what}: between {low} and "
                    f"{high}")


__all__ = ["inactive", "register_derivative"]
