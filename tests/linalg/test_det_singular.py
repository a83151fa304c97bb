"""np.linalg.det at exactly singular matrices (issue 24, item 10): the derivative is the
cofactor matrix adj(A)^T, finite there (rank 1 at rank n-1, zero below), where the LU path
gave 0.0 (forward) and NaN (reverse). Singular 2x2, 3x3 of rank 2 and of rank 1, and
non-singular matrices; a temporary, a view, float32 and Fortran order; forward, reverse,
split and vector forward mode against central finite differences (det is a polynomial:
exact up to rounding) and forward against reverse (<J t, w> = <t, J^T w>); NRT balanced."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from enzyme_py import derive_diff  # noqa: E402
from tests.linalg.nrt import assert_released  # noqa: E402
from tests.support.gradcheck import (check_forward, check_inner_product,  # noqa: E402
                                     check_reverse, check_vector_forward)
from tests.support.kernel import Kernel  # noqa: E402
from tests.test_split import split_as_reverse  # noqa: E402


def det(A):
    return np.linalg.det(A)


def det_mix(A, B):
    """A temporary (A @ B is as singular as A), a strided view, and det inside arithmetic."""
    return np.linalg.det(A @ B) + np.sin(np.linalg.det(A)) + np.linalg.det(A[::2, ::2]) * B[0, 0]


def _singular_2x2(rng, dtype=np.float64, order="C"):
    return (np.array([[1.0, 2.0], [2.0, 4.0]], dtype=dtype, order=order),)


def _rank(r: int, n: int = 3):
    """An n x n matrix of rank r (exactly: small integers)."""
    def make(rng, dtype=np.float64, order="C"):
        U = rng.integers(-3, 4, (n, r)).astype(float)
        V = rng.integers(-3, 4, (r, n)).astype(float)
        U[0, 0], V[0, 0] = 2.0, 1.0                     # no zero matrix by chance
        A = U @ V
        assert np.linalg.matrix_rank(A) == r
        return (np.asarray(A, dtype=dtype, order=order),)
    return make


def _regular(rng, dtype=np.float64, order="C"):
    return (np.asarray(rng.standard_normal((3, 3)) + 3 * np.eye(3), dtype=dtype, order=order),)


def _mix_args(make):
    return lambda rng: (make(rng)[0], np.asarray(rng.standard_normal((3, 3)) + 2 * np.eye(3)))


KERNELS = [
    Kernel("det_singular_2x2", det, _singular_2x2),
    Kernel("det_rank2_3x3", det, _rank(2)),
    Kernel("det_rank1_3x3", det, _rank(1)),
    Kernel("det_rank3_4x4", det, _rank(3, 4)),
    Kernel("det_regular", det, _regular),
    Kernel("det_rank2_F", det, lambda rng: _rank(2)(rng, order="F")),
    Kernel("det_rank2_f32", det, lambda rng: _rank(2)(rng, np.float32), fd_rtol=2e-2),
    Kernel("det_mix_rank2", det_mix, _mix_args(_rank(2))),
    Kernel("det_mix_rank1", det_mix, _mix_args(_rank(1))),
    Kernel("det_mix_regular", det_mix, _mix_args(_regular)),
]
IDS = [k.name for k in KERNELS]


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
def test_forward(kernel):
    check_forward(kernel)


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
def test_reverse(kernel):
    check_reverse(kernel)


@pytest.mark.parametrize("kernel", KERNELS, ids=IDS)
def test_inner_product(kernel):
    check_inner_product(kernel)


@pytest.mark.parametrize("kernel", [KERNELS[1], KERNELS[7]], ids=[IDS[1], IDS[7]])
def test_split(kernel):
    check_reverse(kernel, derive=split_as_reverse)


def test_vector_forward():
    check_vector_forward(KERNELS[7], 2)


def test_adjugate_values():
    """The gradient is the cofactor matrix, worked out by hand, and the tangent along E_11
    is A[1, 1] (the issue's case: forward mode gave 0.0, reverse NaN)."""
    A = np.array([[1.0, 2.0], [2.0, 4.0]])
    grad = np.zeros((2, 2))
    derive_diff(det, None, ("dup",))(A, grad)
    np.testing.assert_array_equal(grad, [[4.0, -2.0], [-2.0, 1.0]])
    E = np.zeros((2, 2))
    E[0, 0] = 1.0
    assert derive_diff(det, None, ("dup",), mode="forward")(A, E)[1] == 4.0
    B = np.outer([1.0, 2.0, -1.0], [3.0, 0.5, 1.0])      # rank 1: adj(B) = 0
    grad = np.full((3, 3), 7.0)
    derive_diff(det, None, ("dup",))(B, grad)
    np.testing.assert_array_equal(grad, 7.0)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_temporaries_are_released(mode):
    kernel = KERNELS[7]
    check = check_forward if mode == "forward" else check_reverse
    assert_released(check(kernel).df, kernel.args())
