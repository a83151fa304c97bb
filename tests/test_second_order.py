"""Second derivatives every way round (issue 11, item 3): the Hessian of a float-valued kernel
by forward over forward, reverse over forward, forward over reverse and reverse over reverse,
built from `derive_diff` alone. The four agree with the exact Hessian and with central finite
differences of the gradient, on kernels whose inner reverse pass keeps floats and integers
(loop counts, branches taken) on its tape, grown while it runs, and on kernels with
temporaries holding active values (filled in a loop, array expressions, returned by a helper,
allocated per iteration), whose inner reverse pass keeps their shadows' addresses: in stack
slots, rebuilt from loop counters, or on its tape with their own shadows beside them."""
import contextlib
import functools
import math
import re

import numba
import numpy as np
import pytest

from enzyme_py import UnsupportedError, derive_diff, hessian, hvp
from tests.support.nrt_stats import NRTCounter, nrt_statistics
from tests.test_helpers import rosenbrock, rosenbrock_hessian


# ---------------------------------------------------------------- kernels, exact Hessians
def cubic_residuals(x, A, b):
    """sum r^3 / 3 with r = A x - b: Hessian A^T diag(2 r) A."""
    s = 0.0
    for i in range(A.shape[0]):
        r = -b[i]
        for j in range(x.shape[0]):
            r += A[i, j] * x[j]
        s += r * r * r / 3.0
    return s


def cubic_residuals_hessian(x, A, b):
    return A.T @ np.diag(2.0 * (A @ x - b)) @ A


def piecewise(x, c):
    """A while loop and a branch per element: c x^3 where x > 0, x sin x elsewhere."""
    s = 0.0
    i = 0
    while i < x.shape[0]:
        if x[i] > 0.0:
            s += c * x[i] ** 3
        else:
            s += math.sin(x[i]) * x[i]
        i += 1
    return s


def piecewise_hessian(x, c):
    return np.diag(np.where(x > 0.0, 6.0 * c * x, 2.0 * np.cos(x) - x * np.sin(x)))


def differences_energy(x, d, w):
    """sum w exp(d) with d = x[1:] - x[:-1] written into the array argument `d`."""
    for i in range(d.shape[0]):
        d[i] = x[i + 1] - x[i]
    s = 0.0
    for i in range(d.shape[0]):
        s += w * math.exp(d[i])
    return s


def differences_energy_hessian(x, w):
    D = np.diff(np.eye(x.shape[0]), axis=0)              # d = D x
    return D.T @ np.diag(w * np.exp(D @ x)) @ D


def temporary_energy(x, w):
    """`differences_energy` with d a temporary: its inner reverse pass tapes d's shadow."""
    d = np.empty(x.shape[0] - 1)
    for i in range(d.shape[0]):
        d[i] = x[i + 1] - x[i]
    s = 0.0
    for i in range(d.shape[0]):
        s += w * math.exp(d[i])
    return s


def squares_of_squares(x):
    """sum t^2 with t[i] = x[i]^2 filled in a loop, squared by an array expression: sum x^4."""
    t = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        t[i] = x[i] ** 2
    return np.sum(t * t)


def squares_of_squares_hessian(x):
    return np.diag(12.0 * x * x)


def norm_squared_squared(x):
    """(sum y)^2 with y = x * x an array expression: |x|^4."""
    y = x * x
    s = np.sum(y)
    return s * s


def norm_squared_squared_hessian(x):
    return 4.0 * (x @ x) * np.eye(x.shape[0]) + 8.0 * np.outer(x, x)


@numba.njit
def differences(x):
    """A helper returning a temporary: x[1:] - x[:-1]."""
    d = np.empty(x.shape[0] - 1)
    for i in range(d.shape[0]):
        d[i] = x[i + 1] - x[i]
    return d


def helper_energy(x, w):
    """`differences_energy` with d returned by a helper and summed by array expressions."""
    return np.sum(w * np.exp(differences(x)))


def neighbour_products(x):
    """sum_k x_k (x_k^2 + x_{k+1}^2), from a temporary allocated in each iteration (t) and an
    array expression on it (u): their shadows' addresses go on the inner tape."""
    s = 0.0
    for k in range(x.shape[0] - 1):
        t = np.empty(2)
        for j in range(2):
            t[j] = x[k + j] * x[k + j]
        u = t * x[k]
        s += np.sum(u)
    return s


