"""Ordered reductions (`ir_passes.ordered_reductions`): our own compilations vectorise strict
floating-point sums in order -- results bit-identical to the sequential loop -- while the
option never leaks into the user's other Numba compiles."""
from __future__ import annotations

import functools
import re

import numba
import numpy as np

from enzyme_py import derive_diff
from ir_passes.ordered_reductions import ordered_reductions

ORDERED_SUM = "llvm.vector.reduce.fadd"    # in our optimized stage (linked code: lowered)
VECTOR = re.compile(r"<\d+ x double>")


def weighted_sum(x, c):
    s = 0.0
    for i in range(x.shape[0]):
        s += c[i] * x[i]
    return s


def sequential(terms) -> float:
    s = 0.0
    for t in terms:
        s += float(t)
    return s


@functools.cache
def forward_weighted_sum():
    return derive_diff(weighted_sum, "d_weighted_sum_fwd", ("dup", "const"), mode="forward")


def data():
    rng = np.random.default_rng(7)
    return (rng.standard_normal(1003) * 10.0 ** rng.integers(-8, 8, 1003),
            rng.standard_normal(1003), rng.standard_normal(1003))


def test_forward_sums_are_bit_identical_to_the_sequential_order():
    x, t, c = data()
    value, tangent = forward_weighted_sum()(x, t, c)
    assert value == sequential(c * x)
    assert tangent == sequential(c * t)
    # the data is ill-conditioned: a reassociated (pairwise/lane-wise) sum differs
    assert np.sum(c * t) != sequential(c * t) or np.sum(c * x) != sequential(c * x)


def test_forward_derivative_is_vectorised_with_ordered_sums():
    d = forward_weighted_sum()
    d(*data())                         # specialise it (tests may run in any order)
    optimized = d.enzyme.inspect("optimized")
    assert ORDERED_SUM in optimized
    assert VECTOR.search(optimized)
    assert VECTOR.search(d.inspect_llvm(d.signatures[0]))    # what Numba linked


def test_plain_njit_compiled_afterwards_is_unaffected():
    forward_weighted_sum()(*data())

    plain_sum = numba.njit(weighted_sum)
    x, _, c = data()
    assert plain_sum(x, c) == sequential(c * x)
    assert not VECTOR.search(plain_sum.inspect_llvm(plain_sum.signatures[0]))


def test_the_option_takes_effect_inside_the_scope_only():
    def compile_sum():
        fn = numba.njit(weighted_sum)
        x, _, c = data()
        fn(x, c)
        return fn.inspect_llvm(fn.signatures[0])

    with ordered_reductions():
        inside = compile_sum()
    assert VECTOR.search(inside)
    assert not VECTOR.search(compile_sum())
