"""Custom derivatives (API.md "Custom derivatives"): `register_derivative` for `@njit`
functions with scalar and array arguments, `inactive`, and the scalar `register_rule`.

The rules are checked where they are used: inside loops of differentiated kernels, in both
modes, against finite differences and forward against reverse. A rule that is deliberately
twice the true derivative proves the pass calls the rule instead of differentiating the body.
"""
from __future__ import annotations

import ctypes.util
import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from numba import njit, types

import enzyme_py
from ir_passes.diff.rules import registry
from tests._params import kernel_checks
from tests.support.gradcheck import (check_forward, check_inner_product, check_reverse,
                                     run_check)
from tests.support.kernel import Kernel

# ----------------------------------------------------------------------------- scalar rule


@njit
def log1pexp(x):
    """log(1 + e^x) without overflow."""
    if x > 0.0:
        return x + np.log1p(np.exp(-x))
    return np.log1p(np.exp(x))


@njit
def log1pexp_fwd(x, t_x):
    return log1pexp(x), t_x / (1.0 + np.exp(-x))


@njit
def log1pexp_rev(x, d_ret):
    return (d_ret / (1.0 + np.exp(-x)),)


enzyme_py.register_derivative(log1pexp, forward=log1pexp_fwd, reverse=log1pexp_rev)


def softplus_sum(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s += log1pexp(a * x[i]) * x[i]
    return s


SOFTPLUS = Kernel("softplus_sum", softplus_sum,
                  lambda rng: (rng.uniform(-40.0, 40.0, 7), 0.7))


# ----------------------------------------------------------------------------- array rule


@njit
def energy(x, w, s, n):
    """s * sum(w[i] * x[i]**2 for i < n)."""
    e = 0.0
    for i in range(n):
        e += w[i] * x[i] * x[i]
    return s * e


@njit
def energy_fwd(x, t_x, w, t_w, s, t_s, n):
    e = t = 0.0
    for i in range(n):
        e += w[i] * x[i] * x[i]
        t += t_w[i] * x[i] * x[i] + 2.0 * w[i] * x[i] * t_x[i]
    return s * e, t_s * e + s * t


@njit
def energy_rev(x, d_x, w, d_w, s, n, d_ret):
    e = 0.0
    for i in range(n):
        e += w[i] * x[i] * x[i]
        d_x[i] += d_ret * s * 2.0 * w[i] * x[i]
        d_w[i] += d_ret * s * x[i] * x[i]
    return (d_ret * e,)


enzyme_py.register_derivative(energy, forward=energy_fwd, reverse=energy_rev)


def row_energies(X, w, s, out):
    for r in range(X.shape[0]):
        out[r] = energy(X[r], w, s, X.shape[1]) + X[r, 0]


ROWS = Kernel("row_energies", row_energies,
              lambda rng: (rng.standard_normal((4, 3)), rng.uniform(0.5, 1.5, 3), 0.8,
                           np.zeros(4)), outputs=(3,))


def const_weights(x, w):
    return energy(x, w, 1.5, x.shape[0]) * x[0]


CONST_W = Kernel("const_weights", const_weights,
                 lambda rng: (rng.standard_normal(5), rng.uniform(0.5, 1.5, 5)), const=(1,))


@pytest.mark.parametrize("kernel, check", kernel_checks([SOFTPLUS, ROWS, CONST_W]))
def test_derivatives(kernel, check):
    run_check(kernel, check)


def test_rule_far_in_the_tails():
    """exp(800) overflows: the rule's 1 / (1 + exp(-x)) still gives 1 and 0."""
    d = enzyme_py.derive_diff(softplus_sum, "d_tail", ("dup", "active"))
    x, dx = np.array([800.0, -800.0]), np.zeros(2)
    (da,) = d(x, dx, 1.0)
    assert np.allclose(dx, [1600.0, 0.0]) and da == pytest.approx(800.0 ** 2)


# ----------------------------------------------------------------------------- the rule is used


@njit
def doubled(x):
    return x * x


@njit
def doubled_fwd(x, t_x):
    return x * x, 4.0 * x * t_x          # twice the true tangent


@njit
def doubled_rev(x, d_ret):
    return (4.0 * x * d_ret,)


enzyme_py.register_derivative(doubled, forward=doubled_fwd, reverse=doubled_rev)


def sum_doubled(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += doubled(x[i])
    return s


def test_the_rule_not_the_body_is_differentiated():
    x = np.array([0.5, -1.0, 2.0])
    dx = np.zeros(3)
    enzyme_py.derive_diff(sum_doubled, "d_dbl", ("dup",))(x, dx)
    assert np.allclose(dx, 4.0 * x)                      # the body's derivative is 2x
    fwd = enzyme_py.derive_diff(sum_doubled, "f_dbl", ("dup",), mode="forward")
    value, tangent = fwd(x, np.ones(3))
    assert value == pytest.approx(np.sum(x * x)) and tangent == pytest.approx(4.0 * x.sum())


def test_vector_forward_calls_the_rule_per_lane():
    fwd = enzyme_py.derive_diff(sum_doubled, "v_dbl", ("dup",), mode="forward", width=2)
    x = np.array([0.5, -1.0, 2.0])
    _, tangent = fwd(x, np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]))
    assert np.allclose(tangent, [2.0, 8.0])


