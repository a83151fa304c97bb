"""The running max/min idiom (issue 10): `if x[i] > m: m = x[i]` tapes the iteration of the last
update once per run of the loop instead of a comparison per iteration
(ir_passes/diff/reverse/last_update.py). Each form is checked against finite differences and
the inner product identity; its tape report shows what is kept; loops outside the idiom keep
taping the comparison."""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from enzyme_py import derive_diff
from ir_passes.diff.reverse.tape_report import taped_bytes
from tests.support.gradcheck import check_all, compiled
from tests.support.inspected import inspected
from tests.support.kernel import Kernel


def running_max(x):
    m = x[0]
    for i in range(1, x.shape[0]):
        if x[i] > m:
            m = x[i]
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(x[i] - m)
    return m + math.log(s)


def builtin_min(x):
    m = x[0]
    for i in range(1, x.shape[0]):
        m = min(m, x[i])
    return m * m


def kept_unless_larger(x):
    """select c, m, a: the update happens when the comparison is false."""
    m = x[0]
    for i in range(1, x.shape[0]):
        m = m if m >= x[i] else x[i]
    return m * 3.0


def row_maxima(A):
    """A running max per row (a loop nested in another): taped once per row."""
    s = 0.0
    for r in range(A.shape[0]):
        m = A[r, 0]
        for j in range(1, A.shape[1]):
            if A[r, j] > m:
                m = A[r, j]
        s += m * (r + 1.0)
    return s


def scaled_max(x, w):
    """The updating value is an expression of two arrays: its adjoint reaches both."""
    m = x[0] * w[0]
    for i in range(1, x.shape[0]):
        v = x[i] * w[i]
        if v > m:
            m = v
    return math.sin(m)


@numba.njit
def _maxima_down(x, k):
    """Recursive, so not inlined: its reverse is split into an augmented forward and a
    reverse half, the last update kept on the caller's tape."""
    if k == 0:
        return 0.0
    m = x[0] * k
    for i in range(1, x.shape[0]):
        if x[i] * k > m:
            m = x[i] * k
    return m + _maxima_down(x, k - 1)


def recursive_maxima(x):
    return _maxima_down(x, 3)


def running_max_sum(x):
    """Not the idiom: every iteration reads m (the general path tapes the comparison)."""
    m = x[0]
    s = 0.0
    for i in range(1, x.shape[0]):
        if x[i] > m:
            m = x[i]
        s += m * x[i]
    return s


_ARRAY = frozenset({"loop", "branch", "array1d"})
KERNELS = {k.name: k for k in [
    Kernel("running_max", running_max, lambda rng: (rng.standard_normal(9),),
           tags=_ARRAY | {"math"}),
    Kernel("builtin_min", builtin_min, lambda rng: (rng.standard_normal(8),),
           tags=_ARRAY | {"minmax"}),
    Kernel("kept_unless_larger", kept_unless_larger, lambda rng: (rng.standard_normal(8),),
           tags=_ARRAY),
    Kernel("row_maxima", row_maxima, lambda rng: (rng.standard_normal((4, 6)),),
           tags=frozenset({"nested-loop", "branch", "array2d"})),
    Kernel("scaled_max", scaled_max,
           lambda rng: (rng.standard_normal(7), rng.uniform(0.5, 1.5, 7)),
           tags=_ARRAY | {"math"}),
    Kernel("recursive_maxima", recursive_maxima, lambda rng: (rng.standard_normal(7),),
           tags=_ARRAY | {"callee"}),
    Kernel("running_max_sum", running_max_sum, lambda rng: (rng.standard_normal(8),),
           tags=_ARRAY),
]}
TYPES = {"running_max": ("dup", "float64[::1]"), "builtin_min": ("dup", "float64[::1]"),
         "kept_unless_larger": ("dup", "float64[::1]"),
         "row_maxima": ("dup", "float64[:, ::1]"),
         "scaled_max": ("dup,dup", "float64[::1], float64[::1]"),
         "running_max_sum": ("dup", "float64[::1]")}
IDIOM = ["running_max", "builtin_min", "kept_unless_larger", "row_maxima", "scaled_max"]


def inspection_of(name):
    return inspected(KERNELS[name].fn, *TYPES[name])


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_derivatives_match_finite_differences(name):
    check_all(KERNELS[name], width=0)


@pytest.mark.parametrize("name", IDIOM)
def test_the_last_update_is_kept_once_per_run_of_the_loop(name):
    ins = inspection_of(name)
    report = ins.tape
    assert not [e for e in report.taped if e.type == "i1"]
    rebuilt = [e for e in report.recomputed if e.value.endswith(".at.last")]
    assert len(rebuilt) == 1 and "running max/min" in rebuilt[0].reason
    last = [e for e in report.entries if e.value.endswith(".last") and e.type == "i64"]
    assert len(last) == 1 and len(last[0].loops) < len(rebuilt[0].loops)
    assert taped_bytes(ins.derivative) == report.bytes_by_block()


def test_outside_the_idiom_the_comparison_is_taped():
    report = inspection_of("running_max_sum").tape
    flags = [e for e in report.taped if e.type == "i1"]
    assert len(flags) == 1 and flags[0].bytes_per_iteration == 1
    assert not [e for e in report.entries if e.value.endswith(".at.last")]


@pytest.fixture(scope="module")
def kept_gradient():
    return derive_diff(compiled(kept_unless_larger), "kept_unless_larger_ties", ("dup",))


@pytest.mark.parametrize("x", [
    [3.0, 1.0, 2.0, -1.0],            # never updated: the start value gets the adjoint
    [1.0, 2.0, 2.0, 0.5, 2.0],        # ties: the first of the maxima (kept while m >= x[i])
    [0.0, 1.0, 2.0, 3.0, 4.0],        # updated every iteration
])
def test_which_element_gets_the_adjoint(kept_gradient, x):
    x = np.array(x)
    expected = np.zeros_like(x)
    expected[int(np.argmax(x))] = 3.0
    grad = np.zeros_like(x)
    kept_gradient(x, grad)
    np.testing.assert_array_equal(grad, expected)
