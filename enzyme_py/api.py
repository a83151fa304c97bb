"""The public entry points: `derive_diff` and the `@autodiff` decorator (see API.md).

`derive_diff` checks the activity specification at once and returns a Numba dispatcher. The
first call with new argument types (from Python or from `@njit` code) specialises it: the
primal is captured for those types, differentiated by `ir_passes`, and linked back; later
calls reuse the compiled specialisation.

Mechanics: the dispatcher's body calls a stub whose `@overload` runs at typing time and
generates the wrapper for the concrete types (shadow shape checks, the width-k tangent
buffer), which in turn calls the derivative through a lazily built `@intrinsic`.
"""
from __future__ import annotations

import functools
import itertools
import keyword

import numpy as np
from numba import njit
from numba.core.dispatcher import Dispatcher
from numba.extending import overload

from ir_passes.errors import ActivityError

from .activities import parse_spec
from .numba_bridge.link import lazy_intrinsic, njit_wrapper
from .specialize import Specializer, check_disjoint, check_lanes, check_shadow

_stub_ids = itertools.count()


def derive_diff(f, name: str | None, activities, mode: str = "reverse", *,
                ret: str | tuple[str, ...] | None = None, return_primal: bool = False,
                width: int = 1) -> Dispatcher:
    """The derivative of `f` (a Python function or `numba.njit` dispatcher) as a dispatcher.

    `activities` gives one of "const", "dup", "active", "dupnoneed" per parameter (a sequence
    or a comma-separated string). See API.md for the calling conventions of each mode.
    When `f` returns an array or a tuple, the reverse derivative takes the adjoint of the
    result as a last argument `d_ret` (a tuple for a tuple; array parts are consumed), and
    `ret` may give one activity ("active"/"const") per tuple element; the forward derivative
    returns `(value, tangent)` with the tangent shaped like the value.
    """
    primal = f if isinstance(f, Dispatcher) else njit(f)
    spec = parse_spec(primal.py_func, activities, mode, ret, width, return_primal)
    name = name or f"d_{primal.py_func.__name__}"
    specializer = Specializer(primal, name, spec)
    call = lazy_intrinsic(f"enzyme_{name}", specializer.build)
    params = specializer.wrapper_params()
    d_ret = specializer.d_ret_param()         # reverse mode: optional trailing adjoint
    arglist = ", ".join(params + ([d_ret] if d_ret else []))
    declared = ", ".join(params + ([f"{d_ret}=None"] if d_ret else []))

    stub_name = f"__enzyme_stub_{next(_stub_ids)}"
    stub_scope: dict = {}
    exec(f"def {stub_name}({declared}):\n    raise NotImplementedError\n", stub_scope)
    stub = stub_scope[stub_name]

    def make_impl(argtypes: tuple):
        scope = {"__call": call, "np": np, "check_shadow": check_shadow,
                 "check_lanes": check_lanes, "check_disjoint": check_disjoint}
        exec(specializer.wrapper_source(argtypes), scope)
        return scope["impl"]

    typer_scope = {"make_impl": make_impl}
    exec(f"def typer({declared}):\n    return make_impl(({arglist},))\n", typer_scope)
    overload(stub)(typer_scope["typer"])
    dispatcher = njit_wrapper(f"def {_ident(name)}({declared}):\n"
                              f"    return __stub({arglist})\n", _ident(name), {"__stub": stub})
    dispatcher.enzyme = specializer
    return dispatcher


def _ident(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    out = out if out and not out[0].isdigit() else "_" + out
    return out + "_" if keyword.iskeyword(out) or out == "__stub" else out


class autodiff:
    """`@autodiff(mode="reverse", args=("dup", "const"))`: a primal that knows its derivative.

    Calling it runs the primal (compiled by Numba); `.derivative` is what `derive_diff`
    returns; `.inspect(stage)` shows the IR of a stage for the signatures compiled so far.
    """

    def __init__(self, fn=None, *, mode: str = "reverse", args=None, name: str | None = None,
                 ret=None, return_primal: bool = False, width: int = 1,
                 **njit_options) -> None:
        self._options = dict(mode=mode, args=args, name=name, ret=ret,
                             return_primal=return_primal, width=width)
        self._njit_options = njit_options
        self.primal = None
        self.derivative = None
        if fn is not None:
            self._bind(fn)

    def _bind(self, fn) -> None:
        o = self._options
        if o["args"] is None:
            raise ActivityError("@autodiff needs args=(...) with one activity per parameter")
        self.primal = fn if isinstance(fn, Dispatcher) else njit(**self._njit_options)(fn)
        pyname = self.primal.py_func.__name__
        self.derivative = derive_diff(self.primal, o["name"] or f"d_{pyname}", o["args"],
                                      o["mode"], ret=o["ret"], return_primal=o["return_primal"],
                                      width=o["width"])
        functools.update_wrapper(self, self.primal.py_func)

    def __call__(self, *args):
        if self.primal is None:          # used as @autodiff(...) with options
            (fn,) = args
            self._bind(fn)
            return self
        return self.primal(*args)

    def inspect(self, stage: str = "derivative") -> str:
        return self.derivative.enzyme.inspect(stage)  # type: ignore[union-attr]


__all__ = ["autodiff", "derive_diff"]
