"""Memory kept between calls by split derivatives (API.md; issue 11, item 2): the forward half
takes the tape buffer the last reverse half parked, and the temporaries (with their shadows)
from their slots; the reverse half parks them again. A tape held by the user keeps what it
took: another forward half meanwhile allocates its own. A tape that dies unreversed releases
its temporaries. What each call still allocates (the tape object itself) is measured with the
other modes (tests/test_kept_memory.py)."""
import functools
import gc

import numba
import numpy as np
import pytest
from numba.core.runtime import rtsys

from enzyme_py import derive_diff
from tests.support.allocation_probe import with_temporary
from tests.support.gradcheck import check_reverse
from tests.support.kernel import kernel
from tests.support.nrt_stats import frees_by, nrt_statistics
from tests.test_kept_memory_forward import branch_temporary, cubes_gradient, zeroed_temporary
from tests.test_split import split_as_reverse


def _rows(rows: int):
    def make(rng):
        return (rng.standard_normal(4), rng.standard_normal((rows, 4)),
                rng.standard_normal(rows))
    return make


@pytest.mark.parametrize("fn", [with_temporary, zeroed_temporary, branch_temporary])
def test_split_halves_reusing_kept_memory_stay_right(fn):
    """Against finite differences, one compiled derivative called with 50 rows, then 7 (what
    is kept is big enough), then 200 (too small: replaced); the branch kernel on both paths."""
    for rows in (50, 7, 200):
        k = kernel(fn.__name__, fn, _rows(rows), const=(1, 2))
        for seed in (0, 1):
            args = k.args(seed)
            if fn is branch_temporary:
                args[0][0] = 0.5 if seed == 0 else -0.5
            check_reverse(k, args, derive=split_as_reverse)


@functools.cache
def halves():
    return derive_diff(with_temporary, None, ("dup", "const", "const"), mode="split")


def _problem(seed: int, rows: int):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(4), rng.standard_normal((rows, 4)), rng.standard_normal(rows)


def _live():
    gc.collect()
    s = rtsys.get_allocation_stats()
    return s.alloc - s.free, s.mi_alloc - s.mi_free


def test_tapes_held_at_once_each_have_their_own_memory():
    """The first tape holds what was kept; the second forward half allocates its own; the
    reverse halves in the other order, then a tape dropped unreversed, then a call keeping
    memory again: every gradient right, and over a round nothing is left behind (NRT
    statistics balanced)."""
    fwd, rev = halves()
    small, big = _problem(0, 9), _problem(1, 300)

    def round_trip(x, A, b):
        g = np.zeros(4)
        rev(x, g, A, b, 1.0, fwd(x, g, A, b)[1])
        return g
    round_trip(*small), round_trip(*big)               # compile; the kept memory exists
    with nrt_statistics():
        before = _live()
        for _ in range(3):
            grads = [np.zeros(4), np.zeros(4)]
            tapes = [fwd(x, g, A, b)[1] for (x, A, b), g in zip((small, big), grads)]
            for (x, A, b), g, tape in list(zip((small, big), grads, tapes))[::-1]:
                rev(x, g, A, b, 1.0, tape)
                np.testing.assert_allclose(g, cubes_gradient(x, A, b), rtol=1e-12)
            del tapes, tape
            unused = fwd(small[0], np.zeros(4), *small[1:])
            del unused                                  # its temporaries are released
            np.testing.assert_allclose(round_trip(*big), cubes_gradient(*big), rtol=1e-12)
        assert _live() == before


def test_release_frees_what_split_halves_keep():
    """Either half's `release()`: the parked temporary and its shadow freed (and the tape's
    buffer); later calls allocate again and are right."""
    fwd, rev = halves()
    x, A, b = _problem(2, 40)
    _, tape = fwd(x, np.zeros(4), A, b)
    rev(x, np.zeros(4), A, b, 1.0, tape)
    assert frees_by(rev.release, fwd.release) == [2, 0]
    g = np.zeros(4)
    rev(x, g, A, b, 1.0, fwd(x, g, A, b)[1])
    np.testing.assert_allclose(g, cubes_gradient(x, A, b), rtol=1e-12)


@numba.njit
def _held_in_njit(fwd, rev, x, A, b, g1, g2):
    """Two tapes alive at once inside `@njit` code."""
    _, t1 = fwd(x, g1, A, b)
    _, t2 = fwd(x, g2, A, b)
    rev(x, g2, A, b, 1.0, t2)
    rev(x, g1, A, b, 1.0, t1)


def test_tapes_held_at_once_in_njit_code():
    fwd, rev = halves()
    x, A, b = _problem(3, 25)
    g1, g2 = np.zeros(4), np.zeros(4)
    _held_in_njit(fwd, rev, x, A, b, g1, g2)
    for g in (g1, g2):
        np.testing.assert_allclose(g, cubes_gradient(x, A, b), rtol=1e-12)
