"""Parameters with defaults left out of a call (API.md "Options"; issue 24 item 7).

`f(k, r, v, tol=1e-8)` called without `tol`: its derivatives (reverse, forward, vector
forward, split), its helpers and their callers in `@njit` code accept the same short call,
and `tol` takes its default. Each case is checked against central finite differences of the
primal called the same way, and forward against reverse (<J t, w> == <t, J^T w>). A
parameter left out is "const": one marked "active"/"dup" (or named in `argnums`) must be
passed; the activities may stop before trailing parameters with defaults.
"""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest

import enzyme_py
from enzyme_py import ActivityError, ArgumentError, derive_diff

H = 1e-6


@numba.njit
def rate(k, r, v, tol=1e-3):
    """A fixed-point iteration whose number of steps depends on `tol`."""
    s = v
    for _ in range(50):
        nxt = 0.5 * (s + k * r / s)
        if abs(nxt - s) < tol:
            return nxt + tol * k
        s = nxt
    return s


@numba.njit
def energy(x, scale=2.0, weight=None):
    s = 0.0
    for i in range(x.shape[0]):
        s += scale * math.sin(x[i]) * x[i] ** 2
    if weight is None:
        return s
    return s * weight


@numba.njit
def smooth(x, eps=0.1):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = math.sqrt(x[i] * x[i] + eps) * x[i]
    return out


def fd_scalar(f, args, i):
    plus, minus = list(args), list(args)
    plus[i] += H
    minus[i] -= H
    return (f(*plus) - f(*minus)) / (2 * H)


def fd_array(f, x, rest=(), direction=None):
    """Directional derivative of f(x, *rest) along `direction` (its gradient if None)."""
    if direction is not None:
        return (f(x + H * direction, *rest) - f(x - H * direction, *rest)) / (2 * H)
    return np.array([fd_array(f, x, rest, e) for e in np.eye(x.size)])


K, R, V = 2.0, 3.0, 1.5
X = np.array([0.3, -1.2, 0.8, 2.1])


def test_reverse_and_forward_without_the_defaulted_float():
    grads = derive_diff(rate, None, ("active", "active", "active", "const"))(K, R, V)
    expected = [fd_scalar(rate, (K, R, V), i) for i in range(3)]
    np.testing.assert_allclose(grads, expected, rtol=1e-6, atol=1e-8)
    fwd = derive_diff(rate, None, ("dup", "dup", "dup", "const"), mode="forward")
    t = (0.3, -0.7, 1.1)
    value, tangent = fwd(K, t[0], R, t[1], V, t[2])
    assert value == rate(K, R, V)
    assert tangent == pytest.approx(np.dot(t, expected), rel=1e-6)
    assert tangent == pytest.approx(np.dot(t, grads), rel=1e-12)      # <J t, 1> = <t, J^T 1>
    # passed explicitly, the argument is used (not the default)
    assert fwd(K, 1.0, R, 0.0, V, 0.0, 1e-10)[1] == pytest.approx(
        fd_scalar(lambda k: rate(k, R, V, 1e-10), (K,), 0), rel=1e-6)


def test_activities_may_stop_before_trailing_defaults():
    d = derive_diff(energy, None, ["dup"])
    d_x = np.zeros(4)
    d(X, d_x)
    np.testing.assert_allclose(d_x, fd_array(energy, X), rtol=1e-6)
    d_x[:] = 0.0
    d(X, d_x, 3.0, 0.5)                    # the defaults given: still const
    np.testing.assert_allclose(d_x, fd_array(energy, X, (3.0, 0.5)), rtol=1e-6)
    with pytest.raises(ActivityError, match=r"rate has 4 parameter\(s\).*2 activities were "
                       r"given; the last 1, which have defaults, may be left out"):
        derive_diff(rate, None, ["active", "active"])


def test_a_none_default_left_out_takes_its_branch_in_every_mode():
    t = np.array([1.0, -0.5, 0.25, 2.0])
    value, tangent = derive_diff(energy, None, ["dup"], mode="forward")(X, t)
    assert value == energy(X)
    assert tangent == pytest.approx(fd_array(energy, X, (), t), rel=1e-6)
    value, tangents = derive_diff(energy, None, ["dup"], mode="forward", width=2)(
        X, np.stack([t, -t]))
    np.testing.assert_allclose(tangents, [tangent, -tangent], rtol=1e-12)
    d_x = np.zeros(4)
    derive_diff(energy, None, ["dup", "const", "const"])(X, d_x)
    assert t @ d_x == pytest.approx(tangent, rel=1e-12)


