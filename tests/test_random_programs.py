"""Property-based tests on randomly generated programs (tests/support/progen.py).

Hypothesis draws a small Python program as source text (straight-line scalar code with
branches, min/max and math calls; counted, nested and while loops over a float carry; loops
over 1-D/2-D arrays, strided views, outputs and in-place updates; and the shapes users write
with arrays, tests/support/progen_shapes.py: slices and row views, temporaries, swaps,
@njit helpers returning tuples, tuples of floats and of arrays) plus a point. Points where a
branch/min/max/abs is within 1e-3 of flipping, where a decision changes inside the FD stencil,
where values are huge or where finite differences are noisy are rejected (``assume``) by
running an instrumented copy of the program in the Python interpreter, before anything is
compiled. Each surviving program is ``numba.njit``-ed and checked:

- forward mode against central finite differences (check_forward),
- reverse mode against central finite differences (check_reverse, incl. accumulation),
- forward against reverse: <J t, w> == <t, J^T w> (check_inner_product).

A clean UnsupportedError (naming the construct) is not a failure, but each test requires at
least MIN_SUPPORTED of the programs it compiled to be supported, and prints the share.

Runs are reproducible (``derandomize=True``, no example database). Set
``ENZYME_PROGEN_EXAMPLES=<n>`` to run more examples per test (bug hunting), and
``ENZYME_PROGEN_SEED=<k>`` to draw a different (still deterministic) set of programs.

Bugs found by the generator live at the bottom as explicit ``xfail(strict=True)`` regression
tests with their minimized source.
"""
from __future__ import annotations

import math
import os
import re
from collections import Counter

import numba
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, note, seed, settings

from enzyme_py import UnsupportedError
from tests.support import progen, progen_shapes
from tests.support.arrays import copy_args, make_shadow
from tests.support.gradcheck import Problem, assert_close, check_forward, check_reverse
from tests.support.kernel import Kernel

EXAMPLES = int(os.environ.get("ENZYME_PROGEN_EXAMPLES", "0")) or None
SEED = os.environ.get("ENZYME_PROGEN_SEED")
#: the least share of compiled programs per test that must be supported (not UnsupportedError)
MIN_SUPPORTED = 0.9


def _settings(n: int):
    s = settings(max_examples=EXAMPLES or n, deadline=None, derandomize=SEED is None,
                 database=None, print_blob=False,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                        HealthCheck.data_too_large,
                                        HealthCheck.large_base_example])

    def deco(fn):
        fn = s(fn)
        return seed(int(SEED))(fn) if SEED is not None else fn
    return deco


def _unsupported_names_construct(e: UnsupportedError) -> bool:
    """API.md: the message names the LLVM instruction or the called function."""
    text = str(e)
    return bool(e.what) and text.startswith("cannot differentiate:") and bool(
        e.instruction or re.search(r"@[\w.$\"]+|`[^`]+`|'[^']+'|\b\w+\(", e.what))


def check_inner_product(kernel: Kernel, args: tuple, fwd, rev, atol: float,
                        rtol: float = 1e-8, seed: int = 0) -> None:
    """<J t, w> == <t, J^T w> with a random tangent t and random array seeds w (the return
    value's seed is 1.0), using the derivatives the FD checks compiled.

    Like gradcheck.check_inner_product, but with an absolute floor ``atol``: a derivative
    that is analytically zero (``3*x * (0.5/x)``) comes out as +-1 ulp of the intermediate
    values, which a purely relative test calls a mismatch."""
    p = Problem(kernel, args)
    rng = np.random.default_rng(seed)
    t = p.random_x(rng)
    w = p.random_y_weights(rng)
    call, tangents = [], {}
    for i, a in enumerate(copy_args(args)):
        call.append(a)
        if i in p.diff:
            tangents[i] = make_shadow(a, t[i])
            call.append(tangents[i])
    res = fwd(*call)
    lhs_terms = [float(res[1])] if p.returns_float else []
    lhs_terms += [float(np.sum(np.asarray(tangents[i]) * w[i])) for i in p.arrays]
    call, shadows = [], {}
    for i, a in enumerate(copy_args(args)):
        call.append(a)
        if i in p.arrays:
            shadows[i] = make_shadow(a, w[i])
            call.append(shadows[i])
    grads = rev(*call)
    assert isinstance(grads, tuple) and len(grads) == len(p.scalars), grads
    jtw = dict(zip(p.scalars, grads))
    jtw.update({i: np.asarray(shadows[i]) for i in p.arrays})
    rhs_terms = [float(np.sum(np.asarray(t[i]) * jtw[i])) for i in p.diff]
    lhs, rhs = math.fsum(lhs_terms), math.fsum(rhs_terms)
    scale = math.fsum(abs(v) for v in lhs_terms + rhs_terms)
    tol = rtol * scale + atol
    assert abs(lhs - rhs) <= tol, (
        f"{kernel.name} inner product: <J t, w> = {lhs!r} but <t, J^T w> = {rhs!r} "
        f"(|diff| = {abs(lhs - rhs):.3g}, tol = {tol:.3g})")


