"""A primal Numba has compiled already is differentiated from the IR Numba recorded for it
(`capture(..., located=False)`): no second lowering, the same derivative code as the located
capture, and the located capture still behind errors and `inspect`."""
from __future__ import annotations

import dataclasses
import os

import numba
import numpy as np
import pytest

from enzyme_py import UnsupportedError, derive_diff
from enzyme_py.numba_bridge import capture as cap
from tests.kernels import by_name
from tests.support.gradcheck import (check_forward, check_inner_product, check_reverse,
                                     seeded_reverse)

NAMES = ("gmm_loglik", "mlp_loss", "rk4_pendulum", "callee_writes", "sorted_weighted_sum")


def _no_lowering(*_args, **_kwargs):
    raise AssertionError("the primal was lowered again")


def _derive_compiled(kernel):
    """`derive_diff` of `kernel.fn` compiled (and called) by Numba first."""
    def derive(f, name, acts, **kw):
        p = numba.njit(f)
        p(*kernel.args())
        return derive_diff(p, name, acts, **kw)
    return derive


@pytest.fixture
def no_second_lowering(monkeypatch):
    monkeypatch.setattr(cap, "_lowered_again", _no_lowering)
    monkeypatch.setattr(cap, "_twin", _no_lowering)


@pytest.mark.parametrize("name", NAMES)
def test_a_compiled_primal_is_differentiated_without_lowering_it_again(name, no_second_lowering):
    kernel = by_name(name)
    derive = _derive_compiled(kernel)
    check_reverse(kernel, derive=derive, cache=False)
    check_forward(kernel, derive=derive, cache=False)
    check_inner_product(kernel, derive=derive, cache=False)


@pytest.mark.parametrize("name", NAMES)
def test_it_is_the_derivative_of_the_located_capture_bit_for_bit(name):
    kernel = by_name(name)
    acts = _activities(kernel.args(), kernel.const)
    located, shadows = seeded_reverse(kernel, acts, f"d_{name}_located")
    compiled = numba.njit(kernel.fn)
    compiled(*kernel.args())
    recorded, recorded_shadows = seeded_reverse(dataclasses.replace(kernel, fn=compiled), acts,
                                                f"d_{name}_recorded")
    assert not cap.capture(compiled, tuple(map(numba.typeof, kernel.args())),
                           located=False).located
    assert repr(located) == repr(recorded)
    for a, b in zip(shadows, recorded_shadows):
        assert np.array_equal(a, b, equal_nan=True)


def _activities(args, const=()):
    """Float arrays "dup", float scalars "active", the rest "const"."""
    return tuple("const" if i in const else "dup" if isinstance(a, np.ndarray)
                 and a.dtype.kind == "f" else "active" if isinstance(a, float) else "const"
                 for i, a in enumerate(args))


def scratch_in_const(x, buf):
    for i in range(x.shape[0]):
        buf[i] = x[i] * 2.0  # the rejected line
    s = 0.0
    for i in range(x.shape[0]):
        s += buf[i] * buf[i]
    return s


def test_an_error_names_the_python_line_of_a_compiled_primal():
    p = numba.njit(scratch_in_const)
    x, buf = np.ones(4), np.zeros(4)
    p(x, buf)
    df = derive_diff(p, None, ("dup", "const"))
    with pytest.raises(UnsupportedError) as err:
        df(x, np.zeros(4), buf)
    line = scratch_in_const.__code__.co_firstlineno + 2
    assert f"{__file__}:{line}" in str(err.value)


def test_inspect_shows_the_python_lines_of_a_compiled_primal():
    kernel = by_name("gmm_loglik")
    p = numba.njit(kernel.fn)
    args = kernel.args()
    p(*args)
    acts = _activities(args)
    df = derive_diff(p, None, acts)
    df(*[b for a, act in zip(args, acts)
         for b in ((a, np.zeros_like(a)) if act == "dup" else (a,))])
    (stages,) = df.enzyme.stages.values()
    assert not stages.target.facts.capture.located          # compiled without lines
    assert f"{os.path.basename(kernel.fn.__code__.co_filename)}:" in df.enzyme.inspect("activity")
    assert "!enzyme.loc" in df.enzyme.inspect("canonical")
