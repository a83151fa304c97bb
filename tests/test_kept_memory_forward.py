"""Memory kept between calls by forward and vector forward derivatives (API.md; issue 11,
item 2): their temporaries and the shadows of these are taken from slots and parked again at
every return (`ir_passes/diff/forward_kept.py`). Allocations per call are measured with the
reverse ones (tests/test_kept_memory.py); here: derivatives stay right when what is kept is
reused, too small, or absent (another thread holds it), and `release()` frees it."""
import functools
import math
import threading

import numba
import numpy as np
import pytest

from enzyme_py import derive_diff
from tests.support.allocation_probe import (arguments, expression_temporaries,
                                            temporary_out, with_temporary)
from tests.support.gradcheck import check_forward, check_inner_product, check_vector_forward
from tests.support.kernel import kernel
from tests.support.nrt_stats import frees_by

WIDTH = 3


def zeroed_temporary(x, A, b):
    """`np.zeros`, accumulated into: a reused array must be zeroed again."""
    t = np.zeros(A.shape[0])
    for j in range(x.shape[0]):
        for i in range(A.shape[0]):
            t[i] += A[i, j] * x[j]
    s = 0.0
    for i in range(t.shape[0]):
        s += math.sin(t[i] - b[i])
    return s


def branch_temporary(x, A, b):
    """A temporary on one path only: the other returns with nothing taken to park."""
    if x[0] > 0.0:
        t = A @ x - b
        return (t * t).sum()
    return x[1] * x[2]


def _rows(rows: int):
    def make(rng):
        return (rng.standard_normal(4), rng.standard_normal((rows, 4)),
                rng.standard_normal(rows))
    return make


@pytest.mark.parametrize("fn", [with_temporary, expression_temporaries, zeroed_temporary,
                                branch_temporary])
def test_forward_derivatives_reusing_kept_temporaries_stay_right(fn):
    """Against finite differences and the reverse derivative (inner product), one compiled
    derivative per mode, called with 50 rows, then 7 (what is kept is big enough), then 200
    (too small: replaced); the branch kernel on both paths."""
    for rows in (50, 7, 200):
        k = kernel(fn.__name__, fn, _rows(rows), const=(1, 2))
        for seed in (0, 1):
            args = k.args(seed)
            if fn is branch_temporary:
                args[0][0] = 0.5 if seed == 0 else -0.5
            check_forward(k, args)
            check_inner_product(k, args)
            check_vector_forward(k, WIDTH, args)


def cubes_gradient(x, A, b):
    """Of `with_temporary`: sum (A x - b)^3."""
    return 3.0 * A.T @ (A @ x - b) ** 2


@functools.cache
def repeated(vector: bool):
    """`@njit(nogil=True)`: `n` calls of the forward (or width-3) derivative of
    `with_temporary`, the tangents of its value into `out`."""
    if vector:
        d = derive_diff(temporary_out, None, ("dup", "const", "const", "dup"), mode="forward",
                        width=WIDTH)

        @numba.njit(nogil=True)
        def run(x, tx, A, b, out, n):
            value, tangent = np.zeros(1), np.zeros((WIDTH, 1))
            for _ in range(n):
                d(x, tx, A, b, value, tangent)
            out[:] = tangent[:, 0]
        return run
    d = derive_diff(with_temporary, None, ("dup", "const", "const"), mode="forward")

    @numba.njit(nogil=True)
    def run(x, tx, A, b, out, n):
        for _ in range(n):
            out[0] = d(x, tx, A, b)[1]
    return run


@pytest.mark.parametrize("vector", [False, True], ids=["forward", "vector"])
def test_forward_calls_from_several_threads_stay_right(vector):
    """Four threads call at once (no GIL), each with its own sizes: each takes what is kept
    or allocates its own, and every tangent is right."""
    run = repeated(vector)
    rng = np.random.default_rng(3)
    lanes = (WIDTH,) if vector else ()
    problems = [(rng.standard_normal(4), rng.standard_normal(lanes + (4,)),
                 rng.standard_normal((rows, 4)), rng.standard_normal(rows))
                for rows in (7, 3000, 64, 1500)]
    results = [np.zeros(WIDTH if vector else 1) for _ in problems]
    run(*problems[0], results[0], 1)                        # compile outside the threads
    threads = [threading.Thread(target=run, args=(*p, out, 300))
               for p, out in zip(problems, results)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for (x, tx, A, b), out in zip(problems, results):
        expected = np.atleast_2d(tx) @ cubes_gradient(x, A, b)
        np.testing.assert_allclose(out, expected, rtol=1e-12)


@pytest.mark.parametrize("name", ["forward_temporary", "vector_temporary"])
def test_release_frees_the_kept_temporary_and_its_shadow(name):
    """Two owners freed (the temporary, its shadow), none the second time; later calls
    allocate again and are right."""
    mode = {"width": WIDTH} if name.startswith("vector") else {}
    fn, acts = (temporary_out, ("dup", "const", "const", "dup")) if mode \
        else (with_temporary, ("dup", "const", "const"))
    d = derive_diff(fn, None, acts, mode="forward", **mode)
    args = arguments(name, rows=40)
    d(*args)
    assert frees_by(d.release, d.release) == [2, 0]
    x, tx, A, b = args[:4]
    got = d(*args)
    tangents = args[5][:, 0] if mode else got[1]
    np.testing.assert_allclose(tangents, np.atleast_2d(tx) @ cubes_gradient(x, A, b),
                               rtol=1e-12)


def test_a_forward_derivative_keeping_temporaries_is_differentiated_again():
    """Captured to be differentiated (reverse or forward over forward), a forward derivative
    allocates its temporaries afresh each call (`tape_captured.py`): exact Hessian products."""
    from tests.test_second_order import X, differences_energy_hessian, temporary_energy
    fwd = derive_diff(temporary_energy, "fwd_kept_energy", ("dup", "const"), mode="forward")

    @numba.njit
    def directional(x, v, w):
        return fwd(x, v, w)[1]
    w, v, u = 0.7, np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.3, 0.1, -0.5, 0.2])
    H = differences_energy_hessian(X, w)
    acts = ("dup", "const", "const")
    rev_over, fwd_over = (derive_diff(directional, None, acts, mode=mode)
                          for mode in ("reverse", "forward"))
    for _ in range(2):                                  # the second call: nothing kept
        dx = np.zeros(4)
        rev_over(X, dx, v, w)
        np.testing.assert_allclose(dx, H @ v, rtol=1e-12)
        assert fwd_over(X, u, v, w)[1] == pytest.approx(u @ H @ v, rel=1e-12)
