"""The JAX-style helpers (API.md "Helpers"): grad, value_and_grad, jacobian, hessian, hvp and
check, from Python and from @njit code, against exact derivatives and finite differences.
Also the four second-derivative compositions of `derive_diff` on an array kernel.

The helpers keep their derivatives on the primal, so the module-level kernels below are
compiled once for the whole module."""
import math

import numba
import numpy as np
import pytest
from numba import types

import enzyme_py
from ir_passes.diff.rules import registry
from enzyme_py import (ActivityError, ArgumentError, autodiff, check, derive_diff, grad,
                       hessian, hvp, jacobian, register_rule, value_and_grad)


# ---------------------------------------------------------------- kernels and exact answers
def least_squares(x, A, b):
    """0.5 |A x - b|^2: gradient A^T (A x - b), Hessian A^T A."""
    s = 0.0
    for i in range(A.shape[0]):
        r = -b[i]
        for j in range(x.shape[0]):
            r += A[i, j] * x[j]
        s += r * r
    return 0.5 * s


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def logsumexp(x):
    """Gradient softmax(x), Hessian diag(s) - s s^T."""
    m = x.max()
    return m + np.log(np.sum(np.exp(x - m)))


def rosenbrock(x, a):
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += a * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def rosenbrock_grad(x, a):
    g = np.zeros_like(x)
    g[:-1] += -4 * a * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 2 * a * (x[1:] - x[:-1] ** 2)
    return g


def rosenbrock_hessian(x, a):
    n = x.size
    H = np.zeros((n, n))
    for i in range(n - 1):
        H[i, i] += 12 * a * x[i] ** 2 - 4 * a * x[i + 1] + 2
        H[i + 1, i + 1] += 2 * a
        H[i, i + 1] = H[i + 1, i] = -4 * a * x[i]
    return H


def rosenbrock_d_a(x):
    return float(np.sum((x[1:] - x[:-1] ** 2) ** 2))


def softmax_jacobian(x):
    s = softmax(x)
    return np.diag(s) - np.outer(s, s)


rng = np.random.default_rng(7)
A = rng.standard_normal((5, 3))
B = rng.standard_normal(5)
X3 = rng.standard_normal(3)
X5 = np.array([0.3, -1.2, 0.8, 2.0, -0.4])
V3 = rng.standard_normal(3)


def numeric_jacobian(fn, args, num, h=1e-6):
    """Central differences of the plain Python `fn` in argument `num`."""
    x = np.asarray(args[num], np.float64)
    columns = []
    for idx in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[idx] = h

        def at(d):
            moved = list(args)
            moved[num] = x + d if x.shape else float(x + d)
            return np.asarray(fn(*moved), np.float64)
        columns.append((at(e) - at(-e)) / (2 * h))
    out = np.stack(columns, axis=-1)
    return out.reshape(out.shape[:-1] + x.shape)


def close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# ---------------------------------------------------------------- grad and value_and_grad
GRAD_CASES = [
    (least_squares, (X3, A, B), lambda x, A, b: A.T @ (A @ x - b)),
    (logsumexp, (X5,), softmax),
    (rosenbrock, (X5, 100.0), rosenbrock_grad),
]


@pytest.mark.parametrize("fn, args, exact", GRAD_CASES, ids=lambda c: getattr(c, "__name__", ""))
def test_grad_matches_the_exact_gradient_and_finite_differences(fn, args, exact):
    g = grad(fn)(*args)
    close(g, exact(*args))
    close(g, numeric_jacobian(fn, args, 0), rtol=1e-6, atol=1e-7)


def test_grad_and_value_and_grad_from_njit_code():
    g, vg = grad(least_squares), value_and_grad(least_squares)

    @numba.njit
    def descend(x, A, b, steps):
        for _ in range(steps):
            x = x - 0.05 * g(x, A, b)
        value, gradient = vg(x, A, b)
        return x, value, gradient

    x, value, gradient = descend(X3.copy(), A, B, 3)
    expected = X3.copy()
    for _ in range(3):
        expected = expected - 0.05 * (A.T @ (A @ expected - B))
    close(x, expected)
    assert value == pytest.approx(0.5 * np.sum((A @ expected - B) ** 2), rel=1e-12)
    close(gradient, A.T @ (A @ expected - B))


