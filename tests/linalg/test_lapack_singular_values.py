"""Singular values alone (Numba's LAPACK gesdd with jobz 'N', made to compute U and Vt too):
np.linalg.norm(A, 2), norm(A, -2) and cond(A) in both modes, against central finite
differences, forward against reverse (inner product), const and dup, float32 and float64, C
and F layouts, tall, wide and square matrices; NRT allocations balanced (the arrays added for
U and Vt are released)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from tests.linalg.battery import battery  # noqa: E402
from tests.support.kernel import Kernel  # noqa: E402


def largest(A, c):
    return np.linalg.norm(A, 2) * c[0]


def smallest(A):
    return np.sin(np.linalg.norm(A, -2))


def condition(A):
    return np.linalg.cond(A)


def _matrix(r, m, n, dtype=np.float64, order="C"):
    return np.asarray(r.standard_normal((m, n)), dtype=dtype, order=order)


KERNELS = [
    Kernel("norm2_tall", largest, lambda r: (_matrix(r, 4, 3), np.ones(1) * 1.5)),
    Kernel("norm2_wide_F_c_const", largest, lambda r: (_matrix(r, 3, 4, order="F"),
                                                       np.ones(1)), const=(1,)),
    Kernel("norm2_A_const", largest, lambda r: (_matrix(r, 3, 3), np.ones(1)), const=(0,)),
    Kernel("norm2_f32", largest, lambda r: (_matrix(r, 4, 3, np.float32),
                                            np.ones(1, np.float32)), fd_rtol=2e-2),
    Kernel("norm_minus2_wide", smallest, lambda r: (_matrix(r, 3, 4),)),
    Kernel("cond_square", condition, lambda r: (_matrix(r, 3, 3) + 3 * np.eye(3),)),
    Kernel("cond_tall_f32_F", condition, lambda r: (_matrix(r, 4, 3, np.float32, "F"),),
           fd_rtol=2e-2),
]
test_forward, test_reverse, test_inner_product, test_vector_forward_per_lane, \
    test_temporaries_are_released = battery(KERNELS)
