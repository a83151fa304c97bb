"""Small but realistic numerical programs, and kernels calling other @njit functions."""
from __future__ import annotations

import math

import numba
import numpy as np

from tests.kernels._points import off_integer, u, until, uvec
from tests.support.kernel import Kernel, kernel

# --- helpers called from kernels (callees) ------------------------------------------------------


@numba.njit
def _pendulum_rhs(theta, omega, c, k):
    return omega, -c * omega - k * math.sin(theta)


@numba.njit
def _sq_sin(x):
    return x * x + math.sin(x)


@numba.njit
def _dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


@numba.njit
def _norm(a):
    return math.sqrt(_dot(a, a))


@numba.njit
def _softclip(x, lo, hi):
    return lo + (hi - lo) / (1.0 + math.exp(-x))


@numba.njit
def _fill_tanh(a, out):
    for i in range(a.shape[0]):
        out[i] = math.tanh(a[i])


# --- ODEs and PDEs -------------------------------------------------------------------------------


def rk4_pendulum(theta0, omega0, c, k, dt, steps):
    """Damped pendulum integrated with classical RK4 (right-hand side is an @njit callee)."""
    th = theta0
    om = omega0
    for _ in range(steps):
        k1t, k1o = _pendulum_rhs(th, om, c, k)
        k2t, k2o = _pendulum_rhs(th + 0.5 * dt * k1t, om + 0.5 * dt * k1o, c, k)
        k3t, k3o = _pendulum_rhs(th + 0.5 * dt * k2t, om + 0.5 * dt * k2o, c, k)
        k4t, k4o = _pendulum_rhs(th + dt * k3t, om + dt * k3o, c, k)
        th += dt / 6.0 * (k1t + 2.0 * k2t + 2.0 * k3t + k4t)
        om += dt / 6.0 * (k1o + 2.0 * k2o + 2.0 * k3o + k4o)
    return th + 0.1 * om


def heat_step(u, out, r):
    """One explicit 2-D heat-equation step into out (boundary copied)."""
    ny, nx = u.shape
    for i in range(ny):
        for j in range(nx):
            if i == 0 or j == 0 or i == ny - 1 or j == nx - 1:
                out[i, j] = u[i, j]
            else:
                out[i, j] = u[i, j] + r * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                           + u[i, j + 1] - 4.0 * u[i, j])


# --- statistics and ML ---------------------------------------------------------------------------


def gmm_loglik(x, mu, log_sigma, logit_w):
    """Log-likelihood of data under a 1-D Gaussian mixture (log-sum-exp over components)."""
    n = x.shape[0]
    K = mu.shape[0]
    m = logit_w[0]
    for k in range(1, K):
        if logit_w[k] > m:
            m = logit_w[k]
    z = 0.0
    for k in range(K):
        z += math.exp(logit_w[k] - m)
    log_norm = m + math.log(z)
    lp = np.empty(K)
    total = 0.0
    for i in range(n):
        best = -1e300
        for k in range(K):
            d = (x[i] - mu[k]) * math.exp(-log_sigma[k])
            lp[k] = logit_w[k] - log_norm - 0.5 * d * d - log_sigma[k] \
                - 0.9189385332046727
            if lp[k] > best:
                best = lp[k]
        s = 0.0
        for k in range(K):
            s += math.exp(lp[k] - best)
        total += best + math.log(s)
    return total


def logsumexp(a):
    """Stable log(sum(exp(a))) with a max found by comparisons."""
    m = a[0]
    for i in range(1, a.shape[0]):
        if a[i] > m:
            m = a[i]
    s = 0.0
    for i in range(a.shape[0]):
        s += math.exp(a[i] - m)
    return m + math.log(s)


def softmax(a, out):
    """Stable softmax into out."""
    m = a[0]
    for i in range(1, a.shape[0]):
        m = max(m, a[i])
    s = 0.0
    for i in range(a.shape[0]):
        out[i] = math.exp(a[i] - m)
        s += out[i]
    for i in range(a.shape[0]):
        out[i] /= s


def horner(c, x):
    """Polynomial sum c[i] x^i by Horner's rule (a descending loop)."""
    n = c.shape[0]
    p = c[n - 1]
    for i in range(n - 2, -1, -1):
        p = p * x + c[i]
    return p


def rosenbrock(x):
    """The n-dimensional Rosenbrock function."""
    s = 0.0
    for i in range(x.shape[0] - 1):
        s += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1.0 - x[i]) ** 2
    return s


def mlp_layer(W, b, x, out):
    """out = tanh(W x + b)"""
    for i in range(W.shape[0]):
        acc = b[i]
        for j in range(W.shape[1]):
            acc += W[i, j] * x[j]
        out[i] = math.tanh(acc)


