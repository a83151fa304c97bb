"""Tables (issue 10): a value that does not vary with the outermost loop around it is stored
once per inner iteration into a table read back by the reverse, not taped per outer iteration.

Each kernel is checked against finite differences and the inner product identity; its tape
report shows the value under "table" (with the table's bytes) or still taped, and agrees
with the slots the derivative pushes.
"""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from enzyme_py import derive_diff

from ir_passes.diff.reverse.retained import Retention
from ir_passes.diff.reverse.tape_report import taped_bytes

from tests.unit.enzyme_py.cli.test_tape_report import observed_counts, report_counts
from tests.support.c_heap import c_heap_bytes
from tests.support.gradcheck import check_all
from tests.support.inspected import inspected
from tests.support.kernel import Kernel


def repeated_exp(icf, x):
    """GMM's shape: exp(icf[k, j]) for every data point i."""
    n, d = x.shape
    K = icf.shape[0]
    total = 0.0
    for i in range(n):
        for k in range(K):
            for j in range(d):
                total += math.exp(icf[k, j]) * x[i, j]
    return total


def varying_exp(icf, x):
    """exp(icf[k, j] * x[i, 0]) varies with i: taped."""
    n, d = x.shape
    K = icf.shape[0]
    total = 0.0
    for i in range(n):
        for k in range(K):
            for j in range(d):
                total += math.exp(icf[k, j] * x[i, 0]) * x[i, j]
    return total


def triangular_exp(icf, x):
    """The inner loop's trip count depends on k: no table over (k, j)."""
    n, d = x.shape
    K = icf.shape[0]
    total = 0.0
    for i in range(n):
        for k in range(K):
            for j in range(k, d):
                total += math.exp(icf[k, j]) * x[i, j]
    return total


def guarded_exp(icf, x):
    """The block runs only for some data points (an if on x[i, 0])."""
    n, d = x.shape
    K = icf.shape[0]
    total = 0.0
    for i in range(n):
        if x[i, 0] > 0.0:
            for k in range(K):
                for j in range(d):
                    total += math.exp(icf[k, j]) * x[i, j]
        total += x[i, 0] * x[i, 0]
    return total


def written_bounds(icf, x, dims):
    """The inner trip counts are read from an array the function writes: refused."""
    n = x.shape[0]
    K = icf.shape[0]
    total = 0.0
    for i in range(n):
        for k in range(dims[0]):
            for j in range(dims[1]):
                total += math.exp(icf[k, j]) * x[i, j]
        dims[0] = min(K, dims[0])
    return total


def _gmm_args(n):
    return lambda rng: (0.3 * rng.standard_normal((3, 4)), rng.standard_normal((n, 4)))


TYPES2 = ("dup,dup", "float64[:, ::1], float64[:, ::1]")
KERNELS = {
    "repeated_exp": Kernel("repeated_exp", repeated_exp, _gmm_args(5),
                           tags=frozenset({"nested-loop", "array2d", "math"})),
    "repeated_exp_empty": Kernel("repeated_exp_empty", repeated_exp, _gmm_args(0),
                                 tags=frozenset({"nested-loop", "array2d", "math"})),
    "varying_exp": Kernel("varying_exp", varying_exp, _gmm_args(5),
                          tags=frozenset({"nested-loop", "array2d", "math"})),
    "triangular_exp": Kernel("triangular_exp", triangular_exp, _gmm_args(5),
                             tags=frozenset({"nested-loop", "array2d", "math"})),
    "guarded_exp": Kernel("guarded_exp", guarded_exp, _gmm_args(7),
                          tags=frozenset({"nested-loop", "array2d", "math", "branch"})),
    "written_bounds": Kernel(
        "written_bounds", written_bounds,
        lambda rng: (0.3 * rng.standard_normal((3, 4)), rng.standard_normal((5, 4)),
                     np.array([3, 4])),
        tags=frozenset({"nested-loop", "array2d", "math"})),
}
TYPES = {name: TYPES2 for name in KERNELS}
TYPES["written_bounds"] = ("dup,dup,const", "float64[:, ::1], float64[:, ::1], int64[::1]")


def inspection_of(name):
    return inspected(KERNELS[name].fn, *TYPES[name])


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_derivatives_match_finite_differences(name):
    check_all(KERNELS[name], width=0)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_report_is_what_the_derivative_pushes(name):
    ins = inspection_of(name)
    assert report_counts(ins.tape) == observed_counts(ins.text("canonical"), ins.spec)
    assert taped_bytes(ins.derivative) == ins.tape.bytes_by_block()


def _exp_rows(report, kind):
    return [e for e in report.entries if e.kind is kind and "llvm.exp" in e.reason]


@pytest.mark.parametrize("name", ["repeated_exp", "guarded_exp"])
def test_a_value_repeated_per_data_point_is_kept_in_a_table(name):
    """exp(icf[k, j]) leaves the tape: one slot per (k, j) in a table of K * d doubles."""
    report = inspection_of(name).tape
    assert not _exp_rows(report, Retention.TAPE)
    [row] = _exp_rows(report, Retention.TABLE)
    assert str(report.table_bytes(row)) == "8 * icf.shape[0] * x.shape[1]"
    assert report.total_bytes().evaluate({"x.shape[0]": 5, "icf.shape[0]": 3,
                                          "x.shape[1]": 4}) == 0