def test_grad_with_tuple_argnums_returns_a_tuple_in_argnums_order():
    d_a, d_x = grad(rosenbrock, argnums=(1, 0))(X5, 100.0)
    assert d_a == pytest.approx(rosenbrock_d_a(X5), rel=1e-12)
    close(d_x, rosenbrock_grad(X5, 100.0))
    (d_x_only,) = grad(rosenbrock, argnums=(0,))(X5, 100.0)
    close(d_x_only, d_x)
    d_b = grad(least_squares, argnums=(0, 2))(X3, A, B)[1]
    close(d_b, -(A @ X3 - B))


def test_grad_of_a_strided_view_and_value_and_grad_with_a_float_argnum():
    view = np.repeat(X5, 2)[::2]                   # non-contiguous: copied to C order
    close(grad(rosenbrock)(view, 100.0), rosenbrock_grad(X5, 100.0))
    value, d_a = value_and_grad(rosenbrock, argnums=1)(X5, 100.0)
    assert value == pytest.approx(rosenbrock(X5, 100.0), rel=1e-12)
    assert d_a == pytest.approx(rosenbrock_d_a(X5), rel=1e-12)


# ---------------------------------------------------------------- jacobian
@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
def test_jacobian_of_softmax_in_each_mode(mode):
    J = jacobian(softmax, mode=mode, chunk=2)(X5)   # forward: 3 chunks, the last one short
    close(J, softmax_jacobian(X5), rtol=1e-12, atol=1e-15)
    close(J, numeric_jacobian(softmax, (X5,), 0), rtol=1e-6, atol=1e-8)


def test_jacobian_forward_equals_reverse_and_is_callable_from_njit():
    fwd = jacobian(softmax, mode="forward", chunk=2)
    rev = jacobian(softmax, mode="reverse")

    @numba.njit
    def both(x):
        return fwd(x), rev(x)

    jf, jr = both(X5)
    close(jf, jr, rtol=1e-13, atol=1e-16)


def scaled_squares(x, a):
    return a * x * x


def test_jacobian_shapes_for_float_inputs_and_outputs():
    close(jacobian(scaled_squares, argnums=1, mode="forward", chunk=2)(X3, 2.0), X3 * X3)
    J = jacobian(rosenbrock, mode="reverse")(X5, 100.0)  # float output: the gradient
    close(J, rosenbrock_grad(X5, 100.0))
    M = rng.standard_normal((2, 3))
    J2 = jacobian(scaled_squares, mode="forward", chunk=4)(M, 2.0)   # 2 chunks
    assert J2.shape == (2, 3, 2, 3)
    close(J2.reshape(6, 6), np.diag(4.0 * M.ravel()))


# ---------------------------------------------------------------- hessian and hvp
def row_dots(x, A):
    """sum_i tanh(A[i] @ x)^2 through a temporary: BLAS dots whose derivative is inlined
    in a stack save/restore pair (a no-op the analyses must see through)."""
    t = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        t[i] = math.tanh(A[i] @ x)
    return np.sum(t ** 2)


def row_dots_hessian(x, A):
    th = np.tanh(A @ x)
    s = 1.0 - th ** 2
    return A.T @ np.diag(2.0 * s ** 2 - 4.0 * th ** 2 * s) @ A


HESSIAN_CASES = [
    (least_squares, (X3, A, B), lambda x, A, b: A.T @ A),
    (row_dots, (X3, A), row_dots_hessian),
    (logsumexp, (X5,), softmax_jacobian),
    (rosenbrock, (X5, 100.0), rosenbrock_hessian),
]


@pytest.mark.parametrize("fn, args, exact", HESSIAN_CASES,
                         ids=lambda c: getattr(c, "__name__", ""))
