"""The BLAS 2-norm Numba calls for `np.linalg.norm` of a vector, as a known call.

`numba_xxnrm2(kind, n, x, incx, out)` stores |x| (x strided by `incx` elements) through
`out`. d|x| = x . dx / |x|: the tangent is that dot product per lane, the adjoint adds
g / |x| * x to x'. At x = 0 the norm is not differentiable; both modes use the subgradient 0
there (as the derivative of |t| at 0 is taken to be 0), never a NaN. The reverse reads x and
the stored norm. A complex vector (kinds 'c', 'z'; the norm is real) is the real vector of
its (re, im) pairs: the dot products and updates run over both parts (stride 2 * incx reals).
"""
from __future__ import annotations

from ir_passes.ir.builder import Builder, counted_loop
from ir_passes.ir.types import DOUBLE, FLOAT, I64, PTR, FloatType, FunctionType
from ir_passes.ir.values import ConstInt, Function, Instruction, Module, Value, const_int, zero
from ir_passes.known.model import (CallContext, Flow, ForwardCalls, KnownCall, ReadInReverse,
                                   ReverseCalls)

from .blas import dot_type

NRM2 = "numba_xxnrm2"
_N, _X, _INC, _OUT = 1, 2, 3, 4      # argument positions
_COMPLEX_KINDS = {ord("z"): DOUBLE, ord("c"): FLOAT}


def _norm_type(inst: Instruction) -> tuple[FloatType, int] | None:
    """The real type of the norm and the number of reals per element (2 for complex)."""
    real = dot_type(inst)
    if real is not None:
        return real, 1
    kind = inst.operands[0]
    complex_part = _COMPLEX_KINDS.get(kind.value) if isinstance(kind, ConstInt) else None
    return None if complex_part is None else (complex_part, 2)


def _parts(b: Builder, t: FloatType, parts: int, x: Value,
           inc: Value) -> list[tuple[Value, Value]]:
    """(first real, stride in reals) of each real part of the vector `x` strided by `inc`
    elements of `parts` reals each."""
    if parts == 1:
        return [(x, inc)]
    stride = b.mul(inc, const_int(I64, 2))
    return [(x, stride), (b.gep(t, x, [const_int(I64, 1)]), stride)]


def _check(ctx: CallContext, inst: Instruction) -> None:
    if _norm_type(inst) is None:
        raise ctx.diag.unsupported("vector norm (numba_xxnrm2) of an unknown kind", inst)
    if not ctx.has_shadow(inst.operands[_OUT]):
        raise ctx.diag.unsupported("vector norm (numba_xxnrm2) into memory without a shadow",
                                   inst)


def _over_norm(b: Builder, v: Value, norm: Value) -> Value:
    """v / norm, 0 where the norm is 0 (the subgradient chosen at x = 0)."""
    t = norm.type
    return b.select(b.fcmp("oeq", norm, zero(t)), zero(t), b.fdiv(v, norm))


def _forward(ctx: ForwardCalls, inst: Instruction) -> None:
    """|x|' = x . x' / |x| per lane (over the real and imaginary parts of a complex x)."""
    kind = _norm_type(inst)
    assert kind is not None
    t, parts = kind
    b = ctx.b
    n, x, inc, out = (ctx.value(inst.operands[i]) for i in (_N, _X, _INC, _OUT))
    norm = b.load(t, out)
    dot_fn = _strided_function(ctx.module, t, "dot")
    for j in range(ctx.width):
        shadows = _parts(b, t, parts, ctx.shadow(inst.operands[_X], j), inc)
        dot: Value = zero(t)
        for (xs, stride), (dxs, _) in zip(_parts(b, t, parts, x, inc), shadows):
            dot = b.fadd(dot, b.call(dot_fn, [n, xs, stride, dxs, zero(t)], t))
        b.store(_over_norm(b, dot, norm), ctx.shadow(inst.operands[_OUT], j))


def _reverse(ctx: ReverseCalls, inst: Instruction) -> None:
    """x' += g / |x| * x, with g the adjoint in out's shadow (then zeroed)."""
    kind = _norm_type(inst)
    assert kind is not None
    (t, parts), b = kind, ctx.b
    shadow_out = ctx.shadow(inst.operands[_OUT])
    g = b.load(t, shadow_out)
    b.store(zero(t), shadow_out)
    if ctx.has_shadow(inst.operands[_X]):
        n, x, inc = (ctx.value(inst.operands[i]) for i in (_N, _X, _INC))
        scale = _over_norm(b, g, b.load(t, ctx.value(inst.operands[_OUT])))
        axpy = _strided_function(ctx.module, t, "axpy")
        shadows = _parts(b, t, parts, ctx.shadow(inst.operands[_X]), inc)
        for (xs, stride), (dxs, _) in zip(_parts(b, t, parts, x, inc), shadows):
            b.call(axpy, [n, xs, stride, dxs, scale], t)


def _strided_function(module: Module, t: FloatType, op: str) -> Function:
    """`T enzyme_py.strided_<op>.<t>(i64 n, ptr x, i64 inc, ptr y, T g)` over x[i * inc],
    y[i * inc]: "dot" returns sum x * y; "axpy" does y += g * x (and returns 0)."""
    name = f"enzyme_py.strided_{op}.{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    fn = Function(name, FunctionType(t, (I64, PTR, I64, PTR, t)), ["n", "x", "inc", "y", "g"],
                  linkage="internal")
    n, x, inc, y, g = fn.args
    b = Builder(fn.add_block("entry"))
    acc = b.alloca(t, "acc")
    b.store(zero(t), acc)

    def step(b: Builder, i: Value) -> None:
        at = b.mul(i, inc)
        xi, y_at = b.load(t, b.gep(t, x, [at])), b.gep(t, y, [at])
        if op == "dot":
            b.store(b.fadd(b.load(t, acc), b.fmul(xi, b.load(t, y_at))), acc)
        else:
            b.store(b.fadd(b.load(t, y_at), b.fmul(g, xi)), y_at)

    counted_loop(b, n, step)
    b.ret(b.load(t, acc))
    module.add_function(fn)
    return fn


NRM2_RECORD = KnownCall(
    NRM2, writes=(_OUT,), flow=Flow(_OUT, (_X,)), check=_check, forward=_forward,
    reverse=_reverse,
    reverse_reads=ReadInReverse((_X, _OUT), "np.linalg.norm of an array the function also "
                                "writes", "take the norm of a copy (x.copy())"))
