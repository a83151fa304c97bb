"""np.linalg.eigh and eigvalsh (Numba's LAPACK syevd; eigvalsh's call made to compute the
eigenvectors too) in both modes: against central finite differences (Numba reads the lower
triangle only; losses are invariant to the eigenvectors' signs), forward against reverse
(inner product), const and dup, float32 and float64, C and F layouts; NRT allocations
balanced."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from tests.linalg.battery import battery  # noqa: E402
from tests.support.kernel import Kernel  # noqa: E402


def spectrum(A, C):
    w, V = np.linalg.eigh(A)
    return np.sum(np.sin(w)) + np.sum(V ** 2 * C)


def eigenvalues(A):
    return np.sum(np.linalg.eigh(A)[0] ** 2)


def eigenvalues_alone(A, c):
    return np.sum(np.sin(np.linalg.eigvalsh(A)) * c)


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
    Kernel("eigvalsh", eigenvalues_alone, lambda r: (_symmetric(r, 4), r.standard_normal(4))),
    Kernel("eigvalsh_A_const", eigenvalues_alone, lambda r: (_symmetric(r), np.ones(3)),
           const=(0,)),
    Kernel("eigvalsh_f32_F_c_const", eigenvalues_alone,
           lambda r: (_symmetric(r, 3, np.float32, "F"), np.ones(3, np.float32)), const=(1,),
           fd_rtol=2e-2),
]
test_forward, test_reverse, test_inner_product, test_vector_forward_per_lane, \
    test_temporaries_are_released = battery(KERNELS)