def test_hessian_is_exact_symmetric_and_the_derivative_of_grad(fn, args, exact):
    H = hessian(fn)(*args)
    close(H, exact(*args), rtol=1e-10, atol=1e-10)
    close(H, H.T, rtol=1e-12, atol=1e-12)
    g = grad(fn)
    close(H, numeric_jacobian(lambda *a: g(*a), args, 0), rtol=1e-5, atol=1e-6)


def test_hvp_equals_hessian_times_v_from_python_and_njit():
    h, H = hvp(rosenbrock), rosenbrock_hessian(X5, 100.0)
    v = np.linspace(-1.0, 1.0, 5)
    close(h(X5, 100.0, v), H @ v, rtol=1e-10, atol=1e-10)

    @numba.njit
    def newton_direction_residual(x, a, v):
        return h(x, a, v)

    close(newton_direction_residual(X5, 100.0, v), H @ v, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="v must have the shape of x"):
        h(X5, 100.0, np.ones(4))


def cubic(x, c):
    return c * x ** 3 + math.sin(x)


def test_second_derivatives_of_a_float_parameter():
    assert hessian(cubic)(0.7, 2.0) == pytest.approx(12.0 * 0.7 - math.sin(0.7), rel=1e-12)
    assert hvp(cubic)(0.7, 2.0, 3.0) == pytest.approx(3 * (12.0 * 0.7 - math.sin(0.7)),
                                                       rel=1e-12)


# ---------------------------------------------------------------- errors
def test_bad_argnums_are_refused_when_the_helper_is_made():
    with pytest.raises(ActivityError, match=r"grad\(least_squares\): argnums=3: 3 is out of "
                       r"range; least_squares has parameters \(x, A, b\)"):
        grad(least_squares, argnums=3)
    with pytest.raises(ActivityError, match=r"argnums=\(0, 0\): a parameter is named twice"):
        grad(least_squares, argnums=(0, 0))
    with pytest.raises(ActivityError, match=r"argnums='x': argnums must be an int or a tuple"):
        value_and_grad(least_squares, argnums="x")
    with pytest.raises(ActivityError, match=r"hessian\(rosenbrock\): argnums=\(0, 1\): "
                       r"argnums must be an int"):
        hessian(rosenbrock, argnums=(0, 1))
    with pytest.raises(ValueError, match=r"mode must be one of \('auto', 'forward', "
                       r"'reverse'\), not 'sideways'"):
        jacobian(softmax, mode="sideways")


def counted(x, n):
    return x[0] * n


def test_type_errors_are_clear_at_the_first_call():
    with pytest.raises(ActivityError, match=r"grad\(softmax\) needs softmax to return a float "
                       r"scalar; it returns array\(float64, 1d, C\) .*use jacobian"):
        grad(softmax)(X3)
    with pytest.raises(ActivityError, match=r"grad\(counted\): cannot differentiate with "
                       r"respect to 'n' \(argnums 1\), which is int64"):
        grad(counted, argnums=1)(X3, 3)
    with pytest.raises(ArgumentError, match=r"hvp_least_squares expected 4 arguments \(x, A, "
                       r"b, v\), got 3: missing v"):
        hvp(least_squares)(X3, A, B)


# ---------------------------------------------------------------- check
def scale_into(x, out, c):
    for i in range(x.shape[0]):
        out[i] = c * x[i] * x[i]


def test_check_accepts_correct_derivatives():
    check(least_squares, ("dup", "const", "dup"), X3, A, B)
    check(least_squares, ("dup", "dup", "dup"), X3, np.asfortranarray(A), B)  # F-order shadows
    check(scale_into, "dup, dup, active", X3, np.zeros(3), 1.5)
    check(softmax, ("dup",), X5, mode="reverse")


Y0 = types.ExternalFunction("y0", types.float64(types.float64))   # libm Bessel y0


@numba.njit
def bessel_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += Y0(x[i])
    return s


