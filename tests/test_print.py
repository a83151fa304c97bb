"""print() of active values inside a differentiated function: the boxed values carry no
derivative and only reach Python's printing, so both modes differentiate the function (and
print the primal values); object-mode blocks, whose results come back from Python, are
refused (`printing` also refuses a boxed value reaching anything but printing)."""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from enzyme_py import UnsupportedError, check, derive_diff


def printed_energy(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sin(x[i]) * x[i]
    print("energy", s, x[0])
    return s * s


def test_printing_active_values_is_differentiated(capfd):
    x = np.linspace(0.2, 1.1, 4)
    check(printed_energy, ("dup",), x)
    energy = float(np.sum(np.sin(x) * x))
    printed = [line.split() for line in capfd.readouterr().out.splitlines()
               if line.startswith("energy")]
    exact = [p for p in printed if float(p[1]) == pytest.approx(energy, rel=1e-12)]
    assert len(exact) >= 2                # the forward and the reverse derivative, at x
    assert all(float(first) == pytest.approx(x[0], rel=1e-12) for _, _, first in exact)


def boxed_for_object_mode(x):
    s = x[0] * 2.0
    with numba.objmode(y="float64"):
        y = s * 3.0
    return y * x[1]


def test_object_mode_blocks_are_refused():
    d = derive_diff(boxed_for_object_mode, None, ("dup",))
    with pytest.raises(UnsupportedError, match=r"boxed_for_object_mode has a numba\.objmode "
                       r"block \(object-mode code, whose results come back from Python\)"
                       r"(.*\n)*.*fix: move the object-mode code out of the differentiated "
                       r"function"):
        d(np.ones(2), np.zeros(2))


@numba.njit
def _report(label, value):
    print(label, value)


@numba.njit
def printed_in_a_helper(x):
    s = np.sum(x * x)
    _report(7, s)                                 # the helper is inlined, its print too
    return s * x[0]


def test_printing_in_an_njit_helper_is_differentiated(capfd):
    x = np.array([0.3, -1.2, 0.8])
    printed_in_a_helper(x)                        # the user's own compile first
    check(printed_in_a_helper, ("dup",), x)
    lines = [line.split() for line in capfd.readouterr().out.splitlines()]
    assert sum(float(v) == pytest.approx(np.sum(x * x), rel=1e-12) for _, v in lines) >= 3
