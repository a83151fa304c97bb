"""enzyme_py: automatic differentiation of Numba-compiled Python at the LLVM-IR level."""
from ir_passes.errors import ActivityError, EnzymePyError, UnsupportedError

from .api import autodiff, derive_diff
from .inspection import inspect
from .rules import register_rule
from . import c  # noqa: E402,F401  (enzyme_py.c.derive: the C front end)

__all__ = ["ActivityError", "EnzymePyError", "UnsupportedError", "autodiff", "derive_diff",
           "inspect", "register_rule"]
