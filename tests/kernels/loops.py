"""Loop kernels: counted loops with runtime trip counts, nested and triangular loops, while
loops with data-dependent exits, break / continue / early return."""
from __future__ import annotations

import math

import numpy as np

from tests.kernels._points import signed_vec, u, until, uvec
from tests.support.kernel import Kernel, kernel

# --- counted loops -------------------------------------------------------------------------------


def exp_series(x, n):
    """Truncated exponential series sum_{k<n} x^k / k! (runtime trip count)."""
    term = 1.0
    s = 1.0
    for k in range(1, n):
        term *= x / k
        s += term
    return s


def scalar_recurrence(x, y, n):
    """A loop-carried scalar recurrence z <- 0.9 z + y sin(x z)."""
    z = 0.5
    for _ in range(n):
        z = 0.9 * z + y * math.sin(x * z)
    return z


def sum_sq(a):
    """sum a_i^2"""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] ** 2
    return s


def dot(a, b):
    """sum a_i b_i"""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


def norm2(a):
    """Euclidean norm."""
    s = 0.0
    for i in range(a.size):
        s += a[i] * a[i]
    return math.sqrt(s)


def prod(a):
    """product of the entries (multiplicative accumulator)."""
    p = 1.0
    for i in range(a.shape[0]):
        p *= a[i]
    return p


def loop_branch(a, t):
    """A branch inside a loop; both sides are taken across iterations."""
    s = 0.0
    for i in range(a.shape[0]):
        if a[i] > t:
            s += a[i] * a[i]
        else:
            s -= 0.5 * a[i] * t
    return s


def loop_continue(a):
    """continue skips some iterations."""
    s = 0.0
    for i in range(a.shape[0]):
        if a[i] < 0.0:
            continue
        s += math.sqrt(a[i]) * (i + 1)
    return s


def loop_break(a, limit):
    """Accumulate until the running sum exceeds a limit, then break."""
    s = 0.0
    k = 0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
        k = i
        if s > limit:
            break
    return s * a[0] + k


def loop_early_return(a, x):
    """return from inside a loop when an element passes a threshold."""
    s = 0.0
    for i in range(a.shape[0]):
        if a[i] > 2.0:
            return a[i] * x + s
        s += math.sin(a[i] * x)
    return s


def quadform(A, x):
    """x^T A x with a nested loop."""
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s += A[i, j] * x[i] * x[j]
    return s


def triangular(a):
    """A triangular nested loop (inner trip count depends on the outer index)."""
    s = 0.0
    for i in range(a.shape[0]):
        for j in range(i):
            s += math.sin(a[i] - a[j]) * (i - j)
    return s


# --- while loops ---------------------------------------------------------------------------------


def newton_cubic(c, p):
    """Newton's method for x^3 + p x = c, stopped by a tolerance (bounded iterations)."""
    x = 1.0
    it = 0
    while it < 50:
        f = x * x * x + p * x - c
        dx = f / (3.0 * x * x + p)
        x -= dx
        it += 1
        if abs(dx) < 1e-14:
            break
    return x


def fixed_point(a, b):
    """Fixed-point iteration x <- cos(a x) + b until the update is tiny."""
    x = 0.0
    x_new = math.cos(a * x) + b
    n = 0
    while abs(x_new - x) > 1e-15 and n < 500:
        x = x_new
        x_new = math.cos(a * x) + b
        n += 1
    return x_new


def ode_until(k, y0, T):
    """Explicit Euler for y' = -k y + sin(t) integrated until t >= T (last step clipped)."""
    t = 0.0
    y = y0
    dt = 0.01
    while t < T:
        h = min(dt, T - t)
        y += h * (-k * y + math.sin(t))
        t += h
    return y


def while_true_halving(x, y):
    """`while True` with a break: halve until below a bound, then a smooth tail."""
    n = 0
    while True:
        x = 0.5 * x + 0.1 * y
        n += 1
        if x < 0.3 or n > 100:
            break
    return x * y + n


