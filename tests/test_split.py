"""Split mode (API.md "Split mode"): `fwd, rev = derive_diff(f, "df", acts, mode="split")`.

The halves composed (`rev(*args, d_ret, fwd(*args)[1])`) must be reverse mode: the whole
kernel corpus goes through the reverse-mode checker (finite differences, accumulation,
consumed outputs) with split derivatives in place of reverse ones, and the inner product
identity against forward mode. Then what only split mode has: tapes used once and by their own
derivative, kept in `@njit` code, freed when they die unused (NRT statistics balanced).
"""

import numba
import numpy as np
import pytest

from enzyme_py import ActivityError, ArgumentError, derive_diff
from enzyme_py.tape import Tape
from tests._params import corpus_params
from tests.kernels import by_name
from tests.support.gradcheck import check_inner_product, check_reverse


def split_as_reverse(f, name, activities, mode="reverse", **kw):
    """A split derivative called with reverse mode's conventions (for the checkers)."""
    assert mode == "reverse"
    fwd, rev = derive_diff(f, name, activities, mode="split", **kw)
    n = len(fwd.enzyme.argument_labels())

    def df(*args):
        value, tape = fwd(*args[:n])
        if len(args) > n:
            return rev(*args, tape)
        if isinstance(value, float):
            return rev(*args, 1.0, tape)
        return rev(*args, tape)
    return df


# Where the cut matters: values crossing out of loops and branches (early exits, breaks, while
# loops), allocations, in-place updates, callees, outputs, views, float32 and the realistic
# kernels with the biggest tapes (the rest of the corpus runs through the same code).
_CUT_SHAPES = ("br_early_return", "loop_break", "loop_early_return", "ode_until",
               "while_true_halving", "local_buffer", "inplace_swap_scale", "inplace_cumsum",
               "callee_array", "callee_writes", "gauss_seidel", "rk4_pendulum", "gmm_loglik",
               "mlp_loss", "heat_step", "f32_inplace_recurrence", "out_accumulate", "matvec",
               "strided_transposed_matvec", "mandelbrot_smooth")


@pytest.mark.parametrize("k", corpus_params("reverse", [by_name(n) for n in _CUT_SHAPES]))
def test_split_halves_compose_to_reverse_mode(k):
    check_reverse(k, derive=split_as_reverse)


@pytest.mark.parametrize("name", ["gmm_loglik", "heat_step"])
def test_split_satisfies_the_inner_product_identity(name):
    def derive(f, fname, acts, mode, **kw):
        return split_as_reverse(f, fname, acts, **kw) if mode == "reverse" else \
            derive_diff(f, fname, acts, mode, **kw)
    check_inner_product(by_name(name), derive=derive)


def _loss(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s += np.sin(x[i]) * y[i] * x[i]
    return s


def _scaled(x, k):
    return x * k


_fwd, _rev = derive_diff(_loss, "d_loss", ("dup", "const"), mode="split")


def _data(n=6):
    return np.linspace(-1.0, 1.0, n), np.arange(1.0, n + 1.0)


def test_the_reverse_half_takes_the_result_adjoint():
    x, y = _data()
    value, tape = _fwd(x, np.zeros_like(x), y)
    assert value == pytest.approx(_loss(x, y))
    assert isinstance(tape, Tape) and tape.nbytes >= 24
    d_x = np.zeros_like(x)
    assert _rev(x, d_x, y, 3.0, tape) == ()
    np.testing.assert_allclose(d_x, 3.0 * (np.cos(x) * x + np.sin(x)) * y, rtol=1e-12)


def test_array_result_and_active_scalar():
    fwd, rev = derive_diff(_scaled, "d_scaled", ("dup", "active"), mode="split")
    x, d_x = np.array([1.0, -2.0, 0.5]), np.zeros(3)
    value, tape = fwd(x, d_x, 1.5)
    np.testing.assert_allclose(value, 1.5 * x)
    d_ret = np.array([1.0, 2.0, 3.0])
    (d_k,) = rev(x, d_x, 1.5, d_ret, tape)
    assert d_k == pytest.approx(float(np.dot(x, [1.0, 2.0, 3.0])))
    np.testing.assert_allclose(d_x, 1.5 * np.array([1.0, 2.0, 3.0]))
    assert not d_ret.any()                    # consumed like a reverse-mode d_ret
    value[:] = 0.0                            # the caller owns the returned array


def test_a_tape_is_used_once_and_by_its_own_derivative():
    x, y = _data()
    _, tape = _fwd(x, np.zeros_like(x), y)
    _rev(x, np.zeros_like(x), y, 1.0, tape)
    with pytest.raises(ValueError, match="this tape was already used"):
        _rev(x, np.zeros_like(x), y, 1.0, tape)
    other_fwd, other_rev = derive_diff(_loss, "d_loss2", ("dup", "const"), mode="split")
    _, tape = other_fwd(x, np.zeros_like(x), y)
    with pytest.raises(ValueError, match="this tape comes from another derivative"):
        _rev(x, np.zeros_like(x), y, 1.0, tape)


def test_tapes_live_in_njit_code():
    @numba.njit
    def gradient_steps(x, y, lr, steps):
        tapes = []
        for _ in range(steps):
            d_x = np.zeros_like(x)
            _, tape = _fwd(x, d_x, y)
            tapes.append(tape)
            _rev(x, d_x, y, 1.0, tapes[-1])
            x = x - lr * d_x
        return x, tapes[0].nbytes

    x, y = _data()
    got, nbytes = gradient_steps(x.copy(), y, 0.01, 5)
    expected = x.copy()
    for _ in range(5):
        d_x = np.zeros_like(expected)
        _, tape = _fwd(expected, d_x, y)
        _rev(expected, d_x, y, 1.0, tape)
        expected = expected - 0.01 * d_x
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    assert nbytes >= 24


def test_unused_and_used_tapes_release_everything(nrt_stats):
    fwd, rev = derive_diff(_scaled, "d_scaled_nrt", ("dup", "active"), mode="split")
    x, y = _data(50)
    _, tape = fwd(x, np.zeros(50), 2.0)          # compile outside the measurement
    rev(x, np.zeros(50), 2.0, np.ones(50), tape)
    _, tape = _fwd(x, np.zeros(50), y)
    del tape
    nrt_stats.start()
    for _ in range(3):
        value, tape = _fwd(x, np.zeros(50), y)
        del value, tape                          # never reversed: freed when it dies
        value, tape = fwd(x, np.zeros(50), 2.0)  # with the shadow of the returned array
        del value, tape
        value, tape = fwd(x, np.zeros(50), 2.0)
        rev(x, np.zeros(50), 2.0, np.ones(50), tape)
        del value, tape
    nrt_stats.assert_balanced()


def test_split_mode_errors():
    with pytest.raises(ActivityError, match="return_primal is not for split mode"):
        derive_diff(_loss, "d", ("dup", "const"), mode="split", return_primal=True)
    x, y = _data()
    _, tape = _fwd(x, np.zeros_like(x), y)
    with pytest.raises(ArgumentError, match="then the tape the forward half returned"):
        _rev(x, np.zeros_like(x), y, 1.0)
    with pytest.raises(ActivityError, match="missing d_ret"):
        _rev(x, np.zeros_like(x), y, tape)
