"""Every derivative rule in the registry, checked against finite differences in native code.

For each rule and float type a tiny module is built with our `Builder` (never from text):

    void @primal(ptr %in, ptr %out)     ; out[0] = op(in[0], in[1], ...)
    void @partials(ptr %in, ptr %out)   ; out[0] = op(...), out[1 + i] = ∂op/∂in[i]

Operands and results live in 8-byte slots. The module is printed with our printer, compiled by
llvmlite's MCJIT (`jit_harness`), and each partial is compared with a Richardson-extrapolated
central difference of `@primal` at a few points inside the op's domain. A `None` partial
(identically zero) is checked to be zero by finite differences too, unless the operand is an
integer. A selection rule (`defselect`) has no partials: ∂op/∂in[i] is the tangent its arms
select when in[i] has tangent 1 and every other operand tangent 0. `CASES` must name every
registered rule: a rule without test points fails `test_every_rule_has_cases`, so no rule can
be added untested.
"""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import numpy as np
import pytest

from ir_passes.diff.rules import all_rules, lookup
from ir_passes.diff.rules.emitter import MathEmitter, intrinsic_suffix
from ir_passes.diff.rules.math import math_rule_name
from ir_passes.diff.rules.selection import selected_tangent
from ir_passes.diff.rules.special import define_digamma, digamma, digamma_symbol
from ir_passes.ir.builder import Builder, declare
from ir_passes.ir.types import DOUBLE, FLOAT, I1, I32, I64, PTR, VOID, FunctionType, Type
from ir_passes.ir.values import Function, Module, Value, const_float, const_int
from tests.unit.ir_passes.diff.rules.jit_harness import compile_modules


@dataclass(frozen=True)
class Case:
    """Sample points (one tuple of operands each) for one rule."""
    points: tuple[tuple[float, ...], ...]
    ints: frozenset[int] = frozenset()   # operand indices that are i32 (e.g. powi's exponent;
                                         # select's condition: i1)
    f32: bool = True                     # also test the float32 form


def case(*points: tuple[float, ...], ints: tuple[int, ...] = (), f32: bool = True) -> Case:
    return Case(tuple(points), frozenset(ints), f32)


def both(name: str, c: Case) -> dict[str, Case]:
    """The same case for the intrinsic `llvm.<name>` and the libm symbol `<name>`."""
    return {f"llvm.{name}": c, name: c}


