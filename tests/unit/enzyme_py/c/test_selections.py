"""Selections in C (selections.c: fmax/fmin, fabs, copysign, ?:) through `enzyme_py.c.derive`,
compiled by clang-22 at -O0 (libm calls fmax/fmin), -O1 and -O2 (llvm.maxnum/minnum): both
modes against central finite differences and forward against reverse, at points where an
operand no selection picks has an infinite partial (sqrt(fabs(x)) at x = 0); the conventions
at kinks asserted exactly (as tests/test_selections.py does for Numba); `strong_zero=True`
where a zero tangent or adjoint meets sqrt's infinite partial at 0."""
from __future__ import annotations

import ctypes
import functools
import math
import os

import numpy as np
import pytest

from tests.support.gradcheck import check_forward, check_inner_product, check_reverse
from tests.unit.enzyme_py.c.ckernels import c_deriver, shared_library
from tests.unit.enzyme_py.c.conftest import HAVE_CLANG

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "selections.c")
_D, _I, _P = ctypes.c_double, ctypes.c_int, ctypes.c_void_p
SIGNATURES = {
    "fmax_root": (_D, [_D, _D]), "fmin_root": (_D, [_D, _D]),
    "ternary_chain": (_D, [_D, _D, _D]), "sign_ops": (_D, [_D, _D]),
    "c23_min_max": (_D, [_D, _D]),
    "padded_variation": (_D, [_P, _I, _I]), "masked_distance": (_D, [_P, _P, _P, _I]),
}
LEVELS = ("-O0", "-O1", "-O2")


@functools.lru_cache(maxsize=None)
def ir_text(level: str) -> str:
    """selections.c as tagged IR at optimisation `level` (as `derive` makes it at -O1)."""
    import tempfile
    from enzyme_py.c.clang import run_clang, tag_lines
    with tempfile.TemporaryDirectory(prefix="enzyme_py_") as tmp:
        out = os.path.join(tmp, "selections.ll")
        run_clang([level, "-gline-tables-only", "-gno-call-site-info", "-emit-llvm", "-S",
                   "-fno-vectorize", "-fno-slp-vectorize", SOURCE, "-o", out])
        with open(out) as f:
            return tag_lines(f.read())


@functools.lru_cache(maxsize=None)
def deriver(level: str, strong_zero: bool = False):
    """gradcheck's `derive` for selections.c at `level` (one per process, so derivatives are
    compiled once)."""
    return c_deriver(ir_text(level), strong_zero=strong_zero)


@functools.lru_cache(maxsize=None)
def kernels() -> dict:
    """The kernels gradcheck calls (Numba compiles them: the ctypes functions are closure
    variables), named `k_<C name>` (`c_derive` derives the C function of that name)."""
    lib = shared_library(SOURCE, SIGNATURES)
    fmax_root, fmin_root, ternary_chain, sign_ops, c23_min_max = (
        getattr(lib, name) for name in ("fmax_root", "fmin_root", "ternary_chain", "sign_ops",
                                        "c23_min_max"))
    padded_variation, masked_distance = lib.padded_variation, lib.masked_distance

    def k_fmax_root(x, y): return fmax_root(x, y)
    def k_fmin_root(x, y): return fmin_root(x, y)
    def k_ternary_chain(x, y, z): return ternary_chain(x, y, z)
    def k_sign_ops(x, y): return sign_ops(x, y)
    def k_c23_min_max(x, y): return c23_min_max(x, y)
    def k_padded_variation(x, n, n_pad): return padded_variation(x.ctypes, n, n_pad)
    def k_masked_distance(a, b, w, n): return masked_distance(a.ctypes, b.ctypes, w.ctypes, n)
    return {f.__name__[2:]: f for f in (k_fmax_root, k_fmin_root, k_ternary_chain, k_sign_ops,
                                        k_c23_min_max, k_padded_variation, k_masked_distance)}


CASES = [
    ("fmax_root", (0.0, 1.3)),
    ("fmin_root", (0.0, -0.7)),
    ("c23_min_max", (0.0, 1.3)),
    ("c23_min_max", (0.5, -0.3)),
    ("ternary_chain", (0.0, 0.8, 1.7)),
    ("ternary_chain", (0.0, 0.8, -1.7)),
    ("sign_ops", (0.3, -1.2)),
    ("sign_ops", (-0.4, 0.9)),
    ("sign_ops", (1e-3, -0.7)),
    ("sign_ops", (-1e-3, 0.7)),
]
IDS = [f"{name}{point}" for name, point in CASES]
pytestmark = pytest.mark.skipif(not HAVE_CLANG, reason="needs clang-22")


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name,point", CASES, ids=IDS)
def test_selection_both_modes(name, point, level):
    fn = kernels()[name]
    for derive in (deriver(level), deriver(level, strong_zero=True)):
        check_forward(fn, point, derive=derive)
        check_reverse(fn, point, derive=derive)
        check_inner_product(fn, point, derive=derive)


