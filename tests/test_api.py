"""The public API contract (shared/design/API.md) through `derive_diff` and `@autodiff`.

Every test checks numbers against closed-form derivatives of small functions, so a failure
points at one rule of the contract: accumulation into dup shadows, consumption of output
shadows, the shape of results (return_primal, ret="const", ret="dupnoneed", width=k), lazy
per-signature specialisation, calls from @njit code, the decorator and its inspection, and
the shadow shape/stride checks.
"""
from __future__ import annotations

import math
import re

import numba
import numpy as np
import pytest

from enzyme_py import ActivityError, UnsupportedError, autodiff, derive_diff


# --------------------------------------------------------------------------------- functions

def sumsq(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


def sin_scale(a, out):
    """out = 3 a + sin(a); returns nothing."""
    for i in range(a.shape[0]):
        out[i] = 3.0 * a[i] + math.sin(a[i])


def mixed(x, a, y):
    """x * sum(a) + y**2 * a[0]."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return x * s + y * y * a[0]


def scaled_sum_into(x, a, out):
    """out = x * a; returns sum(out)."""
    s = 0.0
    for i in range(a.shape[0]):
        out[i] = x * a[i]
        s += out[i]
    return s


def poly2(x, y):
    return x * x * y + math.exp(y)


def rosenbrock2(w):
    return (1.0 - w[0]) ** 2 + 100.0 * (w[1] - w[0] ** 2) ** 2


A = np.array([0.5, -1.25, 2.0, 0.75])


# --------------------------------------------------------------------------------- reverse mode

def test_reverse_dup_accumulates_into_the_shadow():
    d = derive_diff(sumsq, "d_sumsq_acc", ["dup"])
    da = np.full(A.shape, 10.0)
    assert d(A, da) == ()
    np.testing.assert_allclose(da, 10.0 + 2 * A, rtol=1e-15)
    d(A, da)                                        # d_p += grad, call after call
    np.testing.assert_allclose(da, 10.0 + 4 * A, rtol=1e-15)


def test_reverse_output_shadow_is_consumed_vjp():
    """Vector-Jacobian product of an array-to-array map: v in d_out, zero d_in, call."""
    d = derive_diff(sin_scale, None, ["dup", "dup"])     # returns None: ret defaults to const
    out, v = np.zeros(4), np.array([1.0, -2.0, 0.5, 3.0])
    d_out, d_a = v.copy(), np.zeros(4)
    assert d(A, d_a, out, d_out) == ()
    np.testing.assert_array_equal(d_out, 0.0)           # consumed
    np.testing.assert_allclose(d_a, v * (3.0 + np.cos(A)), rtol=1e-14)
    np.testing.assert_allclose(out, 3.0 * A + np.sin(A), rtol=1e-14)   # primal ran


def test_reverse_returns_gradients_of_active_parameters_in_order():
    d = derive_diff(mixed, None, ["active", "dup", "active"])
    x, y = 1.5, -0.5
    da = np.zeros(4)
    gx, gy = d(x, A, da, y)
    assert gx == pytest.approx(A.sum(), rel=1e-15)
    assert gy == pytest.approx(2 * y * A[0], rel=1e-15)
    expected = np.full(4, x)
    expected[0] += y * y
    np.testing.assert_allclose(da, expected, rtol=1e-15)
    # const scalars get no gradient: the tuple shrinks
    dconst = derive_diff(mixed, None, ["const", "dup", "active"])
    (gy2,) = dconst(x, A, np.zeros(4), y)
    assert gy2 == pytest.approx(gy, rel=1e-15)
    assert derive_diff(mixed, None, ["const", "dup", "const"])(x, A, np.zeros(4), y) == ()


def test_reverse_return_primal():
    d = derive_diff(poly2, None, ["active", "active"], return_primal=True)
    x, y = 1.25, 0.5
    value, grads = d(x, y)
    assert value == pytest.approx(poly2(x, y), rel=1e-15)
    assert grads == pytest.approx((2 * x * y, x * x + math.exp(y)), rel=1e-15)


def test_reverse_ret_const_with_nothing_else_is_an_activity_error():
    def square(x):
        return x * x
    d = derive_diff(square, None, ["active"], ret="const")
    with pytest.raises(ActivityError, match=r"nothing would be differentiated: square has a "
                       r"const return value \(ret='const'\) and has no array marked 'dup'"):
        d(2.0)


def test_reverse_ret_const_ignores_the_return_value():
    x = 2.0
    out = np.zeros(4)
    d_default = derive_diff(scaled_sum_into, None, ["active", "dup", "dup"])
    d_const = derive_diff(scaled_sum_into, None, ["active", "dup", "dup"], ret="const")
    v = np.array([1.0, 0.0, -1.0, 2.0])
    # default: seed 1.0 on the return value plus v on out
    da, dout = np.zeros(4), v.copy()
    (gx,) = d_default(x, A, da, out, dout)
    assert gx == pytest.approx(float(A @ (v + 1.0)), rel=1e-14)
    np.testing.assert_allclose(da, x * (v + 1.0), rtol=1e-15)
    # ret="const": only the output's seed counts
    da, dout = np.zeros(4), v.copy()
    (gx,) = d_const(x, A, da, out, dout)
    assert gx == pytest.approx(float(A @ v), rel=1e-14)
    np.testing.assert_allclose(da, x * v, rtol=1e-15)
    np.testing.assert_array_equal(dout, 0.0)


# --------------------------------------------------------------------------------- forward mode

def test_forward_returns_value_and_tangent():
    f = derive_diff(poly2, None, ["dup", "dup"], mode="forward")
    x, y = 1.25, 0.5
    value, t = f(x, 1.0, y, 0.0)
    assert value == pytest.approx(poly2(x, y), rel=1e-15)
    assert t == pytest.approx(2 * x * y, rel=1e-15)
    value, t = f(x, 0.5, y, 2.0)                        # a direction mixing both
    assert t == pytest.approx(0.5 * 2 * x * y + 2.0 * (x * x + math.exp(y)), rel=1e-14)


def test_forward_ret_dupnoneed_returns_only_the_tangent():
    f = derive_diff(poly2, None, ["dup", "dup"], mode="forward", ret="dupnoneed")
    t = f(1.25, 1.0, 0.5, 0.0)
    assert isinstance(t, float)
    assert t == pytest.approx(2 * 1.25 * 0.5, rel=1e-15)


def test_forward_tangents_of_written_arrays_land_in_their_tangent_arrays():
    f = derive_diff(scaled_sum_into, None, ["dup", "dup", "dup"], mode="forward")
    x, tx = 2.0, 0.5
    ta = np.array([1.0, 0.0, 0.0, -1.0])
    out, tout = np.zeros(4), np.full(4, 99.0)           # entry tangent of a pure output: ignored
    value, t = f(x, tx, A, ta, out, tout)
    np.testing.assert_allclose(tout, tx * A + x * ta, rtol=1e-15)
    assert t == pytest.approx(float(np.sum(tx * A + x * ta)), rel=1e-14)
    assert value == pytest.approx(x * A.sum(), rel=1e-15)
    np.testing.assert_allclose(out, x * A, rtol=1e-15)


def test_forward_dupnoneed_argument_still_gets_its_tangent():
    f = derive_diff(sin_scale, None, ["dup", "dupnoneed"], mode="forward")
    ta = np.ones(4)
    out, tout = np.zeros(4), np.zeros(4)
    assert f(A, ta, out, tout) is None
    np.testing.assert_allclose(tout, 3.0 + np.cos(A), rtol=1e-14)


def test_vector_forward_width_k():
    """width=3: a float's tangent is a 1-D array of 3, an array's has shape (3,) + shape; the
    returned tangent has shape (3,); lane j equals a width-1 call with lane j's tangents."""
    k = 3
    f3 = derive_diff(mixed, None, ["dup", "dup", "dup"], mode="forward", width=k)
    f1 = derive_diff(mixed, None, ["dup", "dup", "dup"], mode="forward")
    x, y = 1.5, -0.5
    tx = np.array([1.0, 0.0, 0.0])                      # lane 0: d/dx, lane 1: d/dy,
    ty = np.array([0.0, 1.0, 0.0])                      # lane 2: along a[1]
    ta = np.zeros((k, 4))
    ta[2, 1] = 1.0
    value, tangents = f3(x, tx, A, ta, y, ty)
    assert value == pytest.approx(mixed(x, A, y), rel=1e-15)
    assert isinstance(tangents, np.ndarray) and tangents.shape == (k,)
    np.testing.assert_allclose(tangents, [A.sum(), 2 * y * A[0], x], rtol=1e-15)
    for j in range(k):
        _, t = f1(x, tx[j], A, ta[j].copy(), y, ty[j])
        assert tangents[j] == pytest.approx(t, rel=1e-15)
    g = derive_diff(mixed, None, ["dup", "dup", "dup"], mode="forward", width=k,
                    ret="dupnoneed")
    only = g(x, tx, A, ta, y, ty)
    np.testing.assert_allclose(only, tangents, rtol=1e-15)


def test_vector_forward_array_outputs():
    k = 2
    f = derive_diff(sin_scale, None, ["dup", "dup"], mode="forward", width=k)
    ta = np.stack([np.ones(4), np.arange(4.0)])
    out, tout = np.zeros(4), np.zeros((k, 4))
    f(A, ta, out, tout)
    np.testing.assert_allclose(tout, ta * (3.0 + np.cos(A)), rtol=1e-14)
    np.testing.assert_allclose(out, 3.0 * A + np.sin(A), rtol=1e-14)


# --------------------------------------------------------------------------------- specialisation

def test_lazy_per_signature_specialisation():
    d = derive_diff(sumsq, "d_sumsq_lazy", ["dup"])
    assert d.signatures == [] and d.enzyme.stages == {}      # nothing derived yet
    a64 = A.copy()
    d(a64, np.zeros(4))
    d(a64, np.zeros(4))                                      # same types: reused
    assert len(d.signatures) == 1 and len(d.enzyme.stages) == 1
    a32 = A.astype(np.float32)
    da32 = np.zeros(4, np.float32)
    d(a32, da32)
    assert len(d.signatures) == 2 and len(d.enzyme.stages) == 2
    np.testing.assert_allclose(da32, 2 * a32, rtol=1e-6)
    assert da32.dtype == np.float32
    text = d.enzyme.inspect("derivative")
    assert "float64" in text and "float32" in text
    assert "double" in text and "float" in text.replace("float64", "").replace("float32", "")


def test_forward_specialises_per_signature_too():
    f = derive_diff(poly2, None, ["dup", "dup"], mode="forward")
    assert f(1.0, 1.0, 0.0, 0.0) == pytest.approx((1.0, 0.0))
    v32, t32 = f(np.float32(1.0), np.float32(1.0), np.float32(0.0), np.float32(0.0))
    assert len(f.signatures) == 2
    assert isinstance(t32, (float, np.floating)) and t32 == pytest.approx(0.0)


# --------------------------------------------------------------------------------- called from njit

d_rosen = derive_diff(rosenbrock2, "d_rosen", ["dup"])
f_poly2 = derive_diff(poly2, "f_poly2", ["dup", "dup"], mode="forward")
d_poly2 = derive_diff(poly2, "d_poly2", ["active", "active"])


@numba.njit
def descend(w, lr, iters):
    """Gradient descent on the Rosenbrock function, entirely in Numba."""
    g = np.zeros_like(w)
    for _ in range(iters):
        g[:] = 0.0
        d_rosen(w, g)
        w -= lr * g
    return w


@numba.njit
def grads_in_numba(x, y):
    value, tx = f_poly2(x, 1.0, y, 0.0)
    _, ty = f_poly2(x, 0.0, y, 1.0)
    gx, gy = d_poly2(x, y)
    return value, tx, ty, gx, gy


def _rosen_grad(w):
    x, y = w
    return np.array([-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)])


