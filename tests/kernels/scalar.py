"""Scalar kernels: straight-line arithmetic, powers, one kernel per math function, branches."""
from __future__ import annotations

import math

from tests.kernels._points import off_integer, signed, u, until
from tests.support.kernel import Kernel, kernel

# --- straight-line arithmetic and powers -----------------------------------------------------


def arith(x, y):
    """+ - * / and constants, straight line."""
    a = x * y + x / y - 3.0 * x
    b = 0.5 * y * y - 1.0 / (x + 2.0)
    return a * b + a - b


def rational(a, b, c):
    """A rational function of three variables."""
    return (a * b - c) / (1.0 + a * a + b * b) * c - a / (b * b + 0.5)


def int_power(x, y):
    """x**2, x**3, y**4 with literal integer exponents."""
    return x ** 2 + x ** 3 * y - y ** 4 / (1.0 + x ** 2)


def int_power_neg(x, y):
    """Negative literal integer exponents."""
    return x ** -2 + 3.0 * y ** -1 - (x * y) ** -3


def int_power_var(x, n):
    """x**n with a runtime integer exponent (Numba's int_power loop)."""
    return x ** n + 0.5 * x ** (n - 1)


def pow_xy(x, y):
    """x**y with both floats."""
    return x ** y + y ** (0.5 * x)


def pow_const(x):
    """Non-integer literal exponents: x**3.5, x**0.5, x**-1.5."""
    return x ** 3.5 - 2.0 * x ** 0.5 + x ** -1.5


def math_pow(x, y):
    """math.pow with variable and constant exponents."""
    return math.pow(x, y) * y + math.pow(y, 2.0) + math.pow(x, 2.5)


def _pos2(lo=0.3, hi=2.0):
    return lambda rng: (u(rng, lo, hi), u(rng, lo, hi))


def _sym2(r):
    return lambda rng: (u(rng, -r, r), u(rng, -r, r))


ARITH = [
    kernel("arith", arith, _pos2(0.5, 2.0), "scalar"),
    kernel("rational", rational, lambda r: (u(r, -1.5, 1.5), u(r, 0.3, 1.5), u(r, -1.5, 1.5)),
           "scalar"),
    kernel("int_power", int_power, _sym2(1.5), "scalar", "int-power"),
    kernel("int_power_neg", int_power_neg, _pos2(0.5, 2.0), "scalar", "int-power"),
    kernel("int_power_var", int_power_var, lambda r: (u(r, -1.5, 1.5), 5),
           "scalar", "int-power", "int-arg"),
    kernel("pow_xy", pow_xy, _pos2(0.4, 2.0), "scalar", "math"),
    kernel("pow_const", pow_const, lambda r: (u(r, 0.4, 2.0),), "scalar", "math"),
    kernel("math_pow", math_pow, _pos2(0.4, 2.0), "scalar", "math"),
]

# --- one kernel per math function ---------------------------------------------------------------


def m_sin(x, y):
    """math.sin"""
    return math.sin(x) * y + math.sin(x * y)


def m_cos(x, y):
    """math.cos"""
    return math.cos(x) * y + math.cos(x * y)


def m_tan(x, y):
    """math.tan"""
    return math.tan(x) * y + math.tan(0.5 * y)


def m_exp(x, y):
    """math.exp"""
    return math.exp(x) * y - math.exp(-x * y)


def m_log(x, y):
    """math.log"""
    return math.log(x) * y + math.log(x * y + 1.0)


def m_log10(x, y):
    """math.log10"""
    return math.log10(x) + y * math.log10(x * y)


def m_sqrt(x, y):
    """math.sqrt"""
    return math.sqrt(x) * y + math.sqrt(x * x + y * y)


def m_fabs(x, y):
    """math.fabs (arguments kept away from 0)"""
    return math.fabs(x) * y * y + math.fabs(y) * x


def m_abs(x, y):
    """builtin abs on floats (arguments kept away from 0)"""
    return abs(x) * y - abs(x * y) * 0.5


def m_tanh(x, y):
    """math.tanh"""
    return math.tanh(x * y) + y * math.tanh(x)


