"""np.linalg functions that stay refused (lstsq) name the function and a fix, and the
fixes they name differentiate correctly (reverse mode against finite differences; both
modes of solve, inv and cholesky are tested in their own files)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from enzyme_py import UnsupportedError, derive_diff  # noqa: E402
from tests.support.gradcheck import check_reverse  # noqa: E402


def lstsq_loss(A, b):
    return np.sum(np.linalg.lstsq(A, b)[0])


def lstsq_fix(A, b):
    return np.sum(np.sin(np.linalg.solve(A.T @ A, A.T @ b)))


def _tall(r):
    return r.standard_normal((5, 3))


@pytest.mark.parametrize("loss, args, pattern", [
    (lstsq_loss, (np.ones((3, 2)), np.ones(3)), r"least squares \(LAPACK numba_ez_gelsd: "
     r"np\.linalg\.lstsq\)(.*\n)*  fix: not differentiable yet: for a matrix of full column "
     r"rank, np\.linalg\.solve\(A\.T @ A, A\.T @ b\)"),
], ids=["lstsq"])
def test_refused_with_a_fix(loss, args, pattern):
    d = derive_diff(loss, None, ("dup",) * len(args))
    with pytest.raises(UnsupportedError, match=pattern):
        d(*(a for v in args for a in (v, np.zeros_like(v))))


@pytest.mark.parametrize("fix, make", [
    (lstsq_fix, lambda r: (_tall(r), r.standard_normal(5))),
], ids=["lstsq"])
def test_the_fixes_work(fix, make):
    check_reverse(fix, make(np.random.default_rng(0)))
