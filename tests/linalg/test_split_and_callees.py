"""Linear algebra in split mode (its kept temporaries go on the state's owned list: released
by the reverse half, or when the tape dies unreversed) and inside `@njit(inline="never")`
callees (their LAPACK calls rewritten as in the caller, `KnownCall.prepare`; the callee's
derivative is a pair of split halves): against finite differences, forward against reverse,
and NRT statistics balanced."""
from __future__ import annotations

import gc

import numba
import numpy as np
import pytest
from numba.core.runtime import rtsys

pytest.importorskip("scipy")

from enzyme_py import derive_diff  # noqa: E402
from tests.linalg import (test_lapack_eigh, test_lapack_lstsq,  # noqa: E402
                          test_lapack_qr, test_lapack_svd)
from tests.linalg.nrt import assert_released  # noqa: E402
from tests.linalg.test_blas_products import _mlp_args, mlp  # noqa: E402
from tests.linalg.test_lapack_lu import _solves_args, solves  # noqa: E402
from tests.support.gradcheck import (check_forward, check_inner_product,  # noqa: E402
                                     check_reverse)
from tests.support.kernel import Kernel  # noqa: E402
from tests.support.nrt_stats import nrt_statistics  # noqa: E402
from tests.test_split import split_as_reverse  # noqa: E402


@numba.njit(inline="never")
def _spectrum(A):
    return np.sum(np.linalg.eigvalsh(A + A.T) ** 2)


@numba.njit(inline="never")
def _log_volume(A):
    return np.linalg.slogdet(A)[1] + np.sum(np.linalg.solve(A, A[:, 0]))


def helpers(A, B):
    """eigvalsh (rewritten to compute eigenvectors) and LU calls in non-inlined callees."""
    return _spectrum(A) + _log_volume(B)


def _helpers_args(r):
    return (r.standard_normal((3, 3)), r.standard_normal((3, 3)) + 3 * np.eye(3))


SPLIT = [Kernel("mlp_split", mlp, _mlp_args), Kernel("solves_split", solves, _solves_args),
         *(module.KERNELS[0] for module in (test_lapack_svd, test_lapack_qr, test_lapack_eigh)),
         test_lapack_lstsq.KERNELS[1]]
CALLEES = [Kernel("helpers", helpers, _helpers_args),
           Kernel("helpers_B_const", helpers, _helpers_args, const=(1,))]


@pytest.mark.parametrize("kernel", SPLIT, ids=[f"{k.fn.__name__}-{k.name}" for k in SPLIT])
def test_split_mode(kernel):
    check_reverse(kernel, derive=split_as_reverse)


@pytest.mark.parametrize("kernel", CALLEES, ids=[k.name for k in CALLEES])
def test_callees_not_inlined(kernel):
    check_forward(kernel)
    check_reverse(kernel)
    check_inner_product(kernel)


def test_callee_temporaries_are_released():
    kernel = CALLEES[0]
    assert_released(check_reverse(kernel).df, kernel.args())


def test_split_tape_dropped_unreversed_releases_the_kept_product():
    """A forward half whose tape dies unused: the temporaries its products keep are
    released with it; a full round releases them too."""
    fwd, rev = derive_diff(mlp, None, ("dup",) * 5, mode="split")
    call = [a for v in _mlp_args(np.random.default_rng(0)) for a in (v, np.zeros_like(v))]
    rev(*call, 1.0, fwd(*call)[1])                # compile both halves
    with nrt_statistics():
        gc.collect()
        before = rtsys.get_allocation_stats()
        for _ in range(3):
            fwd(*call)
            rev(*call, 1.0, fwd(*call)[1])
        gc.collect()
        after = rtsys.get_allocation_stats()
    alloc, free, mi_alloc, mi_free = (a - b for a, b in zip(after, before))
    assert mi_alloc > 0 and (alloc, mi_alloc) == (free, mi_free), (after, before)
