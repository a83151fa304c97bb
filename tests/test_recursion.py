"""Callees that are not inlined: recursive @njit helpers differentiated as functions of their
own (forward: a tangent function calling itself; reverse: the callee's augmented forward and
reverse halves, its tape kept in the caller's), checked against finite differences and
forward against reverse; what stays refused is refused with its exact message."""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from enzyme_py import UnsupportedError, derive_diff
from tests._params import kernel_checks
from tests.support.arrays import make_shadow
from tests.support.gradcheck import check_forward, check_reverse, run_check
from tests.support.kernel import Kernel


@numba.njit
def _power(x, n):
    if n == 0:
        return 1.0
    return x * _power(x, n - 1)


def rec_power(x, n):
    """x**n + x through a linearly recursive helper."""
    return _power(x, n) + x


@numba.njit
def _fibish(x, y, n):
    if n <= 1:
        return x + 0.5 * y * n
    return math.sin(_fibish(x, y, n - 1)) + y * _fibish(x, y, n - 2)


def rec_fib(x, y, n):
    """Two recursive calls per level, float accumulation through sin."""
    return _fibish(x, y, n)


@numba.njit
def _tree_sum(a, lo, hi):
    if hi - lo == 1:
        return a[lo] * a[lo]
    mid = (lo + hi) // 2
    return _tree_sum(a, lo, mid) + _tree_sum(a, mid, hi)


def rec_tree(a, s):
    """s * sum(a**2) by recursive halving of an index range (two specialisations: lo is
    the literal 0 at the top, an integer below)."""
    return s * _tree_sum(a, 0, a.shape[0])


@numba.njit
def _chunks(a, lo, hi):
    if hi - lo <= 2:
        t = np.exp(a[lo:hi])            # a temporary array in every leaf
        return t.sum()
    mid = (lo + hi) // 2
    return _chunks(a, lo, mid) * _chunks(a, mid, hi)


def rec_chunks(a):
    """A product of sums of exp over leaves of a recursion that allocates."""
    return _chunks(a, 0, a.shape[0])


@numba.njit
def _even(x, n):
    if n == 0:
        return x
    return _odd(x, n - 1) * x


@numba.njit
def _odd(x, n):
    if n == 0:
        return 1.0
    return _even(x, n - 1) + math.cos(x)


def rec_mutual(x, n):
    """Mutual recursion between two helpers."""
    return _even(x, n)


@numba.njit
def _fill(out, a, lo, hi):
    if hi - lo == 1:
        out[lo] = math.exp(a[lo])
        return
    mid = (lo + hi) // 2
    _fill(out, a, lo, mid)
    _fill(out, a, mid, hi)


def rec_fill(out, a):
    """A recursive helper writing an output array."""
    _fill(out, a, 0, a.shape[0])


def rec_fill_twice(a):
    """The recursive helper handed one array as its output and its input."""
    _fill(a, a, 0, a.shape[0])


@numba.njit
def _sum_to(a, n):
    if n == 0:
        return 0.0
    return a[n - 1] * a[n - 1] + _sum_to(a, n - 1)


def rec_then_write(a):
    """The caller overwrites memory the recursive helper read."""
    s = _sum_to(a, a.shape[0])
    a[0] = 0.0
    return s


def _kernel(name, fn, make_args, **fields):
    return Kernel(name, fn, lambda rng: make_args(), **fields)


KERNELS = {k.name: k for k in (
    _kernel("power", rec_power, lambda: (1.3, 4)),
    _kernel("fib", rec_fib, lambda: (0.7, 0.4, 6)),
    _kernel("tree", rec_tree, lambda: (np.linspace(0.1, 1.0, 7), 1.5)),
    _kernel("chunks", rec_chunks, lambda: (np.linspace(-0.5, 0.4, 7),)),
    _kernel("mutual", rec_mutual, lambda: (0.8, 5)),
    _kernel("fill", rec_fill, lambda: (np.zeros(5), np.linspace(-1.0, 1.0, 5)), outputs=(0,)),
)}


