"""`numba.typed.List` of floats built inside the differentiated function (rewritten onto a
reflected list's growable storage: enzyme_py/numba_bridge/typed_list.py): appends of active
floats past several resizes, reads by index, writes, len, iteration, float32, and a typed list
passed in as a 'const' argument; what stays refused, with its message. pop and insert, and the
refusals in split and vector forward mode, are tested for both kinds of list in
tests/test_lists.py."""
from __future__ import annotations

import re

import numba
import numpy as np
import pytest
from numba import typed, types
from numba.core.runtime import rtsys

from enzyme_py import UnsupportedError, derive_diff
from tests.support.gradcheck import check_forward, check_inner_product, check_reverse
from tests.support.kernel import kernel
from tests.support.nrt_stats import nrt_statistics


def built(x):
    """append (growing 0 -> 4 -> 12 -> 28 -> 60 items), read, write, len, iterate."""
    lst = typed.List.empty_list(types.float64)
    for i in range(x.shape[0]):
        lst.append(x[i] * x[i])
    s = 0.0
    for i in range(len(lst)):
        s += lst[i] * x[len(lst) - 1 - i]
    lst[0] = s * x[1]
    lst[-1] = lst[-1] * lst[0]
    for v in lst:
        s += np.sin(v)
    return s


def built_float32(x):
    """typed.List() whose item type the first append fixes (float32)."""
    lst = typed.List()
    for v in x:
        lst.append(v * v)
    s = np.float32(0.0)
    for v in lst:
        s += v * lst[0]
    return s


def _x(n, dtype=np.float64):
    return lambda rng: (rng.uniform(0.3, 1.1, n).astype(dtype),)


KERNELS = [kernel("typed_list_f64", built, _x(33)),
           kernel("typed_list_f32", built_float32, _x(9, np.float32), "float32")]


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: k.name)
def test_typed_list_of_floats_both_modes(k):
    check_forward(k)
    check_reverse(k)
    check_inner_product(k)


def test_typed_list_derivatives_release_what_they_allocate():
    x = np.linspace(0.3, 1.1, 33)
    fwd = derive_diff(numba.njit(built), None, ["dup"], mode="forward")
    rev = derive_diff(numba.njit(built), None, ["dup"], mode="reverse")
    fwd(x, np.ones_like(x))
    rev(x, np.zeros_like(x))
    with nrt_statistics():
        before = rtsys.get_allocation_stats()
        fwd(x, np.ones_like(x))
        rev(x, np.zeros_like(x))
        after = rtsys.get_allocation_stats()
    assert after.alloc - before.alloc == after.free - before.free > 0
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free > 0


@numba.njit
def weighted(x, c):
    s = 0.0
    for i in range(len(c)):
        s += c[i] * x[i] * x[i]
    return s


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_const_typed_list_argument(mode):
    x = np.linspace(0.3, 1.1, 5)
    c = typed.List([1.5, -2.0, 0.5, 3.0, 1.0])
    df = derive_diff(weighted, None, ["dup", "const"], mode=mode)
    h = 1e-6
    fd = np.array([(weighted(x + h * e, c) - weighted(x - h * e, c)) / (2 * h)
                   for e in np.eye(5)])
    if mode == "forward":
        t = np.random.default_rng(1).normal(size=5)
        assert df(x, t, c)[1] == pytest.approx(fd @ t, rel=1e-7)
    else:
        dx = np.zeros(5)
        df(x, dx, c)
        np.testing.assert_allclose(dx, fd, rtol=1e-7)


def sliced(x):
    lst = typed.List.empty_list(types.float64)
    lst.append(x[0] * x[1])  # refused here
    del lst[1:]
    return lst[0]


def returned(x):
    lst = typed.List.empty_list(types.float64)
    lst.append(x[0] * x[1])  # refused here
    return lst


@pytest.mark.parametrize("fn", [sliced, returned])
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_other_typed_list_uses_are_refused(fn, mode):
    """A typed list the rewrite cannot follow whole (del of a slice, returned) stays refused."""
    x = np.linspace(0.3, 1.1, 5)
    df = derive_diff(numba.njit(fn), None, ["dup"], mode=mode, ret="const")
    with pytest.raises(UnsupportedError) as err:
        df(x, np.ones_like(x) if mode == "forward" else np.zeros_like(x))
    line = fn.__code__.co_firstlineno + 2
    assert re.fullmatch(
        r"cannot differentiate: Python typed list operation \('numba_list_append'\) on active "
        r"values\n  instruction: .*call i32 @numba_list_append\(.*\n  in function \S+, block "
        r"\S+\n  at " + re.escape(__file__) + f":{line}" + r"\n  code: .*# refused here\n  fix: "
        r"numba\.typed\.List of floats is differentiated when the function builds it and uses "
        r"only append, insert, pop, indexing, len and iteration; other operations \(del of a "
        r"slice, \.\.\.\) and lists passed in or returned holding active values are not "
        r"supported yet: keep them in NumPy arrays \(np\.empty\) or in a plain list of floats",
        str(err.value)), str(err.value)
