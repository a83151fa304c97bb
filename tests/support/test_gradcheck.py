"""Tests of the checkers themselves, against an FD-based stand-in for derive_diff.

The stand-in (``support.reference``) follows API.md, so every checker must accept it; with one
API rule broken on purpose (no accumulation, d_out not consumed, ...), the right checker must
reject it. This keeps the checkers honest before enzyme_py's own derivatives exist.
"""
from __future__ import annotations

import numpy as np
import pytest

from tests.kernels import by_name, params
from tests.support.arrays import copy_args, make_shadow
from tests.support.gradcheck import (activities, check_all, check_forward, check_inner_product,
                                     check_reverse, check_vector_forward, fd_gradient, fd_jvp)
from tests.support.reference import reference_derive

SAMPLE = [by_name(n) for n in (
    "m_sin", "br_nested", "int_power_var", "dot", "out_exp", "out_accumulate", "inplace_cumsum",
    "strided_transposed_matvec", "strided_out", "const_weights", "f32_out_tanh", "f32_arith",
    "newton_cubic", "heat_step", "sorted_weighted_sum", "rk4_pendulum", "mlp_loss")]


@pytest.mark.parametrize("k", params(SAMPLE))
def test_reference_derivative_passes_every_check(k):
    check_all(k, derive=reference_derive, width=3)
    check_reverse(k, derive=reference_derive, return_primal=True, seed=5)


def test_checks_accept_a_bare_function():
    def f(x, a):
        return x * a[0] + a[1] * a[1]
    args = (1.5, np.array([0.5, -2.0]))
    check_forward(f, args, derive=reference_derive)
    check_reverse(f, args, derive=reference_derive)


def test_checks_do_not_mutate_the_given_args():
    k = by_name("inplace_recurrence")
    args = k.args(0)
    before = copy_args(args)
    check_reverse(k, args, derive=reference_derive)
    check_forward(k, args, derive=reference_derive)
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)


def test_activities_follow_the_api():
    assert activities(by_name("out_axpy"), by_name("out_axpy").args(), "reverse") == \
        ("active", "dup", "dup", "dup")
    assert activities(by_name("out_axpy"), by_name("out_axpy").args(), "forward") == \
        ("dup", "dup", "dup", "dup")
    k = by_name("logistic_loss")
    assert activities(k, k.args(), "reverse") == ("const", "const", "dup", "active")
    k = by_name("int_power_var")
    assert activities(k, k.args(), "forward") == ("dup", "const")


def test_derive_receives_the_documented_call():
    calls = []

    def recording(f, name, acts, **kw):
        calls.append((f, name, tuple(acts), kw))
        return reference_derive(f, name, acts, **kw)

    k = by_name("const_weights")
    check_vector_forward(k, 2, derive=recording, cache=False)
    check_reverse(k, derive=recording, cache=False, check_accumulation=False)
    (f1, n1, a1, kw1), (_, _, _, kw2), (_, _, a3, kw3) = calls
    assert f1 is k.fn and n1.startswith("d_const_weights")
    assert a1 == ("const", "dup") and kw1 == {"mode": "forward", "width": 2}
    assert kw2 == {"mode": "forward"}
    assert a3 == ("const", "dup") and kw3 == {"mode": "reverse"}


def test_jit_options_pass_a_dispatcher():
    seen = []

    def recording(f, name, acts, **kw):
        seen.append(f)
        return reference_derive(f, name, acts, **kw)

    k = by_name("m_exp")
    check_forward(k, derive=recording, jit_options={"fastmath": True}, cache=False)
    assert seen[0].py_func is k.fn and seen[0].targetoptions.get("fastmath")


def test_fd_matches_analytic_gradients():
    a = np.array([0.3, -1.2, 2.0])
    g = fd_gradient(by_name("sum_sq"), (a,))
    np.testing.assert_allclose(g[0], 2 * a, rtol=1e-8)
    w = np.array([1.0, -2.0, 0.5])
    g = fd_gradient(by_name("out_exp"), (a, np.zeros(3)), weights={1: w})
    np.testing.assert_allclose(g[0], w * np.exp(a), rtol=1e-8)
    np.testing.assert_allclose(g[1], 0.0, atol=1e-12)  # a pure output: consumed
    jt = fd_jvp(by_name("out_exp"), (a, np.zeros(3)), {0: np.ones(3), 1: np.ones(3)})
    np.testing.assert_allclose(jt[1], np.exp(a), rtol=1e-8)