@pytest.mark.parametrize("kernel, check", kernel_checks(list(KERNELS.values())))
def test_derivatives(kernel, check):
    run_check(kernel, check)


def test_split_mode_through_a_recursive_helper():
    """The tape of the caller's augmented forward keeps its callees' tapes."""
    fwd, rev = derive_diff(rec_tree, None, ["dup", "active"], mode="split")
    df = derive_diff(rec_tree, None, ["dup", "active"])
    a = np.linspace(0.1, 1.0, 7)
    value, tape = fwd(a, np.zeros(7), 1.5)
    assert value == pytest.approx(rec_tree(a, 1.5), rel=1e-14)
    da_split, da = np.zeros(7), np.zeros(7)
    (ds_split,) = rev(a, da_split, 1.5, 2.0, tape)
    (ds,) = df(a, da, 1.5)
    np.testing.assert_allclose(da_split, 2.0 * da, rtol=1e-14)
    assert ds_split == pytest.approx(2.0 * ds, rel=1e-14)


@pytest.mark.parametrize("fn, message", [
    (rec_then_write, r"which is not inlined, reads memory \(%arg\.a\.4\) written after the "
     r"call(.|\n)*code: s = _sum_to\(a, a\.shape\[0\]\)\n  fix: not supported yet: pass "
     r"the callee memory the caller does not change afterwards"),
    (rec_fill_twice, r"which is not inlined, handed memory it writes through two arguments"
     r"(.|\n)*code: _fill\(a, a, 0, a\.shape\[0\]\)\n  fix: not supported yet: pass "
     r"distinct arrays"),
])
def test_reverse_refuses_memory_a_callee_cannot_trust(fn, message):
    df = derive_diff(fn, None, ["dup"])
    with pytest.raises(UnsupportedError, match=r"cannot differentiate: call to @_ZN\w+, "
                       + message):
        df(np.linspace(0.1, 1.0, 5), np.zeros(5))


def test_vector_forward_refuses_a_recursive_helper():
    df = derive_diff(rec_power, None, ["dup", "const"], mode="forward", width=2)
    with pytest.raises(UnsupportedError, match=r"which is not inlined, in vector forward "
                       r"mode(.|\n)*fix: use width=1"):
        df(1.3, np.ones(2), 4)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_nrt_balanced_through_an_allocating_recursion(mode, nrt_stats):
    check = check_forward if mode == "forward" else check_reverse
    result = check(KERNELS["chunks"])
    args = KERNELS["chunks"].args()
    df, acts = result.df, result.acts
    nrt_stats.start()
    for _ in range(5):
        call = []
        for arg, act in zip(args, acts):
            call.append(arg.copy())
            if act == "dup":
                call.append(make_shadow(arg, 1.0))
        df(*call)
    alloc, free, mi_alloc, mi_free = nrt_stats.delta()
    assert alloc == free and mi_alloc == mi_free, nrt_stats.delta()


@numba.njit
def _pair(x, n):
    if n == 0:
        return x, 1.0
    a, b = _pair(x, n - 1)
    return a * x, b + a


def rec_pair(x, n):
    """A recursive helper returning a tuple."""
    a, b = _pair(x, n)
    return a + b


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_recursive_helper_returning_a_tuple_is_refused(mode):
    df = derive_diff(rec_pair, None, ["active" if mode == "reverse" else "dup", "const"],
                     mode=mode)
    with pytest.raises(UnsupportedError) as info:
        df(1.2, 3) if mode == "reverse" else df(1.2, 1.0, 3)
    msg = str(info.value)
    assert "which is not inlined, returning active values of type [2 x double] (only a " \
           "float is supported)" in msg, msg
    assert "code: a, b = _pair(x, n)" in msg, msg
    assert "fix: not supported yet: let the callee return one float" in msg, msg