def test_derivative_called_from_njit_gradient_descent():
    w0 = np.array([-0.5, 0.8])
    w_nb = descend(w0.copy(), 1e-3, 2000)
    w_py = w0.copy()                       # the same loop in Python with the closed form
    for _ in range(2000):
        w_py -= 1e-3 * _rosen_grad(w_py)
    np.testing.assert_allclose(w_nb, w_py, rtol=1e-9, atol=1e-12)
    assert rosenbrock2(w_nb) < rosenbrock2(w0) * 1e-2


def test_forward_and_reverse_called_from_njit():
    x, y = 1.25, 0.5
    value, tx, ty, gx, gy = grads_in_numba(x, y)
    assert value == pytest.approx(poly2(x, y), rel=1e-15)
    assert (tx, ty) == pytest.approx((2 * x * y, x * x + math.exp(y)), rel=1e-15)
    assert (gx, gy) == pytest.approx((tx, ty), rel=1e-15)


# --------------------------------------------------------------------------------- @autodiff

STAGES = ("primal", "preprocessed", "canonical", "activity", "derivative", "optimized")


def test_autodiff_calls_the_primal_and_has_the_derivative():
    @autodiff(mode="reverse", args=("dup",))
    def energy(a):
        s = 0.0
        for i in range(a.shape[0]):
            s += a[i] * a[i] * a[i]
        return s

    assert energy(A) == pytest.approx(float(np.sum(A ** 3)), rel=1e-15)
    assert isinstance(energy.primal, numba.core.registry.CPUDispatcher)
    assert energy.derivative.py_func.__name__ == "d_energy"
    assert energy.__name__ == "energy"
    da = np.zeros(4)
    assert energy.derivative(A, da) == ()
    np.testing.assert_allclose(da, 3 * A ** 2, rtol=1e-15)


