"""Array kernels: outputs written into arguments, 2-D arrays, strided / transposed / reversed
views, const data, in-place overwrites and arrays allocated inside the function."""
from __future__ import annotations

import math

import numpy as np

from tests.kernels._points import separated, u, uvec
from tests.support.kernel import Kernel, kernel

# --- outputs -------------------------------------------------------------------------------------


def out_exp(a, out):
    """out[i] = exp(a[i])"""
    for i in range(a.shape[0]):
        out[i] = math.exp(a[i])


def out_axpy(alpha, x, y, out):
    """out = alpha x + y"""
    for i in range(x.shape[0]):
        out[i] = alpha * x[i] + y[i]


def out_accumulate(a, b, out):
    """out[i] += a[i] b[i]: the output's entry value matters (read-modify-write)."""
    for i in range(a.shape[0]):
        out[i] += a[i] * b[i]


def out_and_return(a, out):
    """Writes out[i] = a[i]^2 and returns a value read back from out."""
    n = a.shape[0]
    for i in range(n):
        out[i] = a[i] * a[i]
    s = 0.0
    for i in range(n):
        s += out[i] * a[n - 1 - i]
    return s


def matvec(A, x, out):
    """out = A x"""
    for i in range(A.shape[0]):
        acc = 0.0
        for j in range(A.shape[1]):
            acc += A[i, j] * x[j]
        out[i] = acc


def matmul(A, B, C):
    """C = A B with a triple loop."""
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


def outer(x, y, O):
    """O[i, j] = x[i] sin(y[j])"""
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            O[i, j] = x[i] * math.sin(y[j])


# --- strided views (the kernels are ordinary; make_args passes views) --------------------------


def weighted_sin_sum(a):
    """sum (i + 1) sin(a[i]); called on a[::2]"""
    s = 0.0
    for i in range(a.shape[0]):
        s += (i + 1) * math.sin(a[i])
    return s


def reversed_dot(a, b):
    """sum a[i] b[i] a[i]; a is passed as base[::-1] (negative stride)"""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i] * a[i] + 0.1 * i * a[i]
    return s


def column_moments(A):
    """sum (i + 1) A[i, j]^2 + A[i, j]; called on A[:, 1:]"""
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s += (i + 1) * A[i, j] * A[i, j] + A[i, j]
    return s


def strided_out(a, out):
    """out[i] = a[i] sin(a[i]); out is passed as base[::3]"""
    for i in range(a.shape[0]):
        out[i] = a[i] * math.sin(a[i])


# --- const data ----------------------------------------------------------------------------------


def weighted_energy(w, x):
    """sum w[i] x[i]^2 + w[i] x[i]; w is const (weights)"""
    s = 0.0
    for i in range(x.shape[0]):
        s += w[i] * x[i] * x[i] + w[i] * x[i]
    return s


# --- in-place overwrites -------------------------------------------------------------------------


def inplace_recurrence(x, c):
    """x[i] = c x[i-1] + sin(x[i]) in place: each value is overwritten after being read."""
    for i in range(1, x.shape[0]):
        x[i] = c * x[i - 1] + math.sin(x[i])


def inplace_cumsum(x):
    """In-place cumulative sum."""
    for i in range(1, x.shape[0]):
        x[i] += x[i - 1]


def inplace_square_sum(x):
    """x[i] = x[i]^2 in place, then returns a sum read back from the overwritten array."""
    for i in range(x.shape[0]):
        x[i] = x[i] * x[i]
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * (i + 1)
    return s


