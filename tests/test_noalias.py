"""Alias information: the call checks guarantee that a written array argument (primal or
shadow) shares no memory with any other array argument, and the derivative says so to LLVM
(`noalias` on its array data pointers) so that reverse sweeps vectorise -- only where the
checks see every array, never in split mode."""
from __future__ import annotations

import functools
import re

import numpy as np
import pytest

from enzyme_py import ArgumentError, derive_diff, numba_target
from tests.support.gradcheck import check_inner_product, check_reverse
from tests.support.kernel import kernel

VECTOR_FMUL = re.compile(r"fmul <\d+ x double>")


def matmul(A, B, C):
    for m in range(A.shape[0]):
        for k in range(A.shape[1]):
            for n in range(B.shape[1]):
                C[m, n] += A[m, k] * B[k, n]


def pair_sum(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i] * b[i]
    return s


def tuple_scale(x, t):
    for i in range(x.shape[0]):
        x[i] *= t[0][i]


def matmul_args(rng):
    return (rng.standard_normal((5, 4)), rng.standard_normal((4, 6)), rng.standard_normal((5, 6)))


MATMUL = kernel("noalias_matmul", matmul, matmul_args, "loop", outputs=(2,))


@functools.cache
def d_matmul():
    return derive_diff(matmul, "d_matmul_noalias", ("dup", "dup", "dup"))


def data_args(text: str) -> list[str]:
    header = next(line for line in text.splitlines() if line.startswith("define"))
    return re.findall(r"ptr noalias %([\w.'\"]+)", header)


def test_matmul_gradient_with_noalias():
    check_reverse(MATMUL)
    check_inner_product(MATMUL)


def optimized_matmul(d) -> str:
    A, B, C = matmul_args(np.random.default_rng(0))
    d(A, np.zeros_like(A), B, np.zeros_like(B), C, np.ones_like(C))
    return d.enzyme.inspect("optimized")


def test_data_pointers_of_arrays_and_shadows_are_noalias_and_reverse_vectorises(monkeypatch):
    with_noalias = optimized_matmul(d_matmul())
    assert len(data_args(d_matmul().enzyme.inspect("derivative"))) == 6
    monkeypatch.setattr(numba_target, "_only_checked_arrays", lambda types: False)
    without = optimized_matmul(derive_diff(matmul, "d_matmul_aliased", ("dup", "dup", "dup")))
    assert data_args(without) == []
    # without: only the forward sweep's replay of the primal loop vectorises
    assert len(VECTOR_FMUL.findall(with_noalias)) > len(VECTOR_FMUL.findall(without)) > 0


def test_written_shadow_overlapping_an_argument_is_still_refused():
    A, B, C = matmul_args(np.random.default_rng(0))
    with pytest.raises(ArgumentError, match="overlap in memory"):
        d_matmul()(A, np.zeros_like(A), B, np.zeros_like(B), C, C)


def test_read_only_views_of_one_buffer_may_share_memory():
    buf = np.random.default_rng(1).standard_normal(12)
    a, b = buf[:8], buf[4:]
    ta = np.random.default_rng(2).standard_normal(8)
    d = derive_diff(pair_sum, "d_pair_sum_noalias", ("dup", "const"), mode="forward")
    value, tangent = d(a, ta, b)
    assert value == pytest.approx(np.sum(a * b * b), rel=1e-13)
    assert tangent == pytest.approx(np.sum(ta * b * b), rel=1e-13)
    assert len(data_args(d.enzyme.inspect("derivative"))) == 3


def test_no_noalias_when_an_array_hides_in_a_tuple():
    d = derive_diff(tuple_scale, "d_tuple_scale_noalias", ("dup", "const"))
    x = np.arange(1.0, 5.0)
    dx = np.ones(4)
    d(x, dx, (x.copy(),))
    assert data_args(d.enzyme.inspect("derivative")) == []


def test_no_noalias_in_split_mode():
    fwd, rev = derive_diff(pair_sum, "d_pair_sum_split_noalias", ("dup", "dup"), mode="split")
    a, b = np.ones(3), np.ones(3)
    _, tape = fwd(a, np.zeros(3), b, np.zeros(3))
    rev(a, np.zeros(3), b, np.zeros(3), 1.0, tape)
    assert data_args(fwd.enzyme.inspect("derivative")) == []