def test_autodiff_options_name_and_existing_dispatcher():
    primal = numba.njit(poly2)
    wrapped = autodiff(primal, mode="forward", args=("dup", "dup"), name="tangent_of_poly2")
    assert wrapped.primal is primal
    assert wrapped(1.0, 0.0) == pytest.approx(poly2(1.0, 0.0))
    assert wrapped.derivative.py_func.__name__ == "tangent_of_poly2"
    assert wrapped.derivative(1.0, 1.0, 0.0, 0.0) == pytest.approx((1.0, 0.0))


def test_autodiff_passes_njit_options_to_the_primal():
    @autodiff(args=("dup", "const"), boundscheck=True)
    def pick(a, i):
        return a[i] * a[i]

    with pytest.raises(IndexError):
        pick(A, 10)
    with pytest.raises(IndexError):
        pick.derivative(A, np.zeros(4), 10)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_autodiff_inspect_every_stage(mode):
    @autodiff(mode=mode, args=("dup",))
    def cubes(a):
        s = 0.0
        for i in range(a.shape[0]):
            s += a[i] * a[i] * a[i]
        return s

    assert "define" not in cubes.inspect("derivative")       # nothing compiled yet
    shadow = np.zeros(4) if mode == "reverse" else np.ones(4)
    cubes.derivative(A, shadow)
    symbol = "diffe_" if mode == "reverse" else "fwddiffe_"
    for stage in STAGES:
        text = cubes.inspect(stage)
        assert "array(float64, 1d, C)" in text, stage        # the signature compiled so far
        if stage in ("primal", "preprocessed", "canonical", "activity"):
            assert "define" in text and "5cubes" in text, stage   # the primal's symbol
        else:
            assert re.search(rf"^define .*@{symbol}d_cubes", text, re.M), stage
    assert "; active" in cubes.inspect("activity")
    with pytest.raises(ValueError):
        cubes.inspect("no-such-stage")


