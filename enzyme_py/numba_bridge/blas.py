"""The BLAS dot product Numba calls for `np.dot` of two vectors, as a known call.

`numba_xxdot(kind, conjugate, n, x, y, out)` stores `x . y` through `out` (kind 'd' float64,
's' float32; the complex kinds are refused). Its tangent is `x' . y + x . y'` (one more call
per shadowed operand and lane); its adjoint adds `g * y` to `x'` and `g * x` to `y'` (an axpy
loop in a small internal function) for the adjoint `g` read from `out`'s shadow, which needs
`x` and `y` unchanged until the reverse pass.

The other BLAS calls (gemv, gemm) fit the same record: a `forward` emitter calling the routine
again on shadows, a `reverse` emitter calling it with the transposed operand.
"""
from __future__ import annotations

from ir_passes.ir.builder import Builder, counted_loop
from ir_passes.ir.types import DOUBLE, FLOAT, I64, PTR, VOID, FloatType, FunctionType
from ir_passes.ir.values import ConstInt, Function, Instruction, Module, Value, zero
from ir_passes.known.model import (CallContext, Flow, ForwardCalls, KnownCall, ReadInReverse,
                                   ReverseCalls)

from .blas_operand_copy import copy_mixed_operands

DOT = "numba_xxdot"
_KINDS = {ord("d"): DOUBLE, ord("s"): FLOAT}
_N, _X, _Y, _OUT = 2, 3, 4, 5      # argument positions


def dot_type(inst: Instruction) -> FloatType | None:
    """The real float type of a dot call, None for complex kinds (or an unknown kind)."""
    kind = inst.operands[0]
    return _KINDS.get(kind.value) if isinstance(kind, ConstInt) else None


def _check(ctx: CallContext, inst: Instruction) -> None:
    if dot_type(inst) is None or not ctx.has_shadow(inst.operands[_OUT]):
        raise ctx.diag.unsupported("complex or untracked BLAS dot product", inst)


def _forward(ctx: ForwardCalls, inst: Instruction) -> None:
    """(x . y)' = x' . y + x . y', one more BLAS call per shadowed operand and lane."""
    t = dot_type(inst)
    assert t is not None
    x, y, out = (inst.operands[i] for i in (_X, _Y, _OUT))
    b = ctx.b
    scratch = ctx.entry_alloca(t)
    for j in range(ctx.width):
        total: Value | None = None
        for k, shadowed in enumerate((x, y)):
            if not ctx.has_shadow(shadowed):
                continue
            lane = ctx.shadow(shadowed, j)
            args = [lane, ctx.value(y)] if k == 0 else [ctx.value(x), lane]
            ops = [ctx.value(op) for op in inst.operands[:_X]] + args + [scratch]
            b.call(ctx.module.functions[DOT], ops, inst.type)
            term = b.load(t, scratch)
            total = term if total is None else b.fadd(total, term)
        b.store(total, ctx.shadow(out, j))


def _reverse(ctx: ReverseCalls, inst: Instruction) -> None:
    """out = x . y:  x' += g y,  y' += g x,  with g the adjoint in out's shadow."""
    b, t = ctx.b, dot_type(inst)
    assert t is not None
    n, x, y, out = (inst.operands[i] for i in (_N, _X, _Y, _OUT))
    shadow_out = ctx.shadow(out)
    g = b.load(t, shadow_out)
    b.store(zero(t), shadow_out)
    for v, other in ((x, y), (y, x)):
        if ctx.has_shadow(v):
            b.call(axpy_function(ctx.module, t),
                   [ctx.value(n), g, ctx.value(other), ctx.shadow(v)], VOID)


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


def _prepare(module: Module, inst: Instruction, moving) -> None:
    """Copies of operands of mixed origin or `moving` (`blas_operand_copy.py`)."""
    n, one = inst.operands[_N], ConstInt(inst.operands[_N].type, 1)
    copy_mixed_operands(module, inst, dot_type(inst), ((_X, n, n, one), (_Y, n, n, one)),
                        moving)


DOT_RECORD = KnownCall(
    DOT, writes=(_OUT,), flow=Flow(_OUT, (_X, _Y)), check=_check, forward=_forward,
    reverse=_reverse, prepare=_prepare,
    reverse_reads=ReadInReverse((_X, _Y), "np.dot of an array the function also writes",
                                "take the dot product of a copy, or write it as a loop"))
