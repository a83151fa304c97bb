"""Facts the reverse sweep states to LLVM about its own loops and accumulations.

- A reverse loop counter starts from the loop's last iteration index, which is never
  negative: its load (from the tape) carries `!range [0, 2**63 - 1)` and the counter's
  decrement is `sub nuw nsw`. LLVM then folds Numba's negative-index wraparound selects of
  the indices recomputed from the counter (`a[i, j - 1]` in a stencil's reverse).
- A load's adjoint `shadow += adj` is an `fadd nsz`: after a store's adjoint resets the
  shadow to +0.0, the `x[i] += ...` pattern's re-accumulation folds away (up to the sign of
  a zero).

The derivatives must stay right (finite differences and the inner product identity).
"""
from __future__ import annotations

import functools
import re

import numpy as np

from enzyme_py import derive_diff
from ir_passes.diff.reverse import adjoints, control
from tests.support.gradcheck import check_inner_product, check_reverse
from tests.support.kernel import kernel


def heat_swap(u, v, r, steps):
    ny, nx = u.shape
    a, b = u, v
    for _ in range(steps):
        for i in range(1, ny - 1):
            for j in range(1, nx - 1):
                b[i, j] = a[i, j] + r * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1]
                                         + a[i, j + 1] - 4.0 * a[i, j])
        a, b = b, a
    s = 0.0
    for i in range(ny):
        for j in range(nx):
            s += a[i, j] * a[i, j]
    return s


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


HEAT = kernel("facts_heat_swap", heat_swap, heat_args, "nested-loop", "array2d",
              "inplace-overwrite", "int-arg", outputs=(0, 1))
MATMUL = kernel("facts_matmul", matmul_acc, matmul_args, "nested-loop", "array2d", outputs=(2,))

RANGE = re.compile(r"= load i64, ptr %[\w.]+, align \d+, !range !\{i64 0, i64 9223372036854775807\}")
SELECT = re.compile(r"= select i1 ")
ZERO_FADD = re.compile(r"fadd (<\d+ x double>|double) %[\w.]+, (zeroinitializer|0\.0+e\+00)")


@functools.cache
def d_heat(tag: str = ""):
    """The heat derivative, called once (its IR is then inspectable)."""
    d = derive_diff(heat_swap, "d_facts_heat" + tag, ("dup", "dup", "const", "const"))
    u, v, r, steps = heat_args(np.random.default_rng(0))
    d(u, np.zeros_like(u), v, np.ones_like(v), r, steps)
    return d


def d_matmul(name: str):
    d = derive_diff(matmul_acc, name, ("dup", "dup", "dup"))
    A, B, C = matmul_args(np.random.default_rng(0))
    d(A, np.zeros_like(A), B, np.zeros_like(B), C, np.ones_like(C))
    return d


def test_heat_swap_gradient():
    check_reverse(HEAT)
    check_inner_product(HEAT)


def test_matmul_accumulation_gradient():
    check_reverse(MATMUL)
    check_inner_product(MATMUL)


def test_reverse_counters_are_stated_non_negative():
    text = d_heat().enzyme.inspect("derivative")
    assert RANGE.search(text), "no trip count loaded with !range"
    decrements = re.findall(r"load i64, ptr %[\w.]+\.riter\n\s+%[\w.]+ = (sub[\w ]*) i64", text)
    assert decrements and set(decrements) == {"sub nuw nsw"}


def test_wraparound_selects_fold_in_the_stencil_reverse(monkeypatch):
    stated = d_heat().enzyme.inspect("optimized")
    monkeypatch.setattr(control, "_known_count", lambda count: count)
    unstated = d_heat("_unstated").enzyme.inspect("optimized")
    assert not RANGE.search(d_heat("_unstated").enzyme.inspect("derivative"))
    assert len(SELECT.findall(stated)) < len(SELECT.findall(unstated))


def test_load_adjoints_accumulate_with_nsz_and_the_reset_folds(monkeypatch):
    d = d_matmul("d_facts_matmul")
    assert re.search(r"fadd nsz double", d.enzyme.inspect("derivative"))
    assert not ZERO_FADD.search(d.enzyme.inspect("optimized"))
    monkeypatch.setattr(adjoints, "_accumulate", lambda b, value, adj: b.fadd(value, adj))
    plain = d_matmul("d_facts_matmul_plain")
    assert ZERO_FADD.search(plain.enzyme.inspect("optimized"))
