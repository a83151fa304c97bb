"""The adjoint of a memory copy: `d_src += d_dst; d_dst = 0`, element by element.

`llvm.memcpy` only knows bytes; the element type comes from how the primal accesses the
copied memory. The loop lives in a small internal function so reverse blocks stay
straight-line code.
"""
from __future__ import annotations

from ...analysis.types import MemoryTypes
from ...diagnostics import Diagnostics
from ...ir.builder import Builder, counted_loop
from ...ir.types import I64, PTR, VOID, FloatType, FunctionType, size_of
from ...ir.values import Function, Instruction, Module, Value, const_int, zero


def copy_element_type(types: MemoryTypes, copy: Instruction, diag: Diagnostics) -> FloatType:
    """The float type stored in the memory a copy moves (from the function's accesses)."""
    t = types.float_element(copy.operands[0]) or types.float_element(copy.operands[1])
    if t is None:
        raise diag.unsupported("memory copy of active data whose element type is unknown", copy,
                               "copy the array with an explicit loop")
    return t


def copy_adjoint_function(module: Module, t: FloatType) -> Function:
    name = f"enzyme_py.copy_adjoint.{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    fn = Function(name, FunctionType(VOID, (PTR, PTR, I64)), ["d_src", "d_dst", "bytes"],
                  linkage="internal")
    d_src, d_dst, nbytes = fn.args

    def accumulate(b: Builder, i: Value) -> None:
        dst_at, src_at = b.gep(t, d_dst, [i]), b.gep(t, d_src, [i])
        b.store(b.fadd(b.load(t, src_at), b.load(t, dst_at)), src_at)
        b.store(zero(t), dst_at)

    b = Builder(fn.add_block("entry"))
    counted_loop(b, b.binop("udiv", nbytes, const_int(I64, size_of(t))), accumulate)
    b.ret()
    module.add_function(fn)
    return fn