@pytest.fixture
def private_rules(monkeypatch):
    """Scalar rules registered by a test go into a copy of the registry (others enumerate it)."""
    monkeypatch.setattr(registry, "_RULES", dict(registry._RULES))


def test_check_names_the_parameter_and_worst_entry_of_a_wrong_derivative(private_rules):
    register_rule("y0", lambda m, args, res: [m.call("y1", args[0])])   # wrong: -y1
    x = np.array([1.0, 2.0, 3.5])
    with pytest.raises(AssertionError, match=r"check\(bessel_sum\): forward mode: the tangent "
                       r"of the return value differs from central finite differences: "):
        check(bessel_sum, ("dup",), x)
    # y1(1.0) = -0.78 is the largest error: entry 0
    with pytest.raises(AssertionError, match=r"check\(bessel_sum\): reverse mode: the gradient "
                       r"of 'x' differs from central finite differences at x\[0\]: "):
        check(bessel_sum, ("dup",), x, mode="reverse")


# ---------------------------------------------------------------- the @autodiff object
least_squares_jit = numba.njit(least_squares)


@autodiff(args=("dup", "const", "const"))
def decorated_loss(x, A, b):
    return least_squares_jit(x, A, b)


def test_the_autodiff_object_is_callable_from_njit_and_accepted_by_the_helpers():
    @numba.njit
    def twice(x, A, b):
        return 2.0 * decorated_loss(x, A, b)

    assert twice(X3, A, B) == pytest.approx(2 * least_squares(X3, A, B), rel=1e-14)
    close(grad(decorated_loss)(X3, A, B), A.T @ (A @ X3 - B))
    assert enzyme_py.grad is grad


# ---------------------------------------------------------------- the four compositions
def test_second_derivative_compositions_on_an_array_kernel():
    """All four compositions give H = A^T A on the least-squares kernel, whose inner reverse
    pass tapes the residuals (more kernels: tests/test_second_order.py)."""
    fwd = derive_diff(least_squares, "fwd_ls", ("dup", "const", "const"), mode="forward")
    rev = derive_diff(least_squares, "rev_ls", ("dup", "const", "const"))

    @numba.njit
    def directional(x, v, A, b):                   # grad . v
        return fwd(x, v, A, b)[1]

    @numba.njit
    def gradient_dot(x, v, A, b):                  # the same, through the reverse pass
        dx = np.zeros_like(x)
        rev(x, dx, A, b)
        return (dx * v).sum()

    H, u = A.T @ A, np.linspace(0.5, -0.5, 3)
    for inner in (directional, gradient_dot):      # over forward, over reverse
        dx = np.zeros(3)
        derive_diff(inner, None, ("dup", "const", "const", "const"))(X3, dx, V3, A, B)
        close(dx, H @ V3)
        d = derive_diff(inner, None, ("dup", "const", "const", "const"), mode="forward")
        assert d(X3, u, V3, A, B)[1] == pytest.approx(u @ H @ V3, rel=1e-12)


def cubes(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] ** 3
    return s


def test_over_reverse_works_while_the_inner_tape_holds_no_active_value():
    """The reverse pass of `cubes` reloads x[i] instead of taping it: both outer modes work."""
    rev = derive_diff(cubes, "rev_cubes", ("dup",))

    @numba.njit
    def gradient_dot(x, v):
        dx = np.zeros_like(x)
        rev(x, dx)
        return (dx * v).sum()

    x, v, u = np.array([0.5, -1.0, 2.0]), np.array([1.0, 2.0, 3.0]), np.array([0.3, 0.1, -2.0])
    H = np.diag(6.0 * x)
    value, tangent = derive_diff(gradient_dot, None, ("dup", "const"), mode="forward")(x, u, v)
    assert value == pytest.approx(3 * x * x @ v, rel=1e-14)
    assert tangent == pytest.approx(u @ H @ v, rel=1e-12)
    dx = np.zeros(3)
    derive_diff(gradient_dot, None, ("dup", "const"))(x, dx, v)
    close(dx, H @ v)
