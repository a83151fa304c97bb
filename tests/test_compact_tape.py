"""Compact tape slots (issue 10): a comparison the reverse pass needs per iteration costs one
byte on the tape, not eight; derivatives stay right with the doubles after it misaligned,
first order and second order (the inner tape grown while the outer pass shadows it); and the
tape report totals loops bounded by a clamped `range(n - 1)`."""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from enzyme_py import derive_diff
from enzyme_py.inspection import inspection
from ir_passes.diff.reverse.tape_report import taped_bytes
from tests.support.gradcheck import check_all
from tests.support.kernel import Kernel


def weighted_logsumexp(x):
    """A running max read by every iteration: its comparison (i1) is taped per element, with
    the exp beside it (9-byte frames)."""
    m = x[0]
    s = 0.0
    for i in range(1, x.shape[0]):
        if x[i] > m:
            m = x[i]
        s += math.exp(x[i] - m) * x[i]
    return m + s


KERNEL = Kernel("weighted_logsumexp", weighted_logsumexp,
                lambda rng: (rng.uniform(1.0, 2.0, 7),),
                tags=frozenset({"loop", "branch", "math", "array1d"}))


@pytest.fixture(scope="module")
def report():
    return inspection(weighted_logsumexp, "dup", types="float64[::1]", sizes={"x": 10})


def test_derivatives_match_finite_differences():
    check_all(KERNEL, width=0)


def test_the_comparison_takes_one_byte(report):
    flags = [e for e in report.tape.taped if e.type == "i1"]
    assert len(flags) == 1 and flags[0].bytes_per_iteration == 1
    assert taped_bytes(report.derivative) == report.tape.bytes_by_block()
    assert "x.shape[0] - 1 = 9 " in report.text("tape")          # its total bytes


@pytest.fixture(scope="module")
def hessian_vector():
    """v -> H v of `weighted_logsumexp` by forward over reverse and by reverse over reverse."""
    rev = derive_diff(weighted_logsumexp, "rev_compact", ("dup",))

    @numba.njit
    def gradient(x, g):
        for i in range(g.shape[0]):
            g[i] = 0.0
        rev(x, g)

    @numba.njit
    def gradient_dot(x, v):
        g = np.zeros_like(x)
        rev(x, g)
        return (g * v).sum()

    fwd_rev = derive_diff(gradient, None, ("dup", "dup"), mode="forward")
    rev_rev = derive_diff(gradient_dot, None, ("dup", "const"))
    return gradient, fwd_rev, rev_rev


def test_second_order_through_a_grown_compact_tape(hessian_vector):
    gradient, fwd_rev, rev_rev = hessian_vector
    n = 9000                                      # 9 bytes per element: the tape grows
    rng = np.random.default_rng(5)
    x, v = rng.uniform(1.0, 2.0, n), rng.standard_normal(n)
    h, gp, gm = 1e-5, np.zeros(n), np.zeros(n)
    gradient(x + h * v, gp)
    gradient(x - h * v, gm)
    fd = (gp - gm) / (2 * h)
    g, by_forward = np.zeros(n), np.zeros(n)
    fwd_rev(x, v, g, by_forward)
    by_reverse = np.zeros(n)
    rev_rev(x, by_reverse, v)
    scale = np.max(np.abs(fd))
    np.testing.assert_allclose(by_forward, fd, rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(by_reverse, by_forward, rtol=0, atol=1e-10 * scale)


def shifted_pairs(x, w):
    """`range(n - 1)` around an inner loop, n - 1 used after it: Numba bounds the loop by
    max(n - 1, 0)."""
    s = 0.0
    for t in range(x.shape[0] - 1):
        for j in range(w.shape[0]):
            s += math.sin(x[t] * w[j]) * x[t + 1]
    return s / (x.shape[0] - 1)


def test_a_clamped_range_bound_has_a_trip_count():
    ins = inspection(shifted_pairs, "dup,const", types="float64[::1], float64[::1]",
                     sizes={"x": 11, "w": 4})
    assert [str(l.trips) for l in ins.tape.loops] == ["x.shape[0] - 1", "w.shape[0]"]
    assert ins.tape.total_bytes() is not None
    check_all(Kernel("shifted_pairs", shifted_pairs,
                     lambda rng: (rng.standard_normal(6), rng.standard_normal(3)),
                     const=(1,), tags=frozenset({"nested-loop", "math", "array1d"})), width=0)