def test_d_ret_after_a_left_out_default_is_taken_as_d_ret():
    """`smooth(x, eps=0.1)` returns an array: `df(x, d_x, d_ret)` seeds the result with
    `d_ret` (it used to land in `eps`'s place)."""
    df = derive_diff(smooth, None, ["dup"])
    w = np.array([0.5, -1.0, 2.0, 0.25])
    for call in (lambda d_x, seed: df(X, d_x, seed),
                 lambda d_x, seed: df(X, d_x, d_ret=seed)):
        d_x, seed = np.zeros(4), w.copy()
        call(d_x, seed)
        np.testing.assert_allclose(d_x, fd_array(smooth, X) @ w, rtol=1e-6)
        assert not seed.any()
    d_x = np.zeros(4)
    df(X, d_x, 0.5, w.copy())
    np.testing.assert_allclose(d_x, fd_array(smooth, X, (0.5,)) @ w, rtol=1e-6)
    t = np.array([1.0, 2.0, -1.0, 0.5])
    _, tangent = derive_diff(smooth, None, ["dup"], mode="forward")(X, t)
    np.testing.assert_allclose(tangent, fd_array(smooth, X, (), t), rtol=1e-6)
    d_x = np.zeros(4)
    df(X, d_x, w.copy())
    assert tangent @ w == pytest.approx(t @ d_x, rel=1e-12)


def test_split_mode_without_the_defaults():
    fwd, rev = derive_diff(smooth, None, ["dup"], mode="split")
    w, d_x = np.array([0.5, -1.0, 2.0, 0.25]), np.zeros(4)
    value, tape = fwd(X, d_x)
    np.testing.assert_array_equal(value, smooth(X))
    rev(X, d_x, w.copy(), tape)
    np.testing.assert_allclose(d_x, fd_array(smooth, X) @ w, rtol=1e-6)
    fwd, rev = derive_diff(rate, None, ["active", "active", "active"], mode="split")
    value, tape = fwd(K, R, V)
    assert value == rate(K, R, V)
    grads = rev(K, R, V, 2.0, tape)
    np.testing.assert_allclose(grads, [2 * fd_scalar(rate, (K, R, V), i) for i in range(3)],
                               rtol=1e-6, atol=1e-8)


def test_helpers_without_the_defaults():
    g = fd_array(energy, X)
    np.testing.assert_allclose(enzyme_py.grad(energy)(X), g, rtol=1e-6)
    value, grad = enzyme_py.value_and_grad(energy)(X)
    assert value == pytest.approx(energy(X), rel=1e-14)
    np.testing.assert_allclose(grad, g, rtol=1e-6)
    np.testing.assert_allclose(enzyme_py.grad(energy)(X, 1.5, 3.0),
                               fd_array(energy, X, (1.5, 3.0)), rtol=1e-6)
    np.testing.assert_allclose(enzyme_py.grad(rate, (0, 2))(K, R, V),
                               [fd_scalar(rate, (K, R, V), i) for i in (0, 2)], rtol=1e-6,
                               atol=1e-8)
    jac = fd_array(smooth, X)
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(enzyme_py.jacobian(smooth, mode=mode)(X), jac.T,
                                   rtol=1e-6, atol=1e-9)
    v = np.array([1.0, 0.5, -2.0, 0.1])
    hv = fd_array(lambda y: enzyme_py.grad(energy)(y) @ v, X)
    np.testing.assert_allclose(enzyme_py.hvp(energy)(X, v), hv, rtol=1e-5)
    np.testing.assert_allclose(enzyme_py.hessian(energy)(X) @ v, hv, rtol=1e-5)


d_rate = derive_diff(rate, None, ("active", "active", "active", "const"))
grad_energy = enzyme_py.grad(energy)
hvp_energy = enzyme_py.hvp(energy)


@numba.njit
def njit_caller(k, r, v, x, w):
    return d_rate(k, r, v), grad_energy(x), hvp_energy(x, w)


def test_njit_callers_leave_out_the_defaults():
    w = np.array([1.0, 0.0, 2.0, -1.0])
    grads, g, hv = njit_caller(K, R, V, X, w)
    assert grads == d_rate(K, R, V, 1e-3)
    np.testing.assert_allclose(g, fd_array(energy, X), rtol=1e-6)
    np.testing.assert_allclose(hv, hvp_energy(X, w), rtol=1e-14)


def test_leaving_out_a_differentiated_parameter_is_an_error():
    with pytest.raises(ArgumentError, match=r"tol was left out \(its default is 0.001\), but "
                       r"it is marked 'active': pass it, or mark it 'const'"):
        derive_diff(rate, None, ["active"] * 4)(K, R, V)
    with pytest.raises(ArgumentError, match=r"missing t_tol"):
        derive_diff(rate, None, ["dup"] * 4, mode="forward")(K, 1.0, R, 0.0, V, 0.0, 1e-3)
    with pytest.raises(ArgumentError, match=r"scale was left out \(its default is 2.0\), but "
                       r"it is differentiated \(grad's argnums\)"):
        enzyme_py.grad(energy, (0, 1))(X)
    with pytest.raises(ArgumentError, match=r"missing v"):
        derive_diff(rate, None, ["active"] * 3)(K, R)