@pytest.mark.parametrize("view", ["every_other", "reversed", "transposed", "columns"])
def test_shadows_keep_the_primal_layout(view):
    base = np.arange(20.0).reshape(4, 5)
    a = {"every_other": base.ravel()[::2], "reversed": base.ravel()[::-1],
         "transposed": base.T, "columns": base[:, 1:]}[view]
    s = make_shadow(a, 1.0)
    assert s.shape == a.shape and s.strides == a.strides and np.all(s == 1.0)
    assert not np.shares_memory(s, a)
    v = make_shadow(a, width=3)
    assert v.shape == (3,) + a.shape and v[1].strides == a.strides
    v[1] = 2.0
    assert np.all(v[0] == 0) and np.all(v[2] == 0) and np.all(v[1] == 2.0)


# --- injected bugs ---------------------------------------------------------------------------


def buggy(bug):
    """A derive whose df breaks one API rule."""
    def derive(f, name, acts, **kw):
        df = reference_derive(f, name, acts, **kw)
        dup = [j for j, a in enumerate(_positions(acts)) if a == "shadow"]
        prim = [j for j, a in enumerate(_positions(acts)) if a == "primal"]

        def wrapped(*call):
            call = list(call)
            seeds = {j: np.array(call[j]) for j in dup if isinstance(call[j], np.ndarray)}
            if bug == "overwrite":        # d_p = grad instead of d_p += grad
                for j in seeds:
                    call[j][...] = 0.0
            if bug == "drop-scalar-tangent":
                call = [0.0 if (j in dup and isinstance(c, float)) else c
                        for j, c in enumerate(call)]
            saved = {j: np.array(call[j]) for j in prim if isinstance(call[j], np.ndarray)}
            out = df(*call)
            if bug == "no-consume":        # the seed is left in d_out (the last dup array)
                j = max(seeds)
                call[j][...] += seeds[j]
            if bug == "no-primal-writes":
                for j, s in saved.items():
                    call[j][...] = s
            if bug == "scale-grad":
                out = tuple(1.0001 * g for g in out)
            if bug == "negate-shadows":
                for j in seeds:
                    call[j][...] *= -1.0
            if bug == "swap-rows":
                for j in seeds:
                    call[j][...] = call[j][::-1].copy()
                if out is not None:
                    out = (out[0], out[1][::-1].copy())
            if bug == "tangent-only":
                out = out[1]
            return out
        return wrapped
    return derive


def _positions(acts):
    pos = []
    for a in acts:
        pos.append("primal")
        if a in ("dup", "dupnoneed"):
            pos.append("shadow")
    return pos


@pytest.mark.parametrize("bug, kernel, check, match", [
    ("overwrite", "dot", check_reverse, "must accumulate"),
    ("no-consume", "out_exp", check_reverse, "consumed"),
    ("no-primal-writes", "out_exp", check_reverse, "primal output"),
    ("no-primal-writes", "heat_step", check_forward, "primal output"),
    ("scale-grad", "m_sin", check_reverse, "arg 0"),
    ("drop-scalar-tangent", "m_sin", check_forward, "return tangent"),
    ("negate-shadows", "dot", check_inner_product, "inner product"),
    ("swap-rows", "matvec", lambda k, **kw: check_vector_forward(k, 3, **kw), "width=3"),
    ("tangent-only", "m_exp", check_forward, "expected \\(value, tangent\\)"),
])
def test_injected_bug_is_caught(bug, kernel, check, match):
    with pytest.raises(AssertionError, match=match):
        check(by_name(kernel), derive=buggy(bug), cache=False)


def test_accumulation_phase_catches_overwrite_even_with_zero_seeds():
    # With zeroed read-only shadows the first phase cannot tell += from =; the second can.
    k = by_name("out_axpy")

    def overwrite_second_call(f, name, acts, **kw):
        df = reference_derive(f, name, acts, **kw)
        state = {"n": 0}

        def wrapped(*call):
            state["n"] += 1
            if state["n"] == 3:  # the second call of the accumulation phase:
                call[2][...] = 0.0  # d_x is overwritten instead of accumulated into
            return df(*call)
        return wrapped

    with pytest.raises(AssertionError, match="after two calls"):
        check_reverse(k, derive=overwrite_second_call, cache=False)
