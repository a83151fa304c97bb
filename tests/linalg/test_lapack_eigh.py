"""np.linalg.eigh (Numba's LAPACK syevd) in both modes: against central finite differences
(Numba reads the lower triangle only; losses are invariant to the eigenvectors' signs),
forward against reverse (inner product), const and dup, float32 and float64, C and F
layouts; NRT allocations balanced; eigvalsh refused with a fix that works."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from enzyme_py import UnsupportedError, derive_diff  # noqa: E402
from tests.linalg.nrt import assert_released  # noqa: E402
from tests.support.gradcheck import (check_forward, check_inner_product,  # noqa: E402
                                     check_reverse, check_vector_forward)
from tests.support.kernel import Kernel  # noqa: E402


def spectrum(A, C):
    w, V = np.linalg.eigh(A)
    return np.sum(np.sin(w)) + np.sum(V ** 2 * C)


def eigenvalues(A):
    """The fix the eigvalsh refusal names."""
    return np.sum(np.linalg.eigh(A)[0] ** 2)


def _symmetric(r, n=3, dtype=np.float64, order="C"):
    X = r.standard_normal((n, n))
    return np.asarray(X + X.T + np.diag(np.arange(n) * 2.0), dtype=dtype, order=order)


def _args(r, dtype=np.float64, order="C"):
    return _symmetric(r, 3, dtype, order), r.standard_normal((3, 3)).astype(dtype)


KERNELS = [
    Kernel("spectrum", spectrum, _args),
    Kernel("spectrum_A_const", spectrum, _args, const=(0,)),
    Kernel("spectrum_f32", spectrum, lambda r: _args(r, np.float32), fd_rtol=2e-2),
    Kernel("spectrum_F_C_const", spectrum, lambda r: _args(r, order="F"), const=(1,)),
    Kernel("eigenvalues", eigenvalues, lambda r: (_symmetric(r, 4),)),
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


def test_vector_forward_per_lane():
    check_vector_forward(KERNELS[0], 2)


@pytest.mark.parametrize("check", [check_forward, check_reverse], ids=["forward", "reverse"])
def test_temporaries_are_released(check):
    kernel = KERNELS[0]
    assert_released(check(kernel).df, kernel.args())


def test_eigvalsh_is_refused_with_a_fix():
    def f(A):
        return np.sum(np.linalg.eigvalsh(A))

    d = derive_diff(f, None, ("dup",))
    with pytest.raises(UnsupportedError, match=r"cannot differentiate: eigenvalues without "
                       r"eigenvectors \(numba_ez_xxxevd: np\.linalg\.eigvalsh\)(.*\n)*  fix: use "
                       r"np\.linalg\.eigh\(A\)\[0\]: its derivative uses the eigenvectors"):
        d(np.eye(2), np.zeros((2, 2)))
