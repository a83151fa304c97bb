"""Rules for math functions: LLVM intrinsics (`llvm.sin`) and libm / Numba symbols (`tanh`).

Each rule gives ∂res/∂arg_i from the primal operands and result (`res`); `None` marks an
operand with an identically zero partial. fabs, copysign and min/max are selection rules
(`defselect`): they say which operand (or its negation) the result is. Functions are
registered under both spellings where both exist. Callee names are normalised by
`math_rule_name` before lookup: `llvm.sin.f64` -> `llvm.sin`, `llvm.powi.f64.i32` ->
`llvm.powi`, float32 libm `tanhf` -> `tanh`.
"""
from __future__ import annotations

import math
import re

from ...ir.types import FLOAT, Type
from .registry import Arm, defrule, defselect, defzero, lookup
from .special import digamma

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

# An overload suffix of an intrinsic name: f64, i32, v4f32, nxv2f64, bf16, p0.
_OVERLOAD = re.compile(r"(?:v\d+|nxv\d+)?(?:f|i|bf)\d+|p\d+")


def math_rule_name(callee_name: str, arg_type: Type) -> str:
    """The rule name of a call to `callee_name` whose (first) float operand has `arg_type`."""
    if callee_name.startswith("llvm."):
        parts = callee_name.split(".")
        while len(parts) > 2 and _OVERLOAD.fullmatch(parts[-1]):
            parts.pop()
        return ".".join(parts)
    if (arg_type == FLOAT and callee_name.endswith("f") and lookup(callee_name) is None
            and lookup(callee_name[:-1]) is not None):
        return callee_name[:-1]
    return callee_name


def _both(name: str) -> tuple[str, str]:
    return (f"llvm.{name}", name)


# ---------------------------------------------------------------- trigonometric

@defrule(*_both("sin"))
def _sin(m, args, res):
    return [m.call("cos", args[0])]


@defrule(*_both("cos"))
def _cos(m, args, res):
    return [m.neg(m.call("sin", args[0]))]


@defrule(*_both("tan"))
def _tan(m, args, res):
    return [m.add(m.const(res, 1.0), m.square(res))]


@defrule(*_both("asin"))
def _asin(m, args, res):
    x, = args   # 1/sqrt(1 - x²), with 1 - x² formed as (1 - x)(1 + x) for accuracy near ±1
    one = m.const(x, 1.0)
    return [m.recip(m.call("sqrt", m.mul(m.sub(one, x), m.add(one, x))))]


@defrule(*_both("acos"))
def _acos(m, args, res):
    x, = args
    one = m.const(x, 1.0)
    return [m.neg(m.recip(m.call("sqrt", m.mul(m.sub(one, x), m.add(one, x)))))]


@defrule(*_both("atan"))
def _atan(m, args, res):
    x, = args
    return [m.recip(m.add(m.const(x, 1.0), m.square(x)))]


@defrule(*_both("atan2"))
def _atan2(m, args, res):
    y, x = args   # atan2(y, x): ∂y = x/(x² + y²), ∂x = -y/(x² + y²)
    r2 = m.add(m.square(x), m.square(y))
    return [m.div(x, r2), m.neg(m.div(y, r2))]


@defrule("hypot")
def _hypot(m, args, res):
    x, y = args
    return [m.div(x, res), m.div(y, res)]


# ---------------------------------------------------------------- hyperbolic

@defrule(*_both("sinh"))
def _sinh(m, args, res):
    return [m.call("cosh", args[0])]


@defrule(*_both("cosh"))
def _cosh(m, args, res):
    return [m.call("sinh", args[0])]


@defrule(*_both("tanh"))
def _tanh(m, args, res):
    return [m.sub(m.const(res, 1.0), m.square(res))]


@defrule("asinh")
def _asinh(m, args, res):
    x, = args
    return [m.recip(m.call("sqrt", m.add(m.square(x), m.const(x, 1.0))))]


@defrule("acosh")
def _acosh(m, args, res):
    x, = args   # 1/sqrt(x² - 1) as 1/sqrt((x - 1)(x + 1))
    one = m.const(x, 1.0)
    return [m.recip(m.call("sqrt", m.mul(m.sub(x, one), m.add(x, one))))]


@defrule("atanh")
def _atanh(m, args, res):
    x, = args
    one = m.const(x, 1.0)
    return [m.recip(m.mul(m.sub(one, x), m.add(one, x)))]


# ---------------------------------------------------------------- exponentials and logarithms

@defrule(*_both("exp"))
def _exp(m, args, res):
    return [res]


@defrule(*_both("exp2"))
def _exp2(m, args, res):
    return [m.mul(res, m.const(res, _LN2))]


@defrule(*_both("exp10"))
def _exp10(m, args, res):
    return [m.mul(res, m.const(res, _LN10))]


@defrule("expm1")
def _expm1(m, args, res):
    return [m.add(res, m.const(res, 1.0))]


