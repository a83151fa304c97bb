"""Callees the user asked not to inline (`@njit(inline="never")` written out) stay calls and
are differentiated as functions of their own, once per (callee, activities), like recursive
helpers (`tests/test_recursion.py`): checked in both modes against finite differences and
forward against reverse, and shown to stay calls in the derivative."""
from __future__ import annotations

import gc
import math

import numba
import numpy as np
import pytest
from numba.core.runtime import rtsys

from enzyme_py import autodiff
from tests._params import kernel_checks
from tests.support.gradcheck import check_forward, check_reverse, run_check
from tests.support.kernel import Kernel


@numba.njit(inline="never")
def _weighted(x, y, s):
    t = 0.0
    for i in range(x.shape[0]):
        t += math.sin(x[i]) * y[i] * s
    return t


def twice(x, y, s):
    """One callee called with two activity patterns (x active in one call, y in the other)."""
    return _weighted(x, y, s) + _weighted(y, x, s * s)


@numba.njit(inline="never")
def _scale_into(out, x, s):
    for i in range(x.shape[0]):
        out[i] = s * x[i] * x[i]


@numba.njit(inline="never")
def _norm2(x):
    return _weighted(x, x, 1.0) + np.sum(x * x)


def nested(out, x, s):
    """A callee writing an output array, and one calling another non-inlined callee."""
    _scale_into(out, x, s)
    return _norm2(out) * s


def _kernel(name, fn, make_args, **fields):
    return Kernel(name, fn, lambda rng: make_args(), **fields)


KERNELS = {k.name: k for k in (
    _kernel("twice", twice, lambda: (np.linspace(0.1, 0.9, 5), np.linspace(-0.4, 0.7, 5), 0.8)),
    _kernel("nested", nested, lambda: (np.zeros(4), np.linspace(0.2, 0.8, 4), 1.3),
            outputs=(0,)),
)}


@pytest.mark.parametrize("kernel, check", kernel_checks(list(KERNELS.values())))
def test_derivatives(kernel, check):
    run_check(kernel, check)


@pytest.mark.parametrize("mode, acts", [("reverse", ("dup", "const", "active")),
                                        ("forward", ("dup", "const", "const"))])
def test_callee_stays_a_call_once_per_activities(mode, acts):
    """Two calls with different activities: two derivatives of the callee, each called."""
    f = autodiff(mode=mode, args=acts)(twice)
    x, y = np.linspace(0.1, 0.9, 5), np.linspace(-0.4, 0.7, 5)
    if mode == "reverse":
        f.derivative(x, np.zeros(5), y, 0.8)
    else:
        f.derivative(x, np.ones(5), y, 0.8)
    text = f.inspect("derivative")
    prefix = "@diffe_" if mode == "reverse" else "@fwddiffe_"
    called = {line.split(prefix, 1)[1].split("(", 1)[0] for line in text.splitlines()
              if " call " in line and prefix in line and "weighted" in line}
    assert len(called) == 2, called


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_nrt_balanced_through_noinline_callees(mode, nrt_stats):
    check = check_forward if mode == "forward" else check_reverse
    check(KERNELS["nested"])        # compiled (cached) before counting
    gc.collect()
    before = rtsys.get_allocation_stats()
    check(KERNELS["nested"])
    gc.collect()
    after = rtsys.get_allocation_stats()
    alloc, free, mi_alloc, mi_free = (a - b for a, b in zip(after, before))
    assert (alloc, mi_alloc) == (free, mi_free)


@numba.njit(inline="never")
def _sines(x, n):
    s = 0.0
    for i in range(n):              # tapes n values: a tape of 64 KiB or more
        s += math.sin(x[i]) * x[i]
    return s


def raise_after_callee(x, i, n):
    return _sines(x, n) * x[i]      # IndexError (boundscheck) after the callee's forward half


@pytest.mark.parametrize("split", [False, True], ids=["reverse", "split"])
def test_a_raise_after_a_callee_releases_its_state_and_tape(split, nrt_stats):
    """The callee's state (and its tape) is listed by the caller when made and dropped at a
    raise, which skips the callee's reverse (issue 24, item 11b): no raw buffer and no C heap
    leak per raise. (One owner per raise still leaks: the primal's own reference on `x`
    around the call, which its raise path skips.)"""
    from enzyme_py import derive_diff
    from tests.support.c_heap import c_heap_bytes
    f = numba.njit(boundscheck=True)(raise_after_callee)
    x = np.linspace(0.1, 1.0, 20_000)
    check_reverse(raise_after_callee, (x, 3, 20_000), jit_options={"boundscheck": True})
    if split:
        fwd, rev = derive_diff(f, None, ["dup", "const", "const"], mode="split")

        def df(x, dx, i, n):
            _, tape = fwd(x, dx, i, n)
            rev(x, dx, i, n, 1.0, tape)
    else:
        df = derive_diff(f, None, ["dup", "const", "const"])
    good, bad = (x, np.zeros_like(x), 1, x.size), (x, np.zeros_like(x), x.size, x.size)
    df(*good)
    heap = c_heap_bytes()
    nrt_stats.start()
    before = heap() if heap is not None else 0
    for _ in range(10):
        with pytest.raises(IndexError):
            df(*bad)
        df(*good)
    alloc, free, mi_alloc, mi_free = nrt_stats.delta()
    assert alloc - free == mi_alloc - mi_free <= 10, "a raw buffer (the state) leaked"
    if heap is not None:            # a leaked tape: >= 160 KiB per raise
        assert heap() - before < 256 << 10, "C heap grew over 10 raising calls"
