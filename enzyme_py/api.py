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

import numpy as np
from numba import njit
from numba.core.dispatcher import Dispatcher
from numba.extending import overload

from ir_passes.errors import ActivityError

from .activities import parse_spec
from .call_checks import NAMESPACE as CHECKS
from .call_boundary import guard_first_calls
from .numba_bridge.link import lazy_intrinsic, njit_wrapper, raise_failed
from .specialize import Specializer

_stub_ids = itertools.count()


def derive_diff(f, name: str | None, activities, mode: str = "reverse", *, ret: str | None = None,
                return_primal: bool = False, width: int = 1) -> Dispatcher:
    """DOC"""
    primal = f if isinstance(f, Dispatcher) else njit(f)
    spec = parse_spec(primal.py_func, activities, mode, ret, width, return_primal)
    name = name or f"d_{primal.py_func.__name__}"
    specializer = Specializer(primal, name, spec)
    call = lazy_intrinsic(f"enzyme_{_ident(name)}", specializer.build, deferred=True)
    arglist = ", ".join(specializer.wrapper_params())

    stub_scope: dict = {}
    exec(f"def stub({arglist}):\n    raise NotImplementedError\n", stub_scope)
    stub = stub_scope["stub"]
    stub.__name__ = stub.__qualname__ = f"__enzyme_stub_{next(_stub_ids)}"

    def make_impl(argtypes: tuple):
        scope = {"__call": call, "__raise_failed": raise_failed, "np": np, **CHECKS}
        exec(specializer.wrapper_source(argtypes), scope)
        return scope["impl"]

    typer_scope = {"make_impl": make_impl}
    exec(f"def typer({arglist}):\n    return make_impl(({arglist},))\n", typer_scope)
    # inlined: the wrapper is one function, so an exception leaves it with nothing held
    overload(stub, inline="always")(typer_scope["typer"])
    # defaults: a call missing arguments reaches the typer, which names them
    defaults = ", ".join(f"{a}=None" for a in specializer.wrapper_params())
    source = f"def derivative({defaults}):\n    return stub({arglist})\n"
    dispatcher = njit_wrapper(source, "derivative", {"stub": stub},
                              as_name=name if name.isidentifier() else _ident(name))
    dispatcher.enzyme = specializer
    guard_first_calls(dispatcher, name, specializer.argument_labels())
    return dispatcher


def _ident(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else "_" + out


class autodiff:
    """`@autodiff(mode="reverse", args=("dup", "const"))`: a primal that knows its derivative.

    Calling it runs the primal (compiled by Numba); `.derivative` is what `derive_diff`
    returns; `.inspect(stage)` shows the IR of a stage for the signatures compiled so far.
    """

    def __init__(self, fn=None, *, mode: str = "reverse", args=None, name: str | None = None,
                 ret: str | None = None, return_primal: bool = False, width: int = 1,
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
