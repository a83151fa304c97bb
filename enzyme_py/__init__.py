"""enzyme_py: automatic differentiation of Numba-compiled Python at the LLVM-IR level."""
from ir_passes.errors import ActivityError, EnzymePyError, UnsupportedError

__all__ = ["ActivityError", "EnzymePyError", "UnsupportedError"]
