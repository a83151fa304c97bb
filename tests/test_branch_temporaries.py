"""Temporary arrays created inside branches (issue 7): Numba merges their meminfos at the join
of the branches (one decref of either array, or of null) and the escape analysis must see
through those phis and selects. Checked against finite differences in both modes, forward
against reverse (inner product), and for balanced NRT allocations in forward mode, where the
shadow arrays' reference counts follow the merged meminfos.
"""
from __future__ import annotations


import numpy as np
import pytest

from enzyme_py import derive_diff
from tests.support.gradcheck import check_forward, check_inner_product, check_reverse


def filled_in_branch(x, flag):
    s = 0.0
    if flag:
        t = np.empty_like(x)
        for i in range(x.shape[0]):
            t[i] = x[i] * x[i]
        s = t.sum()
    return s


def zeros_or_element(x, flag):
    if flag > 0:
        t = np.zeros(x.shape[0])
        for i in range(x.shape[0]):
            t[i] = x[i] * np.sin(x[i])
        s = t.sum()
    else:
        s = x[0] * 3.0
    return s


def one_of_two(x, flag):
    if flag:
        t = np.sin(x)
    else:
        t = np.cos(x) * x
    return (t * x).sum()


CASES = [(f, flag) for f in (filled_in_branch, zeros_or_element, one_of_two) for flag in (1, 0)]


def _args(flag):
    return (np.array([0.4, -1.3, 2.2]), flag)


@pytest.mark.parametrize("fn, flag", CASES, ids=lambda v: getattr(v, "__name__", str(v)))
def test_branch_temporaries_match_finite_differences(fn, flag):
    check_forward(fn, _args(flag))
    check_reverse(fn, _args(flag))
    check_inner_product(fn, _args(flag))


def test_branch_temporaries_free_their_shadows_in_forward_mode(nrt_stats):
    df = derive_diff(one_of_two, None, ["dup", "const"], mode="forward")
    x, d = np.array([0.4, -1.3, 2.2]), np.ones(3)
    for flag in (1, 0):
        df(x, d, flag)                                       # compiled before counting
        nrt_stats.start()
        for _ in range(5):
            df(x, d, flag)
        assert nrt_stats.delta()[2] > 0, flag                # the temporaries were made
        nrt_stats.assert_balanced()
