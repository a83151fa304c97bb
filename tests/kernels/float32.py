"""float32 kernels: float32 data, float32 constants and accumulators (Numba keeps math on
float32 in float32; a float64 literal would promote, so constants are np.float32)."""
from __future__ import annotations

import math

import numpy as np

from tests.support.kernel import Kernel, kernel

_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)


def f32_arith(x, y):
    """float32 scalar arithmetic with exp and sin."""
    a = x * y + math.exp(-x * x) - math.sin(y) * _HALF
    return a * a + x / (_ONE + y * y)


def f32_sum_exp(a, b):
    """sum exp(a[i]) b[i] with a float32 accumulator."""
    s = _ZERO
    for i in range(a.shape[0]):
        s += math.exp(a[i]) * b[i]
    return s


def f32_out_tanh(a, out):
    """out[i] = tanh(a[i]) a[i] in float32."""
    for i in range(a.shape[0]):
        out[i] = math.tanh(a[i]) * a[i]


def f32_matvec(A, x, out):
    """out = A x in float32."""
    for i in range(A.shape[0]):
        acc = _ZERO
        for j in range(A.shape[1]):
            acc += A[i, j] * x[j]
        out[i] = acc


def f32_poly(a, c):
    """sum c a[i]^2 + a[i]^3 (integer powers of float32)."""
    s = _ZERO
    for i in range(a.shape[0]):
        s += c * a[i] ** 2 + a[i] ** 3
    return s


def f32_inplace_recurrence(x, c):
    """x[i] = c x[i-1] + sqrt(x[i]) in place, float32."""
    for i in range(1, x.shape[0]):
        x[i] = c * x[i - 1] + math.sqrt(x[i])


def _v(rng, lo, hi, *shape):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def _s(rng, lo, hi):
    return np.float32(rng.uniform(lo, hi))


KERNELS: list[Kernel] = [
    kernel("f32_arith", f32_arith, lambda r: (_s(r, -1, 1), _s(r, -1, 1)),
           "scalar", "math", "float32"),
    kernel("f32_sum_exp", f32_sum_exp, lambda r: (_v(r, -1, 1, 8), _v(r, -1, 1, 8)),
           "array1d", "loop", "math", "float32"),
    kernel("f32_out_tanh", f32_out_tanh, lambda r: (_v(r, -1.5, 1.5, 6),
                                                    np.zeros(6, np.float32)),
           "array1d", "loop", "output", "math", "float32", outputs=(1,)),
    kernel("f32_matvec", f32_matvec, lambda r: (_v(r, -1, 1, 3, 4), _v(r, -1, 1, 4),
                                                np.zeros(3, np.float32)),
           "array2d", "array1d", "loop", "nested-loop", "output", "float32", outputs=(2,)),
    kernel("f32_poly", f32_poly, lambda r: (_v(r, -1, 1, 6), _s(r, 0.5, 2.0)),
           "array1d", "loop", "int-power", "float32"),
    kernel("f32_inplace_recurrence", f32_inplace_recurrence,
           lambda r: (_v(r, 0.5, 2.0, 6), _s(r, 0.2, 0.6)),
           "array1d", "loop", "output", "inplace-overwrite", "math", "float32", outputs=(0,)),
]