def mlp_loss(W1, b1, W2, b2, x, y):
    """Squared error of a 2-layer tanh MLP on one sample (x, y const; hidden layer allocated)."""
    H = W1.shape[0]
    h = np.empty(H)
    for i in range(H):
        acc = b1[i]
        for j in range(W1.shape[1]):
            acc += W1[i, j] * x[j]
        h[i] = math.tanh(acc)
    loss = 0.0
    for k in range(W2.shape[0]):
        o = b2[k]
        for i in range(H):
            o += W2[k, i] * h[i]
        loss += 0.5 * (o - y[k]) ** 2
    return loss


def logistic_loss(X, y, w, lam):
    """L2-regularised logistic loss; data X, labels y are const."""
    loss = 0.0
    for i in range(X.shape[0]):
        z = 0.0
        for j in range(X.shape[1]):
            z += X[i, j] * w[j]
        loss += math.log1p(math.exp(-y[i] * z))
    reg = 0.0
    for j in range(w.shape[0]):
        reg += w[j] * w[j]
    return loss + 0.5 * lam * reg


def variance(a):
    """Two-pass sample variance."""
    n = a.shape[0]
    mean = 0.0
    for i in range(n):
        mean += a[i]
    mean /= n
    v = 0.0
    for i in range(n):
        v += (a[i] - mean) * (a[i] - mean)
    return v / (n - 1)


# --- geometry, physics, quadrature ---------------------------------------------------------------


def mandelbrot_smooth(cx, cy, max_iter):
    """Smooth (continuous) escape count of c = cx + i cy under z <- z^2 + c."""
    zx = 0.0
    zy = 0.0
    n = 0
    while n < max_iter and zx * zx + zy * zy < 256.0:
        zx, zy = zx * zx - zy * zy + cx, 2.0 * zx * zy + cy
        n += 1
    r2 = zx * zx + zy * zy
    return n + 1.0 - math.log(0.5 * math.log(r2)) / math.log(2.0)


def bilinear(grid, x, y):
    """Bilinear interpolation of a 2-D grid at (x, y); the cell index comes from floor."""
    i = int(np.floor(x))
    j = int(np.floor(y))
    fx = x - i
    fy = y - j
    return ((1.0 - fx) * (1.0 - fy) * grid[i, j] + fx * (1.0 - fy) * grid[i + 1, j]
            + (1.0 - fx) * fy * grid[i, j + 1] + fx * fy * grid[i + 1, j + 1])


def lennard_jones(pos):
    """Lennard-Jones energy of 2-D particles (triangular pair loop, (1/r^2)^3)."""
    e = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            inv6 = (1.0 / (dx * dx + dy * dy)) ** 3
            e += 4.0 * (inv6 * inv6 - inv6)
    return e


def trapezoid_gauss(a, b, n):
    """Trapezoid rule for the integral of exp(-a t^2) over [0, b] with n panels."""
    h = b / n
    s = 0.5 * (1.0 + math.exp(-a * b * b))
    for k in range(1, n):
        t = k * h
        s += math.exp(-a * t * t)
    return s * h


# --- callees -------------------------------------------------------------------------------------


def callee_scalar(x, y):
    """Calls an @njit scalar helper twice."""
    return _sq_sin(x) * y + _sq_sin(x * y)


def callee_array(a, b):
    """Calls @njit array helpers (one of which calls the other)."""
    return _dot(a, b) / (1.0 + _norm(a))


def callee_softclip(x, lo, hi):
    """Calls a helper with several float arguments."""
    return _softclip(x, lo, hi) * _softclip(-x, lo, hi)


def callee_writes(a, out):
    """A helper writes the output array; the kernel then reads it back."""
    _fill_tanh(a, out)
    s = 0.0
    for i in range(out.shape[0]):
        s += out[i] * a[i]
    return s


# --- argument factories --------------------------------------------------------------------------


def _gmm_args(rng):
    return (uvec(rng, -2.0, 2.0, 6), np.array([-1.0, 0.2, 1.3]) + uvec(rng, -0.2, 0.2, 3),
            uvec(rng, -0.5, 0.3, 3), uvec(rng, -1.0, 1.0, 3))


def _mlp_args(rng):
    return (uvec(rng, -1, 1, 4, 3), uvec(rng, -0.5, 0.5, 4), uvec(rng, -1, 1, 2, 4),
            uvec(rng, -0.5, 0.5, 2), uvec(rng, -1, 1, 3), uvec(rng, -1, 1, 2))


def _logistic_args(rng):
    X = uvec(rng, -1, 1, 6, 3)
    y = np.where(rng.random(6) < 0.5, -1.0, 1.0)
    return X, y, uvec(rng, -1, 1, 3), u(rng, 0.05, 0.5)