def test_inspect_preprocessed_stage_of_api_md():
    @autodiff(args=("dup",))
    def sq(a):
        return a[0] * a[0]

    sq.derivative(A, np.zeros(4))
    assert "define" in sq.inspect("preprocessed")


# --------------------------------------------------------------------------------- shadow checks

@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_shadow_with_wrong_shape_raises(mode):
    d = derive_diff(sumsq, None, ["dup"], mode=mode)
    with pytest.raises(ValueError, match="shape"):
        d(A, np.zeros(3))
    with pytest.raises(ValueError):
        d(A, np.zeros(5))
    # a good call still works afterwards
    shadow = np.zeros(4) if mode == "reverse" else np.ones(4)
    d(A, shadow)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_shadow_with_wrong_strides_raises(mode):
    d = derive_diff(sumsq, None, ["dup"], mode=mode)
    base = np.arange(8.0)
    strided = base[::2]                                     # shape (4,), stride 16 bytes
    with pytest.raises(ValueError, match="strides"):
        d(strided, np.zeros(4))                             # contiguous shadow
    shadow = np.zeros(8)[::2]
    d(strided, shadow)                                      # matching strides: fine
    if mode == "reverse":
        np.testing.assert_allclose(shadow, 2 * strided)


def test_shadow_2d_transposed_must_match():
    def total(m):
        s = 0.0
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                s += m[i, j] * m[i, j]
        return s
    d = derive_diff(total, None, ["dup"])
    m = np.arange(6.0).reshape(2, 3).T                      # F-ordered (3, 2) view
    with pytest.raises(ValueError):
        d(m, np.zeros((3, 2)))                              # C-ordered shadow
    dm = np.zeros((2, 3)).T
    d(m, dm)
    np.testing.assert_allclose(dm, 2 * m)


