"""np.linalg.svd (Numba's LAPACK gesdd) in both modes: full_matrices=False, and True of a
square matrix (the same), against central finite differences (losses invariant to the
singular vectors' signs), forward against reverse (inner product), const and dup, float32 and
float64, C and F layouts, tall and wide matrices; NRT allocations balanced; full_matrices=True
of a non-square matrix raises at run time. np.linalg.pinv (its gesdd results copied
out, scaled in place after the call) likewise, tall, wide and square."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from enzyme_py import UnsupportedError, derive_diff  # noqa: E402
from tests.linalg.battery import battery  # noqa: E402
from tests.support.kernel import Kernel  # noqa: E402


def singular(A, C, D):
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    return np.sum(np.sin(s)) + np.sum(U ** 2 * C) + np.sum(Vt ** 2 * D)


def full(A, C, D):
    U, s, Vt = np.linalg.svd(A)
    return np.sum(np.sin(s)) + np.sum(U ** 2 * C) + np.sum(Vt ** 2 * D)


def pseudo_inverse(A):
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    return np.sum(np.tanh((Vt.T / s) @ U.T))


def pinv(A, C):
    return np.sum(np.tanh(np.linalg.pinv(A)) * C)


def _matrix(r, m, n, dtype=np.float64, order="C"):
    return np.asarray(r.standard_normal((m, n)), dtype=dtype, order=order)


def _args(r, m, n, dtype=np.float64, order="C"):
    A = _matrix(r, m, n, dtype, order)
    k = min(m, n)
    return (A, r.standard_normal((m, k)).astype(dtype),
            r.standard_normal((k, n)).astype(dtype))


KERNELS = [
    Kernel("tall", singular, lambda r: _args(r, 4, 3)),
    Kernel("wide", singular, lambda r: _args(r, 3, 4)),
    Kernel("tall_A_const", singular, lambda r: _args(r, 4, 3), const=(0,)),
    Kernel("tall_f32", singular, lambda r: _args(r, 4, 3, np.float32), fd_rtol=2e-2),
    Kernel("wide_F_CD_const", singular, lambda r: _args(r, 3, 4, order="F"), const=(1, 2)),
    Kernel("full_square", full, lambda r: _args(r, 3, 3)),
    Kernel("full_square_f32_F_CD_const", full, lambda r: _args(r, 3, 3, np.float32, "F"),
           const=(1, 2), fd_rtol=2e-2),
    Kernel("pseudo_inverse", pseudo_inverse, lambda r: (r.standard_normal((4, 3)),)),
    Kernel("pinv_tall", pinv, lambda r: (_matrix(r, 4, 3), _matrix(r, 3, 4))),
    Kernel("pinv_wide_F_C_const", pinv, lambda r: (_matrix(r, 3, 4, order="F"),
                                                   _matrix(r, 4, 3)), const=(1,)),
    Kernel("pinv_square_f32", pinv, lambda r: (_matrix(r, 3, 3, np.float32),
                                               _matrix(r, 3, 3, np.float32)), fd_rtol=2e-2),
    Kernel("pinv_A_const", pinv, lambda r: (_matrix(r, 4, 3), _matrix(r, 3, 4)), const=(0,)),
]
test_forward, test_reverse, test_inner_product, test_vector_forward_per_lane, \
    test_temporaries_are_released = battery(KERNELS)


def _derivative(f):
    return derive_diff(f, None, ("dup",))


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_full_matrices_of_a_non_square_matrix_raises_at_run_time(mode):
    d = derive_diff(full, None, ("dup", "const", "const"), mode=mode)
    A = np.ones((3, 2))
    with pytest.raises(UnsupportedError, match=r"^cannot differentiate: np\.linalg\.svd\(A, "
                       r"full_matrices=True\) of a matrix that is not square \(numba_ez_gesdd\): "
                       r"the derivative of the columns of U or rows of Vt beyond min\(m, n\) is "
                       r"not unique; fix: call np\.linalg\.svd\(A, full_matrices=False\)$"):
        d(A, np.zeros_like(A), np.ones((3, 3)), np.ones((2, 2)))
