"""Selections (max/min, np.fmax/np.fmin/np.maximum/np.minimum, abs, math.copysign, conditional
expressions) never leak the derivative of the operand they did not pick, and `strong_zero=True`
makes a zero tangent or adjoint times an infinite partial zero (API.md, `derive_diff`).

Each kernel is checked in both modes against central finite differences and forward against
reverse (`<J t, w> == <t, J^T w>`), at points where an operand that is not picked has an
infinite partial (sqrt(|x|) at x = 0). Conventions at kinks, where finite differences say
nothing, are asserted exactly: min/max give a tie's derivative to their first operand, abs's
derivative at ±0 is +1, copysign(x, y)'s at x = ±0 is the sign of y (its sign bit).
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
import pytest

from enzyme_py import derive_diff
from tests.support.gradcheck import (check_forward, check_inner_product, check_reverse,
                                     check_vector_forward)

strong = functools.partial(derive_diff, strong_zero=True)


def max_root(x, y):
    return max(math.sqrt(abs(x)), y)


def min_root(x, y):
    return min(y, -math.sqrt(abs(x)))


def np_selections(x, y):
    r = math.sqrt(abs(x))
    return np.fmax(r, y) + np.fmin(y - 2.0, -r) + np.maximum(r, y) * np.minimum(y, r + 3.0)


def select_chain(x, y, z):
    r = math.sqrt(abs(x))
    a = r if y < 0.0 else (y * z if z > 0.0 else y - z)
    return max(max(a, y), min(z, r + 5.0)) + (r if x > 1.0 else z * z)


def sign_ops(x, y):
    return abs(x) * y + math.copysign(x, y) + math.copysign(y * y, x - 0.5)


# (kernel, point): the point puts x = 0 where sqrt(|x|) has an infinite partial, picked by no
# selection (and y, z away from the ties, so finite differences see one smooth piece)
SELECTION_CASES = [
    (max_root, (0.0, 1.3)),
    (min_root, (0.0, -0.7)),
    (np_selections, (0.0, 1.3)),
    (select_chain, (0.0, 0.8, 1.7)),
    (select_chain, (0.0, 0.8, -1.7)),
    (sign_ops, (0.3, -1.2)),
    (sign_ops, (-0.4, 0.9)),
]
IDS = [f"{fn.__name__}{point}" for fn, point in SELECTION_CASES]


@pytest.mark.parametrize("fn,point", SELECTION_CASES, ids=IDS)
def test_selection_both_modes(fn, point):
    for derive in (derive_diff, strong):
        check_forward(fn, point, derive=derive)
        check_reverse(fn, point, derive=derive)
        check_inner_product(fn, point, derive=derive)


@pytest.mark.parametrize("fn,point", SELECTION_CASES[:4], ids=IDS[:4])
def test_unpicked_infinite_partial_is_exactly_zero(fn, point):
    """The gradient in x is exactly 0 (not NaN) at x = 0 and equals the forward tangent."""
    grads = derive_diff(fn, None, ["active"] * len(point))(*point)
    fwd = derive_diff(fn, None, ["dup"] * len(point), "forward")
    args = [v for p in point for v in (p, 0.0)]
    args[1] = 1.0
    assert grads[0] == 0.0 and fwd(*args)[1] == 0.0


def _both(fn, point):
    """(reverse gradients, forward tangents along each axis) of `fn` at `point`."""
    n = len(point)
    grads = derive_diff(fn, None, ["active"] * n)(*point)
    fwd = derive_diff(fn, None, ["dup"] * n, "forward")
    tangents = []
    for i in range(n):
        args = [v for j, p in enumerate(point) for v in (p, float(i == j))]
        tangents.append(fwd(*args)[1])
    return tuple(grads), tuple(tangents)


def first(x, y):
    return max(x, y) + 2.0 * min(x, y)


def np_first(x, y):
    return np.fmax(x, y) + 2.0 * np.fmin(x, y)


def absolute(x):
    return abs(x)


def signed(x, y):
    return math.copysign(x, y)


@pytest.mark.parametrize("fn", [first, np_first])
def test_tie_goes_to_the_first_operand(fn):
    assert _both(fn, (0.5, 0.5)) == ((3.0, 0.0), (3.0, 0.0))
    assert _both(fn, (0.5, 0.6)) == ((2.0, 1.0), (2.0, 1.0))      # off the tie: both picked


@pytest.mark.parametrize("x,expected", [(0.0, 1.0), (-0.0, 1.0), (1e-300, 1.0), (-1e-300, -1.0),
                                        (-2.5, -1.0)])
def test_abs_derivative_at_and_near_zero(x, expected):
    assert _both(absolute, (x,)) == ((expected,), (expected,))


@pytest.mark.parametrize("x,y,expected", [
    (0.0, 2.0, 1.0), (-0.0, 2.0, 1.0), (0.0, -2.0, -1.0), (-0.0, -2.0, -1.0),
    (0.0, -0.0, -1.0), (0.0, 0.0, 1.0), (1e-300, -3.0, -1.0), (-1e-300, -3.0, 1.0),
    (-1e-300, 3.0, -1.0)])
def test_copysign_derivative_at_and_near_zero(x, y, expected):
    """∂x copysign(x, y) = sign(x)·sign(y), with abs's sign(±0) = +1 and y's sign bit."""
    assert _both(signed, (x, y)) == ((expected, 0.0), (expected, 0.0))


def test_abs_and_copysign_near_zero_against_finite_differences():
    for point in ((1e-3, 0.7), (-1e-3, 0.7), (1e-3, -0.7), (-1e-3, -0.7)):
        check_forward(sign_ops, point)
        check_reverse(sign_ops, point)


# ---------------------------------------------------------------- strong_zero

def padded_variation(x, n_pad):
    """Σ |p[i+1] - p[i]| over x padded with n_pad zeros, |d| written as sqrt(d**2): the pairs of
    padded zeros have d = 0 and tangent 0, and sqrt's partial there is infinite."""
    n = x.shape[0]
    p = np.zeros(n + n_pad)
    p[:n] = x
    s = 0.0
    for i in range(n + n_pad - 1):
        s += math.sqrt((p[i + 1] - p[i]) ** 2)
    return s