# Points stay >= 5% (relative) away from kinks, poles and domain edges, so the float32 finite
# difference steps (2% relative) never cross one.
CASES: dict[str, Case] = {
    # instructions
    "fadd": case((1.5, -2.0), (0.3, 4.0)),
    "fsub": case((1.5, -2.0), (0.3, 4.0)),
    "fmul": case((1.5, -2.0), (0.3, 4.0)),
    "fdiv": case((1.5, -2.0), (0.3, 4.0)),
    "frem": case((5.3, 1.7), (-4.2, 1.5)),
    "fneg": case((0.7,), (-2.5,)),
    # trigonometric
    **both("sin", case((0.3,), (2.0,), (-1.1,))),
    **both("cos", case((0.3,), (2.0,), (-1.1,))),
    **both("tan", case((0.3,), (-1.2,), (1.0,))),
    **both("asin", case((0.3,), (-0.6,), (0.85,))),
    **both("acos", case((0.3,), (-0.6,), (0.85,))),
    **both("atan", case((0.3,), (-1.2,), (4.0,))),
    **both("atan2", case((0.5, 1.5), (-1.0, -0.3), (2.0, -1.0))),
    "hypot": case((3.0, 4.0), (-1.5, 0.7)),
    # hyperbolic
    **both("sinh", case((0.3,), (-1.2,), (2.0,))),
    **both("cosh", case((0.3,), (-1.2,), (2.0,))),
    **both("tanh", case((0.3,), (-1.2,), (2.0,))),
    "asinh": case((0.3,), (-1.2,), (5.0,)),
    "acosh": case((1.5,), (3.0,), (10.0,)),
    "atanh": case((0.3,), (-0.6,), (0.8,)),
    # exponentials and logarithms
    **both("exp", case((0.3,), (-1.7,), (2.5,))),
    **both("exp2", case((0.3,), (-1.7,), (1.5,))),
    **both("exp10", case((0.3,), (-1.7,), (1.5,))),
    "expm1": case((0.3,), (-1.2,), (2.0,)),
    **both("log", case((0.3,), (1.7,), (25.0,))),
    **both("log2", case((0.3,), (1.7,), (25.0,))),
    **both("log10", case((0.3,), (1.7,), (25.0,))),
    "log1p": case((0.3,), (-0.5,), (4.0,)),
    # powers and roots
    **both("pow", case((1.7, 2.3), (0.4, -1.5), (2.5, 0.5))),
    "llvm.powi": case((1.7, 3), (-0.8, 5), (1.3, -2), ints=(1,)),
    "numba_ldexp": case((1.7, 3), (-0.8, 0), (1.3, -2), ints=(1,)),
    **both("sqrt", case((0.3,), (2.0,), (17.0,))),
    "cbrt": case((0.3,), (-2.0,), (27.5,)),
    # sign, fused and selecting ops
    **both("fabs", case((0.3,), (-2.0,))),
    **both("copysign", case((1.5, -2.0), (-0.7, 3.0), (-1.2, -0.5))),
    **both("fma", case((1.5, -2.0, 0.7), (0.3, 4.0, -1.0))),
    "llvm.fmuladd": case((1.5, -2.0, 0.7), (0.3, 4.0, -1.0)),
    **{name: case((1.5, -2.0), (-0.7, 3.0), (2.0, 2.5))
       for name in ("llvm.minnum", "llvm.maxnum", "llvm.minimum", "llvm.maximum",
                    "llvm.minimumnum", "llvm.maximumnum", "fmin", "fmax", "fminimum",
                    "fmaximum", "fminimum_num", "fmaximum_num")},
    "select": case((1, 1.5, -2.0), (0, 1.5, -2.0), ints=(0,)),
    # special functions (lgamma / gamma at negative x exercise digamma's reflection)
    "erf": case((0.3,), (-1.2,), (1.5,)),
    "erfc": case((0.3,), (-1.2,), (1.5,)),
    "lgamma": case((0.3,), (2.5,), (7.5,), (-2.5,)),
    "tgamma": case((0.3,), (2.5,), (4.2,), (-1.5,)),
    "numba_gamma": case((0.3,), (2.5,), (4.2,), (-1.5,)),
    # piecewise constant (rounding)
    **{name: c for op in ("floor", "ceil", "trunc", "round", "rint", "nearbyint", "roundeven")
       for name, c in both(op, case((1.3,), (-2.6,), (0.2,))).items()},
}

