"""Split mode keeps what the reverse half reads from argument memory (API.md "Split mode").

The caller may write argument arrays between `fwd` and `rev`: `rev` must return the
derivative at the values `fwd` saw (loads kept on the tape, matrix-product operands copied),
unless `unchanged=(...)` promises those arrays do not change (then they are read again).
Checked with the halves composed around a caller that scribbles on every float array
argument between them (and puts the values back after `rev`, so the checkers see the primal's
results): against finite differences at the values `fwd` saw, and forward against reverse.
Then the sizes a tape was made for: `rev` with other shapes or scalars raises, from Python and
from `@njit` code, without using the tape up.
"""
from __future__ import annotations

import math

import numba
import numpy as np
import pytest

from enzyme_py import ActivityError, ArgumentError, UnsupportedError, derive_diff
from tests.kernels import by_name
from tests.support.gradcheck import check_inner_product, check_reverse
from tests.support.kernel import Kernel


def _halves_around_a_scribbling_caller(f, name, activities, mode="reverse", **kw):
    """A split derivative called with reverse mode's conventions, by a caller that writes
    every float array argument between the halves (and restores it after `rev`)."""
    assert mode == "reverse"
    fwd, rev = derive_diff(f, name, activities, mode="split", **kw)
    primal = [i for i, _ in _positions(activities)]
    n = len(fwd.enzyme.argument_labels())

    def df(*args):
        value, tape = fwd(*args[:n])
        saved = [(a, a.copy()) for a in (args[i] for i in primal)
                 if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
        for a, before in saved:
            a[...] = 2.0 * before + 1.0
        try:
            d_ret = args[n:] or ((1.0,) if isinstance(value, float) else ())
            return rev(*args[:n], *d_ret, tape)
        finally:
            for a, before in saved:
                a[...] = before
    return df


def _positions(activities):
    """(argument position, parameter index) of each primal argument of the derivative."""
    out, pos = [], 0
    for k, act in enumerate(activities):
        out.append((pos, k))
        pos += 2 if act in ("dup", "dupnoneed") else 1
    return out


def _with_forward(derive):
    def both(f, name, activities, mode, **kw):
        return derive(f, name, activities, **kw) if mode == "reverse" else \
            derive_diff(f, name, activities, mode, **kw)
    return both


def cubes(x, n):
    """A loop over a 1-D array and an integer bound."""
    s = 0.0
    for i in range(n):
        s += x[i] * x[i] * math.sin(x[i])
    return s


def weighted_rows(A, w):
    """A loop nest over a 2-D array, with a const weight vector."""
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s += w[j] * math.exp(0.3 * A[i, j]) * A[i, j]
    return s


def layer(W, x):
    """A matrix product of two arguments (its operands are copied whole)."""
    return np.sum(np.tanh(W @ x))


@numba.njit(inline="never")
def _cubes(x, n):
    s = 0.0
    for i in range(n):
        s += x[i] * x[i] * x[i]
    return s


def through_callee(x, n):
    """A callee that is not inlined reads the argument (its halves keep what they read)."""
    return _cubes(x, n) * 2.0


def _cubes_args(r):
    return (r.standard_normal(7), 7)


def _rows_args(r):
    return (r.standard_normal((4, 5)), r.standard_normal(5))


def _layer_args(r):
    return (r.standard_normal((3, 4)), r.standard_normal(4))


def through_norm(x):
    """np.linalg.norm's reverse reads x again: x is copied whole into the state."""
    return np.linalg.norm(x) ** 3


def doubled_norm(x):
    """The function writes x, then norm's reverse reads it again."""
    x[0] = 2.0 * x[0]
    return np.linalg.norm(x) ** 3


def _norm_args(r):
    return (np.linspace(0.5, 1.5, 6),)


def written_product(W, x):
    """The function writes x, then multiplies by it (the product's operand is copied)."""
    x[0] = 2.0 * x[0]
    return np.sum(np.tanh(W @ x))


KERNELS = [Kernel("cubes_1d", cubes, _cubes_args),
           Kernel("weighted_rows_2d", weighted_rows, _rows_args, const=(1,)),
           Kernel("layer_product", layer, _layer_args),
           Kernel("callee_reads", through_callee, _cubes_args),
           Kernel("norm_reads", through_norm, _norm_args),
           Kernel("written_product", written_product, _layer_args, outputs=(1,)),
           by_name("gmm_loglik"), by_name("heat_step"), by_name("inplace_cumsum")]


@pytest.mark.parametrize("kernel", KERNELS, ids=[k.name for k in KERNELS])
def test_rev_differentiates_at_the_values_fwd_saw(kernel):
    check_reverse(kernel, derive=_halves_around_a_scribbling_caller)
    check_inner_product(kernel, derive=_with_forward(_halves_around_a_scribbling_caller))


def _unchanged_arrays(f, name, activities, mode="reverse", **kw):
    """Split halves promising every array argument unchanged (and keeping the promise)."""
    args = KERNELS_ARGS[f]
    names = f.__code__.co_varnames[:f.__code__.co_argcount]
    unchanged = tuple(p for p, a in zip(names, args) if isinstance(a, np.ndarray))
    fwd, rev = derive_diff(f, name, activities, mode="split", unchanged=unchanged, **kw)
    n = len(fwd.enzyme.argument_labels())

    def df(*args):
        value, tape = fwd(*args[:n])
        d_ret = args[n:] or ((1.0,) if isinstance(value, float) else ())
        return rev(*args[:n], *d_ret, tape)
    return df


KERNELS_ARGS = {k.fn: k.args() for k in KERNELS[:5]} | {doubled_norm: _norm_args(None)}


@pytest.mark.parametrize("kernel", KERNELS[:5], ids=[k.name for k in KERNELS[:5]])
def test_unchanged_arrays_are_read_again(kernel):
    check_reverse(kernel, derive=_unchanged_arrays)
    check_inner_product(kernel, derive=_with_forward(_unchanged_arrays))


def test_unchanged_reads_the_new_values_and_keeps_less():
    x, n = np.linspace(0.2, 1.4, 50), 50
    kept, promised = (derive_diff(cubes, f"d_cubes_{k}", ("dup", "const"), mode="split",
                                  unchanged=u) for k, u in (("kept", ()), ("promised", ("x",))))
    sizes = {}
    for label, (fwd, rev) in (("kept", kept), ("promised", promised)):
        d_x = np.zeros(n)
        _, tape = fwd(x.copy(), d_x, n)
        sizes[label] = tape.nbytes
        rev(2.0 * x, d_x, n, 1.0, tape)
        at = x if label == "kept" else 2.0 * x      # a broken promise reads the new values
        np.testing.assert_allclose(d_x, 2 * at * np.sin(at) + at * at * np.cos(at),
                                   rtol=1e-12)
    assert sizes["kept"] - sizes["promised"] >= 8 * n, sizes


def test_a_tape_records_the_sizes_it_was_made_for():
    fwd, rev = derive_diff(weighted_rows, "d_rows_sizes", ("dup", "const"), mode="split")
    A, w = _rows_args(np.random.default_rng(1))
    d_A = np.zeros_like(A)
    _, tape = fwd(A, d_A, w)
    wide = np.zeros((4, 6))
    with pytest.raises(ArgumentError, match=r"'A' has shape \(4, 6\), but the tape was made "
                                            r"for shape \(4, 5\)"):
        rev(wide, np.zeros_like(wide), np.zeros(6), 1.0, tape)
    with pytest.raises(ArgumentError, match=r"'w' has shape \(4,\), but the tape was made for "
                                            r"shape \(5,\)"):
        rev(A, d_A, w[:4].copy(), 1.0, tape)
    rev(A, d_A, w, 1.0, tape)            # a refused call leaves the tape unused
    expected = np.zeros_like(A)
    rev_ref = derive_diff(weighted_rows, "d_rows_ref", ("dup", "const"))
    rev_ref(A, expected, w)
    np.testing.assert_allclose(d_A, expected, rtol=1e-13)
    with pytest.raises(ValueError, match="this tape was already used"):
        rev(A, d_A, w, 1.0, tape)


def test_strided_views_must_have_the_strides_of_fwd():
    fwd, rev = derive_diff(cubes, "d_cubes_strided", ("dup", "const"), mode="split")
    x, other = np.linspace(0.1, 1.0, 14)[::2], np.linspace(0.1, 1.0, 21)[::3]
    _, tape = fwd(x, np.zeros(14)[::2], 7)
    with pytest.raises(ArgumentError, match=r"'x' has strides \(24,\), but the tape was made "
                                            r"for strides \(16,\)"):
        rev(other, np.zeros(21)[::3], 7, 1.0, tape)
    d_x = np.zeros(14)[::2]
    rev(x, d_x, 7, 1.0, tape)
    np.testing.assert_allclose(d_x, 2 * x * np.sin(x) + x * x * np.cos(x), rtol=1e-12)


def test_a_scalar_the_tape_depends_on_must_match():
    fwd, rev = derive_diff(cubes, "d_cubes_n", ("dup", "const"), mode="split")
    x = np.linspace(0.1, 1.0, 7)
    _, tape = fwd(x, np.zeros(7), 7)
    with pytest.raises(ArgumentError, match="'n' is 3, but the tape was made with 7"):
        rev(x, np.zeros(7), 3, 1.0, tape)


def test_size_mismatch_raises_in_njit_callers():
    fwd, rev = derive_diff(cubes, "d_cubes_njit", ("dup", "const"), mode="split")

    @numba.njit
    def caller(x, y):
        d_x, d_y = np.zeros_like(x), np.zeros_like(y)
        _, tape = fwd(x, d_x, x.shape[0])
        rev(y, d_y, x.shape[0], 1.0, tape)
        return d_y

    x = np.linspace(0.1, 1.0, 7)
    np.testing.assert_allclose(caller(x, x.copy()),
                               2 * x * np.sin(x) + x * x * np.cos(x), rtol=1e-12)
    with pytest.raises(ArgumentError, match=r"'x' has shape \(9,\), but the tape was made for "
                                            r"shape \(7,\)"):
        caller(x, np.ones(9))


def test_a_call_rereading_an_array_the_function_writes_is_refused_unless_unchanged():
    """Refused, naming the parameter and the fix; with the promise, derived (and right)."""
    fwd, rev = derive_diff(doubled_norm, None, ("dup",), mode="split")
    with pytest.raises(UnsupportedError, match="(?s)np.linalg.norm.*reverse reads parameter "
                       "'x' again.*unchanged=\\('x',\\)"):
        fwd(np.ones(6), np.zeros(6))
    check_reverse(Kernel("doubled_norm", doubled_norm, _norm_args, outputs=(0,)),
                  derive=_unchanged_arrays)


def test_unchanged_errors():
    with pytest.raises(ActivityError, match="unchanged names 'z', which is not a parameter"):
        derive_diff(cubes, None, ("dup", "const"), mode="split", unchanged=("z",))
    with pytest.raises(ActivityError, match="unchanged=.* is for mode='split' only"):
        derive_diff(cubes, None, ("dup", "const"), unchanged=("x",))
    fwd, _ = derive_diff(cubes, None, ("dup", "const"), mode="split", unchanged=("n",))
    with pytest.raises(ActivityError, match="unchanged names 'n', which is a int64, not an "
                                            "array"):
        fwd(np.ones(3), np.zeros(3), 3)
