"""Vector-Jacobian and Jacobian-vector products of a Numba function on NumPy values: the
engine the JAX (`enzyme_py.jax`) and PyTorch (`enzyme_py.torch`) wrappers share.

The frameworks hand over concrete inputs: float arrays (and 0-d arrays or floats for scalars)
and integer data. Each input gets the activity that differentiates it: float arrays "dup",
float scalars "active" in reverse and "dup" in forward mode, everything else "const". One
derivative is derived per (mode, activities) and specialised per types by Numba as usual.
"""
from __future__ import annotations

import numpy as np
from numba import njit
from numba.core.dispatcher import Dispatcher

from .api import derive_diff


def is_float(value) -> bool:
    return np.issubdtype(np.asarray(value).dtype, np.floating)


class HostDerivatives:
    """The primal of `f` and its derivatives, called on NumPy values."""

    def __init__(self, f) -> None:
        self.primal = f if isinstance(f, Dispatcher) else njit(f)
        self.name = self.primal.py_func.__name__
        self._derivatives: dict[tuple, Dispatcher] = {}

    def value(self, args: tuple):
        return self.primal(*_numba_args(args))

    def vjp(self, args: tuple, cotangent) -> tuple:
        """The cotangent of every input (None for inputs that are not floats) for the
        cotangent of the result (a float, an array, or a tuple of them)."""
        args = _numba_args(args)
        acts = tuple(_reverse_activity(a) for a in args)
        df = self._derivative("reverse", acts)
        call, shadows = [], {}
        for i, (a, act) in enumerate(zip(args, acts)):
            call.append(a)
            if act == "dup":
                shadows[i] = np.zeros_like(a)
                call.append(shadows[i])
        scalar_result = not isinstance(cotangent, tuple) and np.ndim(cotangent) == 0
        if not scalar_result:
            call.append(_consumable(cotangent))
        grads = iter(df(*call))
        scale = float(cotangent) if scalar_result else 1.0
        out = []
        for i, act in enumerate(acts):
            if act == "active":
                out.append(scale * next(grads))
            elif act == "dup":
                out.append(shadows[i] * scale if scale != 1.0 else shadows[i])
            else:
                out.append(None)
        return tuple(out)

    def jvp(self, args: tuple, tangents: tuple) -> tuple:
        """(value, tangent of the value) along the tangents of the float inputs (the entries
        of `tangents` for other inputs are ignored)."""
        args = _numba_args(args)
        acts = tuple("dup" if is_float(a) else "const" for a in args)
        df = self._derivative("forward", acts)
        call = []
        for a, t, act in zip(args, tangents, acts):
            call.append(a)
            if act == "dup":
                call.append(_like(t, a))
        return df(*call)

    def _derivative(self, mode: str, acts: tuple) -> Dispatcher:
        key = (mode, acts)
        if key not in self._derivatives:
            self._derivatives[key] = derive_diff(self.primal, f"d_{self.name}", acts, mode)
        return self._derivatives[key]


def _reverse_activity(value) -> str:
    if not is_float(value):
        return "const"
    return "active" if np.ndim(value) == 0 else "dup"


def _numba_args(args: tuple) -> tuple:
    """0-d arrays become Python floats/ints (Numba types them as scalars)."""
    return tuple(a.item() if isinstance(a, np.ndarray) and a.ndim == 0 else a for a in args)


def _consumable(cotangent):
    """A writable copy of the result's cotangent (the derivative consumes array adjoints)."""
    if isinstance(cotangent, tuple):
        return tuple(_consumable(c) for c in cotangent)
    if np.ndim(cotangent) == 0:
        return float(cotangent)
    return np.array(cotangent, copy=True)


def _like(tangent, value):
    """The tangent in the form the forward derivative takes for `value`."""
    if np.ndim(value) == 0:
        return float(tangent)
    out = np.empty_like(value)            # same shape, dtype and layout as the value
    out[...] = tangent
    return out
