"""np.linalg.lstsq (Numba's LAPACK gelsd, rewritten into one call that keeps the QR factors
and the residual) in both modes, for matrices of full column rank: against central finite
differences, forward against reverse (inner product), const and dup, float32 and float64, C
and F layouts, vector and matrix right-hand sides, the solution and the residuals; NRT
allocations balanced; a wide or rank-deficient matrix raises at run time, reading the
singular values is refused at derive time."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from enzyme_py import UnsupportedError, derive_diff  # noqa: E402
from tests.linalg.battery import battery  # noqa: E402
from tests.support.kernel import Kernel  # noqa: E402


def solution(A, B):
    return np.sum(np.sin(np.linalg.lstsq(A, B)[0]))


def solution_and_residuals(A, b):
    x, residuals, rank, s = np.linalg.lstsq(A, b)
    return np.sum(x ** 2) + np.sum(residuals)


def singular_values(A, b):
    return np.sum(np.linalg.lstsq(A, b)[3])


def _args(r, m, n, nrhs=0, dtype=np.float64, order="C"):
    A = np.asarray(r.standard_normal((m, n)), dtype=dtype, order=order)
    B = r.standard_normal((m, nrhs) if nrhs else m).astype(dtype)
    return A, B


KERNELS = [
    Kernel("tall_matrix_rhs", solution, lambda r: _args(r, 5, 3, 2)),
    Kernel("residuals", solution_and_residuals, lambda r: _args(r, 5, 3)),
    Kernel("square", solution, lambda r: _args(r, 3, 3)),
    Kernel("tall_A_const", solution, lambda r: _args(r, 4, 2), const=(0,)),
    Kernel("tall_B_const_F", solution_and_residuals, lambda r: _args(r, 4, 2, order="F"),
           const=(1,)),
    Kernel("tall_f32", solution, lambda r: _args(r, 5, 3, 2, np.float32), fd_rtol=2e-2),
]
test_forward, test_reverse, test_inner_product, test_vector_forward_per_lane, \
    test_temporaries_are_released = battery(KERNELS, released=(1,))


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("A, pattern", [
    (np.ones((2, 3)), r"^cannot differentiate: np\.linalg\.lstsq of a matrix with fewer rows "
     r"than columns \(numba_ez_gelsd\): not differentiable yet; fix: x = A\.T @ "
     r"np\.linalg\.solve\(A @ A\.T, b\) \(A of full row rank\)$"),
    (np.ones((4, 2)), r"^cannot differentiate: np\.linalg\.lstsq of a matrix of lower rank "
     r"than its number of columns \(numba_ez_gelsd\): its derivative is not defined here; fix: "
     r"regularise, x = np\.linalg\.solve\(A\.T @ A \+ lam \* np\.eye\(A\.shape\[1\]\), "
     r"A\.T @ b\)$"),
], ids=["wide", "rank_deficient"])
def test_raises_at_run_time(mode, A, pattern):
    d = derive_diff(solution, None, ("dup", "const"), mode=mode)
    with pytest.raises(UnsupportedError, match=pattern):
        d(A, np.zeros_like(A), np.ones(A.shape[0]))


def test_singular_values_are_refused():
    d = derive_diff(singular_values, None, ("dup", "const"))
    with pytest.raises(UnsupportedError, match=r"cannot differentiate: least squares "
                       r"\(np\.linalg\.lstsq\) whose singular values the function reads "
                       r"after the call(.*\n)*  fix: not supported yet: np\.linalg\.svd\(A, "
                       r"full_matrices=False\)\[1\] gives the singular values"):
        d(np.eye(3), np.zeros((3, 3)), np.ones(3))