def neighbour_products_hessian(x):
    """Term k, x_k^3 + x_k x_{k+1}^2: 6 x_k at (k, k), 2 x_{k+1} at (k, k+1) and (k+1, k),
    2 x_k at (k+1, k+1)."""
    n = x.shape[0]
    H = np.zeros((n, n))
    k = np.arange(n - 1)
    H[k, k] += 6.0 * x[:-1]
    H[k, k + 1] += 2.0 * x[1:]
    H[k + 1, k] += 2.0 * x[1:]
    H[k + 1, k + 1] += 2.0 * x[:-1]
    return H


_rng = np.random.default_rng(11)
CASES = {
    "cubic_residuals": (cubic_residuals, cubic_residuals_hessian,
                        (_rng.standard_normal((5, 4)), _rng.standard_normal(5))),
    "rosenbrock": (rosenbrock, rosenbrock_hessian, (100.0,)),
    "piecewise": (piecewise, piecewise_hessian, (1.5,)),
    "squares_of_squares": (squares_of_squares, squares_of_squares_hessian, ()),
    "norm_squared_squared": (norm_squared_squared, norm_squared_squared_hessian, ()),
    "helper_energy": (helper_energy, differences_energy_hessian, (0.7,)),
    "neighbour_products": (neighbour_products, neighbour_products_hessian, ()),
}
TEMPORARIES = ("squares_of_squares", "norm_squared_squared", "helper_energy",
               "neighbour_products")
X = np.array([0.4, -0.8, 1.3, -0.2])


# ---------------------------------------------------------------- the four compositions
@functools.cache
def compositions(name: str):
    """Per kernel f(x, *rest): the inner derivatives and the four outer ones."""
    f, _, rest = CASES[name]
    const = ("const",) * len(rest)
    rev = derive_diff(f, f"rev_{name}", ("dup",) + const)
    fwd = derive_diff(f, f"fwd_{name}", ("dup",) + const, mode="forward")
    params = ", ".join(f"r{i}" for i in range(len(rest)))
    scope = {"rev": rev, "fwd": fwd, "np": np}
    exec(f"def gradient(x, g, {params}):\n"            # g = f'(x)
         f"    for i in range(g.shape[0]):\n        g[i] = 0.0\n"
         f"    rev(x, g, {params})\n"
         f"def gradient_dot(x, v, {params}):\n"        # f'(x) . v by the reverse pass
         f"    g = np.zeros_like(x)\n    rev(x, g, {params})\n    return (g * v).sum()\n"
         f"def directional(x, v, {params}):\n"         # f'(x) . v by the forward pass
         f"    return fwd(x, v, {params})[1]\n", scope)
    gradient, gradient_dot, directional = (numba.njit(scope[n]) for n in
                                           ("gradient", "gradient_dot", "directional"))
    outer = ("dup", "const") + const
    return {
        "rev": rev,
        "fwd_over_rev": derive_diff(gradient, None, ("dup", "dup") + const, mode="forward"),
        "rev_over_rev": derive_diff(gradient_dot, None, outer),
        "rev_over_fwd": derive_diff(directional, None, outer),
        "fwd_over_fwd": derive_diff(directional, None, outer, mode="forward"),
    }


def hessians(name: str, x: np.ndarray) -> dict[str, np.ndarray]:
    """The Hessian at `x` by each composition, one column (entry) per basis direction."""
    d, rest, n = compositions(name), CASES[name][2], x.shape[0]
    eye, out = np.eye(n), {k: np.empty((n, n)) for k in
                           ("fwd_over_rev", "rev_over_rev", "rev_over_fwd", "fwd_over_fwd")}
    for i in range(n):
        g, tg = np.zeros(n), np.zeros(n)
        d["fwd_over_rev"](x, eye[i], g, tg, *rest)
        out["fwd_over_rev"][:, i] = tg                  # H e_i, the tangent of the gradient
        for k in ("rev_over_rev", "rev_over_fwd"):
            dx = np.zeros(n)
            d[k](x, dx, eye[i], *rest)
            out[k][:, i] = dx                           # H e_i, the gradient of f'(x) . e_i
        for j in range(n):
            out["fwd_over_fwd"][j, i] = d["fwd_over_fwd"](x, eye[j], eye[i], *rest)[1]
    return out