def _mandelbrot_args(rng):
    def ok(c):
        zx = zy = 0.0
        prev = 0.0
        for n in range(50):
            zx, zy = zx * zx - zy * zy + c[0], 2.0 * zx * zy + c[1]
            r2 = zx * zx + zy * zy
            if r2 >= 256.0:
                return r2 > 256.0 * 1.1 and prev < 256.0 / 1.1 and 4 <= n <= 15
            prev = r2
        return False
    return until(rng, lambda r: (u(r, -2.0, 0.6), u(r, 0.1, 1.2) * r.choice((-1.0, 1.0))),
                 ok) + (50,)


def _lj_args(rng):
    grid = np.array([[i * 1.15, j * 1.15] for i in range(3) for j in range(2)])
    return (grid + uvec(rng, -0.08, 0.08, 6, 2),)


REALISTIC = [
    kernel("rk4_pendulum", rk4_pendulum,
           lambda r: (u(r, -1.0, 1.0), u(r, -0.5, 0.5), u(r, 0.1, 0.5), u(r, 2.0, 6.0), 0.05, 100),
           "scalar", "loop", "math", "callee", "int-arg", "realistic"),
    kernel("heat_step", heat_step, lambda r: (uvec(r, -1, 1, 6, 7), np.zeros((6, 7)),
                                              u(r, 0.05, 0.2)),
           "array2d", "loop", "nested-loop", "output", "realistic", outputs=(1,)),
    kernel("gmm_loglik", gmm_loglik, _gmm_args,
           "array1d", "loop", "nested-loop", "branch", "math", "alloc", "realistic"),
    kernel("logsumexp", logsumexp, lambda r: (uvec(r, -2, 2, 8),),
           "array1d", "loop", "branch", "math", "realistic"),
    kernel("softmax", softmax, lambda r: (uvec(r, -2, 2, 6), np.zeros(6)),
           "array1d", "loop", "output", "minmax", "math", "realistic", outputs=(1,)),
    kernel("horner", horner, lambda r: (uvec(r, -1, 1, 7), u(r, -1.2, 1.2)),
           "array1d", "loop", "realistic"),
    kernel("rosenbrock", rosenbrock, lambda r: (uvec(r, -1.2, 1.2, 6),),
           "array1d", "loop", "int-power", "realistic"),
    kernel("mlp_layer", mlp_layer, lambda r: (uvec(r, -1, 1, 4, 3), uvec(r, -0.5, 0.5, 4),
                                              uvec(r, -1, 1, 3), np.zeros(4)),
           "array2d", "array1d", "loop", "nested-loop", "output", "math", "realistic",
           outputs=(3,)),
    kernel("mlp_loss", mlp_loss, _mlp_args,
           "array2d", "array1d", "loop", "nested-loop", "math", "alloc", "const-array",
           "int-power", "realistic", const=(4, 5)),
    kernel("logistic_loss", logistic_loss, _logistic_args,
           "array2d", "array1d", "loop", "nested-loop", "math", "const-array", "realistic",
           const=(0, 1)),
    kernel("variance", variance, lambda r: (uvec(r, -2, 2, 8),), "array1d", "loop", "realistic"),
    kernel("mandelbrot_smooth", mandelbrot_smooth, _mandelbrot_args,
           "scalar", "while", "math", "int-arg", "realistic"),
    kernel("bilinear", bilinear,
           lambda r: (uvec(r, -1, 1, 5, 6), off_integer(r, 0, 4), off_integer(r, 0, 5)),
           "array2d", "math", "realistic"),
    kernel("lennard_jones", lennard_jones, _lj_args,
           "array2d", "loop", "nested-loop", "int-power", "realistic"),
    kernel("trapezoid_gauss", trapezoid_gauss, lambda r: (u(r, 0.5, 2.0), u(r, 0.5, 2.0), 50),
           "scalar", "loop", "math", "int-arg", "realistic"),
]

CALLEES = [
    kernel("callee_scalar", callee_scalar, lambda r: (u(r, -1.5, 1.5), u(r, -1.5, 1.5)),
           "scalar", "callee", "math"),
    kernel("callee_array", callee_array, lambda r: (uvec(r, -1, 1, 6), uvec(r, -1, 1, 6)),
           "array1d", "loop", "callee", "math"),
    kernel("callee_softclip", callee_softclip,
           lambda r: (u(r, -2, 2), u(r, -1.0, -0.2), u(r, 0.2, 1.0)), "scalar", "callee", "math"),
    kernel("callee_writes", callee_writes, lambda r: (uvec(r, -1.5, 1.5, 5), np.zeros(5)),
           "array1d", "loop", "callee", "output", "math", outputs=(1,)),
]

KERNELS: list[Kernel] = REALISTIC + CALLEES
