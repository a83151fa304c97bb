"""np.dot of two vectors (Numba calls BLAS `numba_xxdot`): both modes, against finite
differences and each other. Numba needs scipy for np.dot; it is a test dependency."""
import math

import numpy as np
import pytest

from tests._params import CHECKS, kernel_checks
from tests.support.gradcheck import run_check
from tests.support.kernel import Kernel


def dot_plus(a, b):
    return np.dot(a, b) * 2.0 + a[0]


def sin_of_square_norm(a):
    return math.sin(np.dot(a, a))               # the same array on both sides


def rows_dot(A, x, out):
    for i in range(A.shape[0]):
        out[i] = np.dot(A[i], x)                 # a row of a 2-D array


def dot_with_const_weights(a, w):
    return np.dot(a, w) ** 2


def fresh_rows_dot(X, w):
    """A fresh array per row read by np.dot: each kept alive until its call's reverse."""
    s = 0.0
    for r in range(X.shape[0]):
        h = np.sin(X[r]) * w
        s += np.dot(h, h)
    return s


def dot_f32(a, b):
    return np.dot(a, b) * np.float32(3.0)


KERNELS = [
    Kernel("dot_plus", dot_plus, lambda r: (r.random(5), r.random(5))),
    Kernel("sin_of_square_norm", sin_of_square_norm, lambda r: (r.random(4),)),
    Kernel("rows_dot", rows_dot, lambda r: (r.random((3, 4)), r.random(4), np.zeros(3)),
           outputs=(2,)),
    Kernel("dot_with_const_weights", dot_with_const_weights,
           lambda r: (r.random(3), r.random(3)), const=(1,)),
    Kernel("fresh_rows_dot", fresh_rows_dot, lambda r: (r.random((4, 3)), r.random(3))),
    Kernel("dot_f32", dot_f32, lambda r: (r.random(3).astype(np.float32),
                                          r.random(3).astype(np.float32))),
]


@pytest.mark.parametrize("kernel, check", kernel_checks(KERNELS, CHECKS))
def test_derivatives(kernel, check):
    run_check(kernel, check)
