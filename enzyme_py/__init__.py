"""enzyme_py: automatic differentiation of Numba-compiled Python at the LLVM-IR level.

`derive_diff(f, name, activities, mode)` returns the derivative of a Python / `numba.njit`
function as a Numba dispatcher callable from Python and from `@njit` code; `@autodiff` is the
decorator form; `grad`, `value_and_grad`, `jacobian`, `hessian` and `hvp` are JAX-style
helpers (Numba dispatchers too); `check` tests a derivative against finite differences;
`inspect` shows the IR of each stage; `register_derivative` gives a function derivative rules
written as `@njit` functions, `inactive` marks calls with no derivative, `register_rule` gives
external scalar functions their partial derivatives. Errors: `ActivityError` (bad activities), `ArgumentError` (arguments
of a derivative call that do not fit), `UnsupportedError` (a construct the pass cannot
differentiate), all `EnzymePyError`s; `CheckpointWarning` (checkpoint=True: a loop keeps
its tape, and why). `help(enzyme_py.derive_diff)` has the conventions.
"""
from ir_passes.errors import (ActivityError, ArgumentError, CheckpointWarning, EnzymePyError,
                              UnsupportedError)

from .api import autodiff, derive_diff
from .checking import check
from .custom import inactive, register_derivative
from .helpers import grad, hessian, hvp, jacobian, value_and_grad
from .inspection import inspect
from .rules import register_rule
from . import c  # noqa: E402,F401  (enzyme_py.c.derive: the C front end)

__all__ = ["ActivityError", "ArgumentError", "CheckpointWarning", "EnzymePyError",
           "UnsupportedError", "autodiff", "check", "derive_diff", "grad", "hessian", "hvp",
           "inactive", "inspect", "jacobian", "register_derivative", "register_rule",
           "value_and_grad"]