def check_kernel(kernel: Kernel, args: tuple, value_scale: float = 1.0,
                 deriv_scale: float = 1.0) -> None:
    """Forward vs FD, reverse vs FD, and the inner product identity."""
    # central differences at step h carry ~eps |value| / h of rounding: a program whose
    # values grow large (acc doubled in a loop) resolves small derivatives only to that
    fd_floor = max(progen.FD_ATOL, 10 * np.finfo(np.float64).eps * value_scale / progen.FD_STEP)
    fwd = check_forward(kernel, args, atol=fd_floor).df
    rev = check_reverse(kernel, args, atol=fd_floor).df
    # rounding floor: a few ulps of the largest value times the largest derivative
    atol = 1e-14 * (1.0 + value_scale) * (1.0 + deriv_scale)
    check_inner_product(kernel, args, fwd, rev, atol)


def check_tuple_kernel(kernel: Kernel, args: tuple, params: list[str], derive=None) -> None:
    """A function returning a tuple of floats (API.md, "Functions that return arrays or
    tuples"): forward mode's tangent tuple against FD of each element, reverse mode with
    ``d_ret`` against the FD gradient of ``<d_ret, f(x)>``. ``derive`` replaces
    ``derive_diff`` (to test this checker)."""
    from enzyme_py import derive_diff
    derive = derive or derive_diff
    k = len(kernel.fn(*copy_args(args)))
    weights = tuple(float(v) for v in np.random.default_rng(1).uniform(-1.0, 1.0, k).round(3))
    scalarized = [_scalarized(kernel, params, w) for w in
                  [tuple(float(i == j) for j in range(k)) for i in range(k)] + [weights]]
    p = Problem(kernel, args)
    t = p.random_x(np.random.default_rng(0))
    fwd = derive(kernel.fn, f"d_{kernel.name}_fwd", ["dup"] * len(args), mode="forward")
    call = [v for i, a in enumerate(copy_args(args))
            for v in ((a, make_shadow(a, t[i])) if i in p.diff else (a,))]
    _, tangent = fwd(*call)
    for i, s in enumerate(scalarized[:k]):
        expected = Problem(s, args).fd_jvp(t)["ret"]
        assert_close(tangent[i], expected, 1e-5, 1e-8, f"{kernel.name} [forward] ret[{i}]")
    acts = ["active" if i in p.scalars else "dup" for i in range(len(args))]
    rev = derive(kernel.fn, f"d_{kernel.name}_rev", acts, mode="reverse")
    shadows = {i: make_shadow(a) for i, a in enumerate(args) if i in p.arrays}
    call = [v for i, a in enumerate(copy_args(args))
            for v in ((a, shadows[i]) if i in shadows else (a,))]
    grads = dict(zip(p.scalars, rev(*call, weights)))
    expected = Problem(scalarized[-1], args).fd_gradient(1.0)
    for i in p.diff:
        got = grads[i] if i in grads else shadows[i]
        assert_close(got, expected[i], 1e-5, 1e-8, f"{kernel.name} [reverse] d{params[i]}")


def _scalarized(kernel: Kernel, params: list[str], w: tuple) -> Kernel:
    """``sum_k w[k] * f(...)[k]`` as a kernel (for finite differences of a tuple result)."""
    plist = ", ".join(params)
    terms = " + ".join(f"{wk!r} * r[{i}]" for i, wk in enumerate(w))
    ns = {"_f": numba.njit(kernel.fn)}
    exec(f"def scalarized({plist}):\n    r = _f({plist})\n    return {terms}\n", ns)
    return Kernel(name=f"{kernel.name}_w", fn=ns["scalarized"], make_args=kernel.make_args,
                  outputs=kernel.outputs)


