"""The rule registry on float vectors, in native code (built with our `Builder`, compiled by
`jit_harness`).

Lane-wise: every rule of `test_rule_table.CASES` applied to vectors whose lanes are that
rule's sample points gives, in each lane, the partials the scalar rule gives at that point
(both float types; a scalar integer operand, powi's exponent, is shared by the lanes).
Reductions (`REDUCTION_CASES`, rules registered with `reduces`): each lane's partial against
a Richardson-extrapolated central difference of the reduction itself.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ir_passes.diff.rules import lookup
from ir_passes.diff.rules.emitter import MathEmitter, intrinsic_suffix
from ir_passes.ir.builder import Builder, declare
from ir_passes.ir.types import (DOUBLE, FLOAT, I32, I64, PTR, VOID, FunctionType, Type,
                                VectorType, size_of)
from ir_passes.ir.values import Function, Module, Value, const_int
from tests.unit.ir_passes.diff.rules.jit_harness import compile_modules
from tests.unit.ir_passes.diff.rules.test_rule_table import CASES, emit_primal

_FLOATS = {"f64": (DOUBLE, np.float64, 1e-12), "f32": (FLOAT, np.float32, 1e-5)}

#: reduction -> (operands before the vector: "start" values, vector lanes at the test points)
REDUCTION_CASES: dict[str, tuple[tuple[float, ...], tuple[tuple[float, ...], ...]]] = {
    "llvm.vector.reduce.fadd": ((0.7,), ((1.5, -2.0, 0.3, 4.0), (0.25, 0.5, -1.0, 2.0))),
    "llvm.vector.reduce.fmul": ((1.3,), ((1.5, -2.0, 0.3, 4.0), (0.8, 0.0, -1.0, 2.0))),
    "llvm.vector.reduce.fmax": ((), ((1.5, -2.0, 0.3, 4.0), (-0.5, -0.7, -2.0, -0.6))),
    "llvm.vector.reduce.fmin": ((), ((1.5, -2.0, 0.3, 4.0), (-0.5, 0.7, 2.0, 0.6))),
    "llvm.vector.reduce.fmaximum": ((), ((1.5, -2.0, 0.3, 4.0),)),
    "llvm.vector.reduce.fminimum": ((), ((1.5, -2.0, 0.3, 4.0),)),
}


def _at(b: Builder, base: Value, t: Type, i: int) -> Value:
    return b.gep(t, base, [const_int(I64, i)]) if i else base


# ---------------------------------------------------------------- lane-wise rules

def _lanewise_module(name: str, t: Type) -> tuple[Module, int, int]:
    """`void @run(ptr in, ptr ints, ptr scalar_out, ptr vector_out)`: for lane j the scalar
    rule's partials at point j into scalar_out[j * arity + i], the vector rule's lane j into
    vector_out[j * arity + i]."""
    c = CASES[name]
    lanes, arity = len(c.points), len(c.points[0])
    module = Module()
    fn = module.add_function(Function("run", FunctionType(VOID, (PTR,) * 4),
                                      ["in", "ints", "sout", "vout"]))
    b = Builder(fn.add_block("entry"))
    m = MathEmitter(b, module)
    src, ints, sout, vout = fn.args
    n = b.load(I32, ints)
    per_lane = [[n if i in c.ints else b.load(t, _at(b, src, t, j * arity + i))
                 for i in range(arity)] for j in range(lanes)]
    results = []
    for j, args in enumerate(per_lane):
        res = emit_primal(b, module, name, args, t)
        results.append(res)
        for i, p in enumerate(lookup(name).partials(m, args, res)):
            if p is not None:
                b.store(p, _at(b, sout, t, j * arity + i))
    vargs = [n if i in c.ints else m.vector([per_lane[j][i] for j in range(lanes)])
             for i in range(arity)]
    vres = m.vector(results)
    for i, p in enumerate(lookup(name).partials(m, vargs, vres)):
        if p is None:
            continue
        assert p.type == VectorType(lanes, t), f"{name}: ∂{i} has type {p.type}"
        for j, lane in enumerate(m.lanes(p)):
            b.store(lane, _at(b, vout, t, j * arity + i))
    b.ret()
    return module, lanes, arity


def _lanewise_ids() -> list[tuple[str, str]]:
    """Rules with partials (selection rules, which route by `select`, are checked on vectors
    by diff/test_default_deny.py and the C kernel v2_extrema)."""
    return [(name, kind) for name, c in sorted(CASES.items()) for kind in _FLOATS
            if (kind == "f64" or c.f32) and len(c.points) > 1
            and getattr(lookup(name), "choose", None) is None]


@pytest.mark.parametrize("name,kind", _lanewise_ids(),
                         ids=[f"{n}-{k}" for n, k in _lanewise_ids()])
def test_rule_on_vectors_is_the_scalar_rule_per_lane(name: str, kind: str):
    t, np_type, rtol = _FLOATS[kind]
    c = CASES[name]
    module, lanes, arity = _lanewise_module(name, t)
    jit = compile_modules(module)       # keeps the compiled code alive while `run` is called
    run = jit.function("run", None, *([ctypes.c_void_p] * 4))
    exponent = int(c.points[0][min(c.ints)]) if c.ints else 0
    src = np.array([0.0 if i in c.ints else p[i] for p in c.points for i in range(arity)],
                   np_type)
    ints = np.array([exponent], np.int32)
    sout, vout = np.full(lanes * arity, np.nan, np_type), np.full(lanes * arity, np.nan, np_type)
    run(src.ctypes.data, ints.ctypes.data, sout.ctypes.data, vout.ctypes.data)
    both_nan = np.isnan(sout) & np.isnan(vout)
    close = np.isclose(vout, sout, rtol=rtol, atol=rtol * 1e-3) | both_nan
    assert close.all(), f"{name} ({kind}): vector partials {vout} vs scalar {sout}"
    assert not np.isnan(sout).all() or lookup(name).nondiff, f"{name}: no partial stored"


# ---------------------------------------------------------------- reductions

def _reduction_module(name: str, nstart: int, lanes: int, t: Type) -> Module:
    """`@primal(ptr in, ptr out)`: out[0] = reduce(starts..., <lanes x t> at in[nstart:]);
    `@partials(ptr in, ptr out)`: out[i] = ∂out/∂in[i]."""
    vt = VectorType(lanes, t)
    module = Module()
    symbol = f"{name}.{intrinsic_suffix(vt)}"
    reduce = declare(module, symbol, t, [t] * nstart + [vt])
    for fname in ("primal", "partials"):
        fn = module.add_function(Function(fname, FunctionType(VOID, (PTR, PTR)), ["in", "out"]))
        b = Builder(fn.add_block("entry"))
        m = MathEmitter(b, module)
        src, dst = fn.args
        args = [b.load(t, _at(b, src, t, i)) for i in range(nstart)]
        args.append(b.load(vt, _at(b, src, t, nstart), align=size_of(t)))   # not vector-aligned
        res = b.call(reduce, args, t)
        if fname == "primal":
            b.store(res, dst)
        else:
            rule = lookup(name)
            assert rule is not None and rule.reduces == frozenset({nstart}), name
            for i, p in enumerate(rule.partials(m, args, res)):
                if i < nstart:
                    b.store(p, _at(b, dst, t, i))
                else:
                    for j, lane in enumerate(m.lanes(p)):
                        b.store(lane, _at(b, dst, t, nstart + j))
        b.ret()
    return module


def test_every_reduction_rule_has_cases():
    from ir_passes.diff.rules import all_rules
    reductions = {name for name, rule in all_rules().items() if rule.reduces}
    assert reductions == set(REDUCTION_CASES)


@pytest.mark.parametrize("name", sorted(REDUCTION_CASES))
@pytest.mark.parametrize("kind", ["f64", "f32"])
def test_reduction_matches_finite_differences(name: str, kind: str):
    t, np_type, _ = _FLOATS[kind]
    starts, points = REDUCTION_CASES[name]
    lanes = len(points[0])
    jit = compile_modules(_reduction_module(name, len(starts), lanes, t))
    sig = (None, ctypes.c_void_p, ctypes.c_void_p)
    primal, partials = jit.function("primal", *sig), jit.function("partials", *sig)

    def run(fn, x: np.ndarray, n: int) -> np.ndarray:
        src, out = np.asarray(x, np_type), np.zeros(n, np_type)
        fn(src.ctypes.data, out.ctypes.data)
        return out.astype(np.float64)

    step = 1e-3 if kind == "f64" else 2e-2
    for point in points:
        x = np.array(starts + point)
        got = run(partials, x, len(x))
        for i in range(len(x)):
            def central(h: float) -> float:
                up, down = x.copy(), x.copy()
                up[i] += h
                down[i] -= h
                return (run(primal, up, 1)[0] - run(primal, down, 1)[0]) / (2 * h)
            h = step * max(1.0, abs(x[i]))
            fd = (4.0 * central(h / 2) - central(h)) / 3.0
            tol = (1e-7 if kind == "f64" else 2e-3) * max(1.0, abs(fd))
            assert abs(got[i] - fd) <= tol, f"{name} ({kind}) at {x}: ∂{i} = {got[i]}, fd {fd}"
