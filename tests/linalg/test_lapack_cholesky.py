"""np.linalg.cholesky (Numba's LAPACK potrf) in both modes: against central finite
differences (Numba reads the lower triangle only, so each entry is its own input), forward
against reverse (inner product), const and dup, float32 and float64, C and F layouts; NRT
allocations balanced; a later write into the factor refused."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

pytest.importorskip("scipy")

from enzyme_py import UnsupportedError, derive_diff  # noqa: E402
from tests.linalg.battery import battery  # noqa: E402
from tests.support.gradcheck import check_inner_product, check_reverse  # noqa: E402
from tests.support.kernel import Kernel  # noqa: E402


def factor(A, w):
    L = np.linalg.cholesky(A)
    return np.sum(np.sin(L) * w) + L[2, 1] * L[2, 2]


def factor_of_product(X):
    """The factor of X^T X + I (a fresh matrix), used in a product."""
    L = np.linalg.cholesky(X.T @ X + np.eye(X.shape[1]))
    return np.sum((L @ X.T) ** 2)


def _spd(r, n=3, dtype=np.float64, order="C"):
    X = r.standard_normal((n, n))
    return np.asarray(X @ X.T + n * np.eye(n), dtype=dtype, order=order)


def _args(r, dtype=np.float64, order="C"):
    return _spd(r, 3, dtype, order), r.standard_normal((3, 3)).astype(dtype)


KERNELS = [
    Kernel("factor", factor, _args),
    Kernel("factor_A_const", factor, _args, const=(0,)),
    Kernel("factor_f32", factor, lambda r: _args(r, np.float32), fd_rtol=2e-2),
    Kernel("factor_F_w_const", factor, lambda r: _args(r, order="F"), const=(1,)),
    Kernel("factor_of_product", factor_of_product, lambda r: (r.standard_normal((4, 3)),)),
]
test_forward, test_reverse, test_inner_product, test_vector_forward_per_lane, \
    test_temporaries_are_released = battery(KERNELS, released=(4,))


def _store_on_the_call_line(A):
    L = np.linalg.cholesky(A); L[2, 0] = 0.0  # noqa: E702 (Numba zeroes on this line too)
    return np.sum(L * L * np.arange(1.0, 10.0).reshape(3, 3))


@njit
def _factor_then_zero(A):
    L = np.linalg.cholesky(A)
    L[2, 0] = 0.0
    return L


def _store_in_a_helper(A):
    L = _factor_then_zero(A)         # inlined: its store carries this line
    return np.sum(L * L * np.arange(1.0, 10.0).reshape(3, 3))


def _store_into_a_copy(A):
    L = np.linalg.cholesky(A).copy(); L[2, 0] = 0.0  # noqa: E702 (the refusal's fix)
    return np.sum(L * L * np.arange(1.0, 10.0).reshape(3, 3))


_REFUSED = (r"cannot differentiate: Cholesky factor \(numba_xxpotrf: np\.linalg\.cholesky\) "
            r"written after the call \(the derivative reads it\) \(an array allocated in the "
            r"function\)(.*\n)*  fix: write into a copy of the factor")


def test_writing_the_factor_is_refused():
    def f(A):
        L = np.linalg.cholesky(A)
        L[1, 0] = 0.0                    # the reverse pass reads the factor
        return np.sum(L)

    d = derive_diff(f, None, ("dup",))
    with pytest.raises(UnsupportedError, match=_REFUSED):
        d(np.eye(2) * 2.0, np.zeros((2, 2)))


@pytest.mark.parametrize("f", [_store_on_the_call_line, _store_in_a_helper])
def test_writes_sharing_the_call_line_are_refused(f):
    """Only Numba's own zeroing of the other triangle is exempt, not a store of 0.0 that
    carries the call's line (the user's, or a user helper's inlined there)."""
    d = derive_diff(f, None, ("dup",))
    with pytest.raises(UnsupportedError, match=_REFUSED):
        d(np.eye(3) * 2.0, np.zeros((3, 3)))


def test_the_fix_of_the_refusal_differentiates():
    kernel = Kernel("store_into_a_copy", _store_into_a_copy, lambda r: (_spd(r),))
    check_reverse(kernel)
    check_inner_product(kernel)
