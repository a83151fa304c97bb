"""Lists of arrays inside the differentiated function (a reflected list whose items are array
structs): views of an argument, fresh arrays, np.split / np.array_split / np.select. The
shadow list mirrors the list (`ir_passes/analysis/array_lists.py`): both modes against central
finite differences and forward against reverse; NRT allocations balanced (forward mode's
shadow list releases its shadow items with the list's own destructor); what stays refused,
with its message."""
from __future__ import annotations

import gc
import re

import numba
import numpy as np
import pytest
from numba.core.runtime import rtsys

from enzyme_py import UnsupportedError, derive_diff
from tests._params import kernel_checks
from tests.support.gradcheck import run_check
from tests.support.kernel import Kernel
from tests.support.nrt_stats import nrt_statistics


def views(x):
    """A list of views appended, indexed, iterated and one item replaced."""
    parts = []
    parts.append(x[0:3])
    parts.append(x[3:6])
    parts.append(x[::2])
    s = 0.0
    for p in parts:
        s += p[1] * p[2]
    parts[0] = x[4:]
    return s + parts[1][0] * parts[0][1] + parts[2][2] ** 2


def fresh(x):
    """Fresh arrays (np.empty filled in a loop, array expressions) appended in a loop."""
    parts = []
    for i in range(3):
        t = np.empty(2)
        t[0] = x[i] * x[i + 1]
        t[1] = np.sin(x[i])
        parts.append(t)
        parts.append(x[i:i + 2] * 3.0)
    s = 0.0
    for k in range(len(parts)):
        s += parts[k][0] * parts[k][1]
    return s


def splits(x):
    s = 0.0
    for p in np.split(x, 3):
        s += np.sum(p * p) * p[0]
    return s + np.sum(np.array_split(x, 4)[1] ** 3)


def selected(x, y):
    return np.sum(np.select([x > 0.5, x <= 0.5], [x * y, np.cos(y)]) * x)


def compared(x, y):
    return np.sum(x * 2.0) if np.allclose(x, y) else np.sum(x * y)


def _vec(r, n=6):
    return np.linspace(0.1, 0.9, n) + r.uniform(-0.04, 0.04, n)


KERNELS = [
    Kernel("views", views, lambda r: (_vec(r),)),
    Kernel("fresh", fresh, lambda r: (_vec(r),)),
    Kernel("splits", splits, lambda r: (_vec(r),)),
    Kernel("selected", selected, lambda r: (_vec(r), _vec(r))),
    Kernel("compared", compared, lambda r: (_vec(r), _vec(r))),
]


@pytest.mark.parametrize("kernel, check", kernel_checks(KERNELS))
def test_derivatives(kernel, check):
    run_check(kernel, check)


@pytest.mark.parametrize("kernel, check", kernel_checks(KERNELS[:2], ("forward", "reverse")))
def test_derivatives_release_their_memory(kernel, check):
    """The derivatives the checks above compiled (cached on this worker)."""
    x = kernel.args()[0]
    df = run_check(kernel, check).df
    with nrt_statistics():
        df(x, np.ones_like(x))
        gc.collect()
        before = rtsys.get_allocation_stats()
        for _ in range(3):
            df(x, np.ones_like(x))
        gc.collect()
        after = rtsys.get_allocation_stats()
    alloc, free, mi_alloc, mi_free = (a - b for a, b in zip(after, before))
    assert mi_alloc > 0 and (alloc, mi_alloc) == (free, mi_free), (after, before)


def mixed(x, c):
    parts = [x[:2], c[:2]]
    return parts[0][0] * parts[1][1]


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_list_of_const_and_dup_arrays_is_refused(mode):
    df = derive_diff(mixed, None, ("dup", "const"), mode=mode)
    with pytest.raises(UnsupportedError) as err:
        df(np.ones(3), np.zeros(3), np.ones(3))
    assert re.fullmatch(
        r"cannot differentiate: an array without a derivative \(const, or not yet written with "
        r"active values\) put in a list that also holds arrays with one: the derivative cannot "
        r"tell them apart when they are read back\n  instruction: store ptr %arg\.c\.\S+, .*\n"
        r"  in function \S+, block \S+\n  at " + re.escape(__file__) + r":\d+\n  code: "
        r"parts = \[x\[:2\], c\[:2\]\]\n  fix: not supported yet: keep the const arrays in a "
        r"list of their own, or mark them dup", str(err.value)), str(err.value)


def test_vector_forward_mode_refuses_a_list_of_arrays():
    df = derive_diff(numba.njit(views), None, ("dup",), mode="forward", width=2)
    with pytest.raises(UnsupportedError, match=r"^cannot differentiate: a Python list holding "
                       r"active values in vector forward mode\n"):
        df(np.linspace(0.1, 0.9, 6), np.ones((2, 6)))


def nested(x):
    outer = []
    for i in range(2):
        inner = [x[i] * 2.0, x[i + 1] * x[i]]
        outer.append(inner)
    return outer[0][1] * outer[1][0]


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_list_of_lists_of_active_floats_stays_refused(mode):
    """The data of a list read back from a list is not followed: refused, not zero."""
    df = derive_diff(nested, None, ("dup",), mode=mode)
    with pytest.raises(UnsupportedError, match=r"^cannot differentiate: a list holding active "
                       r"values is stored into another list "):
        df(np.linspace(0.1, 0.9, 4), np.ones(4))
