"""Bad activity specifications raise `enzyme_py.ActivityError` (a ValueError) naming the
parameter and the fix (API.md, "Activities" and "Errors").

What the Python signature alone decides is rejected by `derive_diff` / `@autodiff` itself,
before any call; what depends on argument types (dup on a float passed by value in reverse
mode, active on an integer or an array, non-float arrays) is rejected at the first call with
those types, from Python or from @njit code.
"""
from __future__ import annotations

import numba
import numpy as np
import pytest

from enzyme_py import ActivityError, EnzymePyError, autodiff, derive_diff


def scale(x, n):
    return x * n


def total(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    return s


def fill(a, out):
    for i in range(a.shape[0]):
        out[i] = 2.0 * a[i]


def test_activity_error_is_a_value_error():
    assert issubclass(ActivityError, ValueError)
    assert issubclass(ActivityError, EnzymePyError)


# --------------------------------------------------------------------------------- derive time

@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("acts", [["const"], ["const", "const", "const"], [], "dup"])
def test_wrong_number_of_activities(acts, mode):
    with pytest.raises(ActivityError) as err:
        derive_diff(scale, None, acts, mode=mode)
    msg = str(err.value)
    assert "scale has 2 parameter(s) (x, n)" in msg
    n = len(acts) if isinstance(acts, list) else 1
    assert f"but {n} activities were given" in msg


@pytest.mark.parametrize("word", ["duplicate", "Active", "grad", "", "none"])
def test_unknown_activity_word(word):
    with pytest.raises(ActivityError) as err:
        derive_diff(scale, None, [word, "const"])
    msg = str(err.value)
    assert "parameter 'x'" in msg and f"unknown activity {word!r}" in msg
    assert "const, dup, active, dupnoneed" in msg


def test_unknown_word_in_a_comma_separated_string_names_its_parameter():
    with pytest.raises(ActivityError, match=r"parameter 'n': unknown activity 'cnst'"):
        derive_diff(scale, None, "active, cnst")
    derive_diff(scale, None, "active, const")          # the string form itself is fine


def test_active_in_forward_mode_suggests_dup():
    with pytest.raises(ActivityError) as err:
        derive_diff(scale, None, ["active", "const"], mode="forward")
    msg = str(err.value)
    assert "parameter 'x'" in msg and "'active' is for reverse mode" in msg
    assert "mark it 'dup'" in msg


@pytest.mark.parametrize("width", [2, 8])
def test_width_above_one_in_reverse_mode(width):
    with pytest.raises(ActivityError, match=r"width > 1 .* only available in forward mode"):
        derive_diff(total, None, ["dup"], mode="reverse", width=width)


@pytest.mark.parametrize("width", [0, -1, 2.0, "2", None])
def test_width_must_be_a_positive_integer(width):
    with pytest.raises(ActivityError, match="width must be a positive integer"):
        derive_diff(total, None, ["dup"], mode="forward", width=width)


@pytest.mark.parametrize("mode", ["Reverse", "backward", "fwd", ""])
def test_unknown_mode(mode):
    with pytest.raises(ActivityError, match="mode must be 'forward', 'reverse' or 'split'"):
        derive_diff(total, None, ["dup"], mode=mode)


@pytest.mark.parametrize("mode, ret", [("reverse", "dup"), ("reverse", "dupnoneed"),
                                       ("forward", "active"), ("reverse", "bogus"),
                                       ("forward", "bogus")])
def test_ret_word_not_valid_in_mode(mode, ret):
    with pytest.raises(ActivityError) as err:
        derive_diff(total, None, ["dup"], mode=mode, ret=ret)
    msg = str(err.value)
    assert f"ret={ret!r} is not valid in {mode} mode" in msg
    expected = "active, const" if mode == "reverse" else "dup, dupnoneed, const"
    assert expected in msg


def test_return_primal_in_forward_mode():
    with pytest.raises(ActivityError, match="return_primal is for reverse mode"):
        derive_diff(total, None, ["dup"], mode="forward", return_primal=True)


def test_non_positional_parameters_are_named():
    def star(x, *rest):
        return x

    def kwonly(x, *, y=1.0):
        return x * y

    with pytest.raises(ActivityError, match=r"parameter 'rest' is variadic positional"):
        derive_diff(star, None, ["active", "const"])
    with pytest.raises(ActivityError, match=r"parameter 'y' is keyword-only"):
        derive_diff(kwonly, None, ["active", "const"])


def test_autodiff_checks_at_decoration_time():
    with pytest.raises(ActivityError, match="needs args="):
        @autodiff(mode="reverse")
        def f(x):
            return x

    with pytest.raises(ActivityError, match=r"g has 1 parameter\(s\) \(x\) but 2"):
        @autodiff(mode="reverse", args=("active", "const"))
        def g(x):
            return x

    with pytest.raises(ActivityError, match="parameter 'x'.*mark it 'dup'"):
        @autodiff(mode="forward", args=("active",))
        def h(x):
            return x


# --------------------------------------------------------------------------------- first call

def _first_call_raises(df, *args):
    with pytest.raises(ActivityError) as err:
        df(*args)
    return str(err.value)


@pytest.mark.parametrize("act", ["dup", "dupnoneed"])
def test_shadowed_float_scalar_in_reverse_suggests_active(act):
    df = derive_diff(scale, None, [act, "const"])       # fine until the types are known
    msg = _first_call_raises(df, 1.0, 0.0, 2.0)
    assert "parameter 'x' is a float passed by value (float64)" in msg
    assert "mark it 'active'" in msg


@pytest.mark.parametrize("mode, acts, args", [
    ("reverse", ["active", "active"], (1.0, 3)),
    ("reverse", ["active", "active"], (1.0, True)),
    ("forward", ["dup", "dup"], (1.0, 1.0, 3, 1)),
])
def test_integers_and_booleans_are_always_const(mode, acts, args):
    df = derive_diff(scale, None, acts, mode=mode)
    msg = _first_call_raises(df, *args)
    assert "parameter 'n' has type" in msg
    assert "only float scalars and float arrays can be differentiated" in msg
    assert msg.endswith("to differentiate it pass a float (e.g. 1.0, not 1), or mark it "
                        "'const' if it is not differentiated")


def test_the_same_derivative_works_when_the_types_fit():
    """Type checks are per signature: int n is rejected, float n is differentiated."""
    df = derive_diff(scale, None, ["active", "active"])
    _first_call_raises(df, 1.0, 3)
    assert df(1.5, 2.0) == pytest.approx((2.0, 1.5))


def test_active_array_suggests_dup():
    df = derive_diff(total, None, ["active"])
    msg = _first_call_raises(df, np.ones(3))
    assert "parameter 'a' is an array (array(float64, 1d, C))" in msg
    assert "mark it 'dup' and pass a shadow array" in msg


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_, np.complex128])
def test_non_float_arrays_cannot_be_dup(mode, dtype):
    df = derive_diff(total, None, ["dup"], mode=mode)
    a = np.ones(3, dtype)
    msg = _first_call_raises(df, a, np.ones(3, dtype))
    assert "parameter 'a' has type array(" in msg
    assert "mark it 'const'" in msg
    fix = "pass a float array (e.g. a.astype(np.float64))"
    assert (fix in msg) == (dtype is not np.complex128)