def _both(level: str, name: str, point: tuple) -> tuple[tuple, tuple]:
    """(reverse gradients, forward tangents along each axis) of C function `name`."""
    from enzyme_py.c import derive
    n = len(point)
    grads = derive(ir_text(level), name, ",".join(["active"] * n))(*point)
    grads = grads if isinstance(grads, tuple) else (grads,)
    fwd = derive(ir_text(level), name, ",".join(["dup"] * n), mode="forward")
    tangents = tuple(fwd(*[v for j, p in enumerate(point) for v in (p, float(i == j))])
                     for i in range(n))
    return grads, tangents


@pytest.mark.parametrize("level", LEVELS)
def test_unpicked_infinite_partial_is_exactly_zero(level):
    """fmax(sqrt(x), ...) at x = 0 picking the other operand: 0, not NaN, in both modes."""
    for name, point in (("fmax_root", (0.0, 1.3)), ("fmin_root", (0.0, -0.7)),
                        ("ternary_chain", (0.0, 0.8, 1.7))):
        grads, tangents = _both(level, name, point)
        assert grads[0] == 0.0 and tangents[0] == 0.0, (name, grads, tangents)


@pytest.mark.parametrize("level", LEVELS)
def test_conventions_at_kinks(level):
    """min/max give a tie to their first operand; fabs' derivative at ±0 is +1; copysign(x, y)
    at x = ±0 has the sign of y (its sign bit: -0.0 is negative)."""
    assert _both(level, "first", (0.5, 0.5)) == ((3.0, 0.0), (3.0, 0.0))
    assert _both(level, "first", (0.5, 0.6)) == ((2.0, 1.0), (2.0, 1.0))
    for x, expected in ((0.0, 1.0), (-0.0, 1.0), (1e-300, 1.0), (-1e-300, -1.0)):
        assert _both(level, "absolute", (x,)) == ((expected,), (expected,)), x
    for x, y, expected in ((0.0, 2.0, 1.0), (-0.0, 2.0, 1.0), (0.0, -2.0, -1.0),
                           (0.0, -0.0, -1.0), (-1e-300, -3.0, 1.0), (-1e-300, 3.0, -1.0)):
        assert _both(level, "signed_copy", (x, y)) == ((expected, 0.0), (expected, 0.0)), (x, y)


def _padded():
    return np.array([0.3, 1.1, 0.7, 0.45]), 4, 3


def _masked():
    return (np.array([0.3, 1.1, 0.0, 0.0]), np.array([0.9, 0.2, 0.0, 0.0]),
            np.array([1.5, 0.5, 0.0, 0.0]), 4)


@pytest.mark.parametrize("level", LEVELS)
def test_padded_series_strong_zero(level):
    """Padding with zeros: the forward tangent is NaN without strong_zero (0 * inf at the
    padded pairs), the finite-difference answer with it; reverse mode is finite either way
    (the NaN lands in the padding's adjoint, which reaches no input)."""
    from enzyme_py.c import derive
    x, n, n_pad = _padded()
    t = np.array([0.2, -0.1, 0.3, 0.4])
    assert math.isnan(derive(ir_text(level), "padded_variation", "dup,const,const",
                             mode="forward")(x, t, n, n_pad))
    strong = deriver(level, strong_zero=True)
    for check in (check_forward, check_reverse, check_inner_product):
        check(kernels()["padded_variation"], _padded(), derive=strong)
    check_reverse(kernels()["padded_variation"], _padded(), derive=deriver(level))


@pytest.mark.parametrize("level", LEVELS)
def test_masked_distance_strong_zero(level):
    """Zero weights where a = b: NaN in both modes without strong_zero, finite with it."""
    from enzyme_py.c import derive
    a, b, w, n = _masked()
    shadows = [np.zeros(4) for _ in range(3)]
    derive(ir_text(level), "masked_distance", "dup,dup,dup,const")(
        a, shadows[0], b, shadows[1], w, shadows[2], n)
    assert np.isnan(shadows[0]).any()
    strong = deriver(level, strong_zero=True)
    for check in (check_forward, check_reverse, check_inner_product):
        check(kernels()["masked_distance"], _masked(), derive=strong)