def check_case(case: progen.Case, outcomes: Counter) -> None:
    """Screen the case (reject unfit points), then check it (``check_case_outcome``) and count
    the outcome in ``outcomes``. An UnsupportedError counts as "unsupported" if it names the
    construct; the test then requires a minimum share of supported programs."""
    why = progen.screen(case)
    note(case.describe())
    if why is not None:
        note(f"rejected: {why}")
    assume(why is None)
    try:
        check_case_outcome(case)
    except UnsupportedError as e:
        assert _unsupported_names_construct(e), f"UnsupportedError names no construct: {e}"
        note(f"unsupported: {e}")
        event(f"UnsupportedError: {e.what[:60]}")
        outcomes["unsupported"] += 1
        return
    outcomes["ok"] += 1


def check_case_outcome(case: progen.Case) -> None:
    """The Numba primal against the Python program, then ``check_kernel`` (or
    ``check_tuple_kernel``). Raises UnsupportedError as is; other failures carry the
    program source and arguments."""
    kernel = Kernel(name=case.name, fn=case.function(), make_args=lambda rng: case.args,
                    outputs=case.outputs)
    try:
        # The generator's Python semantics must match Numba's, or the screening is moot.
        p = Problem(kernel, case.args)
        rets = () if p.base.ret is None else np.atleast_1d(np.asarray(p.base.ret, float))
        got = [float(r) for r in rets] + [
            v for i in p.arrays for v in np.asarray(p.base.arrays[i]).ravel(order="C")]
        np.testing.assert_allclose(got, progen.python_outputs(case), rtol=1e-10, atol=1e-12,
                                   err_msg="Numba primal differs from the Python program")
        if case.returns_tuple:
            check_tuple_kernel(kernel, case.args, case.params)
        else:
            check_kernel(kernel, case.args, case.value_scale, case.deriv_scale)
    except UnsupportedError:
        raise
    except Exception as e:
        raise AssertionError(f"{type(e).__name__}: {e}\n--- program ---\n{case.describe()}") \
            from e


def check_program(source: str, args: tuple, outputs: tuple[int, ...] = ()) -> None:
    """``check_kernel`` on a fixed program (regression tests for generator findings)."""
    name = source.split("def ", 1)[1].split("(", 1)[0]
    ns: dict = {"math": math, "np": np}
    exec(compile(source, f"<regression {name}>", "exec"), ns)
    kernel = Kernel(name=name, fn=ns[name], make_args=lambda rng: args, outputs=outputs)
    check_kernel(kernel, args)


def run_cases(strategy, n: int, what: str) -> None:
    """Check ``n`` drawn programs; require MIN_SUPPORTED of the compiled ones to be
    supported (an UnsupportedError is clean, but a generator whose programs are mostly
    refused tests nothing)."""
    outcomes: Counter = Counter()
    n = EXAMPLES or n

    @_settings(n)
    @given(case=strategy)
    def run(case):
        check_case(case, outcomes)

    run()
    check_share(outcomes, n, what)


def check_share(outcomes: Counter, n: int, what: str) -> None:
    """At least half of the ``n`` drawn programs were checked, and MIN_SUPPORTED of those
    were supported; prints the share."""
    compiled = outcomes["ok"] + outcomes["unsupported"]
    share = outcomes["ok"] / compiled if compiled else 0.0
    print(f"{what}: {outcomes['ok']} of {compiled} compiled programs supported ({share:.0%})")
    assert compiled >= n // 2, f"{what}: only {compiled} of {n} drawn programs were checked"
    assert share >= MIN_SUPPORTED, (
        f"{what}: only {share:.0%} of {compiled} programs supported (expected at least "
        f"{MIN_SUPPORTED:.0%}); {outcomes['unsupported']} raised UnsupportedError")


def test_scalar_programs():
    run_cases(progen.scalar_cases(), 12, "scalar programs")


def test_loop_programs():
    run_cases(progen.loop_cases(), 12, "loop programs")


def test_array_programs():
    run_cases(progen.array_cases(), 10, "array programs")


def test_shape_programs():
    run_cases(progen_shapes.shape_cases(), 6, "shape programs")


def test_kernel_shaped_programs():
    run_cases(progen_shapes.kernel_cases(), 6, "kernel-shaped programs")


# --------------------------------------------------------------------------------------------
# The screening itself (no compilation)