def m_atan(x, y):
    """math.atan"""
    return math.atan(x) * y + math.atan(x * y)


def m_atan2(x, y):
    """math.atan2 in all four quadrants, away from the branch cut"""
    return math.atan2(y, x) + math.atan2(x * y, 1.0 + y * y)


def m_asin(x, y):
    """math.asin on (-1, 1)"""
    return math.asin(x) * y + math.asin(0.5 * x * y)


def m_acos(x, y):
    """math.acos on (-1, 1)"""
    return math.acos(x) * y + math.acos(0.5 * x * y)


def m_sinh(x, y):
    """math.sinh"""
    return math.sinh(x) * y + math.sinh(x * y)


def m_cosh(x, y):
    """math.cosh"""
    return math.cosh(x) * y + math.cosh(x * y)


def m_erf(x, y):
    """math.erf"""
    return math.erf(x) * y + math.erf(x * y)


def m_erfc(x, y):
    """math.erfc"""
    return math.erfc(x) * y + math.erfc(x * y)


def m_lgamma(x, y):
    """math.lgamma on positive arguments"""
    return math.lgamma(x) * y + math.lgamma(x + y)


def m_log1p(x, y):
    """math.log1p"""
    return math.log1p(x) * y + math.log1p(x * y)


def m_expm1(x, y):
    """math.expm1"""
    return math.expm1(x) * y + math.expm1(x * y)


def m_hypot(x, y):
    """math.hypot"""
    return math.hypot(x, y) + math.hypot(x * y, 1.0)


def m_floor(x, y):
    """math.floor (arguments kept away from integers); the floor itself has zero derivative"""
    return x * math.floor(y) + (x - math.floor(x)) * y


def m_copysign(x, y):
    """math.copysign (arguments kept away from 0)"""
    return math.copysign(x, y) * x + y * math.copysign(1.5, x) + math.copysign(y, -x)


def m_min(x, y):
    """builtin min of two and three floats"""
    return min(x, y) * y + min(x * x, 1.5) + min(x, y, 0.8)


def m_max(x, y):
    """builtin max of two and three floats"""
    return max(x, y) * x + max(x * y, 0.5) + max(x, y, -0.3)


def _polar(rng):
    r, t = u(rng, 0.5, 2.0), u(rng, -2.8, 2.8)
    return (r * math.cos(t), r * math.sin(t))


def _minmax_args(rng):
    def ok(v):
        x, y = v
        gaps = (abs(x - y), abs(x * x - 1.5), abs(min(x, y) - 0.8), abs(x * y - 0.5),
                abs(max(x, y) + 0.3))
        return min(gaps) > 0.1
    return until(rng, _sym2(1.6), ok)


def _m(name, fn, make_args, *tags):
    return kernel(name, fn, make_args, "scalar", "math", *tags)


MATH = [
    _m("m_sin", m_sin, _sym2(2.0)),
    _m("m_cos", m_cos, _sym2(2.0)),
    _m("m_tan", m_tan, _sym2(1.2)),
    _m("m_exp", m_exp, _sym2(1.5)),
    _m("m_log", m_log, _pos2(0.3, 2.5)),
    _m("m_log10", m_log10, _pos2(0.3, 3.0)),
    _m("m_sqrt", m_sqrt, _pos2(0.3, 2.5)),
    _m("m_fabs", m_fabs, lambda r: (signed(r, 0.3, 1.5), signed(r, 0.3, 1.5))),
    _m("m_abs", m_abs, lambda r: (signed(r, 0.3, 1.5), signed(r, 0.3, 1.5))),
    _m("m_tanh", m_tanh, _sym2(1.5)),
    _m("m_atan", m_atan, _sym2(2.0)),
    _m("m_atan2", m_atan2, _polar),
    _m("m_asin", m_asin, _sym2(0.8)),
    _m("m_acos", m_acos, _sym2(0.8)),
    _m("m_sinh", m_sinh, _sym2(1.5)),
    _m("m_cosh", m_cosh, _sym2(1.5)),
    _m("m_erf", m_erf, _sym2(1.5)),
    _m("m_erfc", m_erfc, _sym2(1.5)),
    _m("m_lgamma", m_lgamma, lambda r: (u(r, 0.3, 4.5), u(r, 0.3, 2.0))),
    _m("m_log1p", m_log1p, _sym2(0.6)),
    _m("m_expm1", m_expm1, _sym2(1.5)),
    _m("m_hypot", m_hypot, lambda r: (signed(r, 0.3, 2.0), signed(r, 0.3, 2.0))),
    _m("m_floor", m_floor, lambda r: (off_integer(r, -3, 4), off_integer(r, -3, 4))),
    _m("m_copysign", m_copysign, lambda r: (signed(r, 0.3, 1.5), signed(r, 0.3, 1.5))),
    _m("m_min", m_min, _minmax_args, "minmax"),
    _m("m_max", m_max, _minmax_args, "minmax"),
]