def masked_distance(a, b, w):
    """Σ w_i sqrt((a_i - b_i)**2): w_i = 0 where a_i = b_i (padding), so both the adjoint of
    the root and the tangent of its argument are zero where its partial is infinite."""
    s = 0.0
    for i in range(a.shape[0]):
        s += w[i] * math.sqrt((a[i] - b[i]) ** 2)
    return s


def _padded_args():
    return (np.array([0.3, 1.1, 0.7, 0.45]), 3)


def _masked_args():
    a = np.array([0.3, 1.1, 0.0, 0.0])
    b = np.array([0.9, 0.2, 0.0, 0.0])
    w = np.array([1.5, 0.5, 0.0, 0.0])
    return a, b, w


def test_padded_series_strong_zero():
    """With strong_zero, forward mode gives the finite answer reverse mode and finite
    differences give; without it, the forward tangent is NaN (0 * inf), as documented."""
    x, n_pad = _padded_args()
    t = np.array([0.2, -0.1, 0.3, 0.4])
    grad = np.zeros(4)
    derive_diff(padded_variation, None, "dup,const")(x, grad, n_pad)
    h, primal = 1e-6, numba.njit(padded_variation)
    fd = (primal(x + h * t, n_pad) - primal(x - h * t, n_pad)) / (2 * h)
    assert grad @ t == pytest.approx(fd, rel=1e-6) and abs(fd) > 0.1
    assert math.isnan(derive_diff(padded_variation, None, "dup,const", "forward")(x, t, n_pad)[1])
    value, tangent = strong(padded_variation, None, "dup,const", "forward")(x, t, n_pad)
    assert tangent == pytest.approx(fd, rel=1e-6)
    check_forward(padded_variation, _padded_args(), derive=strong)
    check_reverse(padded_variation, _padded_args(), derive=strong)
    check_inner_product(padded_variation, _padded_args(), derive=strong)
    check_vector_forward(padded_variation, 2, _padded_args(), derive=strong)


def test_masked_distance_strong_zero():
    """Without strong_zero both modes give NaN (0 * inf); with it, the finite derivative."""
    a, b, w = _masked_args()
    grads = [np.zeros(4) for _ in range(3)]
    derive_diff(masked_distance, None, "dup,dup,dup")(a, grads[0], b, grads[1], w, grads[2])
    assert np.isnan(grads[0]).any()
    fwd = derive_diff(masked_distance, None, "dup,dup,dup", "forward")
    assert math.isnan(fwd(a, np.ones(4), b, np.zeros(4), w, np.zeros(4))[1])
    for check in (check_forward, check_reverse, check_inner_product):
        check(masked_distance, _masked_args(), derive=strong)
    check_vector_forward(masked_distance, 3, _masked_args(), derive=strong)


def test_strong_zero_is_part_of_the_cache_key():
    from enzyme_py.activities import parse_spec
    from enzyme_py.api import as_dispatcher
    from enzyme_py.disk_cache import fingerprint
    primal = as_dispatcher(masked_distance)
    keys = {fingerprint(primal, (parse_spec(masked_distance, "dup,dup,dup", "reverse", None, 1,
                                            False, strong_zero=s), True)) for s in (False, True)}
    assert len(keys) == 2


def test_strong_zero_must_be_a_bool():
    with pytest.raises(TypeError, match="strong_zero"):
        derive_diff(masked_distance, None, "dup,dup,dup", strong_zero=1)


def test_helpers_pass_strong_zero():
    """grad / value_and_grad / jacobian / hvp take strong_zero too: NaN without it, the
    gradient w·sign(a - b) (0 at the padding) with it."""
    from enzyme_py import grad, hvp, jacobian, value_and_grad
    a, b, w = _masked_args()
    assert np.isnan(grad(masked_distance)(a, b, w)).any()
    got = grad(masked_distance, strong_zero=True)(a, b, w)
    assert np.isfinite(got).all() and np.allclose(got, np.sign(a - b) * w, rtol=1e-12)
    value, g = value_and_grad(masked_distance, strong_zero=True)(a, b, w)
    assert np.array_equal(g, got)
    assert np.array_equal(jacobian(masked_distance, mode="reverse", strong_zero=True)(a, b, w),
                          got)
    assert np.allclose(jacobian(masked_distance, mode="forward", strong_zero=True)(a, b, w),
                       got, rtol=1e-12)
    assert np.isnan(hvp(masked_distance)(a, b, w, np.ones(4))).any()
    assert np.allclose(hvp(masked_distance, strong_zero=True)(a, b, w, np.ones(4)), 0.0,
                       atol=1e-9)      # w |a - b| is piecewise linear in a