@pytest.mark.parametrize("name", ["varying_exp", "triangular_exp", "written_bounds"])
def test_values_that_vary_or_whose_nest_is_not_counted_stay_taped(name):
    """Without vector math (which recomputes a math call varying with every loop)."""
    report = inspected(KERNELS[name].fn, *TYPES[name], vector_math=False).tape
    assert _exp_rows(report, Retention.TAPE) and not _exp_rows(report, Retention.TABLE)


def test_without_vector_math_the_table_still_applies():
    report = inspected(repeated_exp, *TYPES["repeated_exp"], vector_math=False).tape
    assert _exp_rows(report, Retention.TABLE) and not _exp_rows(report, Retention.TAPE)


def test_the_report_prints_the_table():
    from ir_passes.diff.reverse.tape_print import print_tape
    text = print_tape(inspection_of("repeated_exp").tape, {"x": 5, "icf": 3})
    assert "table: values invariant in the outermost loop" in text
    assert "8 * icf.shape[0] * x.shape[1] = 120" in text
    assert "; tables per call: 8 * icf.shape[0] * x.shape[1] = 120 bytes" in text


def picked_exp(icf, x, i0):
    """repeated_exp, then an index that may be out of bounds (raises after the nest ran)."""
    n, d = x.shape
    total = 0.0
    for i in range(n):
        for k in range(icf.shape[0]):
            for j in range(d):
                total += math.exp(icf[k, j]) * x[i, j]
    return total * x[i0, 0]


def test_the_table_is_freed_on_every_return():
    """~0.8 MB of table per call: 200 calls (half of them raising IndexError after the nest
    filled it) must not grow the C heap by that much each; gradients unchanged after."""
    heap = c_heap_bytes()
    if heap is None:
        pytest.skip("needs glibc's mallinfo2")
    f = numba.njit(boundscheck=True)(picked_exp)
    df = derive_diff(f, None, ["dup", "const", "const"])
    rng = np.random.default_rng(0)
    icf, x = 0.1 * rng.standard_normal((100, 1000)), rng.standard_normal((3, 1000))
    first = np.zeros_like(icf)
    df(icf, first, x, 1)
    assert "; tables per call:" in df.enzyme.inspect("tape")
    with pytest.raises(IndexError):
        df(icf, np.zeros_like(icf), x, 5)
    before = heap()
    for _ in range(100):
        df(icf, np.zeros_like(icf), x, 1)
        with pytest.raises(IndexError):
            df(icf, np.zeros_like(icf), x, 5)
    grown = heap() - before
    assert grown < 8 << 20, f"C heap grew by {grown} bytes over 200 derivative calls"
    again = np.zeros_like(icf)
    df(icf, again, x, 1)
    np.testing.assert_array_equal(again, first)
    expected = np.exp(icf) * x.sum(axis=0) * x[1, 0]
    np.testing.assert_allclose(first, expected, rtol=1e-10)


def squared_exp(a, x):
    total = 0.0
    for i in range(x.shape[0]):
        for j in range(a.shape[0]):
            total += math.exp(a[j] * a[j]) * x[i, j]
    return total


def test_a_derivative_with_a_table_is_differentiated_again():
    """Forward and reverse over reverse: the table is allocated by the front end's allocator
    (`tape_captured.py`), so the outer pass shadows it. The Hessian is diagonal:
    sum_i x[i, j] * exp(a_j^2) * (2 + 4 a_j^2)."""
    rev = derive_diff(squared_exp, "rev_squared_exp", ("dup", "const"))
    scope = {"rev": rev, "np": np}
    exec("def gradient(a, g, x):\n    for i in range(g.shape[0]):\n        g[i] = 0.0\n"
         "    rev(a, g, x)\n"
         "def gradient_dot(a, v, x):\n    g = np.zeros_like(a)\n    rev(a, g, x)\n"
         "    return (g * v).sum()\n", scope)
    fwd_rev = derive_diff(numba.njit(scope["gradient"]), None, ("dup", "dup", "const"),
                          mode="forward")
    rev_rev = derive_diff(numba.njit(scope["gradient_dot"]), None, ("dup", "const", "const"))
    rng = np.random.default_rng(1)
    a, x = 0.3 * rng.standard_normal(3), rng.standard_normal((4, 3))
    H = np.diag(x.sum(axis=0) * np.exp(a * a) * (2 + 4 * a * a))
    for k, e in enumerate(np.eye(3)):
        g, tg, dx = np.zeros(3), np.zeros(3), np.zeros(3)
        fwd_rev(a, e, g, tg, x)
        rev_rev(a, dx, e, x)
        np.testing.assert_allclose(tg, H[:, k], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(dx, H[:, k], rtol=1e-12, atol=1e-14)
    assert "; tables per call:" in rev.enzyme.inspect("tape")
