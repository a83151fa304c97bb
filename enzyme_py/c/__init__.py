"""The C front end: derivatives of C functions, from Python and through clang.

`derive(path_or_bitcode, "fn", activities, mode="reverse", opt_level="-O1")` differentiates the
C function `fn` of a `.c` source (compiled with clang-22 at `opt_level`), a `.ll` / `.bc` file,
IR text or bitcode bytes and returns a `CFunction`: call it like the C derivative (per
parameter `p`, then `d_p` when it is dup/dupnoneed; NumPy arrays are passed as pointers to
their data). Reverse mode returns the gradient of the one active float, a tuple for several
(None for none); forward mode returns the tangent of the float result. `.cfunc` is the ctypes
function itself and `.address` its native address. The command-line driver (`enzyme-py clang`)
is `enzyme_py.c.driver`.
"""
from __future__ import annotations

import ctypes
import os

import numpy as np

from ir_passes.api import derivative_symbol
from ir_passes.ir.types import FloatType, IntType, Type

from ..numba_bridge.link import compile_library, unique_symbol
from .cabi import CDerivative, c_derivative
from .clang import ClangError, load_ir

__all__ = ["CFunction", "ClangError", "derive"]


def derive(source, fn: str, activities, mode: str = "reverse", *,
           strong_zero: bool = False, opt_level: str = "-O1") -> CFunction:
    """The derivative of C function `fn` of `source` (a C source compiled at `opt_level`, one
    of `clang.OPT_LEVELS`) as a ctypes-backed callable (`strong_zero`: as
    `enzyme_py.derive_diff`'s)."""
    text = load_ir(source, opt_level)
    symbol = unique_symbol(derivative_symbol(mode, f"{fn}.c"))
    built = c_derivative(text, fn, activities, mode, symbol, "auto", strong_zero=strong_zero)
    library = compile_library(built.module_text, f"enzyme_py.c.{fn}")
    return CFunction(built, library, os.fspath(source) if not isinstance(source, bytes)
                     else "<bitcode>")


class CFunction:
    """A compiled C-ABI derivative; see the module docstring for its calling convention."""

    def __init__(self, built: CDerivative, library, where: str) -> None:
        self.built = built
        self._library = library                 # keeps the native code alive
        self.address = library.get_pointer_to_function(built.symbol)
        params = [_ctype(t) for t in built.ftype.params]
        restype = None if built.ftype.ret.is_void else _ctype(built.ftype.ret)
        self.cfunc = ctypes.CFUNCTYPE(restype, *params)(self.address)
        self._out = None
        if built.convention == "sret":
            fields = [(f"d{i}", _ctype(t)) for i, t in enumerate(built.results)]
            self._out = type("Results", (ctypes.Structure,), {"_fields_": fields})
        self.__name__ = built.symbol
        self.__doc__ = f"derivative of a C function of {where}"

    def __call__(self, *args):
        expected = len(self.built.ftype.params) - (self._out is not None)
        if len(args) != expected:
            raise TypeError(f"{self.built.symbol} takes {expected} arguments, got {len(args)}")
        c_args = [_pointer(a) if isinstance(a, np.ndarray) else a for a in args]
        if self._out is None:
            return self.cfunc(*c_args)
        out = self._out()
        self.cfunc(ctypes.byref(out), *c_args)
        return tuple(getattr(out, name) for name, _ in out._fields_)


def _pointer(a: np.ndarray) -> int:
    if not a.flags.c_contiguous:
        raise ValueError("arrays passed to a C derivative must be C-contiguous "
                         "(np.ascontiguousarray)")
    return a.ctypes.data


def _ctype(t: Type):
    if isinstance(t, FloatType):
        return {"double": ctypes.c_double, "float": ctypes.c_float}[str(t)]
    if isinstance(t, IntType):
        return {1: ctypes.c_bool, 8: ctypes.c_int8, 16: ctypes.c_int16, 32: ctypes.c_int32,
                64: ctypes.c_int64}[t.bits]
    if t.is_pointer:
        return ctypes.c_void_p
    raise ClangError(f"a C derivative cannot take or return {t} through ctypes")
