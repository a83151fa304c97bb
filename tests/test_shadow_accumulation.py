"""Shadow accumulations in the reverse sweep: a load's adjoint `shadow += adj` is an
`fadd nsz`, so after a store's adjoint resets the shadow to +0.0 the re-accumulation of the
`x[i] += ...` pattern folds away in LLVM (the result differs at most in the sign of a zero).
The derivatives must stay right (finite differences and the inner product identity) on a
stencil scattering into its neighbours' shadows and on an accumulating matmul.
"""
from __future__ import annotations

import re

import numpy as np

from enzyme_py import derive_diff
from ir_passes.diff.reverse import adjoints
from tests.support.gradcheck import check_inner_product, check_reverse
from tests.support.kernel import kernel
from tests.test_tape_placement import heat_swap


def matmul_acc(A, B, C):
    for m in range(A.shape[0]):
        for k in range(A.shape[1]):
            for n in range(B.shape[1]):
                C[m, n] += A[m, k] * B[k, n]


def heat_args(rng):
    u = rng.standard_normal((7, 9))
    return u, u.copy() + 0.5 * rng.standard_normal((7, 9)), 0.1, 3


def matmul_args(rng):
    return (rng.standard_normal((5, 4)), rng.standard_normal((4, 6)), rng.standard_normal((5, 6)))


HEAT = kernel("shadow_acc_heat_swap", heat_swap, heat_args, "nested-loop", "array2d",
              "inplace-overwrite", "int-arg", outputs=(0, 1))
MATMUL = kernel("shadow_acc_matmul", matmul_acc, matmul_args, "nested-loop", "array2d", outputs=(2,))

ZERO_FADD = re.compile(r"fadd (<\d+ x double>|double) %[\w.]+, (zeroinitializer|0\.0+e\+00)")


def d_matmul(name: str):
    d = derive_diff(matmul_acc, name, ("dup", "dup", "dup"))
    A, B, C = matmul_args(np.random.default_rng(0))
    d(A, np.zeros_like(A), B, np.zeros_like(B), C, np.ones_like(C))
    return d


def compiled_ir(d) -> str:
    """The optimized IR of the library Numba compiled for `d` (what runs, not `inspect`'s)."""
    (overload,) = d.overloads.values()
    return overload.library.get_llvm_str()


def test_heat_swap_gradient():
    check_reverse(HEAT)
    check_inner_product(HEAT)


def test_matmul_accumulation_gradient():
    check_reverse(MATMUL)
    check_inner_product(MATMUL)


def test_load_adjoints_accumulate_with_nsz_and_the_reset_folds(monkeypatch):
    d = d_matmul("d_shadow_acc_matmul")
    assert re.search(r"fadd nsz double", d.enzyme.inspect("derivative"))
    assert not ZERO_FADD.search(compiled_ir(d))
    monkeypatch.setattr(adjoints, "_accumulate", lambda b, value, adj: b.fadd(value, adj))
    plain = d_matmul("d_shadow_acc_matmul_plain")
    assert ZERO_FADD.search(compiled_ir(plain))
