"""LAPACK calls on constant matrices stay as Numba made them (the rewrites that give the
derivative what it needs, `KnownCall.prepare`, apply to calls touching derivatives only): a
wide lstsq or qr and a non-square full svd of a constant matrix, and eigvalsh, in both
modes against central finite differences."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from tests.support.gradcheck import check_forward, check_reverse  # noqa: E402
from tests.support.kernel import Kernel  # noqa: E402


def least_squares(x, A, b):
    return x[0] * np.sum(np.linalg.lstsq(A, b)[0])


def triangular_factor(x, A):
    return x[0] * np.sum(np.linalg.qr(A)[1])


def singular_values(x, A):
    return np.sin(x[0]) * np.sum(np.linalg.svd(A)[1])


def eigenvalues(x, A):
    return x[0] ** 2 * np.sum(np.linalg.eigvalsh(A))


def _wide(r):
    return r.standard_normal((2, 3))


KERNELS = [
    Kernel("lstsq_wide", least_squares, lambda r: (np.ones(1), _wide(r), np.ones(2)),
           const=(1, 2)),
    Kernel("qr_wide", triangular_factor, lambda r: (np.ones(1), _wide(r)), const=(1,)),
    Kernel("svd_full_wide", singular_values, lambda r: (np.ones(1), _wide(r)), const=(1,)),
    Kernel("eigvalsh", eigenvalues, lambda r: (np.ones(1), np.diag([1.0, 2.0, 4.0])),
           const=(1,)),
]


@pytest.mark.parametrize("check", [check_forward, check_reverse], ids=["forward", "reverse"])
@pytest.mark.parametrize("kernel", KERNELS, ids=[k.name for k in KERNELS])
def test_constant_matrices(kernel, check):
    check(kernel)