# --- branches ------------------------------------------------------------------------------------


def br_piecewise(x, y):
    """if/else on a float comparison; each side a different smooth function"""
    if x > 0.5:
        r = x * x * y
    else:
        r = math.sin(x) + y
    return r * y + x


def br_nested(x, y, z):
    """nested if/elif/else on comparisons between inputs"""
    if x > y:
        if z > 0.0:
            a = x * z
        else:
            a = x - z * z
    elif x * y > 0.5:
        a = math.exp(-x * y) + z
    else:
        a = y * y * z
    return a + 0.1 * x


def br_select(x, y):
    """conditional expressions (select instructions)"""
    a = x if x > y else 2.0 * y
    b = x * y if a > 1.0 else a - y
    return a * b + (b if b < 0.3 else 0.3 * b)


def br_softplus(x, y):
    """numerically stable softplus(x) * y: the branch picks the formula, not the value"""
    if x > 0.0:
        s = x + math.log1p(math.exp(-x))
    else:
        s = math.log1p(math.exp(x))
    return s * y


def br_early_return(x, y):
    """return from inside a branch"""
    if x < 0.0:
        return -x * y
    z = math.sqrt(x) * y
    return z * z + x


def br_bool_ops(x, y):
    """short-circuit and/or conditions"""
    if (x > 0.5 and y < 1.0) or x * y > 2.0:
        return x * y * y
    return x + y * y


def _piecewise_args(rng):
    return (signed(rng, 0.7, 1.5) if rng.random() < 0.5 else u(rng, -0.5, 0.3), u(rng, -1, 1))


def _nested_args(rng):
    def ok(v):
        x, y, z = v
        return abs(x - y) > 0.1 and abs(z) > 0.1 and abs(x * y - 0.5) > 0.1
    return until(rng, lambda r: (u(r, -1.5, 1.5), u(r, -1.5, 1.5), u(r, -1.5, 1.5)), ok)


def _select_args(rng):
    def ok(v):
        x, y = v
        a = x if x > y else 2.0 * y
        b = x * y if a > 1.0 else a - y
        return abs(x - y) > 0.1 and abs(a - 1.0) > 0.1 and abs(b - 0.3) > 0.1
    return until(rng, _sym2(1.5), ok)


def _bool_args(rng):
    def ok(v):
        x, y = v
        return abs(x - 0.5) > 0.1 and abs(y - 1.0) > 0.1 and abs(x * y - 2.0) > 0.1
    return until(rng, _pos2(0.0, 2.5), ok)


BRANCH = [
    kernel("br_piecewise", br_piecewise, _piecewise_args, "scalar", "branch", "math"),
    kernel("br_nested", br_nested, _nested_args, "scalar", "branch", "math"),
    kernel("br_select", br_select, _select_args, "scalar", "branch"),
    kernel("br_softplus", br_softplus, lambda r: (signed(r, 0.2, 3.0), u(r, 0.5, 1.5)),
           "scalar", "branch", "math"),
    kernel("br_early_return", br_early_return, lambda r: (signed(r, 0.2, 2.0), u(r, -1, 1)),
           "scalar", "branch", "early-return", "math"),
    kernel("br_bool_ops", br_bool_ops, _bool_args, "scalar", "branch"),
]

KERNELS: list[Kernel] = ARITH + MATH + BRANCH
