"""The norm of a complex vector (np.linalg.norm: BLAS nrm2 of kind 'z' or 'c', a real result)
in both modes: against central finite differences, forward against reverse (inner product),
vector forward mode, complex128 and complex64, contiguous and strided vectors (the real and
imaginary parts are the vector of reals at stride 2 * incx); NRT allocations balanced; the
subgradient 0 at the zero vector."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy")

from enzyme_py import derive_diff  # noqa: E402
from tests.linalg.nrt import assert_released  # noqa: E402
from tests.support.gradcheck import check_all  # noqa: E402
from tests.support.kernel import Kernel  # noqa: E402


def complex_norms(x, y):
    """A contiguous and a strided complex vector, and a norm squared."""
    z = x + 1j * np.sin(y)
    w = (x * y + 2j * x)[::2]
    return np.linalg.norm(z) * 1.5 + np.linalg.norm(w) ** 2


def complex64_norm(x, y):
    return np.linalg.norm((x + 1j * y).astype(np.complex64)) * 2.0


def complex_norm_of_zero(x):
    return np.linalg.norm(x * 0.0 + 0j) + x[0]


KERNELS = [
    Kernel("complex_norms", complex_norms,
           lambda r: (r.standard_normal(7), r.standard_normal(7))),
    Kernel("complex64_norm", complex64_norm,
           lambda r: (r.standard_normal(5).astype(np.float32),
                      r.standard_normal(5).astype(np.float32)), fd_rtol=2e-2),
]


@pytest.mark.parametrize("kernel", KERNELS, ids=[k.name for k in KERNELS])
def test_both_modes_inner_product_and_lanes(kernel):
    check_all(kernel, width=2)


def test_complex_norm_at_zero_has_the_subgradient_zero():
    x = np.array([0.3, -1.2, 2.0])
    d_x = np.zeros(3)
    derive_diff(complex_norm_of_zero, None, ("dup",))(x, d_x)
    assert np.array_equal(d_x, [1.0, 0.0, 0.0])
    forward = derive_diff(complex_norm_of_zero, None, ("dup",), mode="forward")
    assert forward(x, np.ones(3)) == (0.3, 1.0)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_complex_norm_derivatives_release_their_memory(mode):
    r = np.random.default_rng(3)
    args = (r.standard_normal(7), r.standard_normal(7))
    assert_released(derive_diff(complex_norms, None, ("dup", "dup"), mode=mode), args)
