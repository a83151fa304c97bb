"""enzyme_py: automatic differentiation of Numba-compiled Python at the LLVM-IR level.

`derive_diff(f, name, activities, mode)` returns the derivative of a Python / `numba.njit`
function as a Numba dispatcher callable from Python and from `@njit` code; `@autodiff` is the
decorator form; `inspect` shows the IR of each stage; `register_rule` gives external scalar
functions a derivative. Errors: `ActivityError` (bad activities), `ArgumentError` (arguments
of a derivative call that do not fit), `UnsupportedError` (a construct the pass cannot
differentiate), all `EnzymePyError`s. `help(enzyme_py.derive_diff)` has the conventions.
"""
from ir_passes.errors import ActivityError, ArgumentError, EnzymePyError, UnsupportedError

from .api import autodiff, derive_diff
from .inspection import inspect
from .custom import inactive, register_derivative
from .rules import register_rule
from . import c  # noqa: E402,F401  (enzyme_py.c.derive: the C front end)

__all__ = ["ActivityError", "ArgumentError", "EnzymePyError", "UnsupportedError", "autodiff",
           "derive_diff", "inactive", "inspect", "register_derivative", "register_rule"]
