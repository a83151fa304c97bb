"""Second derivatives every way round (issue 11, item 3): the Hessian of a float-valued kernel
by forward over forward, reverse over forward, forward over reverse and reverse over reverse,
built from `derive_diff` alone. The four agree with the exact Hessian and with central finite
differences of the gradient, on kernels whose inner reverse pass keeps floats and integers
(loop counts, branches taken) on its tape, grown while it runs."""
import functools
import math

import numba
import numpy as np
import pytest
from numba.core.runtime import _nrt_python, rtsys

from enzyme_py import UnsupportedError, derive_diff
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


_rng = np.random.default_rng(11)
CASES = {
    "cubic_residuals": (cubic_residuals, cubic_residuals_hessian,
                        (_rng.standard_normal((5, 4)), _rng.standard_normal(5))),
    "rosenbrock": (rosenbrock, rosenbrock_hessian, (100.0,)),
    "piecewise": (piecewise, piecewise_hessian, (1.5,)),
}
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
    for composition, got in hessians(name, X).items():
        np.testing.assert_allclose(got, H, rtol=1e-11, atol=1e-11 * np.abs(H).max(),
                                   err_msg=f"{name}: {composition} against the exact Hessian")


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
    was_enabled = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        d["fwd_over_rev"](x, u, g, tg, 1.5)
        d["rev_over_rev"](x, dx, u, 1.5)
        after = rtsys.get_allocation_stats()
    finally:
        if not was_enabled:
            _nrt_python.memsys_disable_stats()
    assert after.alloc - before.alloc >= 3          # the tape grew: new buffers were made
    assert after.alloc - before.alloc == after.free - before.free
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
    np.testing.assert_allclose(tg, exact, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dx, exact, rtol=1e-12, atol=1e-12)


def test_over_reverse_with_a_temporary_is_refused_and_the_suggested_fix_works():
    """A temporary holding active values makes the inner reverse pass tape its shadow's
    address; passing the array in instead (as the message says) works both ways round."""
    w, v, u = 0.7, np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.3, 0.1, -0.5, 0.2])
    H = differences_energy_hessian(X, w)
    rev_t = derive_diff(temporary_energy, "rev_temporary", ("dup", "const"))

    @numba.njit
    def temporary_dot(x, v, w):
        g = np.zeros_like(x)
        rev_t(x, g, w)
        return (g * v).sum()
    with pytest.raises(UnsupportedError, match=r"pointer read back from the tape of a "
                       r"reverse-mode derivative that is itself differentiated(.|\n)*fix: not "
                       r"supported yet: differentiate the forward derivative instead"):
        derive_diff(temporary_dot, None, ("dup", "const", "const"))(X, np.zeros(4), v, w)

    rev = derive_diff(differences_energy, "rev_energy", ("dup", "dup", "const"))

    @numba.njit
    def gradient_dot(x, v, w):
        g, d, dd = np.zeros_like(x), np.empty(x.shape[0] - 1), np.zeros(x.shape[0] - 1)
        rev(x, g, d, dd, w)
        return (g * v).sum()
    dx = np.zeros(4)
    derive_diff(gradient_dot, None, ("dup", "const", "const"))(X, dx, v, w)
    np.testing.assert_allclose(dx, H @ v, rtol=1e-12)
    value, tangent = derive_diff(gradient_dot, None, ("dup", "const", "const"),
                                 mode="forward")(X, u, v, w)
    assert tangent == pytest.approx(u @ H @ v, rel=1e-12)