def fd_hessian(name: str, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """Central differences of the (reverse-mode) gradient."""
    rev, rest = compositions(name)["rev"], CASES[name][2]

    def gradient(at):
        g = np.zeros_like(at)
        rev(at, g, *rest)
        return g
    return np.column_stack([(gradient(x + h * e) - gradient(x - h * e)) / (2 * h)
                            for e in np.eye(x.shape[0])])


@pytest.mark.parametrize("name", CASES)
def test_four_hessian_compositions_agree_with_exact_and_finite_differences(name):
    H = CASES[name][1](X, *CASES[name][2])
    fd = fd_hessian(name, X)
    np.testing.assert_allclose(fd, H, rtol=1e-6, atol=1e-6 * np.abs(H).max())
    got = hessians(name, X)
    for composition, h in got.items():
        np.testing.assert_allclose(h, H, rtol=1e-11, atol=1e-11 * np.abs(H).max(),
                                   err_msg=f"{name}: {composition} against the exact Hessian")
        np.testing.assert_allclose(h, got["fwd_over_rev"], rtol=1e-12,
                                   atol=1e-12 * np.abs(H).max(),
                                   err_msg=f"{name}: {composition} against forward over reverse")


@contextlib.contextmanager
def nrt_counts():
    """NRT's allocation counts made inside the block: {"alloc", "free", "mi_alloc",
    "mi_free"} (filled in on exit)."""
    counts: dict[str, int] = {}
    with nrt_statistics():
        counter = NRTCounter()
        counter.start()
        yield counts
        counts.update(zip(("alloc", "free", "mi_alloc", "mi_free"), counter.delta()))


def test_the_tape_of_a_differentiated_derivative_grows_and_is_freed():
    """Long inputs: the inner tape grows through several buffers (64 KiB, then doubling),
    every one shadowed and freed (NRT's counts balance once what the derivatives keep between
    calls exists), and the result is still exact."""
    n = 6000                        # piecewise tapes ~16 bytes per element: 96 KB, two growths
    x = np.linspace(-1.0, 1.0, n)
    u = np.cos(np.arange(n))
    exact = piecewise_hessian(x, 1.5).diagonal() * u
    d = compositions("piecewise")
    d["fwd_over_rev"](x, u, np.zeros(n), np.zeros(n), 1.5)   # first calls: what is kept
    d["rev_over_rev"](x, np.zeros(n), u, 1.5)                # between calls is allocated
    g, tg, dx = np.zeros(n), np.zeros(n), np.zeros(n)
    with nrt_counts() as counts:
        d["fwd_over_rev"](x, u, g, tg, 1.5)
        d["rev_over_rev"](x, dx, u, 1.5)
    assert counts["alloc"] >= 3          # the tape grew: new buffers were made
    assert counts["alloc"] == counts["free"] and counts["mi_alloc"] == counts["mi_free"]
    np.testing.assert_allclose(tg, exact, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dx, exact, rtol=1e-12, atol=1e-12)


def neighbour_products_hvp(x, u):
    """H u for `neighbour_products` without forming H (see its Hessian)."""
    hu = np.zeros_like(x)
    hu[:-1] += 6.0 * x[:-1] * u[:-1] + 2.0 * x[1:] * u[1:]
    hu[1:] += 2.0 * x[1:] * u[:-1] + 2.0 * x[:-1] * u[1:]
    return hu


def test_taped_addresses_and_their_shadows_grow_with_the_tape():
    """`neighbour_products` tapes the addresses of its per-iteration temporaries' shadows
    (~100 bytes an iteration): over 3000 iterations the tape and its shadow, holding the
    shadows of those addresses, grow three times; still exact, and every temporary and
    buffer is freed."""
    n = 3000
    x = np.sin(np.arange(n) * 0.37)
    u = np.cos(np.arange(n) * 0.11)
    exact = neighbour_products_hvp(x, u)
    d = compositions("neighbour_products")
    d["fwd_over_rev"](x, u, np.zeros(n), np.zeros(n))
    d["rev_over_rev"](x, np.zeros(n), u)
    g, tg, dx = np.zeros(n), np.zeros(n), np.zeros(n)
    with nrt_counts() as counts:
        d["fwd_over_rev"](x, u, g, tg)
        d["rev_over_rev"](x, dx, u)
    assert counts["mi_alloc"] >= 4 * (n - 1)        # t, u and their shadows per iteration
    assert counts["alloc"] == counts["free"] and counts["mi_alloc"] == counts["mi_free"]
    np.testing.assert_allclose(tg, exact, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dx, exact, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", TEMPORARIES)
def test_temporaries_of_differentiated_derivatives_are_freed(name):
    """Each call of the four compositions frees every temporary it makes (the inner reverse
    derivative's kept temporaries are allocated afresh when it is differentiated)."""
    hessians(name, X)                   # first calls: what the outer derivatives keep
    with nrt_counts() as counts:
        hessians(name, X)
    assert counts["mi_alloc"] > 0
    assert counts["alloc"] == counts["free"] and counts["mi_alloc"] == counts["mi_free"]


def test_over_reverse_a_temporary_kept_between_calls_is_made_afresh():
    """`temporary_energy`'s reverse derivative keeps its temporary and that one's shadow in
    slots between calls (`parked_shadows.py`). Differentiated, its captured copy allocates
    and frees them in every call instead: exact both ways round, NRT's counts balance, and
    the derivative called on its own still allocates nothing after its first call."""
    w, v, u = 0.7, np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.3, 0.1, -0.5, 0.2])
    H = differences_energy_hessian(X, w)
    rev = derive_diff(temporary_energy, "rev_temporary", ("dup", "const"))

    @numba.njit
    def temporary_dot(x, v, w):
        g = np.zeros_like(x)
        rev(x, g, w)
        return (g * v).sum()
    rev_over_rev = derive_diff(temporary_dot, None, ("dup", "const", "const"))
    fwd_over_rev = derive_diff(temporary_dot, None, ("dup", "const", "const"), mode="forward")
    g = np.zeros(4)
    rev(X, g, w)
    rev_over_rev(X, np.zeros(4), v, w)
    fwd_over_rev(X, u, v, w)
    dx = np.zeros(4)
    with nrt_counts() as counts:
        rev_over_rev(X, dx, v, w)
        tangent = fwd_over_rev(X, u, v, w)[1]
    assert counts["mi_alloc"] >= 4      # the temporary and its shadow, each way round
    assert counts["alloc"] == counts["free"] and counts["mi_alloc"] == counts["mi_free"]
    np.testing.assert_allclose(dx, H @ v, rtol=1e-12)
    assert tangent == pytest.approx(u @ H @ v, rel=1e-12)

    @numba.njit
    def repeat(x, g, w, times):
        for _ in range(times):
            rev(x, g, w)
    repeat(X, g, w, 1)
    per_call = []
    for times in (1, 5):
        with nrt_counts() as counts:
            repeat(X, g, w, times)
        per_call.append(counts)
    assert per_call[0] == per_call[1]       # passing the arrays in, nothing per call