@defrule(*_both("log"))
def _log(m, args, res):
    return [m.recip(args[0])]


@defrule(*_both("log2"))
def _log2(m, args, res):
    x, = args
    return [m.recip(m.mul(x, m.const(x, _LN2)))]


@defrule(*_both("log10"))
def _log10(m, args, res):
    x, = args
    return [m.recip(m.mul(x, m.const(x, _LN10)))]


@defrule("log1p")
def _log1p(m, args, res):
    x, = args
    return [m.recip(m.add(x, m.const(x, 1.0)))]


# ---------------------------------------------------------------- powers and roots

@defrule(*_both("pow"))
def _pow(m, args, res):
    # ∂x = y·x^(y-1); ∂y = x^y·ln x, taken as 0 where x^y = 0 (x = 0, y > 0), not NaN
    x, y = args
    dx = m.mul(y, m.call("pow", x, m.sub(y, m.const(y, 1.0))))
    zero = m.const(res, 0.0)
    dy = m.select(m.fcmp("oeq", res, zero), zero, m.mul(res, m.call("log", x)))
    return [dx, dy]


@defrule("llvm.powi")
def _powi(m, args, res):
    x, n = args   # integer exponent n: ∂x = n·x^(n-1), n itself is not differentiable
    return [m.mul(m.to_float(n, x), m.powi(x, m.int_add(n, -1))), None]


@defrule("numba_ldexp")
def _ldexp(m, args, res):
    x, n = args   # x * 2^n: ∂x = 2^n = ldexp(1, n), exact; the integer n has no derivative
    symbol = "numba_ldexp" + ("f" if x.type.scalar == FLOAT else "")
    return [m.helper(symbol, x.type, m.const(x, 1.0), n), None]


@defrule(*_both("sqrt"))
def _sqrt(m, args, res):
    # 0.5 * (1 / res) equals 0.5 / res (res is never subnormal) and shares 1 / res with
    # quotients by the root
    return [m.mul(m.const(res, 0.5), m.recip(res))]


@defrule("cbrt")
def _cbrt(m, args, res):
    return [m.recip(m.mul(m.const(res, 3.0), m.square(res)))]


# ---------------------------------------------------------------- sign, fused and selecting ops

@defselect(*_both("fabs"))
def _fabs(m, args, res):
    x, = args   # -x below 0, x from 0 on: ∂ = +1 at x = ±0 (a convention; the kink has none)
    return [Arm(m.fcmp("olt", x, m.const(x, 0.0)), 0, negate=True), Arm(None, 0)]


@defselect(*_both("copysign"))
def _copysign(m, args, res):
    # copysign(x, y) = ±x: -x when x's sign (fabs' convention: ±0 count as positive) differs
    # from y's sign bit (so y = -0.0 counts as negative); y has no derivative
    x, y = args
    zero = m.const(x, 0.0)
    y_negative = m.fcmp("olt", m.call("copysign", m.const(y, 1.0), y), zero)
    return [Arm(m.differ(m.fcmp("olt", x, zero), y_negative), 0, negate=True), Arm(None, 0)]


@defrule(*_both("fma"), "llvm.fmuladd")
def _fma(m, args, res):
    a, b, c = args
    return [b, a, m.const(c, 1.0)]


@defselect("llvm.minnum", "llvm.maxnum", "llvm.minimum", "llvm.maximum", "llvm.minimumnum",
           "llvm.maximumnum", "fmin", "fmax", "fminimum", "fmaximum", "fminimum_num",
           "fmaximum_num")
def _min_max(m, args, res):
    # The result is one of the operands: the first when it equals it (so on a tie too), else
    # the second (also when minnum/maxnum/..._num skip a NaN first operand).
    a, b = args
    return [Arm(m.fcmp("oeq", res, a), 0), Arm(None, 1)]


# ---------------------------------------------------------------- special functions

@defrule("erf")
def _erf(m, args, res):
    x, = args
    return [m.mul(m.const(x, _TWO_OVER_SQRT_PI), m.call("exp", m.neg(m.square(x))))]


@defrule("erfc")
def _erfc(m, args, res):
    x, = args
    return [m.mul(m.const(x, -_TWO_OVER_SQRT_PI), m.call("exp", m.neg(m.square(x))))]


@defrule("lgamma")
def _lgamma(m, args, res):
    return [digamma(m, args[0])]   # d/dx ln|Γ(x)| = ψ(x) on both sides of the poles


@defrule("tgamma", "numba_gamma")
def _gamma(m, args, res):
    return [m.mul(res, digamma(m, args[0]))]


# ---------------------------------------------------------------- piecewise constant

defzero(*_both("floor"), *_both("ceil"), *_both("trunc"), *_both("round"), *_both("rint"),
        *_both("nearbyint"), *_both("roundeven"))


__all__ = ["math_rule_name"]