def test_explicit_active_return_needs_a_float_return():
    df = derive_diff(fill, None, ["dup", "dup"], ret="active")
    msg = _first_call_raises(df, np.ones(3), np.zeros(3), np.zeros(3), np.zeros(3))
    assert "ret='active' needs a float return value" in msg and "none" in msg


def test_forward_dupnoneed_return_needs_a_float_return():
    df = derive_diff(fill, None, ["dup", "dup"], mode="forward", ret="dupnoneed")
    msg = _first_call_raises(df, np.ones(3), np.ones(3), np.zeros(3), np.zeros(3))
    assert "ret='dupnoneed' needs a float return value" in msg


def test_vector_mode_scalar_tangent_must_be_an_array():
    df = derive_diff(scale, None, ["dup", "const"], mode="forward", width=2)
    msg = _first_call_raises(df, 1.0, 1.0, 2.0)
    assert "tangent of scalar 'x' must be a 1-D array of length width" in msg


def test_shadow_dtype_mismatch():
    df = derive_diff(total, None, ["dup"])
    msg = _first_call_raises(df, np.ones(3), np.zeros(3, np.float32))
    assert "shadow of 'a' has dtype float32, expected float64" in msg


def test_raised_at_the_first_call_from_njit_code():
    df = derive_diff(scale, None, ["dup", "const"])

    @numba.njit
    def caller(x):
        return df(x, 0.0, 2.0)

    with pytest.raises(ActivityError, match="parameter 'x' is a float passed by value"):
        caller(1.0)
