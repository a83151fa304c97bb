"""BLAS calls Numba makes for `np.dot` of two vectors, and their derivatives.

`numba_xxdot(kind, conjugate, n, x, y, out)` stores `x . y` through `out` (kind 'd' float64,
's' float32; the complex kinds are refused). Its tangent is `x' . y + x . y'` (two more calls);
its adjoint adds `g * y` to `x'` and `g * x` to `y'` (an axpy loop in a small internal
function) for the adjoint `g` read from `out`'s shadow.
"""
from __future__ import annotations

from ..ir.builder import Builder, counted_loop
from ..ir.types import DOUBLE, FLOAT, I64, PTR, VOID, FloatType, FunctionType
from ..ir.values import ConstInt, Function, Instruction, Module, Value

DOT = "numba_xxdot"
_KINDS = {ord("d"): DOUBLE, ord("s"): FLOAT}


def is_dot(inst: Instruction) -> bool:
    return inst.opcode == "call" and inst.callee_name == DOT


def dot_operands(inst: Instruction) -> tuple[Value, Value, Value, Value]:
    """(n, x, y, out) of a `numba_xxdot` call."""
    _, _, n, x, y, out = inst.operands
    return n, x, y, out


def dot_type(inst: Instruction) -> FloatType | None:
    """The real float type of a dot call, None for complex kinds (or an unknown kind)."""
    kind = inst.operands[0]
    return _KINDS.get(kind.value) if isinstance(kind, ConstInt) else None


def axpy_function(module: Module, t: FloatType) -> Function:
    """`void axpy(i64 n, T g, ptr src, ptr dst)`: dst[i] += g * src[i] (contiguous)."""
    name = f"enzyme_py.axpy.{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    fn = Function(name, FunctionType(VOID, (I64, t, PTR, PTR)), ["n", "g", "src", "dst"],
                  linkage="internal")
    n, g, src, dst = fn.args

    def axpy(b: Builder, i: Value) -> None:
        at = b.gep(t, dst, [i])
        b.store(b.fadd(b.load(t, at), b.fmul(g, b.load(t, b.gep(t, src, [i])))), at)

    b = Builder(fn.add_block("entry"))
    counted_loop(b, n, axpy)
    b.ret()
    module.add_function(fn)
    return fn