def _branchy_case(body: progen.Expr, x: float, y: float) -> progen.Case:
    """if x > y: t = <body> else: t = y; return t"""
    em = progen.Emitter()
    em.if_(progen.Cmp(">", progen.Leaf("x"), progen.Leaf("y")))
    em.assign("t", body)
    em.else_()
    em.assign("t", progen.Leaf("y"))
    em.end()
    em.line("return t", "return _T.v(t)")
    return progen.Case("scalar", ["x", "y"], em, (x, y))


@pytest.mark.parametrize("body, x, y, verdict", [
    (progen.Leaf("x"), 1.0, 1.5, None),
    (progen.Leaf("x"), 1.0005, 1.0, "flipping"),         # branch within 1e-3 of a tie
    (progen.Bin("/", progen.Const(1.0), progen.Bin("-", progen.Leaf("x"), progen.Const(1.0))),
     1.01, 0.0, "denominator"),                           # near a pole
    (progen.Un("exp", progen.Bin("*", progen.Const(20.0), progen.Leaf("x"))), 1.0, 0.0,
     "exp"),                                              # huge value
    (progen.Un("sin", progen.Bin("*", progen.Const(3000.0), progen.Leaf("x"))), 1.0, 0.0,
     "noisy"),                                            # FD truncation error
], ids=["accept", "tie", "pole", "huge", "fd-noise"])
def test_screen(body, x, y, verdict):
    why = progen.screen(_branchy_case(body, x, y))
    if verdict is None:
        assert why is None
    else:
        assert why is not None and verdict in why, why


def test_unsupported_message_check():
    """An UnsupportedError is only accepted when it names the construct."""
    named = UnsupportedError("call to @llvm.frobnicate.f64", instruction="%r = call ...")
    assert _unsupported_names_construct(named)
    assert _unsupported_names_construct(UnsupportedError("call to `frobnicate`"))
    assert not _unsupported_names_construct(UnsupportedError("something went wrong"))


def test_share_check():
    check_share(Counter(ok=9, unsupported=1), 10, "programs")
    with pytest.raises(AssertionError, match=r"only 80% of 10 programs supported \(expected "
                                             r"at least 90%\); 2 raised UnsupportedError"):
        check_share(Counter(ok=8, unsupported=2), 10, "programs")
    with pytest.raises(AssertionError, match="only 4 of 10 drawn programs were checked"):
        check_share(Counter(ok=4), 10, "programs")


def test_tuple_return_checker():
    """check_tuple_kernel (for programs returning tuples, drawn once INCLUDE_TUPLE_RETURNS is
    on) accepts a hand-written derivative following API.md and rejects a wrong one."""
    def f(x, y, a):
        return x * y + a[0], x + math.sin(y) * a[1]

    def fwd(x, tx, y, ty, a, ta):
        value = f(x, y, a)
        return value, (tx * y + x * ty + ta[0], tx + math.cos(y) * ty * a[1] + math.sin(y) * ta[1])

    def rev(x, y, a, da, d_ret, wrong=False):
        d0, d1 = d_ret
        da[0] += d0
        da[1] += d1 * math.sin(y)
        return d0 * y + d1, d0 * x + d1 * math.cos(y) * (a[1] if not wrong else 1.0)

    def derive(fn, name, acts, mode):
        return fwd if mode == "forward" else derive.rev

    kernel = Kernel(name="tuple_ret", fn=f, make_args=lambda rng: ())
    args = (0.3, 0.8, np.array([0.5, -1.5]))
    derive.rev = rev
    check_tuple_kernel(kernel, args, ["x", "y", "a"], derive)
    derive.rev = lambda *call: rev(*call, wrong=True)
    with pytest.raises(AssertionError, match=r"tuple_ret \[reverse\] dy"):
        check_tuple_kernel(kernel, args, ["x", "y", "a"], derive)


# --------------------------------------------------------------------------------------------
# Programs the generator found (minimized). Each is a fixed check; real bugs are
# xfail(strict=True) until fixed.


def test_zero_derivative_by_cancellation():
    """3*x * (0.5/x) is constant: forward gives -1 ulp, reverse exactly 0; the inner-product
    check must allow for that (not a bug; found by test_loop_programs)."""
    check_program(
        "def gen_loop_475(x, y):\n"
        "    acc = (3.0 * x)\n"
        "    t0 = (x ** 2)\n"
        "    k1 = 0\n"
        "    while t0 < 1.0 and k1 < 2:\n"
        "        t0 += (((math.sin(0.5) + x) ** 2) + 0.3)\n"
        "        acc += math.sin(x)\n"
        "        k1 += 1\n"
        "    return (acc * (0.5 / x))\n",
        (1.354, 0.0))
