"""Outlining a loop body (`ir_passes.outline_loop_body`): the module computes the same after
outlining, run through Numba (the rewritten canonical IR linked as an intrinsic) against
the function itself, on GMM's data-point loop and smaller loops, including a body that
raises; loops whose body hands on more than one float, or leaves otherwise than by the latch
or raising, are refused untouched."""
from __future__ import annotations

import math
import pathlib
import sys

import numba
import numpy as np
import pytest

from enzyme_py.inspection import inspect
from enzyme_py.numba_bridge.link import Built, lazy_intrinsic, njit_wrapper, unique_symbol
from ir_passes.analysis.cfg import find_loops
from ir_passes.canonicalize import verify
from ir_passes.ir.parser import parse_module
from ir_passes.ir.printer import print_function, print_module
from ir_passes.outline_loop_body import outline_loop_body

_BENCH = pathlib.Path(__file__).parents[3] / "examples" / "benchmarks"


def _outlined(py, types, activities):
    """(module text with the outermost loop's body outlined, symbol, Outlined)."""
    module = parse_module(inspect(py, activities, stage="canonical", types=types))
    fn = next(f for f in module.functions.values() if not f.is_declaration)
    symbol = unique_symbol("outlined")
    del module.functions[fn.name]
    fn.name = symbol
    module.add_function(fn)
    loop = max(find_loops(fn), key=lambda l: len(l.blocks))
    result = outline_loop_body(module, fn, loop)
    text = print_module(module)
    verify(text)
    return text, symbol, result


def _runner(text, symbol, nargs):
    call = lazy_intrinsic(f"call_{symbol.replace('.', '_')}",
                          lambda argtypes: Built(text, symbol, numba.float64))
    names = ", ".join(f"a{k}" for k in range(nargs))
    return njit_wrapper(f"def run({names}):\n    return call({names})\n", "run",
                        {"call": call})


def sum_sq(x, out):
    n, d = x.shape
    t = np.empty(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(x[i, j])
        for j in range(d):
            s += t[j] * t[j]
        out[i] = s
    return s


def raising(x, out):
    n, d = x.shape
    t = np.empty(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(x[i, j])
        if t[0] > 1e300:
            raise ValueError("overflow")
        for j in range(d):
            s += math.sin(t[j])
    return s


def two_floats(x, out):
    n, d = x.shape
    s, p = 0.0, 1.0
    for i in range(n):
        for j in range(d):
            s += x[i, j]
            p *= x[i, j]
    return s + p


def breaks(x, out):
    n, d = x.shape
    s = 0.0
    for i in range(n):
        for j in range(d):
            s += x[i, j]
        if s > 3.0:
            break
    return s


_M2 = "float64[:,::1], float64[::1]"


@pytest.mark.parametrize("py", [sum_sq, raising])
def test_same_results(py):
    text, symbol, result = _outlined(py, _M2, ("dup", "dup"))
    assert result.function is not None, result.reason
    assert f"call i32 @{result.function.name}" in text.replace('"', "")
    run = _runner(text, symbol, 2)
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, (7, 4))
    out_ref, out = np.zeros(7), np.zeros(7)
    assert run(x, out) == numba.njit(py)(x, out_ref)
    np.testing.assert_array_equal(out, out_ref)


def test_raising_body_raises():
    text, symbol, result = _outlined(raising, _M2, ("dup", "dup"))
    assert "ret i32 1" in print_function(result.function)
    run = _runner(text, symbol, 2)
    x = np.zeros((5, 3))
    x[3, 0] = 800.0
    with pytest.raises(ValueError, match="overflow"):
        run(x, np.zeros(5))


@pytest.mark.parametrize("py, reason", [(two_floats, "2 floats"),
                                        (breaks, "leaves the body")])
def test_refused(py, reason):
    text, _, result = _outlined(py, _M2, ("dup", "dup"))
    assert result.function is None and reason in result.reason
    assert "call i32 @" not in text


def test_gmm_data_point_loop():
    sys.path.insert(0, str(_BENCH))
    try:
        import bench_kernels
    finally:
        sys.path.remove(str(_BENCH))
    types = "float64[::1], float64[:,::1], float64[:,::1], float64[:,::1], float64, int64"
    text, symbol, result = _outlined(bench_kernels.gmm_objective, types,
                                     ("dup", "dup", "dup", "const", "const", "const"))
    assert result.function is not None, result.reason
    # the carried sum slse is added after the call: g hands on its term, not the sum
    assert not any(a.name.startswith("slse") for a in result.function.args)
    assert "fadd double %slse" in text
    run = _runner(text, symbol, 6)
    rng = np.random.default_rng(1)
    d, k, n = 3, 4, 20
    args = (rng.normal(size=k), rng.normal(size=(k, d)),
            rng.normal(size=(k, d + d * (d - 1) // 2)) * 0.3, rng.normal(size=(n, d)), 1.0, 0)
    assert run(*args) == numba.njit(bench_kernels.gmm_objective)(*args)
