"""Composite kernels shaped like real applications, written the way a Numba user writes them.

Each kernel mixes explicit loops with numpy calls, temporaries, views and slices, in-place
updates, helpers returning tuples, early exits and integer index arrays. Every kernel is
checked with its natural activities (float arrays "dup", float scalars "active"/"dup",
integers const, data arrays listed in ``const``):

- forward mode against central finite differences, and a second call giving the same result
  (memory kept between calls),
- reverse mode against central finite differences, with two calls accumulating twice,
- forward against reverse: <J t, w> == <t, J^T w>.

The tests at the end hold what hunting with such kernels found: refusals whose message names
the construct, the line and a fix that works (the fixed kernel is checked), and a write
through a stale pointer that gave a wrong gradient (now differentiated through a copy).
"""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from enzyme_py import UnsupportedError
from tests.support.gradcheck import (Problem, _derive, _forward_call, activities, assert_close,
                                     check_forward, check_inner_product, check_reverse)
from tests.support.kernel import Kernel, kernel

# --- helpers ---------------------------------------------------------------------------------


@numba.njit
def _lv_rhs(y, p, out):
    """Lotka-Volterra right-hand side into out."""
    out[0] = p[0] * y[0] - p[1] * y[0] * y[1]
    out[1] = p[2] * y[0] * y[1] - p[3] * y[1]


@numba.njit
def _lj_pair(r2, eps, sigma):
    """Lennard-Jones energy and force factor of one pair."""
    s2 = sigma * sigma / r2
    s6 = s2 * s2 * s2
    e = 4.0 * eps * (s6 * s6 - s6)
    f = 24.0 * eps * (2.0 * s6 * s6 - s6) / r2
    return e, f


@numba.njit(inline="never")
def _lj_pair_noinline(r2, eps, sigma):
    """_lj_pair, never inlined."""
    return _lj_pair(r2, eps, sigma)


@numba.njit(inline="never")
def _energy_noinline(a):
    """A never-inlined helper reading an array."""
    return a[0] * a[0] * a[1] + math.sin(a[2])


@numba.njit
def _softplus(z):
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