_INSTRUCTIONS = {"fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "select"}

# Float type: IR type, numpy type, finite-difference step (relative) and tolerance.
_FLOATS = {
    "f64": (DOUBLE, np.float64, 1e-3, 1e-7),
    "f32": (FLOAT, np.float32, 2e-2, 2e-4),
}


# ---------------------------------------------------------------- module construction

def primal_symbol(name: str, t: Type, operand_types: list[Type]) -> str:
    """The callee Numba / clang would emit for rule `name` at float type `t`."""
    if name.startswith("llvm."):
        ints = [str(ty) for ty in operand_types if ty.is_int]
        return ".".join([name, intrinsic_suffix(t), *ints])
    return name + ("f" if t == FLOAT else "")


def emit_primal(b: Builder, module: Module, name: str, args: list[Value], t: Type) -> Value:
    if name == "fneg":
        return b.fneg(args[0])
    if name == "select":
        return b.select(*args)
    if name in _INSTRUCTIONS:
        return b.binop(name, args[0], args[1])
    symbol = primal_symbol(name, t, [a.type for a in args])
    assert math_rule_name(symbol, t) == name, f"{symbol} does not normalise to {name}"
    fn = declare(module, symbol, t, [a.type for a in args])
    return b.call(fn, args, t)


def _slot(b: Builder, base: Value, i: int) -> Value:
    return b.gep(I64, base, [const_int(I64, i)]) if i else base


def build_module(name: str, c: Case, t: Type) -> tuple[Module, list[bool]]:
    """The `@primal` / `@partials` module; also which partials the rule returned as None."""
    arity = len(c.points[0])
    int_type = I1 if name == "select" else I32
    types = [int_type if i in c.ints else t for i in range(arity)]
    module = Module()
    zero_partials: list[bool] = []
    for fname in ("primal", "partials"):
        fn = module.add_function(Function(fname, FunctionType(VOID, (PTR, PTR)), ["in", "out"]))
        b = Builder(fn.add_block("entry"))
        src, dst = fn.args
        args = [b.load(ty, _slot(b, src, i)) for i, ty in enumerate(types)]
        res = emit_primal(b, module, name, args, t)
        b.store(res, dst)
        if fname == "partials":
            partials = _partials(lookup(name), MathEmitter(b, module), args, res)
            assert len(partials) == arity, f"{name}: {len(partials)} partials for {arity} operands"
            for i, (p, a) in enumerate(zip(partials, args)):
                zero_partials.append(p is None)
                if p is not None:
                    assert p.type == a.type, f"{name}: ∂{i} has type {p.type}, operand {a.type}"
                    b.store(p, _slot(b, dst, 1 + i))
        b.ret()
    return module, zero_partials


def _partials(rule, m: MathEmitter, args: list[Value], res: Value) -> list[Value | None]:
    """The rule's partials; a selection rule's as the tangent it selects for unit tangents."""
    if rule.choose is None:
        return list(rule.partials(m, args, res))
    arms = rule.choose(m, args, res)
    out: list[Value | None] = []
    for i, a in enumerate(args):
        if not a.type.is_float:
            out.append(None)
            continue
        unit = [const_float(res.type, 1.0 if j == i else 0.0) for j in range(len(args))]
        out.append(selected_tangent(m.b, arms, unit.__getitem__, const_float(res.type, 0.0)))
    return out


# ---------------------------------------------------------------- running it

class Op:
    """Calls `@primal` and `@partials` of one compiled rule module with numpy slot buffers."""

    def __init__(self, name: str, c: Case, kind: str) -> None:
        t, self.np_type, self.step, self.rtol = _FLOATS[kind]
        self.case = c
        self.arity = len(c.points[0])
        self.module, self.zero_partials = build_module(name, c, t)
        self.jit = compile_modules(self.module)
        sig = (None, ctypes.c_void_p, ctypes.c_void_p)
        self._primal = self.jit.function("primal", *sig)
        self._partials = self.jit.function("partials", *sig)

    def _run(self, fn, point: tuple[float, ...]) -> np.ndarray:
        """out[0] and out[1:] as float64; operands go into the low bytes of 8-byte slots."""
        src = np.zeros(self.arity, np.uint64)
        dst = np.zeros(1 + self.arity, np.uint64)
        for i, v in enumerate(point):
            view = src.view(np.int32 if i in self.case.ints else self.np_type)
            view[i * (8 // view.itemsize)] = v
        fn(src.ctypes.data, dst.ctypes.data)
        out = dst.view(self.np_type)
        return out[::8 // out.itemsize].astype(np.float64)

    def primal(self, point: tuple[float, ...]) -> float:
        return float(self._run(self._primal, point)[0])

    def partials(self, point: tuple[float, ...]) -> np.ndarray:
        return self._run(self._partials, point)

    def finite_difference(self, point: tuple[float, ...], i: int) -> float:
        """Richardson-extrapolated central difference in operand i (error O(h⁴))."""
        def central(h: float) -> float:
            up, down = list(point), list(point)
            hi = self.np_type(point[i] + h)
            lo = self.np_type(point[i] - h)
            up[i], down[i] = hi, lo
            return (self.primal(tuple(up)) - self.primal(tuple(down))) / float(hi - lo)
        h = self.step * max(1.0, abs(point[i]))
        return (4.0 * central(h / 2) - central(h)) / 3.0


def _ids() -> list[tuple[str, str]]:
    return [(name, kind) for name, c in sorted(CASES.items()) for kind in _FLOATS
            if kind == "f64" or c.f32]


def _builtin(rule) -> bool:
    """Registered by the rule modules themselves, not by a user (`register_rule`,
    `register_derivative` of an external function, as other tests in this process do)."""
    return (rule.partials or rule.choose).__module__.startswith("ir_passes.diff.rules.")


def test_every_rule_has_cases():
    # vector reductions have theirs in test_vector_rules.REDUCTION_CASES
    rules = {n for n, r in all_rules().items() if not r.reduces and _builtin(r)}
    cases = set(CASES)
    assert not rules - cases, f"rules without test points in CASES: {sorted(rules - cases)}"
    assert not cases - rules, f"CASES for rules that are not registered: {sorted(cases - rules)}"
    for name, c in CASES.items():
        assert c.points and len({len(p) for p in c.points}) == 1, f"{name}: ragged points"


@pytest.mark.parametrize("name,kind", _ids(), ids=[f"{n}-{k}" for n, k in _ids()])
def test_rule_matches_finite_differences(name: str, kind: str):
    rule = lookup(name)
    c = CASES[name]
    op = Op(name, c, kind)
    if rule.nondiff:
        assert all(op.zero_partials), f"{name} is registered as zero but returned partials"
    for point in c.points:
        got = op.partials(point)
        assert got[0] == op.primal(point)
        scale = max(1.0, abs(got[0]))
        for i in range(op.arity):
            if i in c.ints:
                assert op.zero_partials[i], f"{name}: integer operand {i} has a partial"
                continue
            fd = op.finite_difference(point, i)
            expected_zero = op.zero_partials[i]
            value = 0.0 if expected_zero else got[1 + i]
            # Relative to the partial, with an absolute floor set by the result's magnitude
            # (finite differences lose digits of |res|, not of the derivative).
            tol = op.rtol * max(abs(fd), 1e-2 * scale)
            assert abs(value - fd) <= tol, (
                f"{name} ({kind}) at {point}: ∂{i} = {value!r}"
                f"{' (None)' if expected_zero else ''}, finite difference {fd!r}")


# ---------------------------------------------------------------- math_rule_name

@pytest.mark.parametrize("callee,t,expected", [
    ("llvm.sin.f64", DOUBLE, "llvm.sin"),
    ("llvm.sin.f32", FLOAT, "llvm.sin"),
    ("llvm.powi.f64.i32", DOUBLE, "llvm.powi"),
    ("llvm.exp.v4f64", DOUBLE, "llvm.exp"),
    ("llvm.memcpy.p0.p0.i64", PTR, "llvm.memcpy"),
    ("tanhf", FLOAT, "tanh"),
    ("tanhf", DOUBLE, "tanhf"),        # not float32: not a float32 libm call
    ("tanh", DOUBLE, "tanh"),
    ("erf", FLOAT, "erf"),             # a rule of its own, not "er" + f
    ("erff", FLOAT, "erf"),
    ("floorf", FLOAT, "floor"),
    ("numba_gammaf", FLOAT, "numba_gamma"),
    ("leaf", FLOAT, "leaf"),           # "lea" is not a rule
    ("_ZN5numba7helper", DOUBLE, "_ZN5numba7helper"),
])
def test_math_rule_name(callee: str, t: Type, expected: str):
    assert math_rule_name(callee, t) == expected


# ---------------------------------------------------------------- digamma

def _digamma_reference(xs: np.ndarray) -> tuple[np.ndarray, float]:
    """ψ(xs) and the tolerance it supports: scipy if present, else d/dx lgamma by differences
    (NaN where those are unreliable: |x| > 100, where lgamma's own rounding dominates)."""
    try:
        from scipy.special import digamma as scipy_digamma
    except ImportError:
        def fd(x: float) -> float:
            if abs(x) > 100:
                return math.nan
            d = lambda h: (math.lgamma(x + h) - math.lgamma(x - h)) / (2 * h)   # noqa: E731
            pole = x if x > 0 else abs(x - round(x))     # distance to the nearest pole
            h = 1e-3 * min(max(1.0, abs(x)), pole)
            return (4 * d(h / 2) - d(h)) / 3
        return np.array([fd(x) for x in xs]), 1e-8
    return scipy_digamma(xs), 1e-13


def test_digamma_is_defined_once_internal():
    module = Module()
    fn = module.add_function(Function("f", FunctionType(DOUBLE, (DOUBLE,)), ["x"]))
    b = Builder(fn.add_block("entry"))
    m = MathEmitter(b, module)
    digamma(m, fn.args[0])
    b.ret(digamma(m, fn.args[0]))
    helper = module.functions[digamma_symbol(DOUBLE)]
    assert helper.linkage == "internal" and not helper.is_declaration
    assert define_digamma(module, DOUBLE) is helper
    assert sum(1 for name in module.functions if "digamma" in name) == 1


def test_digamma_accuracy():
    module = Module()
    for name, t in (("psi64", DOUBLE), ("psi32", FLOAT)):
        fn = module.add_function(Function(name, FunctionType(t, (t,)), ["x"]))
        b = Builder(fn.add_block("entry"))
        b.ret(digamma(MathEmitter(b, module), fn.args[0]))
    jit = compile_modules(module)
    psi64 = jit.function("psi64", ctypes.c_double, ctypes.c_double)
    psi32 = jit.function("psi32", ctypes.c_float, ctypes.c_float)

    # negative non-integers (reflection), tiny to large positives (recurrence / series),
    # around the switch to the series at 6 and around the positive root 1.4616...
    xs = np.concatenate([np.linspace(-20.3, 30.7, 1001), np.geomspace(1e-8, 1e8, 161),
                         0.3 - np.geomspace(1e-6, 1e6, 121),
                         [0.5, 1.0, 1.4616321449683622, 2.0, 5.999, 6.0, 6.001]])
    xs = xs[np.abs(xs - np.round(xs)) > 1e-9 * np.abs(xs) + 1e-12]   # off the poles
    xs = xs[(xs > 0) | (np.abs(xs - np.round(xs)) > 1e-3)]
    ref, tol = _digamma_reference(xs)
    xs, ref = xs[np.isfinite(ref)], ref[np.isfinite(ref)]
    got = np.array([psi64(x) for x in xs])
    err = np.abs(got - ref) / np.maximum(1.0, np.abs(ref))
    worst = err.argmax()
    assert err[worst] <= tol, f"ψ({xs[worst]}) = {got[worst]}, expected {ref[worst]}"

    xs32 = xs[np.abs(xs) < 1e6].astype(np.float32)
    xs32 = xs32[(xs32 > 0) | (np.abs(xs32 - np.round(xs32)) > 1e-2)]
    ref32, _ = _digamma_reference(xs32.astype(np.float64))
    xs32, ref32 = xs32[np.isfinite(ref32)], ref32[np.isfinite(ref32)]
    got32 = np.array([psi32(x) for x in xs32])
    err32 = np.abs(got32 - ref32) / np.maximum(1.0, np.abs(ref32))
    assert err32.max() <= 4e-6, f"float32 ψ({xs32[err32.argmax()]}) = {got32[err32.argmax()]}"

    assert psi64(0.0) == -math.inf and math.isnan(psi64(math.nan))