# --- argument factories --------------------------------------------------------------------------


def _loop_break_args(rng):
    a = uvec(rng, 0.3, 1.2, 10)
    partial = np.cumsum(a * a)
    i = int(rng.integers(3, 7))
    return a, float(0.5 * (partial[i] + partial[i + 1]))


def _early_return_args(rng):
    a = uvec(rng, -1.5, 1.5, 10)
    a[int(rng.integers(3, 8))] = u(rng, 2.3, 3.0)
    return a, u(rng, 0.5, 1.5)


def _loop_branch_args(rng):
    t = u(rng, -0.3, 0.3)
    a = signed_vec(rng, 0.1, 1.5, 10) + t
    return a, t


def _halving_args(rng):
    def tail(v):  # the sequence must not come near the 0.3 exit threshold
        x, y = v
        for _ in range(100):
            x = 0.5 * x + 0.1 * y
            if abs(x - 0.3) < 0.02:
                return False
            if x < 0.3:
                return True
        return False
    return until(rng, lambda r: (u(r, 2.0, 20.0), u(r, 0.1, 1.0)), tail)


def _ode_args(rng):
    steps = int(rng.integers(60, 100)) + u(rng, 0.3, 0.7)  # T/dt kept off integers
    return u(rng, 0.5, 2.0), u(rng, -1.0, 1.0), 0.01 * steps


COUNTED = [
    kernel("exp_series", exp_series, lambda r: (u(r, -2.0, 2.0), 12),
           "scalar", "loop", "int-arg"),
    kernel("scalar_recurrence", scalar_recurrence, lambda r: (u(r, 0.2, 1.0), u(r, 0.1, 0.5), 20),
           "scalar", "loop", "int-arg", "math"),
    kernel("sum_sq", sum_sq, lambda r: (uvec(r, -1, 1, 8),), "loop", "array1d", "int-power"),
    kernel("dot", dot, lambda r: (uvec(r, -1, 1, 8), uvec(r, -1, 1, 8)), "loop", "array1d"),
    kernel("norm2", norm2, lambda r: (uvec(r, -1, 1, 8),), "loop", "array1d", "math"),
    kernel("prod", prod, lambda r: (uvec(r, 0.5, 1.5, 8),), "loop", "array1d"),
    kernel("loop_branch", loop_branch, _loop_branch_args, "loop", "array1d", "branch"),
    kernel("loop_continue", loop_continue, lambda r: (signed_vec(r, 0.2, 2.0, 10),),
           "loop", "array1d", "branch", "continue", "math"),
    kernel("loop_break", loop_break, _loop_break_args, "loop", "array1d", "branch", "break"),
    kernel("loop_early_return", loop_early_return, _early_return_args,
           "loop", "array1d", "branch", "early-return", "math"),
    kernel("quadform", quadform, lambda r: (uvec(r, -1, 1, 5, 5), uvec(r, -1, 1, 5)),
           "loop", "nested-loop", "array2d", "array1d"),
    kernel("triangular", triangular, lambda r: (uvec(r, -2, 2, 7),),
           "loop", "nested-loop", "array1d", "math"),
]

WHILE = [
    kernel("newton_cubic", newton_cubic, lambda r: (u(r, 0.5, 5.0), u(r, 0.5, 2.0)),
           "scalar", "while", "break", "branch"),
    kernel("fixed_point", fixed_point, lambda r: (u(r, 0.3, 0.8), u(r, -0.5, 0.5)),
           "scalar", "while", "math", fd_atol=1e-7),
    kernel("ode_until", ode_until, _ode_args, "scalar", "while", "minmax", "math"),
    kernel("while_true_halving", while_true_halving, _halving_args,
           "scalar", "while", "break", "branch"),
]

KERNELS: list[Kernel] = COUNTED + WHILE
