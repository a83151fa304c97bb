"""`MathEmitter`: the small vocabulary derivative rules are written in.

Wraps a `Builder` and the output `Module`: float constants of the operand's type, arithmetic,
comparisons and calls to math functions (declared on first use, as LLVM intrinsics where one
exists, otherwise as libm symbols with the `f` suffix for float32).

Operands may be fixed-width float vectors (`<2 x double>`): a rule written for scalars then
works lane-wise unchanged. Constants become splats, intrinsics take their vector overload
(`llvm.cos.v2f64`), and functions without one (libm `erf`, support functions) are called once
per lane (`lanewise`). `lanes` / `vector` let a rule of a horizontal operation (a vector
reduction) read and build lanes.
"""
from __future__ import annotations

from typing import Callable

from ...ir.builder import Builder, declare
from ...ir.types import FloatType, Type, VectorType
from ...ir.values import ConstFloat, Constant, Module, Value, const_float, const_int

# Math functions LLVM has intrinsics for (called as llvm.<name>.f32/f64).
INTRINSIC_MATH = frozenset({
    "sin", "cos", "tan", "exp", "exp2", "exp10", "log", "log2", "log10", "sqrt", "pow", "fabs",
    "copysign", "floor", "ceil", "trunc", "round", "rint", "nearbyint", "roundeven", "fma",
    "fmuladd", "minnum", "maxnum", "minimum", "maximum", "asin", "acos", "atan", "atan2", "sinh",
    "cosh", "tanh"})


def intrinsic_suffix(t: Type) -> str:
    """`f64`, `f32`, or for a fixed vector of them `v2f64`, `v4f32`."""
    if isinstance(t, VectorType) and not t.scalable:
        return f"v{t.count}{intrinsic_suffix(t.element)}"
    assert isinstance(t, FloatType), t
    return {"float": "f32", "double": "f64"}[t.kind]


class MathEmitter:
    def __init__(self, builder: Builder, module: Module) -> None:
        self.b = builder
        self.module = module

    # ---- constants
    def const(self, like: Value, value: float) -> ConstFloat:
        return const_float(like.type, value)

    # ---- arithmetic (operands share one float type)
    def add(self, a: Value, b: Value) -> Value:
        return self.b.fadd(a, b)

    def sub(self, a: Value, b: Value) -> Value:
        return self.b.fsub(a, b)

    def mul(self, a: Value, b: Value) -> Value:
        return self.b.fmul(a, b)

    def div(self, a: Value, b: Value) -> Value:
        return self.b.fdiv(a, b)

    def neg(self, a: Value) -> Value:
        return self.b.fneg(a)

    def square(self, a: Value) -> Value:
        return self.b.fmul(a, a)

    def recip(self, a: Value) -> Value:
        return self.b.fdiv(self.const(a, 1.0), a)

    def fcmp(self, pred: str, a: Value, b: Value) -> Value:
        return self.b.fcmp(pred, a, b)

    def select(self, cond: Value, a: Value, b: Value) -> Value:
        return self.b.select(cond, a, b)

    def differ(self, p: Value, q: Value) -> Value:
        """`p != q` for two conditions (i1)."""
        return self.b.icmp("ne", p, q)

    # ---- integer operands (the exponent of powi)
    def int_add(self, n: Value, k: int) -> Value:
        """`n + k` for an integer `n`."""
        assert n.type.is_int, n.type
        return self.b.add(n, const_int(n.type, k))

    def to_float(self, n: Value, like: Value) -> Value:
        """Signed integer `n` as a float of `like`'s type (sitofp; a scalar `n` is splat
        across the lanes of a vector `like`)."""
        assert n.type.is_int and like.type.scalar.is_float, (n.type, like.type)
        if isinstance(like.type, VectorType) and not isinstance(n.type, VectorType):
            return self.b.splat(self.b.cast("sitofp", n, like.type.element), like.type.count)
        return self.b.cast("sitofp", n, like.type)

    # ---- lanes of vector operands
    def lanes(self, v: Value) -> list[Value]:
        """The lanes of fixed vector `v` as scalars."""
        assert isinstance(v.type, VectorType) and not v.type.scalable, v.type
        return [self.b.extractelement(v, j) for j in range(v.type.count)]

    def vector(self, elems: list[Value]) -> Value:
        """A vector of the scalars `elems` (lane j = elems[j])."""
        vec: Value = Constant(VectorType(len(elems), elems[0].type), "poison")
        for j, e in enumerate(elems):
            vec = self.b.insertelement(vec, e, j)
        return vec

    def lanewise(self, scalar: Callable[..., Value], *args: Value) -> Value:
        """`scalar(*args)` for scalar operands; for vector operands the vector of
        `scalar(lanes j of args)` (integer scalar operands are passed to every lane)."""
        if not isinstance(args[0].type, VectorType):
            return scalar(*args)
        split = [self.lanes(a) if isinstance(a.type, VectorType) else None for a in args]
        return self.vector([scalar(*(a if s is None else s[j] for a, s in zip(args, split)))
                            for j in range(args[0].type.count)])

    # ---- math functions
    def call(self, name: str, *args: Value) -> Value:
        """Call math function `name` (e.g. "cos", "erf") on float operands of one type."""
        t = args[0].type
        if name in INTRINSIC_MATH:
            symbol = f"llvm.{name}.{intrinsic_suffix(t)}"
        elif isinstance(t, VectorType):     # a libm function: one call per lane
            return self.lanewise(lambda *lanes: self.call(name, *lanes), *args)
        else:
            symbol = name + ("f" if t == FloatType("float") else "")
        fn = declare(self.module, symbol, t, [a.type for a in args])
        return self.b.call(fn, args, t)

    def powi(self, x: Value, n: Value) -> Value:
        """`llvm.powi.<float>.<int>(x, n)`: x to an integer power."""
        assert x.type.scalar.is_float and n.type.is_int, (x.type, n.type)
        fn = declare(self.module, f"llvm.powi.{intrinsic_suffix(x.type)}.{n.type}", x.type,
                     [x.type, n.type])
        return self.b.call(fn, [x, n], x.type)

    def helper(self, symbol: str, ret: Type, *args: Value) -> Value:
        """Call a support function already defined in (or to be linked into) the module (a
        scalar function: called once per lane on vector operands)."""
        if isinstance(args[0].type, VectorType):
            return self.lanewise(lambda *lanes: self.helper(symbol, ret.scalar, *lanes), *args)
        fn = declare(self.module, symbol, ret, [a.type for a in args])
        return self.b.call(fn, args, ret)