def inplace_swap_scale(x):
    """Reverses x in place by swaps, then scales: a permutation that overwrites values."""
    n = x.shape[0]
    for i in range(n // 2):
        t = x[i]
        x[i] = x[n - 1 - i]
        x[n - 1 - i] = t
    for i in range(n):
        x[i] *= i + 1.0


def gauss_seidel(U, r):
    """One in-place Gauss-Seidel smoothing sweep over the interior of a 2-D grid."""
    for i in range(1, U.shape[0] - 1):
        for j in range(1, U.shape[1] - 1):
            U[i, j] = (1.0 - r) * U[i, j] + 0.25 * r * (
                U[i - 1, j] + U[i + 1, j] + U[i, j - 1] + U[i, j + 1])


def sorted_weighted_sum(a):
    """Insertion sort of a copy (allocated inside), then sum (i+1)^2 sorted[i]."""
    b = a.copy()
    for i in range(1, b.shape[0]):
        key = b[i]
        j = i - 1
        while j >= 0 and b[j] > key:
            b[j + 1] = b[j]
            j -= 1
        b[j + 1] = key
    s = 0.0
    for i in range(b.shape[0]):
        s += (i + 1) * (i + 1) * b[i]
    return s


def local_buffer(a):
    """A temporary array allocated with np.empty, filled, then read in reverse order."""
    n = a.shape[0]
    tmp = np.empty(n)
    for i in range(n):
        tmp[i] = math.sin(a[i]) * a[i]
    s = 0.0
    for i in range(n):
        s += tmp[i] * tmp[n - 1 - i] + tmp[i]
    return s


# --- argument factories --------------------------------------------------------------------------


def _strided(rng, n, step):
    return uvec(rng, -1.5, 1.5, n * step)[::step]


OUTPUTS = [
    kernel("out_exp", out_exp, lambda r: (uvec(r, -1, 1, 6), np.zeros(6)),
           "array1d", "loop", "output", "math", outputs=(1,)),
    kernel("out_axpy", out_axpy, lambda r: (u(r, -2, 2), uvec(r, -1, 1, 6), uvec(r, -1, 1, 6),
                                            np.zeros(6)),
           "array1d", "loop", "output", outputs=(3,)),
    kernel("out_accumulate", out_accumulate,
           lambda r: (uvec(r, -1, 1, 6), uvec(r, -1, 1, 6), uvec(r, -1, 1, 6)),
           "array1d", "loop", "output", outputs=(2,)),
    kernel("out_and_return", out_and_return, lambda r: (uvec(r, -1, 1, 6), np.zeros(6)),
           "array1d", "loop", "output", outputs=(1,)),
    kernel("matvec", matvec, lambda r: (uvec(r, -1, 1, 4, 5), uvec(r, -1, 1, 5), np.zeros(4)),
           "array2d", "array1d", "loop", "nested-loop", "output", outputs=(2,)),
    kernel("matmul", matmul, lambda r: (uvec(r, -1, 1, 3, 4), uvec(r, -1, 1, 4, 2),
                                        np.zeros((3, 2))),
           "array2d", "loop", "nested-loop", "output", outputs=(2,)),
    kernel("outer", outer, lambda r: (uvec(r, -1, 1, 4), uvec(r, -2, 2, 3), np.zeros((4, 3))),
           "array1d", "array2d", "loop", "nested-loop", "output", "math", outputs=(2,)),
]

STRIDED = [
    kernel("strided_every_other", weighted_sin_sum, lambda r: (_strided(r, 6, 2),),
           "array1d", "loop", "strided", "math"),
    kernel("strided_reversed", reversed_dot,
           lambda r: (uvec(r, -1, 1, 6)[::-1], uvec(r, -1, 1, 6)),
           "array1d", "loop", "strided"),
    kernel("strided_columns", column_moments, lambda r: (uvec(r, -1, 1, 4, 5)[:, 1:],),
           "array2d", "loop", "nested-loop", "strided"),
    kernel("strided_transposed_matvec", matvec,
           lambda r: (uvec(r, -1, 1, 5, 4).T, uvec(r, -1, 1, 5), np.zeros(4)),
           "array2d", "array1d", "loop", "nested-loop", "output", "strided", outputs=(2,)),
    kernel("strided_out", strided_out, lambda r: (uvec(r, -1.5, 1.5, 5), np.zeros(15)[::3]),
           "array1d", "loop", "output", "strided", "math", outputs=(1,)),
]

CONST = [
    kernel("const_weights", weighted_energy, lambda r: (uvec(r, 0.5, 2.0, 7), uvec(r, -1, 1, 7)),
           "array1d", "loop", "const-array", const=(0,)),
]

INPLACE = [
    kernel("inplace_recurrence", inplace_recurrence, lambda r: (uvec(r, -1, 1, 7), u(r, 0.3, 0.9)),
           "array1d", "loop", "output", "inplace-overwrite", "math", outputs=(0,)),
    kernel("inplace_cumsum", inplace_cumsum, lambda r: (uvec(r, -1, 1, 7),),
           "array1d", "loop", "output", "inplace-overwrite", outputs=(0,)),
    kernel("inplace_square_sum", inplace_square_sum, lambda r: (uvec(r, -1, 1, 6),),
           "array1d", "loop", "output", "inplace-overwrite", outputs=(0,)),
    kernel("inplace_swap_scale", inplace_swap_scale, lambda r: (uvec(r, -1, 1, 7),),
           "array1d", "loop", "output", "inplace-overwrite", outputs=(0,)),
    kernel("gauss_seidel", gauss_seidel, lambda r: (uvec(r, -1, 1, 5, 5), u(r, 0.5, 1.5)),
           "array2d", "loop", "nested-loop", "output", "inplace-overwrite", "realistic",
           outputs=(0,)),
    kernel("sorted_weighted_sum", sorted_weighted_sum,
           lambda r: (separated(r, 7, -2.0, 2.0, 0.05),),
           "array1d", "loop", "while", "alloc", "inplace-overwrite", "branch"),
    kernel("local_buffer", local_buffer, lambda r: (uvec(r, -1.5, 1.5, 6),),
           "array1d", "loop", "alloc", "math"),
]

KERNELS: list[Kernel] = OUTPUTS + STRIDED + CONST + INPLACE