def test_vector_forward_over_reverse_reading_taped_addresses_is_refused():
    """Vector forward mode does not keep shadows beside taped addresses yet: refused, with
    the fix of width 1 (tested above: forward over reverse of this kernel)."""
    name = "neighbour_products"
    rev = compositions(name)["rev"]

    @numba.njit
    def gradient(x, g):
        rev(x, g)
    with pytest.raises(UnsupportedError, match=re.escape(
            "pointer read back from the tape of a reverse-mode derivative that is itself "
            "differentiated, in vector forward mode (width 2)") + r"(.|\n)*fix: not "
            r"supported yet: use width=1 \(one direction per call\), or reverse over forward"):
        derive_diff(gradient, None, ("dup", "dup"), mode="forward", width=2)(
            X, np.eye(4)[:2], np.zeros(4), np.zeros((2, 4)))


def test_hessian_and_hvp_helpers_on_kernels_with_temporaries():
    """The helpers (reverse over forward) on kernels with temporaries, against the exact
    Hessians."""
    v = np.array([1.0, -2.0, 0.5, 3.0])
    H = hessian(neighbour_products)(X)
    np.testing.assert_allclose(H, neighbour_products_hessian(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(hvp(helper_energy)(X, 0.7, v),
                               differences_energy_hessian(X, 0.7) @ v, rtol=1e-12)
