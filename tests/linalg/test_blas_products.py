"""Matrix products (`@`, np.dot: Numba's BLAS gemv and gemm; Numba has no np.matmul) and
norms of vectors (np.linalg.norm: BLAS nrm2) in both modes: against central finite
differences, forward against reverse (inner product), every activity combination of the
operands, float32 and float64, C, F and strided layouts (Numba copies non-contiguous operands
first), products of fresh arrays, np.dot(A, B, out); NRT allocations balanced. Numba needs
scipy for BLAS.

The shared battery (`battery.py`); each kernel is compiled once per mode (gradcheck caches
derivatives), so kernels combine several products."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from enzyme_py import derive_diff  # noqa: E402
from tests.linalg.battery import battery  # noqa: E402
from tests.support.kernel import Kernel  # noqa: E402


def products(A, x, B):
    """gemv and gemm of the same matrix, and a product of a matrix with itself."""
    return np.sum((A @ x) ** 2) + np.sum(np.tanh(A @ B)) + np.sum(np.sin(A @ A.T))


def _products_args(r):
    return r.standard_normal((3, 4)), r.standard_normal(4), r.standard_normal((4, 2))


def layouts(A, F, S, x, B):
    """C, F (A.T is F) and strided (copied) operands, both sides of gemv and gemm."""
    v = np.sin(A @ x) * (F @ x) + S @ x + x @ A.T + np.dot(F, x)
    M = np.tanh(A @ B) + F @ B + S @ B + np.dot(B.T, A.T).T + np.dot(A, B)
    return np.sum(v * v) + np.sum(M * M) + np.sum(x @ S.T @ A)


def _layouts_args(r, dtype=np.float64):
    A, x, B = _products_args(r)
    F = np.asfortranarray(r.standard_normal((3, 4)))
    S = r.standard_normal((3, 8))[:, ::2]
    return tuple(a.astype(dtype) for a in (A, F, S, x, B))


def least_squares(A, x, b):
    return np.sum((A @ x - b) ** 2)


def mlp(W1, b1, W2, b2, x):
    return np.sum(np.tanh(W2 @ np.tanh(W1 @ x + b1) + b2))


def normal_equations(A, x):
    return np.sum(np.sin(A.T @ (A @ x)))


def quadratic_form(x, A):
    return x @ A @ x


def product_into(A, B, out):
    np.dot(A, B, out)
    out[0, 0] += np.sum(np.dot(A, B[:, 0]))


def product_of_out(A, x, y):
    """y is written by np.dot(A, x, y), then read by a later product."""
    np.dot(A, x, y)
    return np.sum((A @ y) ** 2)


def norms(x, X):
    return np.linalg.norm(x) * 2.0 + np.linalg.norm(x[::2]) ** 2 + np.linalg.norm(X @ x)


def norm_of_zero(x):
    return np.linalg.norm(x * 0.0) + x[0]


def _mlp_args(r, n=4, h=5, m=3):
    return (r.standard_normal((h, n)), r.standard_normal(h), r.standard_normal((m, h)),
            r.standard_normal(m), r.standard_normal(n))


KERNELS = [
    Kernel("products", products, _products_args),
    Kernel("products_A_const", products, _products_args, const=(0,)),
    Kernel("products_xB_const", products, _products_args, const=(1, 2)),
    Kernel("layouts", layouts, _layouts_args),
    Kernel("layouts_f32", layouts, lambda r: _layouts_args(r, np.float32), fd_rtol=2e-2),
    Kernel("least_squares", least_squares,
           lambda r: (r.standard_normal((5, 3)), r.standard_normal(3), r.standard_normal(5)),
           const=(2,)),
    Kernel("mlp", mlp, _mlp_args),
    Kernel("normal_equations", normal_equations,
           lambda r: (r.standard_normal((4, 3)), r.standard_normal(3))),
    Kernel("quadratic_form", quadratic_form,
           lambda r: (r.standard_normal(3), r.standard_normal((3, 3)))),
    Kernel("product_into", product_into,
           lambda r: (r.standard_normal((3, 4)), r.standard_normal((4, 2)), np.zeros((3, 2))),
           outputs=(2,)),
    Kernel("product_of_out", product_of_out,
           lambda r: (r.standard_normal((3, 3)), r.standard_normal(3), np.zeros(3)),
           outputs=(2,)),
    Kernel("norms", norms, lambda r: (r.standard_normal(5), r.standard_normal((3, 5)))),
    Kernel("norms_f32", norms, lambda r: (r.standard_normal(5).astype(np.float32),
                                          r.standard_normal((3, 5)).astype(np.float32)),
           fd_rtol=2e-2),
]

(test_forward, test_reverse, test_inner_product, test_vector_forward_per_lane,
 test_temporaries_are_released) = battery(KERNELS, lanes=0,
                                          released=(next(i for i, k in enumerate(KERNELS)
                                                         if k.name == "mlp"),))


def test_norm_at_zero_has_the_subgradient_zero():
    x = np.array([0.3, -1.2, 2.0])
    d_x = np.zeros(3)
    derive_diff(norm_of_zero, None, ("dup",))(x, d_x)
    assert np.array_equal(d_x, [1.0, 0.0, 0.0])
    value, tangent = derive_diff(norm_of_zero, None, ("dup",), mode="forward")(x, np.ones(3))
    assert (value, tangent) == (0.3, 1.0)

