"""Stencil adjoints with retimed accumulations (`ir_passes.retime_accumulations`): the reverse
of a stencil scatters each point into its neighbours' shadows; the retimed loop finishes one
neighbour per iteration. Gradients against finite differences and the inner-product identity,
the retiming applied (the linked module holds the retimed loop), and the gradient bit-identical
with the pass on and off (same additions in the same order)."""
from __future__ import annotations

import pytest

import ir_passes.reverse_loops as reverse_loops
from enzyme_py.inspection import inspection
from tests.support.gradcheck import check_inner_product, check_reverse, seeded_reverse
from tests.support.kernel import kernel
from tests.test_tape_placement import heat_swap


def stencil3(x, out):
    n = x.shape[0]
    for j in range(1, n - 1):
        out[j] = 0.25 * x[j - 1] + 0.5 * x[j] + 0.3 * x[j + 1]
    s = 0.0
    for j in range(n):
        s += out[j] * out[j]
    return s


def stencil5(x, out, c):
    n = x.shape[0]
    for j in range(2, n - 2):
        out[j] = (c * x[j - 2] - 0.5 * x[j - 1] + x[j] * x[j] + 0.7 * x[j + 1]
                  - 0.1 * x[j + 2])
    s = 0.0
    for j in range(n):
        s += out[j] * out[j]
    return s


def _args1(n):
    return lambda rng: (rng.standard_normal(n), rng.standard_normal(n))


def _heat_args(rng):
    u = rng.standard_normal((7, 9))
    return u, u.copy() + 0.5 * rng.standard_normal((7, 9)), 0.1, 3


KERNELS = {
    "stencil3": (kernel("retime_stencil3", stencil3, _args1(11), "loop", "array1d",
                        outputs=(1,)), "float64[::1], float64[::1]", ("dup", "dup")),
    "stencil5": (kernel("retime_stencil5", stencil5,
                        lambda rng: (*_args1(12)(rng), 0.3), "loop", "array1d", outputs=(1,)),
                 "float64[::1], float64[::1], float64", ("dup", "dup", "active")),
    "heat_swap": (kernel("retime_heat_swap", heat_swap, _heat_args, "nested-loop", "array2d",
                         "inplace-overwrite", "int-arg", outputs=(0, 1)),
                  "float64[:, ::1], float64[:, ::1], float64, int64",
                  ("dup", "dup", "active", "const")),
}


@pytest.mark.parametrize("name", KERNELS)
def test_gradient(name):
    k = KERNELS[name][0]
    check_reverse(k)
    check_inner_product(k)


@pytest.mark.parametrize("name", KERNELS)
def test_retimed_in_linked_module(name):
    k, types, acts = KERNELS[name]
    text = inspection(k.fn, list(acts), types=types).stages.module_text
    assert ".retimed.done" in text


@pytest.mark.parametrize("name", KERNELS)
def test_bit_identical_without_retiming(name, monkeypatch):
    k, _, acts = KERNELS[name]
    on = seeded_reverse(k, acts, f"retime_{k.name}_on")
    monkeypatch.setattr(reverse_loops, "retime_accumulations", lambda fn: False)
    off = seeded_reverse(k, acts, f"retime_{k.name}_off")
    assert repr(on[0]) == repr(off[0])
    for a, b in zip(on[1], off[1]):
        assert a.tobytes() == b.tobytes()
