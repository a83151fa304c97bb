"""Unroll-and-jam of reverse loop nests (`ir_passes.jam_loops`) end to end: matmul-like nests'
gradients against finite differences and forward mode, and bit-identical to the derivative
linked without the jam."""
from __future__ import annotations

import numba
import numpy as np
import pytest

import ir_passes.jam_loops
import ir_passes.reverse_loops
from enzyme_py import derive_diff
from enzyme_py.inspection import inspection
from tests.support.gradcheck import check_inner_product, check_reverse
from tests.test_tape_placement import matmul_loss  # C = A @ B, n innermost, as benchmarked


def matmul_acc(A, B, C):
    """C += A @ B written with loops (C read and written); returns sum(C * C * C)."""
    for m in range(A.shape[0]):
        for k in range(A.shape[1]):
            for n in range(B.shape[1]):
                C[m, n] += A[m, k] * B[k, n]
    s = 0.0
    for m in range(C.shape[0]):
        for n in range(C.shape[1]):
            s += C[m, n] * C[m, n] * C[m, n]
    return s


def matmul_k_inner(A, B, C):
    """C = A @ B with k innermost (a dot product per (m, n)); returns sum(sin(C))."""
    for m in range(A.shape[0]):
        for n in range(B.shape[1]):
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[m, k] * B[k, n]
            C[m, n] = acc
    s = 0.0
    for m in range(C.shape[0]):
        for n in range(C.shape[1]):
            s += np.sin(C[m, n])
    return s


def _args(M, K, N, seed=0, view=False):
    rng = np.random.default_rng(seed)
    if view:     # every other row of A, and B as the transpose of a C-layout array
        return (rng.standard_normal((2 * M, K))[::2], rng.standard_normal((N, K)).T,
                rng.standard_normal((M, N)))
    return rng.standard_normal((M, K)), rng.standard_normal((K, N)), rng.standard_normal((M, N))


KERNELS = (matmul_loss, matmul_acc, matmul_k_inner)
SHAPES = ((8, 8, 8), (5, 7, 3), (9, 6, 11), (1, 3, 2), (4, 13, 5))


@pytest.mark.parametrize("fn", KERNELS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("view", (False, True), ids=("C", "view"))
def test_gradients_match_fd_and_forward(fn, shape, view):
    args = _args(*shape, view=view)
    check_reverse(fn, args, check_accumulation=False)
    check_inner_product(fn, args)


def _gradients(fn, args, jam: bool, monkeypatch):
    with monkeypatch.context() as patch:
        if not jam:
            patch.setattr(ir_passes.reverse_loops, "jam_loop_nests", lambda fn: False)
        d = derive_diff(numba.njit(fn), None, ("dup", "dup", "dup"))
        A, B, C = (a.copy() for a in args)
        shadows = [np.zeros_like(a) for a in args]
        d(A, shadows[0], B, shadows[1], C, shadows[2])
    return shadows


@pytest.mark.parametrize("fn", KERNELS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shape", ((64, 64, 64), (9, 6, 11), (7, 13, 5)), ids=str)
def test_gradient_is_bit_identical_with_the_jam_off(fn, shape, monkeypatch):
    args = _args(*shape, seed=3)
    on, off = (_gradients(fn, args, jam, monkeypatch) for jam in (True, False))
    for x, y in zip(on, off):
        assert np.array_equal(x.view(np.int64), y.view(np.int64))


@pytest.mark.parametrize("fn, jammed", [(matmul_loss, True), (matmul_acc, True)],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_contiguous_matmul_reverse_is_jammed(fn, jammed):
    p = numba.njit(fn)
    p(*_args(4, 4, 4))
    linked = inspection(p, "dup,dup,dup").stages.module_text
    assert (".jam.inner" in linked) == jammed


def row_scaled_temporary(A, w):
    """A nest whose reverse reads a temporary's shadow (t) and the tape (exp): `may_jam`
    rules it out before paying LLVM's simplification."""
    M, N = A.shape
    t = np.empty(M)
    for m in range(M):
        t[m] = np.exp(w[m])
    s = 0.0
    for m in range(M):
        for n in range(N):
            s += t[m] * A[m, n] * A[m, n]
    return s


@pytest.mark.parametrize("fn, acts, args, expected", [
    (matmul_loss, "dup,dup,dup", _args(4, 4, 4), True),
    (row_scaled_temporary, "dup,dup", (np.ones((3, 4)), np.ones(3)), False)],
    ids=["matmul", "temporary"])
def test_the_cheap_precheck_sees_what_cannot_be_jammed(fn, acts, args, expected):
    p = numba.njit(fn)
    p(*args)
    assert ir_passes.jam_loops.may_jam(inspection(p, acts).stages.derivative) is expected
