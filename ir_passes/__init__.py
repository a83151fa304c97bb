"""ir_passes: automatic differentiation of LLVM IR functions, written in Python.

Independent of Numba: it differentiates any LLVM function given per-argument activities and a
small ABI description. Depends only on llvmlite. Front ends use `ir_passes.api` (the
differentiation surface) and `ir_passes.ir` (the IR data model, reader, printer, builder).
"""
from .errors import ActivityError, EnzymePyError, InvalidIRError, UnsupportedError

__all__ = ["ActivityError", "EnzymePyError", "InvalidIRError", "UnsupportedError"]