# ----------------------------------------------------------------------------- inactive


@njit
def observed(x):
    """An identity the pass must treat as a constant (like a logged or sampled value)."""
    return x


@njit
def tick(counter):
    counter[0] += 1.0
    return counter[0]


@njit
def noisy(scale):
    return scale * np.random.standard_normal()


enzyme_py.inactive(observed)
enzyme_py.inactive(tick)
enzyme_py.inactive(noisy)


def uses_inactive(x, counter):
    s = 0.0
    for i in range(x.shape[0]):
        tick(counter)
        s += x[i] * observed(x[i]) + 0.0 * noisy(x[i])
    return s


def test_inactive_results_are_constants_in_both_modes():
    x, dx, counter = np.array([0.5, -1.0, 2.0]), np.zeros(3), np.zeros(1)
    enzyme_py.derive_diff(uses_inactive, "d_inact", ("dup", "const"))(x, dx, counter)
    assert np.allclose(dx, x) and counter[0] == 3.0      # d/dx x*c = c, c = x held constant
    fwd = enzyme_py.derive_diff(uses_inactive, "f_inact", ("dup", "const"), mode="forward")
    _, tangent = fwd(x, np.ones(3), counter)
    assert tangent == pytest.approx(x.sum()) and counter[0] == 6.0


def writes_active(x):
    tick(x)
    return x[0] * x[1]


def test_inactive_function_writing_a_differentiated_array_is_refused():
    d = enzyme_py.derive_diff(writes_active, "d_wa", ("dup",))
    with pytest.raises(enzyme_py.UnsupportedError,
                       match=r"call to tick, declared inactive, which writes its array "
                             r"argument counter .*carries derivatives"):
        d(np.ones(2), np.zeros(2))


# ----------------------------------------------------------------------------- errors


def _plain(x):
    return x


def test_registration_requires_njit_functions():
    with pytest.raises(TypeError, match=r"^register_derivative: f must be a numba.njit "
                                        r"function or a numba.types.ExternalFunction, got "
                                        r"function \(a ctypes or cffi function is called "
                                        r"through a pointer: declare its symbol as "):
        enzyme_py.register_derivative(_plain, forward=log1pexp_fwd)
    with pytest.raises(TypeError, match=r"^register_derivative: the reverse rule must be a "
                                        r"numba.njit function, got function$"):
        enzyme_py.register_derivative(njit(_plain), reverse=_plain)
    with pytest.raises(TypeError, match=r"^register_derivative\(_plain\): give forward=, "
                                        r"reverse= or both$"):
        enzyme_py.register_derivative(njit(_plain))


def test_registration_checks_parameter_counts():
    @njit
    def two(x, y):
        return x * y

    @njit
    def bad_fwd(x):
        return x, x

    @njit
    def bad_rev(x, y):
        return (x, y)

    with pytest.raises(TypeError, match=re.escape(
            "register_derivative(test_registration_checks_parameter_counts.<locals>.two): the "
            "forward rule test_registration_checks_parameter_counts.<locals>.bad_fwd takes 1 "
            "parameters; for test_registration_checks_parameter_counts.<locals>.two, with 2, "
            "it takes f's parameters, each float and float array followed by its tangent")):
        enzyme_py.register_derivative(two, forward=bad_fwd)
    with pytest.raises(TypeError, match=r"the reverse rule .*bad_rev takes 2 parameters; .* "
                                        r"then d_ret .*: between 3 and 5$"):
        enzyme_py.register_derivative(two, reverse=bad_rev)


