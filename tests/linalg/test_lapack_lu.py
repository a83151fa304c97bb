"""np.linalg.solve, inv, det, slogdet (Numba's LAPACK gesv, getrf, getri) and matrix_power
(gemm, and inv for negative powers) in both modes:
against central finite differences, forward against reverse (inner product), every
activity combination of the arrays, float32 and float64, C and F layouts; NRT allocations
balanced; complex matrices refused. Numba needs scipy for LAPACK.

Kernels combine several calls so each compiled derivative covers more."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from enzyme_py import UnsupportedError, derive_diff  # noqa: E402
from tests.linalg.battery import battery  # noqa: E402
from tests.support.kernel import Kernel  # noqa: E402


def solves(A, b, B):
    """A vector and a matrix right-hand side, the solution used twice."""
    x = np.linalg.solve(A, b)
    X = np.linalg.solve(A, B)
    return np.sum(x * x) + np.sum(np.sin(X)) + x @ b


def inverses(A, F):
    """inv of C and F matrices, an inverse in a product."""
    W = np.linalg.inv(A)
    return np.sum(W * W) + np.sum(np.tanh(np.linalg.inv(F) @ A))


def determinants(A, F):
    sign, logdet = np.linalg.slogdet(A)
    return logdet * sign + np.linalg.det(F) + np.linalg.det(A @ F)


def solve_in_loop(A, b, out):
    """Repeated solves (a fresh factorisation each time) written into an output."""
    x = b.copy()
    for _ in range(3):
        x = np.linalg.solve(A, np.tanh(x))
    out[:] = x


def powers(A):
    """Numba's matrix_power: products for |n| <= 3, inv first for n < 0."""
    return np.sum(np.linalg.matrix_power(A, 3)) + np.sum(np.linalg.matrix_power(A, -2) ** 2)


def high_powers(A):
    """|n| >= 4: a loop of products whose operands are now A (or inv(A)), now a product of
    an earlier iteration (copied for the product, `blas_operand_copy.py`)."""
    return np.sum(np.linalg.matrix_power(A, 5)) + np.sum(np.linalg.matrix_power(A, -4) ** 2)


def _well_conditioned(r, n, dtype=np.float64, order="C"):
    A = r.standard_normal((n, n)) + n * np.eye(n)
    return np.asarray(A, dtype=dtype, order=order)


def _solves_args(r, dtype=np.float64):
    return (_well_conditioned(r, 4, dtype), r.standard_normal(4).astype(dtype),
            r.standard_normal((4, 2)).astype(dtype))


def _two_matrices(r, dtype=np.float64):
    return _well_conditioned(r, 3, dtype), _well_conditioned(r, 3, dtype, "F")


def _f32(make):
    return lambda r: make(r, np.float32)


KERNELS = [
    Kernel("solves", solves, _solves_args),
    Kernel("solves_A_const", solves, _solves_args, const=(0,)),
    Kernel("solves_F_b_const", solves, lambda r: tuple(np.asfortranarray(a)
                                                       for a in _solves_args(r)), const=(1, 2)),
    Kernel("solves_f32", solves, _f32(_solves_args), fd_rtol=2e-2),
    Kernel("inverses", inverses, _two_matrices),
    Kernel("inverses_F_const", inverses, _two_matrices, const=(1,)),
    Kernel("inverses_f32", inverses, _f32(_two_matrices), fd_rtol=2e-2),
    Kernel("determinants", determinants, _two_matrices),
    Kernel("determinants_A_const", determinants, _two_matrices, const=(0,)),
    Kernel("determinants_f32", determinants, _f32(_two_matrices), fd_rtol=2e-2),
    Kernel("powers", powers, lambda r: (_well_conditioned(r, 3) / 3.0,)),
    Kernel("high_powers", high_powers, lambda r: (_well_conditioned(r, 3) / 3.0,)),
    Kernel("high_powers_1x1", high_powers, lambda r: (_well_conditioned(r, 1) / 1.5,)),
    Kernel("high_powers_F_f32", high_powers,
           lambda r: (_well_conditioned(r, 3, np.float32, "F") / 3.0,), fd_rtol=2e-2),
    Kernel("solve_in_loop", solve_in_loop,
           lambda r: (_well_conditioned(r, 3), r.standard_normal(3), np.zeros(3)),
           outputs=(2,)),
]
IDS = [k.name for k in KERNELS]
test_forward, test_reverse, test_inner_product, test_vector_forward_per_lane, \
    test_temporaries_are_released = battery(
        KERNELS, lanes=IDS.index("determinants"),
        released=(IDS.index("solves"), IDS.index("inverses"), IDS.index("high_powers")))


def test_complex_solve_is_refused():
    def f(A, b):
        return np.linalg.solve(A + 0j, b + 0j)[0].real

    d = derive_diff(f, None, ("dup", "dup"))
    with pytest.raises(UnsupportedError, match=r"cannot differentiate: linear solve of a complex "
                       r"matrix \(numba_xgesv\)(.*\n)*  fix: not supported yet: only float32 "
                       r"and float64 matrices are differentiable"):
        d(*(a for v in (np.eye(2), np.ones(2)) for a in (v, np.zeros_like(v))))