@numba.njit
def _norm_cdf(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


@numba.njit
def _rosen_grad(x, g):
    """Gradient of the Rosenbrock function into g; returns the value."""
    n = x.shape[0]
    g[:] = 0.0
    f = 0.0
    for i in range(n - 1):
        a = x[i + 1] - x[i] * x[i]
        b = 1.0 - x[i]
        f += 100.0 * a * a + b * b
        g[i] += -400.0 * x[i] * a - 2.0 * b
        g[i + 1] += 200.0 * a
    return f


@numba.njit(inline="never")
def _bilinear(grid, x, y):
    i = int(math.floor(y))
    j = int(math.floor(x))
    fy = y - i
    fx = x - j
    return ((1.0 - fy) * ((1.0 - fx) * grid[i, j] + fx * grid[i, j + 1])
            + fy * ((1.0 - fx) * grid[i + 1, j] + fx * grid[i + 1, j + 1]))


# --- kernels ---------------------------------------------------------------------------------


def nbody(pos, mass, eps):
    """Softened gravitational potential plus the squared norm of the accelerations."""
    n = pos.shape[0]
    acc = np.zeros_like(pos)
    pot = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[j] - pos[i]
            r2 = np.dot(d, d) + eps * eps
            inv = 1.0 / math.sqrt(r2)
            inv3 = inv * inv * inv
            pot -= mass[i] * mass[j] * inv
            acc[i] += mass[j] * inv3 * d
            acc[j] -= mass[i] * inv3 * d
    return pot + 0.01 * np.sum(acc * acc)


def rk4_lv(y0, p, dt, steps):
    """RK4 integration of Lotka-Volterra with an @njit rhs writing into temporaries."""
    y = y0.copy()
    k1 = np.empty(2)
    k2 = np.empty(2)
    k3 = np.empty(2)
    k4 = np.empty(2)
    for _ in range(steps):
        _lv_rhs(y, p, k1)
        _lv_rhs(y + 0.5 * dt * k1, p, k2)
        _lv_rhs(y + 0.5 * dt * k2, p, k3)
        _lv_rhs(y + dt * k3, p, k4)
        y += dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return y[0] + 2.0 * y[1]


def logistic_loss(w, X, y, lam):
    """Mean logistic loss with a stable softplus, plus L2 regularisation."""
    z = X @ w
    s = 0.0
    for i in range(z.shape[0]):
        s += _softplus(z[i]) - y[i] * z[i]
    return s / z.shape[0] + lam * np.dot(w, w)


def softmax_xent(logits, labels):
    """Softmax cross-entropy over rows, with the max-shift, integer labels."""
    n, k = logits.shape
    total = 0.0
    for i in range(n):
        row = logits[i]
        m = np.max(row)
        e = np.exp(row - m)
        total += m + np.log(np.sum(e)) - row[labels[i]]
    return total / n


def kmeans_obj(X, C):
    """k-means objective: squared distance of every point to its nearest centre."""
    n = X.shape[0]
    k = C.shape[0]
    total = 0.0
    for i in range(n):
        best = np.inf
        arg = 0
        for c in range(k):
            d = X[i] - C[c]
            dist = np.sum(d * d)
            if dist < best:
                best = dist
                arg = c
        diff = X[i] - C[arg]
        total += np.dot(diff, diff)
    return total


def conv1d(x, w):
    """Valid 1-D convolution built from shifted slices; squared norm of the result."""
    n = x.shape[0]
    m = w.shape[0]
    out = np.zeros(n - m + 1)
    for j in range(m):
        out += w[j] * x[j:j + n - m + 1]
    return np.sum(out ** 2)


def upwind(u, c, dx, dt, steps):
    """Periodic first-order upwind advection with swapped buffers, index math instead of roll."""
    n = u.shape[0]
    a = u.copy()
    b = np.empty(n)
    nu = c * dt / dx
    for _ in range(steps):
        for i in range(n):
            im = (i - 1 + n) % n
            b[i] = a[i] - nu * (a[i] - a[im])
        a, b = b, a
    return np.sum(a * a * np.arange(n))


def mlp(x, W1, b1, W2, target):
    """Two-layer tanh MLP, mean squared error."""
    h = np.tanh(x @ W1 + b1)
    out = h @ W2
    d = out - target
    return np.mean(d * d)


def jacobi(f, h, iters):
    """Jacobi sweeps for -u'' = f on a grid with zero boundaries, swapping buffers."""
    n = f.shape[0]
    u = np.zeros(n)
    v = np.zeros(n)
    for _ in range(iters):
        for i in range(1, n - 1):
            v[i] = 0.5 * (u[i - 1] + u[i + 1] + h * h * f[i])
        u, v = v, u
    return np.dot(u, u)


def springs(pos, edges, rest, k):
    """Spring energy over an integer edge list."""
    e = 0.0
    for m in range(edges.shape[0]):
        a = edges[m, 0]
        b = edges[m, 1]
        d = pos[a] - pos[b]
        length = math.sqrt(d[0] * d[0] + d[1] * d[1])
        e += 0.5 * k * (length - rest[m]) ** 2
    return e


def black_scholes(S, K, T, r, sigma):
    """Sum of European call prices by the Black-Scholes formula (math.erf)."""
    total = 0.0
    for i in range(S.shape[0]):
        sq = sigma * math.sqrt(T[i])
        d1 = (math.log(S[i] / K[i]) + (r + 0.5 * sigma * sigma) * T[i]) / sq
        d2 = d1 - sq
        total += S[i] * _norm_cdf(d1) - K[i] * math.exp(-r * T[i]) * _norm_cdf(d2)
    return total


def horner(c, x):
    """Polynomial with a coefficient array by Horner's rule at every x; sum of squares."""
    s = 0.0
    for i in range(x.shape[0]):
        v = 0.0
        k = c.shape[0] - 1
        while k >= 0:
            v = v * x[i] + c[k]
            k -= 1
        s += v * v
    return s


def piecewise(x, a, out):
    """A piecewise function with branches on the data (Huber-like with a cubic tail)."""
    s = 0.0
    for i in range(x.shape[0]):
        v = x[i]
        if v < -a:
            out[i] = -a * v - 0.5 * a * a
        elif v < a:
            out[i] = 0.5 * v * v
        else:
            out[i] = a * v - 0.5 * a * a + 0.1 * (v - a) ** 3
        s += out[i]
    return s


def cumsum_loss(x, w):
    """Weighted squared cumulative sums (np.cumsum)."""
    c = np.cumsum(x)
    return np.sum(w * c * c)


def sorted_loss(x, y):
    """1-D Wasserstein-2 between samples, via np.sort (a permutation of the data)."""
    xs = np.sort(x)
    ys = np.sort(y)
    d = xs - ys
    return np.dot(d, d) / x.shape[0]


def lse_pool(x, width, out):
    """Log-sum-exp pooling over non-overlapping windows into out."""
    for w in range(out.shape[0]):
        seg = x[w * width:(w + 1) * width]
        m = seg.max()
        out[w] = m + math.log(np.sum(np.exp(seg - m)))


def bilinear(grid, pts):
    """Bilinear interpolation of a grid at points (floor and int casts), never-inlined helper."""
    s = 0.0
    for p in range(pts.shape[0]):
        s += _bilinear(grid, pts[p, 0], pts[p, 1]) ** 2
    return s


def kalman(z, q, r):
    """Negative log-likelihood of a constant-velocity Kalman filter with 2x2 matrices."""
    F = np.array([[1.0, 1.0], [0.0, 1.0]])
    x = np.zeros(2)
    P = np.eye(2)
    Q = q * np.eye(2)
    nll = 0.0
    for t in range(z.shape[0]):
        x = F @ x
        P = F @ P @ F.T + Q
        S = P[0, 0] + r
        y = z[t] - x[0]
        K = P[:, 0] / S
        x = x + K * y
        P = P - np.outer(K, P[0, :])
        nll += 0.5 * (math.log(S) + y * y / S)
    return nll


def lj_energy(pos, eps, sigma):
    """Lennard-Jones energy and virial from a pair helper returning a tuple."""
    n = pos.shape[0]
    e = 0.0
    vir = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            r2 = np.sum(d * d)
            ei, fi = _lj_pair(r2, eps, sigma)
            e += ei
            vir += fi * r2
    return e + 0.01 * vir


def lj_energy_noinline(pos, eps, sigma):
    """lj_energy with the pair helper never inlined: refused (a tuple of active floats)."""
    n = pos.shape[0]
    e = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            ei, fi = _lj_pair_noinline(np.sum(d * d), eps, sigma)
            e += ei + 0.01 * fi
    return e


def linear_dynamics(z):
    """x <- F x + z[t] over time steps: the matrix product reads the previous step's array."""
    F = np.array([[1.0, 0.5], [-0.2, 0.9]])
    x = np.zeros(2)
    s = 0.0
    for t in range(z.shape[0]):
        x = F @ x
        x = x + z[t]
        s += x[0] * x[1]
    return s


def linear_dynamics_kick(z):
    """linear_dynamics with an in-place kick after each step: the product takes a copy of
    the state (the next step writes the array it multiplied)."""
    F = np.array([[1.0, 0.5], [-0.2, 0.9]])
    x = np.zeros(2)
    s = 0.0
    for t in range(z.shape[0]):
        x = F @ x.copy()
        x[0] += z[t]
        s += x[0] * x[1] + x[0]
    return s


def kepler(M, e):
    """Solve Kepler's equation E - e sin E = M by Newton with a tolerance exit."""
    total = 0.0
    for i in range(M.shape[0]):
        E = M[i]
        it = 0
        while it < 50:
            f = E - e * math.sin(E) - M[i]
            E -= f / (1.0 - e * math.cos(E))
            if abs(f) < 1e-14:
                break
            it += 1
        total += math.cos(E)
    return total


def descend(x0, lr, steps):
    """A few gradient-descent steps on Rosenbrock (a helper filling a gradient), in place."""
    x = x0.copy()
    g = np.empty_like(x)
    f = 0.0
    for _ in range(steps):
        f = _rosen_grad(x, g)
        x -= lr * g
    return f + np.sum(x)


def thomas(a, b, c, d, out):
    """Tridiagonal solve (Thomas algorithm) into out, with in-place scratch copies."""
    n = d.shape[0]
    cp = np.empty(n)
    dp = np.empty(n)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    out[n - 1] = dp[n - 1]
    for i in range(n - 2, -1, -1):
        out[i] = dp[i] - cp[i] * out[i + 1]


def bubble_topk(x, k):
    """Sum of the k largest values after a bubble sort with explicit swaps."""
    a = x.copy()
    n = a.shape[0]
    for i in range(n):
        swapped = False
        for j in range(n - 1 - i):
            if a[j] < a[j + 1]:
                a[j], a[j + 1] = a[j + 1], a[j]
                swapped = True
        if not swapped:
            break
    s = 0.0
    for i in range(k):
        s += a[i] * a[i]
    return s


def gather_scatter(x, idx, w, out):
    """Gather by an index array, scale, scatter-add into out (graph message passing)."""
    vals = x[idx]
    for m in range(idx.shape[0]):
        out[idx[(m + 1) % idx.shape[0]]] += w[m] * math.tanh(vals[m])


def masked_mean_var(x, lo):
    """Mean and variance of the entries above a threshold; returns a combination."""
    sel = x[x > lo]
    mu = np.mean(sel)
    var = np.mean((sel - mu) ** 2)
    return mu + math.sqrt(var)


# --- points ----------------------------------------------------------------------------------


def _rng_points(rng, n, d, lo, hi):
    return rng.uniform(lo, hi, size=(n, d))


def _edges(rng, n, m):
    e = np.empty((m, 2), np.int64)
    for i in range(m):
        a, b = rng.choice(n, size=2, replace=False)
        e[i] = (a, b)
    return e


def _sep_values(rng, n, gap):
    while True:
        v = rng.uniform(-2.0, 2.0, size=n)
        if np.min(np.diff(np.sort(v))) >= gap:
            return v


def _lj_points(rng):
    return np.array([[0.0, 0.0, 0.0], [1.1, 0.1, 0.0], [0.2, 1.2, 0.1],
                     [1.0, 1.1, 0.9]]) + rng.uniform(-0.05, 0.05, (4, 3))


def _kmeans_args(rng):
    C = rng.uniform(-2.0, 2.0, size=(3, 2))
    X = C[rng.integers(0, 3, size=12)] + rng.normal(0.0, 0.2, size=(12, 2))
    return X, C


def _pw_args(rng):
    x = rng.uniform(-3.0, 3.0, size=12)
    x = x[np.abs(np.abs(x) - 1.2) > 0.1]          # away from the branch points +-1.2
    return x, 1.2, np.zeros(x.shape[0])


def _masked_args(rng):
    x = rng.uniform(-1.0, 2.0, size=16)
    x = x[np.abs(x - 0.3) > 0.05]
    return x.copy(), 0.3


def _tridiag(rng):
    n = 8
    return (rng.uniform(-0.5, 0.5, n), rng.uniform(2.0, 3.0, n), rng.uniform(-0.5, 0.5, n),
            rng.uniform(-1.0, 1.0, n), np.zeros(n))


def _gs_args(rng):
    idx = rng.permutation(6).astype(np.int64)
    return rng.uniform(-1.0, 1.0, 6), idx, rng.uniform(-1.0, 1.0, 6), rng.uniform(-1, 1, 6)


KERNELS: list[Kernel] = [
    kernel("nbody", nbody, lambda rng: (_rng_points(rng, 5, 3, -1, 1), rng.uniform(0.5, 1.5, 5),
                                        0.1), "realistic", const=(1,)),
    kernel("rk4_lv", rk4_lv, lambda rng: (np.array([1.0, 0.5]), np.array([1.1, 0.4, 0.4, 0.1]),
                                          0.05, 20), "realistic", const=(2,)),
    kernel("logistic", logistic_loss, lambda rng: (rng.normal(size=3), rng.normal(size=(10, 3)),
                                                   (rng.uniform(size=10) > 0.5) * 1.0, 0.1),
           "realistic", const=(1, 2)),
    kernel("softmax_xent", softmax_xent, lambda rng: (rng.normal(size=(4, 5)),
                                                      rng.integers(0, 5, size=4)), "realistic"),
    kernel("kmeans", kmeans_obj, _kmeans_args, "realistic"),
    kernel("conv1d", conv1d, lambda rng: (rng.normal(size=12), rng.normal(size=3)),
           "realistic"),
    kernel("upwind", upwind, lambda rng: (rng.uniform(size=10), 0.7, 0.1, 0.05, 6),
           "realistic", const=(2, 3)),
    kernel("mlp", mlp, lambda rng: (rng.normal(size=(6, 3)), rng.normal(size=(3, 4)),
                                    rng.normal(size=4), rng.normal(size=(4, 2)),
                                    rng.normal(size=(6, 2))), "realistic", const=(0, 4)),
    kernel("jacobi", jacobi, lambda rng: (rng.normal(size=10), 0.1, 15), "realistic",
           const=(1,)),
    kernel("springs", springs, lambda rng: (_rng_points(rng, 6, 2, -1, 1), _edges(rng, 6, 9),
                                            rng.uniform(0.3, 0.8, 9), 2.0), "realistic"),
    kernel("black_scholes", black_scholes,
           lambda rng: (rng.uniform(80, 120, 5), rng.uniform(90, 110, 5),
                        rng.uniform(0.2, 2.0, 5), 0.03, 0.25), "realistic", const=(1, 2)),
    kernel("horner", horner, lambda rng: (rng.normal(size=5), rng.uniform(-1, 1, 7)),
           "realistic"),
    kernel("piecewise", piecewise, _pw_args, "realistic", outputs=(2,)),
    kernel("cumsum", cumsum_loss, lambda rng: (rng.normal(size=8), rng.uniform(size=8)),
           "realistic"),
    kernel("sorted_loss", sorted_loss, lambda rng: (_sep_values(rng, 7, 0.05),
                                                    _sep_values(rng, 7, 0.05)), "realistic"),
    kernel("lse_pool", lse_pool, lambda rng: (rng.normal(size=12), 4, np.zeros(3)),
           "realistic", outputs=(2,)),
    kernel("bilinear", bilinear,
           lambda rng: (rng.normal(size=(5, 6)),
                        np.stack([rng.integers(0, 5, 7) + rng.uniform(0.15, 0.85, 7),
                                  rng.integers(0, 4, 7) + rng.uniform(0.15, 0.85, 7)], 1)),
           "realistic"),
    kernel("kalman", kalman, lambda rng: (np.cumsum(rng.normal(size=8)), 0.1, 0.5),
           "realistic"),
    kernel("lj", lj_energy, lambda rng: (_lj_points(rng), 1.0, 1.0), "realistic"),
    kernel("lj_noinline", lj_energy_noinline, lambda rng: (_lj_points(rng), 1.0, 1.0),
           "realistic"),
    kernel("linear_dynamics", linear_dynamics, lambda rng: (rng.normal(size=5),), "realistic"),
    kernel("linear_dynamics_kick", linear_dynamics_kick, lambda rng: (rng.normal(size=5),),
           "realistic"),
    kernel("kepler", kepler, lambda rng: (rng.uniform(0.2, 3.0, 6), 0.3), "realistic"),
    kernel("descend", descend, lambda rng: (rng.uniform(-0.5, 0.5, 4), 1e-3, 5), "realistic"),
    kernel("thomas", thomas, _tridiag, "realistic", outputs=(4,)),
    kernel("bubble_topk", bubble_topk, lambda rng: (_sep_values(rng, 7, 0.05), 3),
           "realistic"),
    kernel("gather_scatter", gather_scatter, _gs_args, "realistic", outputs=(3,)),
    kernel("masked_mean_var", masked_mean_var, _masked_args, "realistic", const=(1,)),
]

BY_NAME = {k.name: k for k in KERNELS}
#: kernels refused with an UnsupportedError (tested below for the message)
REFUSED = {"lj_noinline"}


@pytest.mark.parametrize("k", [pytest.param(k, id=k.name) for k in KERNELS
                               if k.name not in REFUSED])
def test_forward(k):
    check_forward(k)
    args = k.args()
    p = Problem(k, args)
    df = _derive(k, None, None, activities(k, args, "forward"), "forward", True)
    t = p.random_x(np.random.default_rng(3))
    first, _ = _forward_call(p, df, t, None, None, "match")
    second, _ = _forward_call(p, df, t, None, None, "match")
    for key in first:
        assert_close(second[key], first[key], 1e-12, 1e-14, f"{k.name} [forward] second call")


@pytest.mark.parametrize("k", [pytest.param(k, id=k.name) for k in KERNELS
                               if k.name not in REFUSED])
def test_reverse(k):
    check_reverse(k)          # two calls: read-only shadows accumulate twice the gradient


@pytest.mark.parametrize("k", [pytest.param(k, id=k.name) for k in KERNELS
                               if k.name not in REFUSED])
def test_inner_product(k):
    check_inner_product(k)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_noinline_helper_returning_a_tuple_is_refused(mode):
    k = BY_NAME["lj_noinline"]
    check = check_forward if mode == "forward" else check_reverse
    with pytest.raises(UnsupportedError) as info:
        check(k)
    msg = str(info.value)
    assert "which is not inlined, returning active values of type [2 x double]" in msg, msg
    assert "test_user_kernels.py:" in msg and "code: ei, fi = _lj_pair_noinline(" in msg, msg
    assert 'drop its inline="never"' in msg, msg


def stale_view_write(z):
    """Writes the array read by the previous step's product through `prev`, a phi carrying
    it past its next allocation: the product's reverse must read the value it multiplied."""
    F = np.empty((2, 2))
    F[0, 0] = 1.0
    F[0, 1] = 2.0
    F[1, 0] = 0.5
    F[1, 1] = z[3]
    prev = np.zeros(2)
    s = 0.0
    for t in range(3):
        a = np.empty(2)
        a[0] = z[t]
        a[1] = z[t] * z[t]
        prev[1] = 0.0
        y = F @ a
        s += y[0] * y[1]
        prev = a
    return s


def test_write_through_a_stale_phi():
    """Was a silently wrong gradient (the write after `a`'s next allocation was taken to
    address the new array), then refused; the product now reads a copy of `a`."""
    k = kernel("stale_view_write", stale_view_write, lambda rng: (rng.normal(size=4),))
    check_forward(k)
    check_reverse(k)
    check_inner_product(k)


def temporary_to_noinline(z):
    """Passes a temporary holding active values to a never-inlined helper: refused."""
    s = 0.0
    for t in range(z.shape[0] - 2):
        a = np.empty(3)
        a[:] = z[t:t + 3]
        s += _energy_noinline(a)
    return s


def argument_to_noinline(z):
    """The fix the refusal names: hand the helper the function's own array (its views)."""
    s = 0.0
    for t in range(z.shape[0] - 2):
        s += _energy_noinline(z[t:t + 3])
    return s


def test_temporary_passed_to_a_noinline_helper_names_the_fix():
    k = kernel("temporary_to_noinline", temporary_to_noinline,
               lambda rng: (rng.normal(size=6),))
    with pytest.raises(UnsupportedError, match=r"_energy_noinline\w+, which is not inlined, "
                       r"handed an array the function allocated, holding active values(.|\n)*"
                       r"code: s \+= _energy_noinline\(a\)\n  fix: not supported yet: pass the "
                       r"helper an array argument"):
        check_reverse(k)
    fixed = kernel("argument_to_noinline", argument_to_noinline,
                   lambda rng: (rng.normal(size=6),))
    check_reverse(fixed)
    check_inner_product(fixed)
