"""Lists of floats built by appends inside the differentiated function (a reflected list's
storage: NRT_MemInfo_new_varsize_dtor / NRT_MemInfo_varsize_realloc). The derivatives
themselves are checked by the numpy sweep's entries (tests/sweep/test_numpy_library.py:
np.extract, np.unique, "list append / getitem"); here: insert and pop, whose items move with
llvm.memmove (reverse mode: its adjoint, run from the end when the items move down), and what
stays refused, with its message."""
from __future__ import annotations

import re

import numba
import numpy as np
import pytest

from enzyme_py import UnsupportedError, derive_diff
from tests.support.gradcheck import check_forward, check_inner_product, check_reverse
from tests.support.kernel import kernel


def appended(x):
    out = []
    for v in x:
        out.append(v * v)
    return out[0] + out[-1]


_WHERE = (r"\n  instruction: .*call ptr @NRT_MemInfo_new_varsize_dtor\(.*\n  in function \S+, "
          r"block \S+\n  at " + re.escape(__file__) + r":\d+\n  code: .*\n  fix: ")


def test_split_mode_refuses_a_list_of_active_floats():
    fwd, _ = derive_diff(numba.njit(appended), None, ["dup"], mode="split")
    with pytest.raises(UnsupportedError) as err:
        fwd(np.linspace(0.1, 0.9, 12), np.zeros(12))
    assert re.fullmatch(
        r"cannot differentiate: a Python list holding active values "
        r"\('NRT_MemInfo_new_varsize_dtor', e\.g\. built by np\.extract, np\.unique or "
        r"list\.append\) in split mode" + _WHERE + r"not supported yet in split mode: use "
        r"mode='reverse'", str(err.value)), str(err.value)


def test_vector_forward_mode_refuses_a_list_of_active_floats():
    df = derive_diff(numba.njit(appended), None, ["dup"], mode="forward", width=2)
    with pytest.raises(UnsupportedError) as err:
        df(np.linspace(0.1, 0.9, 12), np.ones((2, 12)))
    assert re.fullmatch(
        r"cannot differentiate: a Python list holding active values in vector forward mode"
        + _WHERE + r"not supported yet: use width=1, or keep the values in a NumPy array",
        str(err.value)), str(err.value)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_width_one_differentiates_the_same_kernel(mode):
    """The kernel refused above is differentiated in plain forward and reverse mode."""
    x = np.linspace(0.1, 0.9, 12)
    df = derive_diff(numba.njit(appended), None, ["dup"], mode=mode)
    expected = np.zeros(12)
    expected[[0, -1]] = 2.0 * x[[0, -1]]
    if mode == "forward":
        t = np.random.default_rng(0).normal(size=12)
        assert df(x, t)[1] == pytest.approx(expected @ t, rel=1e-12)
    else:
        dx = np.zeros(12)
        df(x, dx)
        np.testing.assert_allclose(dx, expected, rtol=1e-12)


def moved(x):
    out = [v * 1.5 for v in x]
    a = out.pop()
    out.insert(2, a * 3.0)
    out.insert(0, out[4] * out[1])
    out[0] = out[0] * out[5]
    for _ in range(6):
        a += out.pop(1) * out[1]
    for v in out:
        a += v * v
    return a


_MOVED = kernel("list_pop_insert", moved, lambda rng: (rng.uniform(0.3, 1.1, 14),))


def test_insert_and_pop_both_modes():
    check_forward(_MOVED)
    check_reverse(_MOVED)
    check_inner_product(_MOVED)
