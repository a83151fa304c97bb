"""Errors for ordinary NumPy code the pass cannot differentiate yet name the construct in the
user's terms, the Python file:line with its code, and a fix that works -- or say plainly that it
is not supported yet. `register_rule` is suggested only for external scalar functions, and it
refuses the symbols it cannot describe. Exact messages (regular expressions), both modes; the
fixes the messages name are checked to work. Source lines are found through ``# msg:<case>``
markers, so the tests do not depend on line numbers.
"""
from __future__ import annotations

import re

import numba
import numpy as np
import pytest

from enzyme_py import UnsupportedError, derive_diff, register_rule
from tests.support.gradcheck import check_forward, check_inner_product, check_reverse


def _marker_lines() -> dict[str, int]:
    with open(__file__, encoding="utf-8") as fh:
        return {m.group(1): n for n, line in enumerate(fh, 1)
                if (m := re.search(r"# msg:([\w-]+)$", line))}


@numba.njit
def eigenvalues(A, x):
    return np.linalg.eigvals(A).sum() * x[0]  # msg:eigvals


@numba.njit
def in_a_list(A, x):
    # A list of arrays is differentiated; a list of lists of active floats is not.
    rows = [[x[0] * 2.0, x[1] * A[0, 0]]]  # msg:stored
    return rows[0][1]


@numba.njit
def with_dict(A, x):
    d = {}
    d[0] = x[0] * A[0, 0]  # msg:dict
    return d[0]


@numba.njit
def with_typed_list(A, x):
    items = numba.typed.List.empty_list(numba.types.float64)
    items.append(x[0] * A[0, 0])  # msg:typed_list
    del items[1:]
    return items[0]


_NOT_YET = "not differentiable yet"
_LINALG_FIX = (r"not differentiable yet \(np\.linalg\.solve, inv, det, slogdet, cholesky, eigh, "
               r"eigvalsh, svd, pinv, qr and lstsq are\): write the algorithm with loops over "
               r"NumPy arrays, or pass its result as a 'const' argument when it does not depend "
               r"on differentiated inputs")

# case -> (primal, what (regex), instruction (regex), fix (regex))
CASES = {
    "eigvals": (eigenvalues, r"eigendecomposition \(LAPACK numba_ez_rgeev: np\.linalg\.eig or "
                r"eigvals\)", r".*call i32 @numba_ez_rgeev\(.*", _LINALG_FIX),
    "stored": (in_a_list, r"a list holding active values is stored into another list \(a list "
               r"of lists, as np\.array\(\[\[a, b\], \[c, d\]\]\) builds from active "
               r"scalars\)", r"store ptr .*",
               r"not supported yet: fill an array from np\.empty instead \(M = "
               r"np\.empty\(\(2, 2\)\); M\[0, 0\] = a; M\[0, 1\] = b; \.\.\.\)"),
    "dict": (with_dict, r"Python dict operation \('numba_dict_insert'\) on active values",
             r".*call i32 @numba_dict_insert\(.*",
             r"Python containers are not differentiable: keep active values in NumPy arrays "
             r"\(np\.empty\), not in a dict"),
    "typed_list": (with_typed_list, r"Python typed list operation \('numba_list_append'\) on "
                   r"active values", r".*call i32 @numba_list_append\(.*",
                   r"numba\.typed\.List of floats is differentiated when the function builds "
                   r"it and uses only append, insert, pop, indexing, len and iteration; other "
                   r"operations \(del of a slice, \.\.\.\) and lists passed in or returned "
                   r"holding active values are not supported yet: keep them in NumPy arrays "
                   r"\(np\.empty\) or in a plain list of floats"),
}


def _pattern(case: str) -> str:
    _, what, instruction, fix = CASES[case]
    line = _marker_lines()[case]
    return (rf"cannot differentiate: {what}\n  instruction: {instruction}\n"
            rf"  in function \S+, block \S+\n  at {re.escape(__file__)}:{line}\n"
            rf"  code: .*# msg:{case}\n  fix: {fix}")


def _args(case: str) -> tuple:
    A = np.array([[2.0, 0.5], [0.3, 3.0]])
    return (A, np.array([0.7, 1.3]))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("case", list(CASES))
def test_message_names_the_construct_the_line_and_a_fix(case, mode):
    if case == "eigvals":
        pytest.importorskip("scipy")
    df = derive_diff(CASES[case][0], None, ["dup", "dup"], mode=mode)
    call = []
    for a in _args(case):
        call += [a, np.zeros_like(a) if mode == "reverse" else np.ones_like(a)]
    with pytest.raises(UnsupportedError) as err:
        df(*call)
    assert re.fullmatch(_pattern(case), str(err.value)), str(err.value)
    assert "register_rule" not in str(err.value)


def sqrt_of_sum(x):
    return np.sqrt(np.sum(x * x))


def cumulative_loop(x):
    c = np.empty_like(x)
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i]
        c[i] = acc * acc
    return c.sum()


@pytest.mark.parametrize("fix", [sqrt_of_sum, cumulative_loop])
def test_the_fixes_the_messages_name_work(fix):
    args = (np.array([0.7, -1.3, 2.1]),)
    check_forward(fix, args)
    check_reverse(fix, args)
    check_inner_product(fix, args)


@pytest.mark.parametrize("symbol, why", [
    ("numba_xxgemm", r"'numba_xxgemm' is not one: a library function with its own derivative"),
    ("numba_xgesv", r"'numba_xgesv' is not one: a library function with its own derivative"),
    ("numba_ez_rgeev", r"'numba_ez_rgeev' is not one: eigendecomposition \(LAPACK "),
    ("numba_dict_insert", r"'numba_dict_insert' is not one: Python dict operation"),
    ("_ZN8__main__6helperB2v1B38c8tJTIeFIjxB2IKSgI4CrvQClQZ6FczSBAA_3dEd",
     r"is the Numba-compiled function __main__\.helper: its body is differentiated directly"),
])
def test_register_rule_refuses_what_it_cannot_describe(symbol, why):
    with pytest.raises(ValueError, match=why):
        register_rule(symbol, lambda m, args, res: [None] * len(args))
