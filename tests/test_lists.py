"""Lists of floats built by appends inside the differentiated function: a reflected list (its
storage: NRT_MemInfo_new_varsize_dtor / NRT_MemInfo_varsize_realloc) and a numba.typed.List
(rewritten onto that storage), on the kernels of tests/support/list_kernels.py. The
derivatives of reflected lists are also checked by the numpy sweep's entries
(tests/sweep/test_numpy_library.py: np.extract, np.unique, "list append / getitem"), those of
typed lists by tests/test_typed_list.py; here: insert and pop, whose items move with
llvm.memmove (reverse mode: its adjoint, run from the end when the items move down), and what
stays refused in split and vector forward mode, with its message."""
from __future__ import annotations

import re

import numba
import numpy as np
import pytest

from enzyme_py import UnsupportedError, derive_diff
from tests.support import list_kernels
from tests.support.gradcheck import check_forward, check_inner_product, check_reverse
from tests.support.list_kernels import FIRST_LAST, LIST_KINDS, POP_INSERT, first_last

_WHERE = (r"\n  instruction: .*call ptr @NRT_MemInfo_new_varsize_dtor\(.*\n  in function \S+, "
          r"block \S+\n  at " + re.escape(list_kernels.__file__) + r":\d+\n  code: .*# list "
          r"made here\n  fix: ")


@pytest.mark.parametrize("kind", LIST_KINDS)
def test_split_mode_refuses_a_list_of_active_floats(kind):
    fwd, _ = derive_diff(numba.njit(FIRST_LAST[kind]), None, ["dup"], mode="split")
    with pytest.raises(UnsupportedError) as err:
        fwd(np.linspace(0.1, 0.9, 12), np.zeros(12))
    assert re.fullmatch(
        r"cannot differentiate: a Python list holding active values "
        r"\('NRT_MemInfo_new_varsize_dtor', e\.g\. built by np\.extract, np\.unique or "
        r"list\.append\) in split mode" + _WHERE + r"not supported yet in split mode: use "
        r"mode='reverse'", str(err.value)), str(err.value)


@pytest.mark.parametrize("kind", LIST_KINDS)
def test_vector_forward_mode_refuses_a_list_of_active_floats(kind):
    df = derive_diff(numba.njit(FIRST_LAST[kind]), None, ["dup"], mode="forward", width=2)
    with pytest.raises(UnsupportedError) as err:
        df(np.linspace(0.1, 0.9, 12), np.ones((2, 12)))
    assert re.fullmatch(
        r"cannot differentiate: a Python list holding active values in vector forward mode"
        + _WHERE + r"not supported yet: use width=1, or keep the values in a NumPy array",
        str(err.value)), str(err.value)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_width_one_differentiates_the_same_kernel(mode):
    """The reflected-list kernel refused above is differentiated in plain forward and reverse
    mode (the typed-list kernels in tests/test_typed_list.py)."""
    x = np.linspace(0.1, 0.9, 12)
    df = derive_diff(numba.njit(first_last), None, ["dup"], mode=mode)
    expected = np.zeros(12)
    expected[[0, -1]] = 2.0 * x[[0, -1]]
    if mode == "forward":
        t = np.random.default_rng(0).normal(size=12)
        assert df(x, t)[1] == pytest.approx(expected @ t, rel=1e-12)
    else:
        dx = np.zeros(12)
        df(x, dx)
        np.testing.assert_allclose(dx, expected, rtol=1e-12)


@pytest.mark.parametrize("kind", LIST_KINDS)
def test_insert_and_pop_both_modes(kind):
    check_forward(POP_INSERT[kind])
    check_reverse(POP_INSERT[kind])
    check_inner_product(POP_INSERT[kind])
