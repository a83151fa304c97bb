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


def test_dot_of_an_array_written_later_is_refused():
    from enzyme_py import UnsupportedError, derive_diff

    def f(a, b):
        s = np.dot(a, b)
        a[0] = 0.0                               # the reverse pass would need the old a
        return s

    d = derive_diff(f, None, ("dup", "dup"))
    with pytest.raises(UnsupportedError, match="np.dot of an array the function also writes"):
        d(np.ones(3), np.zeros(3), np.ones(3), np.zeros(3))


def test_dot_of_a_fresh_array_written_in_the_next_iteration_is_refused():
    """Each iteration makes a new h, but `h_prev` carries the last one into the next
    iteration, which writes it after the allocation ran again: the reverse of the earlier
    np.dot would read the changed array (this gave a wrong gradient, not an error)."""
    from enzyme_py import UnsupportedError, derive_diff

    def carried(x, w):
        s = 0.0
        h_prev = np.zeros(3)
        for r in range(x.shape[0]):
            h = np.sin(x[r]) * w
            h_prev[0] = 2.0
            s += np.dot(h, h)
            h_prev = h
        return s

    with pytest.raises(UnsupportedError, match="np.dot of an array the function also writes"):
        derive_diff(carried, None, ("dup", "dup"))(
            np.ones((4, 3)), np.zeros((4, 3)), np.ones(3), np.zeros(3))
