"""np.linalg functions that stay refused (eig, eigvals) name the function and a fix (the
others are tested in both modes in their own files)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from enzyme_py import UnsupportedError, derive_diff  # noqa: E402


def eigenvalues(A):
    return np.sum(np.linalg.eigvals(A).real)


def test_eigvals_is_refused_with_a_fix():
    d = derive_diff(eigenvalues, None, ("dup",))
    with pytest.raises(UnsupportedError, match=r"cannot differentiate: eigendecomposition "
                       r"\(LAPACK numba_ez_rgeev: np\.linalg\.eig or eigvals\)(.*\n)*  fix: not "
                       r"differentiable yet \(np\.linalg\.solve, inv, det, slogdet, cholesky, "
                       r"eigh, eigvalsh, svd, pinv, qr and lstsq are\)"):
        d(np.eye(2), np.zeros((2, 2)))
