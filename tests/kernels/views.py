"""Kernels that reshape, flatten and broadcast: Numba keeps the array struct in a stack slot
around `numba_attempt_nocopy_reshape` and reloads the data pointer, so the derivative must
follow pointers through memory (a reloaded pointer keeps the shadow of what was stored)."""
from __future__ import annotations

import numpy as np

from tests.kernels._points import uvec
from tests.support.kernel import Kernel, kernel


def reshape_sumsq(x):
    """sum of squares through x.reshape(2, 3) with an index-weighted loop."""
    y = x.reshape(2, 3)
    s = 0.0
    for i in range(2):
        for j in range(3):
            s += (i + 1.5) * y[i, j] * y[i, j] + y[i, j] * y[1 - i, 2 - j]
    return s


def np_reshape_weighted(x, w):
    """np.reshape(x, (3, 4)) contracted with const weights w (4,)."""
    A = np.reshape(x, (3, 4))
    s = 0.0
    for i in range(3):
        for j in range(4):
            s += np.sin(A[i, j]) * w[j] * (i + 1)
    return s


def ravel_cubes(X):
    """sum_k k * v[k]^3 over v = X.ravel()."""
    v = X.ravel()
    s = 0.0
    for k in range(v.shape[0]):
        s += (k + 1) * v[k] ** 3
    return s


def diff_energy(x, w):
    """sum w * diff(x)^2."""
    d = np.diff(x)
    return (d * d * w).sum()


def outer_sin(x, y):
    """sum sin(outer(x, y)) * (1 + outer index)."""
    O = np.outer(x, y)
    s = 0.0
    for i in range(O.shape[0]):
        for j in range(O.shape[1]):
            s += np.sin(O[i, j]) * (i + 2 * j + 1)
    return s


def kron_squares(a, b):
    """sum k * kron(a, b)[k]^2."""
    K = np.kron(a, b)
    s = 0.0
    for k in range(K.shape[0]):
        s += (k + 1) * K[k] * K[k]
    return s


def repeat_weighted(x, w):
    """sum repeat(x, 2) * w * x-dependent factor."""
    r = np.repeat(x, 2)
    return (r * w * np.cos(r)).sum()


def broadcast_column(X, y):
    """sum (X + y.reshape(-1, 1))^2 weighted by column."""
    Z = X + y.reshape(-1, 1)
    s = 0.0
    for i in range(Z.shape[0]):
        for j in range(Z.shape[1]):
            s += Z[i, j] * Z[i, j] * (j + 1)
    return s


def reshape_output(x, out):
    """out.reshape(2, 3)[i, j] = x[i] * x[j + 1] (writes through a reshaped view)."""
    y = out.reshape(2, 3)
    for i in range(2):
        for j in range(3):
            y[i, j] = x[i] * x[j + 1] + np.exp(x[i + j])


def reshape_in_loop(x):
    """Blocks of x reshaped inside a loop (a struct slot rewritten every iteration)."""
    s = 0.0
    for k in range(3):
        r = x[4 * k:4 * (k + 1)].reshape(2, 2)
        s += r[0, 1] * r[1, 0] - r[0, 0] * r[1, 1] * (k + 1)
    return s


def contiguous_views(X):
    """np.ascontiguousarray of a strided view (copied) and of a contiguous one (the view
    itself): Numba merges the two cases' array structs in a phi of aggregates."""
    C = np.ascontiguousarray(X[:, 1:])
    R = np.ascontiguousarray(X[1:])
    return np.sum(C ** 3) + np.sum(np.sin(R) * R[::-1]) + C[0, 0] * R[0, 1]


KERNELS: list[Kernel] = [
    kernel("reshape_sumsq", reshape_sumsq, lambda r: (uvec(r, -1, 1, 6),),
           "array1d", "nested-loop", "view"),
    kernel("np_reshape_weighted", np_reshape_weighted,
           lambda r: (uvec(r, -1, 1, 12), uvec(r, 0.5, 1.5, 4)),
           "array1d", "nested-loop", "math", "const-array", "view", const=(1,)),
    kernel("ravel_cubes", ravel_cubes, lambda r: (uvec(r, -1, 1, 3, 4),),
           "array2d", "loop", "view"),
    kernel("diff_energy", diff_energy, lambda r: (uvec(r, -1, 1, 7), uvec(r, 0.5, 1.5, 6)),
           "array1d", "const-array", "view", const=(1,)),
    kernel("outer_sin", outer_sin, lambda r: (uvec(r, -1, 1, 4), uvec(r, -1, 1, 3)),
           "array1d", "nested-loop", "math", "view"),
    kernel("kron_squares", kron_squares, lambda r: (uvec(r, -1, 1, 3), uvec(r, -1, 1, 2)),
           "array1d", "loop", "view"),
    kernel("repeat_weighted", repeat_weighted,
           lambda r: (uvec(r, -1, 1, 5), uvec(r, 0.5, 1.5, 10)),
           "array1d", "math", "const-array", "view", const=(1,)),
    kernel("broadcast_column", broadcast_column,
           lambda r: (uvec(r, -1, 1, 3, 4), uvec(r, -1, 1, 3)),
           "array2d", "array1d", "nested-loop", "view"),
    kernel("reshape_output", reshape_output, lambda r: (uvec(r, -1, 1, 4), np.zeros(6)),
           "array1d", "nested-loop", "output", "math", "view", outputs=(1,)),
    kernel("reshape_in_loop", reshape_in_loop, lambda r: (uvec(r, -1, 1, 12),),
           "array1d", "loop", "view"),
    kernel("contiguous_views", contiguous_views, lambda r: (uvec(r, -1, 1, 3, 4),),
           "array2d", "view"),
]
