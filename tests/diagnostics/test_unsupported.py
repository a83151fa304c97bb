"""Constructs the pass rejects raise `enzyme_py.UnsupportedError` (a NotImplementedError) at
the first call, never a silently wrong derivative (API.md, "Errors"; README "Limitations").

The message must name what is rejected (the LLVM instruction or the called function), the
Python ``file:line`` it came from, and how to work around it. Source lines are found through
``# diag:<case>`` markers in this file, so the tests do not depend on line numbers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numba
import numpy as np
import pytest

from enzyme_py import EnzymePyError, UnsupportedError, derive_diff
from tests.support.gradcheck import check_forward, check_inner_product, check_reverse


def _marker_lines() -> dict[str, int]:
    with open(__file__, encoding="utf-8") as fh:
        return {m.group(1): n for n, line in enumerate(fh, 1)
                if (m := re.search(r"# diag:([\w-]+)$", line))}


# --------------------------------------------------------------------------------- primals

def const_scratch(x, buf):
    """Active values written into a const array, then read back."""
    for i in range(x.shape[0]):
        buf[i] = x[i] * 2.0  # diag:const-scratch
    s = 0.0
    for i in range(x.shape[0]):
        s += buf[i] * buf[i]
    return s


_J0 = numba.types.ExternalFunction("j0", numba.types.float64(numba.types.float64))  # Bessel


def external_call(x):
    return _J0(x) + x  # diag:external


def float_bits(x):
    bits = np.float64(x * 2.0).view(np.int64)  # diag:float-bits
    return x * float(bits >> 60)     # the bits become a number (a sign test alone is allowed)


def pick(a, b, flag):
    c = a if flag else b  # diag:pick
    s = 0.0
    for i in range(c.shape[0]):
        s += c[i] * c[i]
    return s


def temporaries_in_a_list(a):
    rows = [[a[0] * 2.0, a[1] * 3.0]]  # diag:escape
    return rows[0][1]


@numba.njit
def _rotation(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s], [s, c]])


def rotate_nested(t, x):
    R = _rotation(t)  # diag:nested-array
    y = R @ x
    return y[0] * y[1]


@numba.njit
def _rotation_filled(t):
    """The fix the nested-array message gives: an array from np.empty, filled."""
    c, s = np.cos(t), np.sin(t)
    R = np.empty((2, 2))
    R[0, 0] = c
    R[0, 1] = -s
    R[1, 0] = s
    R[1, 1] = c
    return R


def rotate_filled(t, x):
    y = _rotation_filled(t) @ x
    return y[0] * y[1]


def int_view(a):
    b = a.view(np.int64)
    return a[0] * 2.0 + b[1]  # diag:int-view


def lapack_eigenvalues(A, x):
    return np.linalg.eigvals(A).sum() * x[0]  # diag:lapack


def parallel_sum(a):
    s = 0.0
    for i in numba.prange(a.shape[0]):
        s += a[i] * a[i]
    return s


def with_list(a):
    values = [a[0] * 2.0, a[1]]
    return values[0] + values[1]


def list_of_arrays(x, y):
    arrays = [x, y]  # diag:array-list
    s = 0.0
    for a in arrays:
        for i in range(a.shape[0]):
            s += a[i] * a[i]
    return s


# --------------------------------------------------------------------------------- cases

@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[..., Any]
    reverse: tuple[str, ...]             # activities in reverse mode (forward: active -> dup)
    args: Callable[[], tuple]            # primal arguments
    names: tuple[str, ...]               # what the message must name
    hint: tuple[str, ...] = ()           # what the fix must mention
    instruction: bool = True             # rejects one instruction (else a whole function)
    jit: dict = field(default_factory=dict)
    requires: str | None = None          # a module to import first (skip if missing)

    @property
    def id(self) -> str:
        return self.name


CASES = [
    Case("const-scratch", const_scratch, ("dup", "const"), lambda: (np.ones(3), np.zeros(3)),
         ("active value stored into memory without a shadow", "array 'buf' is const",
          "store double"), hint=("'dup'",)),
    Case("external", external_call, ("active",), lambda: (1.5,),
         ("'j0'", "call double @j0"), hint=("register_rule",)),
    Case("float-bits", float_bits, ("active",), lambda: (1.5,),
         ("an active float reinterpreted as integer bits", "bitcast double"),
         hint=("math functions",)),
    Case("pick", pick, ("dup", "const", "const"), lambda: (np.ones(3), np.ones(3), True),
         ("may address either shadowed or unshadowed memory", "select", "array 'b' is const"),
         hint=("dup",)),
    Case("escape", temporaries_in_a_list, ("dup",), lambda: (np.ones(3),),
         ("a list holding active values is stored into another list", "store ptr"),
         hint=("np.empty",)),
    Case("nested-array", rotate_nested, ("active", "dup"), lambda: (0.3, np.ones(2)),
         ("np.array([[a, b], [c, d]])", "store ptr"), hint=("np.empty((2, 2))",)),
    Case("array-list", list_of_arrays, ("dup", "const"), lambda: (np.ones(3), np.ones(3)),
         ("an array without a derivative (const, or not yet written with active values) put "
          "in a list that also holds arrays with one", "store ptr"), hint=("mark them dup",)),
    Case("int-view", int_view, ("dup",), lambda: (np.ones(3),),
         ("integer load from shadowed (float) memory", "load i64")),
    Case("lapack", lapack_eigenvalues, ("dup", "dup"),
         lambda: (np.array([[2.0, 0.5], [0.3, 3.0]]), np.ones(2)),
         ("eigendecomposition (LAPACK numba_ez_rgeev", "call i32 @numba_ez_rgeev"),
         hint=("not differentiable yet", "loop"), requires="scipy"),
    Case("parallel", parallel_sum, ("dup",), lambda: (np.ones(3),),
         ("parallel_sum is compiled with parallel=True",), hint=("serial",),
         instruction=False, jit=dict(parallel=True)),
]
BY_NAME = {c.name: c for c in CASES}

#: Messages that fall short of API.md today: (case, aspect, mode) -> what is missing.
SHORTFALLS: dict[tuple[str, str, str], str] = {}


def _activities(case: Case, mode: str) -> list[str]:
    if mode == "reverse":
        return list(case.reverse)
    return ["dup" if a == "active" else a for a in case.reverse]


def _call_args(case: Case, mode: str) -> list:
    out = []
    for a, act in zip(case.args(), _activities(case, mode)):
        out.append(a)
        if act == "dup":
            out.append(np.zeros_like(a) if isinstance(a, np.ndarray) else 1.0)
    return out


_messages: dict[tuple[str, str], str] = {}


def _message(case: Case, mode: str) -> str:
    """The UnsupportedError message of the first call (derive_diff itself must not raise)."""
    if case.requires:
        pytest.importorskip(case.requires)
    key = (case.name, mode)
    if key not in _messages:
        f = numba.njit(**case.jit)(case.fn)
        df = derive_diff(f, None, _activities(case, mode), mode=mode)
        with pytest.raises(UnsupportedError) as err:
            df(*_call_args(case, mode))
        _messages[key] = str(err.value)
        with pytest.raises(UnsupportedError):       # and again: nothing half-built is kept
            df(*_call_args(case, mode))
    return _messages[key]


def _params(aspect: str) -> list:
    out = []
    for case in CASES:
        for mode in ("reverse", "forward"):
            reason = SHORTFALLS.get((case.name, aspect, mode))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(case, mode, id=f"{case.name}-{mode}", marks=marks))
    return out


def test_unsupported_error_types():
    assert issubclass(UnsupportedError, NotImplementedError)
    assert issubclass(UnsupportedError, EnzymePyError)


@pytest.mark.parametrize("case, mode", _params("names"))
def test_message_names_the_construct(case, mode):
    msg = _message(case, mode)
    assert msg.startswith("cannot differentiate: ")
    for what in case.names:
        assert what in msg, f"{what!r} not in:\n{msg}"
    assert case.fn.__name__ in msg, msg
    if case.instruction:
        assert "  instruction: " in msg and "  in function " in msg, msg


@pytest.mark.parametrize("case, mode", [p for p in _params("location")
                                        if p.values[0].instruction])
def test_message_gives_the_python_file_and_line(case, mode):
    msg = _message(case, mode)
    line = _marker_lines()[case.name]
    assert f"  at {__file__}:{line}" in msg, f"expected {__file__}:{line} in:\n{msg}"


@pytest.mark.parametrize("case, mode", _params("hint"))
def test_message_says_how_to_work_around_it(case, mode):
    msg = _message(case, mode)
    fix = [line for line in msg.splitlines() if line.startswith("  fix: ")]
    assert fix, f"no fix in:\n{msg}"
    for word in case.hint:
        assert word in fix[0], f"{word!r} not in {fix[0]!r}"


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_list_of_floats_is_differentiated(mode):
    """Once refused here: lists of floats are differentiated now (tests/test_lists.py)."""
    check = check_forward if mode == "forward" else check_reverse
    check(with_list, (np.arange(1.0, 4.0),))


def test_the_workaround_for_a_const_scratch_array_works():
    """The fix the message gives: mark the scratch array dup (and give it a shadow)."""
    df = derive_diff(const_scratch, None, ["dup", "dup"])
    x = np.array([1.0, -2.0, 0.5])
    dx = np.zeros(3)
    df(x, dx, np.zeros(3), np.zeros(3))
    np.testing.assert_allclose(dx, 8.0 * x)               # d/dx sum (2x)^2


def test_the_workaround_for_a_nested_np_array_works():
    """The fix the nested-array message gives (a helper filling np.empty), in both modes."""
    check_forward(rotate_filled, (0.3, np.array([1.0, 2.0])))
    check_reverse(rotate_filled, (0.3, np.array([1.0, 2.0])))
    check_inner_product(rotate_filled, (0.3, np.array([1.0, 2.0])))


def test_the_pointer_select_works_when_both_arrays_are_dup():
    df = derive_diff(pick, None, ["dup", "dup", "const"])
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    da, db = np.zeros(2), np.zeros(2)
    df(a, da, b, db, False)
    np.testing.assert_allclose(da, 0.0)
    np.testing.assert_allclose(db, 2 * b)