def test_registering_twice_is_refused():
    with pytest.raises(ValueError, match=r"^log1pexp is already given a derivative$"):
        enzyme_py.register_derivative(log1pexp, forward=log1pexp_fwd)
    with pytest.raises(ValueError, match=r"^tick is already declared inactive$"):
        enzyme_py.inactive(tick)


@njit
def cube(x, n):
    return x ** 3 + n


@njit
def cube_fwd(x, t_x, n, t_n):            # an integer has no tangent: one parameter too many
    return cube(x, n), 3.0 * x * x * t_x


@njit
def cube_rev(x, n, d_ret):
    return 3.0 * x * x * d_ret           # not a tuple


enzyme_py.register_derivative(cube, forward=cube_fwd, reverse=cube_rev)


def sum_cubes(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += cube(x[i], 2)
    return s


def test_rule_signature_is_checked_for_the_argument_types():
    fwd = enzyme_py.derive_diff(sum_cubes, "f_cubes", ("dup",), mode="forward")
    with pytest.raises(enzyme_py.UnsupportedError, match=re.escape(
            "the forward rule cube_fwd takes 4 parameters; for cube(float64, int64) it takes "
            "3: (x, t_x, n)")):
        fwd(np.ones(2), np.ones(2))
    rev = enzyme_py.derive_diff(sum_cubes, "d_cubes", ("dup",))
    with pytest.raises(enzyme_py.UnsupportedError, match=re.escape(
            "the reverse rule cube_rev(float64, int64, float64) returns float64, expected "
            "UniTuple(float64 x 1)")):
        rev(np.ones(2), np.zeros(2))


@njit
def softclip(v, c):
    """Raises ZeroDivisionError (Numba's default error model) where c + |v| == 0 (c an
    integer: no derivative)."""
    return c * v / (c + abs(v))


@njit
def softclip_fwd(v, t_v, c):
    return softclip(v, c), t_v * c * c / (c + abs(v)) ** 2


@njit
def softclip_rev(v, c, d_ret):
    y = softclip(v, c)              # a rule may call the primal (and so may raise)
    return (d_ret * c * c / (c + abs(v)) ** 2 + 0.0 * y,)


enzyme_py.register_derivative(softclip, forward=softclip_fwd, reverse=softclip_rev)


def clipped_energy(x, c):
    s = 0.0
    for i in range(x.shape[0]):
        s += softclip(x[i], c) * x[i]
    return s


def test_rules_that_call_the_primal_are_used_in_both_modes():
    """Issue 24 item 9: rules calling `softclip`, which may raise, used to be refused."""
    x, t, c = np.array([0.5, -2.0, 3.0, 0.1]), np.array([1.0, -0.5, 0.25, 2.0]), 2
    h = 1e-6
    fd = (clipped_energy(x + h * t, c) - clipped_energy(x - h * t, c)) / (2 * h)
    value, tangent = enzyme_py.derive_diff(clipped_energy, "f_clip", ("dup", "const"),
                                           mode="forward")(x, t, c)
    assert value == pytest.approx(clipped_energy(x, c), rel=1e-14)
    assert tangent == pytest.approx(fd, rel=1e-7)
    d_x = np.zeros(4)
    enzyme_py.derive_diff(clipped_energy, "d_clip", ("dup", "const"))(x, d_x, c)
    assert t @ d_x == pytest.approx(tangent, rel=1e-12)
    fwd, rev = enzyme_py.derive_diff(clipped_energy, "s_clip", ("dup", "const"), mode="split")
    d_x2 = np.zeros(4)
    _, tape = fwd(x, d_x2, c)
    rev(x, d_x2, c, 1.0, tape)
    np.testing.assert_allclose(d_x2, d_x, rtol=1e-14)


def test_an_exception_of_the_primal_called_by_a_rule_is_raised_as_the_primal_raises():
    x = np.array([0.5, 0.0])
    with pytest.raises(ZeroDivisionError):
        njit(clipped_energy)(x, 0)
    with pytest.raises(ZeroDivisionError):
        enzyme_py.derive_diff(clipped_energy, "f_clip0", ("dup", "const"), mode="forward")(
            x, np.ones(2), 0)
    with pytest.raises(ZeroDivisionError):
        enzyme_py.derive_diff(clipped_energy, "d_clip0", ("dup", "const"))(x, np.zeros(2), 0)


@njit
def raising(x):
    return x


@njit
def raising_fwd(x, t_x):
    if t_x > 1e300:
        raise ValueError("tangent too large")
    return x, t_x


@njit
def raising_rev(x, d_ret):
    if d_ret > 1e300:
        raise ValueError("too large")
    return (d_ret,)


enzyme_py.register_derivative(raising, forward=raising_fwd, reverse=raising_rev)


def scaled_raising(x):
    return raising(x[0]) * x[1]


def test_an_exception_a_rule_raises_is_raised_by_the_derivative(nrt_stats):
    """The rule raises where the primal does not: forward when the tangent is huge, reverse
    when the adjoint reaching the call (x[1]) is; otherwise the rules are used."""
    fwd = enzyme_py.derive_diff(scaled_raising, "f_raise", ("dup",), mode="forward")
    assert fwd(np.array([2.0, 3.0]), np.array([1.0, 0.5])) == (6.0, 4.0)
    with pytest.raises(ValueError, match="tangent too large"):
        fwd(np.array([2.0, 3.0]), np.array([1e301, 0.0]))
    rev = enzyme_py.derive_diff(scaled_raising, "d_raise", ("dup",))
    d_x = np.zeros(2)
    rev(np.array([2.0, 3.0]), d_x)
    np.testing.assert_array_equal(d_x, [3.0, 2.0])
    with pytest.raises(ValueError, match="too large"):
        rev(np.array([2.0, 1e301]), np.zeros(2))
    nrt_stats.start()                      # the reverse pass ran to its end: nothing leaks
    with pytest.raises(ValueError, match="too large"):
        rev(np.array([2.0, 1e301]), np.zeros(2))
    alloc, free, mi_alloc, mi_free = nrt_stats.delta()
    assert alloc == free and mi_alloc == mi_free
    split_fwd, split_rev = enzyme_py.derive_diff(scaled_raising, "s_raise", ("dup",),
                                                 mode="split")
    x = np.array([2.0, 3.0])
    _, tape = split_fwd(x, np.zeros(2))
    with pytest.raises(ValueError, match="too large"):
        split_rev(x, np.zeros(2), 1e301 / 3.0, tape)


@njit(inline="never")
def _raising_callee(x):
    return raising(x[0]) * x[1]


def calls_raising_callee(x):
    return _raising_callee(x) + x[0]


def test_an_exception_a_rule_raises_in_a_callee_that_stays_a_call_is_raised():
    """The rule runs in the callee's own tangent / reverse function: its exception reaches
    the derivative's caller through the callee's status."""
    fwd = enzyme_py.derive_diff(calls_raising_callee, "f_raise_callee", ("dup",),
                                mode="forward")
    assert fwd(np.array([2.0, 3.0]), np.array([1.0, 0.5])) == (8.0, 5.0)
    with pytest.raises(ValueError, match="tangent too large"):
        fwd(np.array([2.0, 3.0]), np.array([1e301, 0.0]))
    rev = enzyme_py.derive_diff(calls_raising_callee, "d_raise_callee", ("dup",))
    d_x = np.zeros(2)
    rev(np.array([2.0, 3.0]), d_x)
    np.testing.assert_array_equal(d_x, [4.0, 2.0])
    with pytest.raises(ValueError, match="too large"):
        rev(np.array([2.0, 1e301]), np.zeros(2))


@njit
def reverse_only(x):
    return x


@njit
def reverse_only_rev(x, d_ret):
    return (d_ret,)


enzyme_py.register_derivative(reverse_only, reverse=reverse_only_rev)


def sum_reverse_only(x):
    return reverse_only(x[0])


def test_a_missing_mode_is_refused():
    fwd = enzyme_py.derive_diff(sum_reverse_only, "f_rev_only", ("dup",), mode="forward")
    with pytest.raises(enzyme_py.UnsupportedError,
                       match=r"forward mode through reverse_only, whose registered derivative "
                             r"has no forward rule"):
        fwd(np.ones(1), np.ones(1))


# ----------------------------------------------------------------------------- register_rule

llvm.load_library_permanently(ctypes.util.find_library("m"))
# Scalar rules are global: they go into a copy of the registry for this module's tests only
# (tests/unit/ir_passes/diff/rules checks every registered rule, and
# tests/unit/enzyme_py/c/test_errors.py that j0 has none).
_y0 = types.ExternalFunction("y0", types.float64(types.float64))
_y1 = types.ExternalFunction("y1", types.float64(types.float64))
_jn = types.ExternalFunction("jn", types.float64(types.int32, types.float64))
_yn = types.ExternalFunction("yn", types.float64(types.int32, types.float64))


@njit
def _yn_rev(n, x, d_ret):               # yn' = (y_{n-1} - y_{n+1}) / 2
    return (d_ret * 0.5 * (_yn(n - 1, x) - _yn(n + 1, x)),)


@njit
def _jn_fwd(n, x, t_x):                 # jn' = (j_{n-1} - j_{n+1}) / 2
    return _jn(n, x), t_x * 0.5 * (_jn(n - 1, x) - _jn(n + 1, x))


@pytest.fixture(scope="module")
def external_rules():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(registry, "_RULES", dict(registry._RULES))
        enzyme_py.register_rule(                    # y1' = y0 - y1 / x
            "y1", lambda m, args, res: [m.sub(m.call("y0", args[0]), m.div(res, args[0]))])
        enzyme_py.inactive(_y0)
        enzyme_py.register_derivative(_yn, reverse=_yn_rev)
        enzyme_py.register_derivative(_jn, forward=_jn_fwd)
        yield


def bessel_rules(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += _yn(2, x[i]) * x[i] + _jn(2, x[i])
    return s


EXTERNAL = Kernel("bessel_rules", bessel_rules, lambda rng: (rng.uniform(0.5, 4.0, 5),))


def test_register_derivative_of_external_functions(external_rules):
    check_reverse(EXTERNAL)
    check_forward(EXTERNAL)
    check_inner_product(EXTERNAL)


def bessel_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += _y1(x[i]) * x[i]
    return s


BESSEL = Kernel("bessel_sum", bessel_sum, lambda rng: (rng.uniform(0.5, 4.0, 5),))


def test_register_rule_against_finite_differences(external_rules):
    check_reverse(BESSEL)
    check_forward(BESSEL)
    check_inner_product(BESSEL)


def bessel_inactive(x):
    return x[0] * _y0(x[0])


def test_inactive_external_function(external_rules):
    dx = np.zeros(1)
    enzyme_py.derive_diff(bessel_inactive, "d_y0", ("dup",))(np.array([2.0]), dx)
    import scipy.special
    assert dx[0] == pytest.approx(scipy.special.y0(2.0))


@pytest.mark.parametrize("symbol, why", [
    ("numba_ez_gelsd", r"^register_rule takes the partial derivatives of a scalar function; "
                       r"'numba_ez_gelsd' is not one: least squares .*Functions of your own "
                       r"taking arrays get a derivative with "),
    ("_ZN8__main__6helperB2v1E", r"^'_ZN8__main__6helperB2v1E' is the Numba-compiled function "
                                 r"__main__.helper: its body is differentiated directly, it "
                                 r"needs no rule; to give it a derivative of your own, use "),
    ("numba_xxdot", r"^register_rule takes the partial derivatives of a scalar function; "
                    r"'numba_xxdot' is not one: a library function with its own derivative "
                    r"\(use "),
])
def test_register_rule_refuses_what_is_not_a_scalar_function(symbol, why):
    with pytest.raises(ValueError, match=why + re.escape(
            "enzyme_py.register_derivative(f, forward=..., reverse=...)")):
        enzyme_py.register_rule(symbol, lambda m, args, res: [None])


def test_register_rule_twice_is_refused(external_rules):
    with pytest.raises(ValueError, match=r"^a derivative rule for 'y1' is already registered$"):
        enzyme_py.register_rule("y1", lambda m, args, res: [None])


# ----------------------------------------------------------------------------- reverse mode


def test_split_mode_keeps_the_arguments_for_the_rule():
    x = np.linspace(-2.0, 2.0, 4)
    dx_split, dx = np.zeros(4), np.zeros(4)
    fwd, rev = enzyme_py.derive_diff(softplus_sum, "s_sp", ("dup", "active"), mode="split")
    value, tape = fwd(x, dx_split, 0.7)
    grads = rev(x, dx_split, 0.7, 1.0, tape)
    expected = enzyme_py.derive_diff(softplus_sum, "d_sp", ("dup", "active"))(x, dx, 0.7)
    assert value == pytest.approx(softplus_sum(x, 0.7))
    assert grads == pytest.approx(expected) and np.allclose(dx_split, dx)


def overwrites_after_the_call(x, w):
    e = energy(x, w, 1.0, x.shape[0])
    x[0] = 0.0
    return e


def test_array_changed_before_the_reverse_pass_is_refused():
    d = enzyme_py.derive_diff(overwrites_after_the_call, "d_ow", ("dup", "dup"))
    with pytest.raises(enzyme_py.UnsupportedError, match=r"call to energy \(registered "
                       r"derivative\) with an array the function also writes \(array 'x' is "
                       r"dup\)(.|\n)*fix: pass a copy of the array to energy"):
        d(np.ones(3), np.zeros(3), np.ones(3), np.zeros(3))


def test_zero_shadows_of_inactive_arrays_are_released(nrt_stats):
    d = enzyme_py.derive_diff(const_weights, "d_cw", ("dup", "const"))
    x, dx, w = np.ones(5), np.zeros(5), np.ones(5)
    d(x, dx, w)
    nrt_stats.start()
    d(x, dx, w)
    alloc, free, mi_alloc, mi_free = nrt_stats.delta()
    assert alloc == free and mi_alloc == mi_free


# ------------------------------------------------------------------- function-pointer calls

def _cython_erf_address() -> int:
    pytest.importorskip("scipy.special.cython_special")
    from numba.extending import get_cython_function_address
    return get_cython_function_address("scipy.special.cython_special", "__pyx_fuse_1erf")


def test_a_call_through_a_function_pointer_names_the_call_and_the_fix_works():
    """Issue 24: scipy.special.cython_special's erf called through its address (a ctypes
    function) is refused with the call and how to register it (it blamed a "Python object
    operation"); the registration the message gives is then differentiated."""
    address = _cython_erf_address()
    erf_ptr = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_double)(address)

    def erf_sum(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += erf_ptr(x[i]) * x[i]
        return s

    x, t = np.array([0.1, -0.5, 1.3]), np.array([1.0, 2.0, -0.5])
    for mode, call in (("reverse", lambda d: d(x, np.zeros(3))),
                       ("forward", lambda d: d(x, t))):
        with pytest.raises(enzyme_py.UnsupportedError, match=(
                r"call through the function pointer %[\w.]+ \(a ctypes or cffi function, or "
                r"a compiled function's address, e.g. scipy.special.cython_special's(.|\n)*"
                r"test_custom_derivatives.py:\d+\n  code: s \+= erf_ptr\(x\[i\]\) \* x\[i\]"
                r"(.|\n)*fix: give the address a name and a derivative: llvmlite.binding."
                r"add_symbol\('my_f', address\)(.|\n)*enzyme_py.register_derivative\(my_f")):
            call(enzyme_py.derive_diff(erf_sum, f"erf_ptr_{mode}", ("dup",), mode=mode))

    llvm.add_symbol("enzyme_py_test_cs_erf", address)
    my_erf = types.ExternalFunction("enzyme_py_test_cs_erf", types.float64(types.float64))

    @njit
    def my_erf_fwd(v, t_v):
        return my_erf(v), t_v * 2.0 / np.sqrt(np.pi) * np.exp(-v * v)

    @njit
    def my_erf_rev(v, d_ret):
        return (d_ret * 2.0 / np.sqrt(np.pi) * np.exp(-v * v),)

    enzyme_py.register_derivative(my_erf, forward=my_erf_fwd, reverse=my_erf_rev)

    def named_erf_sum(x):
        s = 0.0
        for i in range(x.shape[0]):
            s += my_erf(x[i]) * x[i]
        return s

    primal = njit(named_erf_sum)
    assert primal(x) == pytest.approx(njit(erf_sum)(x), rel=1e-15)
    h = 1e-6
    fd = (primal(x + h * t) - primal(x - h * t)) / (2 * h)
    value, tangent = enzyme_py.derive_diff(named_erf_sum, "f_my_erf", ("dup",),
                                           mode="forward")(x, t)
    assert value == pytest.approx(primal(x), rel=1e-15)
    assert tangent == pytest.approx(fd, rel=1e-7)
    d_x = np.zeros(3)
    enzyme_py.derive_diff(named_erf_sum, "d_my_erf", ("dup",))(x, d_x)
    assert t @ d_x == pytest.approx(tangent, rel=1e-12)
