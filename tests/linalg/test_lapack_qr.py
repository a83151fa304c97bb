"""np.linalg.qr (Numba's LAPACK geqrf and orgqr, rewritten into one call that keeps Q and R)
in both modes: against central finite differences, forward against reverse (inner product),
const and dup, float32 and float64, C and F layouts, tall and square matrices; NRT
allocations balanced; a wide matrix raises at run time, naming a fix that works."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from enzyme_py import UnsupportedError, derive_diff  # noqa: E402
from tests.linalg.battery import battery  # noqa: E402
from tests.support.gradcheck import check_reverse  # noqa: E402
from tests.support.kernel import Kernel  # noqa: E402


def factors(A, C, D):
    Q, R = np.linalg.qr(A)
    return np.sum(np.sin(Q) * C) + np.sum(R * D)


def orthonormal_basis(A):
    return np.sum(np.linalg.qr(A)[0] ** 3)


def _args(r, m, n, dtype=np.float64, order="C"):
    return (np.asarray(r.standard_normal((m, n)), dtype=dtype, order=order),
            r.standard_normal((m, n)).astype(dtype), r.standard_normal((n, n)).astype(dtype))


KERNELS = [
    Kernel("tall", factors, lambda r: _args(r, 5, 3)),
    Kernel("square", factors, lambda r: _args(r, 3, 3)),
    Kernel("tall_A_const", factors, lambda r: _args(r, 4, 3), const=(0,)),
    Kernel("tall_f32", factors, lambda r: _args(r, 4, 3, np.float32), fd_rtol=2e-2),
    Kernel("tall_F_CD_const", factors, lambda r: _args(r, 4, 2, order="F"), const=(1, 2)),
    Kernel("orthonormal_basis", orthonormal_basis, lambda r: (r.standard_normal((4, 2)),)),
]
test_forward, test_reverse, test_inner_product, test_vector_forward_per_lane, \
    test_temporaries_are_released = battery(KERNELS)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_wide_matrix_raises_at_run_time(mode):
    d = derive_diff(orthonormal_basis, None, ("dup",), mode=mode)
    A = np.ones((2, 3))
    with pytest.raises(UnsupportedError, match=r"^cannot differentiate: np\.linalg\.qr of a "
                       r"matrix with more columns than rows \(numba_ez_geqrf\): not "
                       r"differentiable yet; fix: Q, R1 = np\.linalg\.qr\(A\[:, :m\]\.copy\(\)\) "
                       r"\(m rows\), then R = np\.empty\(\(m, n\)\), R\[:, :m\] = R1 and "
                       r"R\[:, m:\] = Q\.T @ A\[:, m:\]$"):
        d(A, np.zeros_like(A))


def wide_factors(A, C, D):
    """The fix the refusal of a wide matrix names."""
    m, n = A.shape
    Q, R1 = np.linalg.qr(A[:, :m].copy())
    R = np.empty((m, n))
    R[:, :m] = R1
    R[:, m:] = Q.T @ A[:, m:]
    return np.sum(np.sin(Q) * C) + np.sum(R * D)


def test_the_fix_for_a_wide_matrix_works():
    r = np.random.default_rng(3)
    check_reverse(wide_factors, (r.standard_normal((2, 4)), r.standard_normal((2, 2)),
                                 r.standard_normal((2, 4))))