def test_vector_forward_tangent_with_wrong_lanes_raises():
    f = derive_diff(sumsq, None, ["dup"], mode="forward", width=3)
    with pytest.raises(ValueError):
        f(A, np.zeros((2, 4)))                              # 2 lanes, width is 3
    with pytest.raises(ValueError):
        f(A, np.zeros((3, 5)))                              # wrong lane shape
    _, t = f(A, np.eye(3, 4))
    np.testing.assert_allclose(t, 2 * A[:3])


def test_shadow_with_wrong_dtype_raises():
    d = derive_diff(sumsq, None, ["dup"])
    with pytest.raises(ValueError, match="dtype"):
        d(A, np.zeros(4, np.float32))


def test_shadow_error_names_the_parameter():
    def weights(w):
        return w[0] * w[1]
    d = derive_diff(weights, None, ["dup"])
    with pytest.raises(ValueError, match="'w'"):
        d(A, np.zeros(3))


def test_reverse_rejects_an_output_aliasing_an_input():
    """README: an array the function writes must not share memory with its other array
    arguments (reverse mode rereads them); checked at call time."""
    d = derive_diff(sin_scale, None, ["dup", "dup"])
    a = A.copy()
    with pytest.raises(ValueError):
        d(a, np.zeros(4), a, np.zeros(4))


def test_hessian_vector_product_reverse_over_forward():
    """Derivatives are Numba functions: reverse mode over a forward derivative gives H v."""
    def f(x, y):
        return x * x * y + math.sin(x * y)

    fwd = derive_diff(f, None, ("dup", "dup"), mode="forward")

    @numba.njit
    def directional(x, y, vx, vy):
        return fwd(x, vx, y, vy)[1]

    hvp = derive_diff(directional, None, ("active", "active", "const", "const"))
    x, y, vx, vy = 1.0, 2.0, 0.3, -0.7
    c, s = math.cos(x * y), math.sin(x * y)
    hxx, hxy, hyy = 2 * y - y * y * s, 2 * x + c - x * y * s, -x * x * s
    assert hvp(x, y, vx, vy) == pytest.approx((hxx * vx + hxy * vy, hxy * vx + hyy * vy),
                                              rel=1e-12)


def test_forward_over_reverse_through_a_temporary():
    """`a * a` is a temporary holding active values, whose shadow's address the reverse pass
    needs: an outer forward pass follows it (tests/test_second_order.py: every way round)."""
    rev = derive_diff(lambda a: (a * a).sum(), None, ("dup",))

    @numba.njit
    def gradient_sum(a, da):
        da[:] = 0.0
        rev(a, da)
        return da.sum()

    d = derive_diff(gradient_sum, None, ("dup", "dup"), mode="forward")
    a, ta = np.array([1.0, 2.0, 3.0]), np.array([0.5, -1.0, 2.0])
    da, tda = np.zeros(3), np.zeros(3)
    value, tangent = d(a, ta, da, tda)
    assert value == pytest.approx(2.0 * a.sum(), rel=1e-14)      # sum of the gradient 2 a
    assert tangent == pytest.approx(2.0 * ta.sum(), rel=1e-14)
    np.testing.assert_allclose(da, 2.0 * a, rtol=1e-14)
    np.testing.assert_allclose(tda, 2.0 * ta, rtol=1e-14)       # the Hessian 2 I times ta
