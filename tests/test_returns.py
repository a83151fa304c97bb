"""Functions that return tuples and arrays (API.md, "Functions that return arrays or tuples").

Reverse mode takes `d_ret`, the adjoint of the result with its structure, as the last
argument (array parts are consumed); forward mode returns `(value, tangent)` with the tangent
shaped like the value. Every case is checked against central finite differences (forward:
directional derivatives; reverse: the full gradient of <F(x), w>) and forward against reverse
(<J t, w> == <t, J^T w>).
"""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

import enzyme_py
from enzyme_py import ActivityError, UnsupportedError, autodiff, derive_diff


@numba.njit
def polar(x, y):
    return math.hypot(x, y), math.atan2(y, x)


def two_floats(a, b):
    return a * b, a + math.sin(b)


def sum_and_squares(x):
    out = np.empty(x.shape[0])
    s = 0.0
    for i in range(x.shape[0]):
        out[i] = x[i] * x[i]
        s += math.exp(x[i])
    return s, out


def squares(x):
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = x[i] * x[i] + 1.0
    return out


def outer_2d(x, y):
    out = np.zeros((x.shape[0], y.shape[0]))
    for i in range(x.shape[0]):
        for j in range(y.shape[0]):
            out[i, j] = x[i] * math.sin(y[j])
    return out


def numpy_expression(x, y):
    return np.sin(x) * 2.0 + x * y


def scaled_matrix(a, s):
    return np.cos(a) * s


def via_helper(x, y):
    r, t = polar(x, y)
    return r * math.cos(t) + r * r


def helper_tuple(x, y):
    return polar(x * 2.0, y)


def tail_view(x):
    return x[1:]


def identity(x):
    return x


def transposed(a):
    return a.T


def fill(x, out):
    for i in range(x.shape[0]):
        out[i] = 2.0 * x[i] * x[i]
    return out


def padded(x):
    out = np.zeros(x.shape[0] + 2)
    for i in range(x.shape[0]):
        out[i + 1] = math.exp(x[i])
    return out


def transposed_fresh(a):
    return np.sin(a).T


def fresh_and_its_view(x):
    a = x * x
    return a, a[1:]


def reversed_fresh(x):
    return np.cos(x)[::-1]


def value_and_view(x):
    return x[0] * x[1], x[::2]


def with_constants(x):
    return x.sum() * 2.0, x.shape[0], np.arange(3), np.zeros(2)


def int_range(x):
    return np.arange(x.shape[0])


def layer_out(W, V, x):
    """A hidden layer h (filled once, read per (m, k)) feeding the returned outputs: not kept
    between calls (the function returns memory), h is held until its reverse and reloaded."""
    h = np.empty(W.shape[0])
    for k in range(W.shape[0]):
        o = 0.0
        for i in range(W.shape[1]):
            o += W[k, i] * x[i]
        h[k] = math.tanh(o)
    out = np.zeros(V.shape[0])
    for m in range(V.shape[0]):
        for k in range(V.shape[1]):
            out[m] += V[m, k] * h[k]
    return out


def rng_args(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return tuple(float(rng.uniform(0.3, 1.2)) if s == () else rng.uniform(0.3, 1.2, s)
                 for s in shapes)


# (id, function, argument shapes, ret)
CASES = [
    ("two-floats", two_floats, ((), ()), None),
    ("float-and-array", sum_and_squares, ((4,),), None),
    ("fresh-1d", squares, ((5,),), None),
    ("fresh-2d", outer_2d, ((3,), (4,)), None),
    ("numpy-expr", numpy_expression, ((4,), (4,)), None),
    ("numpy-expr-2d", scaled_matrix, ((2, 3), ()), None),
    ("helper-returns-tuple", helper_tuple, ((), ()), None),
    ("view-of-input", tail_view, ((5,),), None),
    ("input-itself", identity, ((3,),), None),
    ("transposed-input", transposed, ((2, 3),), None),
    ("float-and-view", value_and_view, ((5,),), None),
    ("returns-its-output", fill, ((3,), (3,)), None),
    ("partly-filled-zeros", padded, ((3,),), None),
    ("transposed-fresh", transposed_fresh, ((2, 3),), None),
    ("fresh-and-its-view", fresh_and_its_view, ((4,),), None),
    ("reversed-fresh", reversed_fresh, ((4,),), None),
    ("held-temporary", layer_out, ((4, 3), (2, 4), (3,)), None),
]
PER_ELEMENT = [
    ("first-only", sum_and_squares, ((4,),), ("active", "const")),
    ("second-only", sum_and_squares, ((4,),), ("const", "active")),
    ("second-float", two_floats, ((), ()), ("const", "active")),
]

_derived: dict = {}
_primals: dict = {}


def _primal(fn):
    if fn not in _primals:
        _primals[fn] = numba.njit(fn)
    return _primals[fn]


def derived(fn, mode, **kw):
    key = (fn, mode, tuple(sorted(kw.items())))
    if key not in _derived:
        _derived[key] = (derive_diff(fn, None, _activities(fn, mode), mode=mode, **kw))
    return _derived[key]


_shapes: dict = {}


def _activities(fn, mode):
    return ["dup" if s != () or mode == "forward" else "active" for s in _shapes[fn]]


def _copy(a):
    return a.copy() if isinstance(a, np.ndarray) else a


def _parts(value, ret):
    """The differentiated parts of a result, in order."""
    items = list(value) if isinstance(value, tuple) else [value]
    keep = ret if isinstance(ret, tuple) else ("active",) * len(items)
    return [v for v, k in zip(items, keep) if k == "active"]


def _flat(parts) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(p, dtype=float)) for p in parts])


def _rebuild(args, flat):
    out, k = [], 0
    for a in args:
        n = np.size(a)
        out.append(float(flat[k]) if np.ndim(a) == 0 else flat[k:k + n].reshape(np.shape(a)))
        k += n
    return tuple(out)


def _outputs(fn, args, ret) -> np.ndarray:
    return _flat(_parts(_primal(fn)(*[_copy(a) for a in args]), ret))


def fd_jvp(fn, args, t, ret, h=1e-6) -> np.ndarray:
    x = _flat(args)
    plus = _outputs(fn, _rebuild(args, x + h * t), ret)
    minus = _outputs(fn, _rebuild(args, x - h * t), ret)
    return (plus - minus) / (2 * h)


def forward_jvp(fn, args, t) -> tuple:
    """(value, J t) from the forward derivative."""
    df = derived(fn, "forward")
    tangents = _rebuild(args, t)
    call = [v for a, ta in zip(args, tangents) for v in (_copy(a), ta)]
    value, tangent = df(*call)
    return value, _flat(_parts(tangent, None))


def reverse_vjp(fn, args, w, ret=None, return_primal=False) -> tuple:
    """(J^T w, d_ret as passed, what df returned) from the reverse derivative."""
    kw = {k: v for k, v in (("ret", ret), ("return_primal", return_primal)) if v}
    df = derived(fn, "reverse", **kw)
    value = _primal(fn)(*[_copy(a) for a in args])
    parts = _parts(value, ret)
    seeds, k = [], 0
    for p in parts:
        n = np.size(p)
        seeds.append(float(w[k]) if np.ndim(p) == 0 else w[k:k + n].reshape(np.shape(p)).copy())
        k += n
    d_ret = seeds[0] if len(seeds) == 1 and not isinstance(ret, tuple) and \
        not isinstance(value, tuple) else tuple(seeds)
    shadows = [np.zeros_like(a) if np.ndim(a) else None for a in args]
    call = []
    for a, s in zip(args, shadows):
        call += [_copy(a)] + ([s] if s is not None else [])
    out = df(*call, d_ret)
    grads = iter(out[1] if return_primal else out)
    vjp = [s if s is not None else next(grads) for s in shadows]
    return _flat(vjp), d_ret, out


def _check(fn, shapes, ret=None):
    _shapes[fn] = shapes
    args = rng_args(*shapes)
    rng = np.random.default_rng(1)
    n_in, n_out = _flat(args).size, _outputs(fn, args, ret).size
    w = rng.standard_normal(n_out)
    vjp, d_ret, _ = reverse_vjp(fn, args, w, ret)
    for part in d_ret if isinstance(d_ret, tuple) else (d_ret,):
        if isinstance(part, np.ndarray):
            assert not part.any(), "d_ret array parts must be consumed (left zeroed)"
    fd_grad = np.array([fd_jvp(fn, args, e, ret) @ w for e in np.eye(n_in)])
    np.testing.assert_allclose(vjp, fd_grad, rtol=1e-6, atol=1e-8)
    if ret is not None:
        return
    for _ in range(2):
        t = rng.standard_normal(n_in)
        value, jvp = forward_jvp(fn, args, t)
        np.testing.assert_allclose(_flat(_parts(value, None)), _outputs(fn, args, None),
                                   rtol=1e-12)
        np.testing.assert_allclose(jvp, fd_jvp(fn, args, t, None), rtol=1e-6, atol=1e-8)
        assert jvp @ w == pytest.approx(t @ vjp, rel=1e-11, abs=1e-12)


@pytest.mark.parametrize("name, fn, shapes, ret", CASES + PER_ELEMENT,
                         ids=[c[0] for c in CASES + PER_ELEMENT])
def test_derivatives_match_finite_differences_and_each_other(name, fn, shapes, ret):
    _check(fn, shapes, ret)


def test_a_temporary_of_a_function_returning_an_array_is_reloaded():
    """h[k] (read per (m, k) by V[m, k] * h[k]) is reloaded: only tanh's result is taped."""
    report = enzyme_py.inspect(layer_out, ("dup", "dup", "dup"), stage="tape",
                     types="float64[:, ::1], float64[:, ::1], float64[::1]")
    total = next(line for line in report.splitlines() if "total tape per call" in line)
    assert "tape per call: 8 * W.shape[0] bytes" in total, total


def test_the_motivating_tuple_is_no_longer_zero():
    _shapes[two_floats] = ((), ())
    d = derived(two_floats, "reverse")
    assert d(1.5, 0.7, (1.0, 0.0)) == pytest.approx((0.7, 1.5))
    assert d(1.5, 0.7, (0.0, 1.0)) == pytest.approx((1.0, math.cos(0.7)))


def test_helper_returning_a_tuple_inside_a_float_function():
    _shapes[via_helper] = ((), ())
    d = derived(via_helper, "reverse")
    x, y = 0.8, 0.6
    gx, gy = d(x, y)
    r = math.hypot(x, y)                   # f = x + r^2 since r cos(atan2(y, x)) = x
    assert (gx, gy) == pytest.approx((1.0 + 2 * x, 2 * y), rel=1e-12)
    assert r > 0


def test_the_decorator_passes_ret_and_d_ret_through():
    deco = autodiff(mode="reverse", args=("active", "active"), ret=("const", "active"))
    polar_like = deco(two_floats)
    assert polar_like(1.5, 0.7) == pytest.approx((1.05, 1.5 + math.sin(0.7)))
    assert polar_like.derivative(1.5, 0.7, 1.0) == pytest.approx((1.0, math.cos(0.7)))


def test_forward_tangent_shapes():
    _shapes[outer_2d] = ((3,), (4,))
    x, y = rng_args(3, 4)
    value, tangent = derived(outer_2d, "forward")(x, np.ones(3), y, np.zeros(4))
    assert tangent.shape == value.shape == (3, 4)
    np.testing.assert_allclose(tangent, np.outer(np.ones(3), np.sin(y)))
    _shapes[two_floats] = ((), ())
    value, tangent = derived(two_floats, "forward")(1.5, 1.0, 0.7, 0.0)
    assert value == pytest.approx((1.05, 1.5 + math.sin(0.7)))
    assert tangent == pytest.approx((0.7, 1.0))


def test_forward_dupnoneed_returns_only_the_tangent():
    _shapes[squares] = ((5,),)
    x = np.arange(5.0)
    tangent = derived(squares, "forward", ret="dupnoneed")(x, np.ones(5))
    np.testing.assert_allclose(tangent, 2 * x)


def test_forward_tangent_of_a_view_is_the_same_view_of_the_input_tangent():
    _shapes[tail_view] = ((5,),)
    x, t = np.arange(5.0), np.arange(5.0) * 10
    value, tangent = derived(tail_view, "forward")(x, t)
    np.testing.assert_array_equal(value, x[1:])
    np.testing.assert_array_equal(tangent, t[1:])


def test_return_primal_gives_the_value_with_the_gradients():
    _shapes[sum_and_squares] = ((4,),)
    x = np.arange(4.0) / 4
    d = derived(sum_and_squares, "reverse", return_primal=True)
    d_x, d_out = np.zeros(4), np.ones(4)
    value, grads = d(x, d_x, (1.0, d_out))
    assert grads == ()
    assert value[0] == pytest.approx(np.exp(x).sum())
    np.testing.assert_allclose(value[1], x * x)
    np.testing.assert_allclose(d_x, np.exp(x) + 2 * x)
    assert not d_out.any()


def test_a_single_active_element_takes_a_bare_or_one_tuple_d_ret():
    _shapes[sum_and_squares] = ((4,),)
    d = derived(sum_and_squares, "reverse", ret=("const", "active"))
    x = np.arange(4.0)
    for seed in (np.ones(4), (np.ones(4),)):
        d_x = np.zeros(4)
        d(x, d_x, seed)
        np.testing.assert_allclose(d_x, 2 * x)


def test_derivative_with_d_ret_is_callable_from_njit_code():
    _shapes[squares] = ((5,),)
    d = derived(squares, "reverse")

    @numba.njit
    def vjp(x, w):
        d_x = np.zeros_like(x)
        d(x, d_x, w.copy())
        return d_x

    x, w = np.arange(5.0), np.linspace(1, 2, 5)
    np.testing.assert_allclose(vjp(x, w), 2 * x * w)


def test_inactive_parts_of_a_returned_tuple_have_zero_derivatives():
    """Integers, integer arrays and arrays that do not depend on the inputs: zero tangents
    (fresh zero arrays) in forward mode; no d_ret part in reverse mode for the non-floats,
    and a consumed but unused d_ret for the float array."""
    x = np.arange(3.0)
    f = derive_diff(with_constants, None, ["dup"], mode="forward")
    value, tangent = f(x, np.ones(3))
    assert value[:2] == (6.0, 3) and tangent[:2] == (6.0, 0)
    np.testing.assert_array_equal(value[2], np.arange(3))
    assert tangent[2].dtype == np.int64 and not tangent[2].any() and tangent[2].shape == (3,)
    assert tangent[3].dtype == np.float64 and not tangent[3].any() and tangent[3].shape == (2,)
    d = derive_diff(with_constants, None, ["dup"])
    d_x, seed = np.zeros(3), np.ones(2)
    d(x, d_x, (1.5, seed))
    np.testing.assert_array_equal(d_x, [3.0, 3.0, 3.0])
    assert not seed.any()


def test_the_derivative_ir_takes_and_consumes_d_ret():
    """Expected IR: reverse mode takes the exploded d_ret array after the shadows, checks its
    shape (raising ValueError) and seeds the returned array's shadow from it; forward mode
    returns the shadow allocation as the tangent."""
    text = enzyme_py.inspect(sum_and_squares, ["dup"], "reverse", types="float64[::1]",
                             stage="derivative")
    header = next(line for line in text.splitlines() if line.startswith("define "))
    assert re.search(r"ptr noalias %\"x'\.4\", .*double %d_ret\.0\.0, ptr %d_ret\.1\.0,.*"
                     r"ptr %d_ret\.1\.4, i64 %d_ret\.1\.5, i64 %d_ret\.1\.6\)", header), header
    assert re.search(r"br i1 %\S+, label %d_ret\.shape\.error, label %d_ret\.seeded", text)
    assert re.search(r"call void @enzyme_py\.seed_array\.double\.1\(ptr %\S+, "
                     r"ptr %d_ret\.1\.4,", text)
    assert "@NRT_decref" in text                    # the dropped primal array is released
    text = enzyme_py.inspect(squares, ["dup"], "forward", types="float64[::1]",
                             stage="derivative")
    assert re.search(r"store ptr %\S+, ptr %\"ret\.slot'\"", text), text


# ------------------------------------------------------------------------------ errors

def test_nothing_to_differentiate_is_an_activity_error():
    d = derive_diff(two_floats, None, ["active", "active"], ret=("const", "const"))
    with pytest.raises(ActivityError, match=r"nothing would be differentiated: two_floats has "
                       r"only const return values \(ret=\('const', 'const'\)\)") as err:
        d(1.0, 2.0)
    assert err.value.__cause__ is None and err.value.__context__ is None   # no Numba chain
    d = derive_diff(tail_view, None, ["const"], ret="const")
    with pytest.raises(ActivityError, match="nothing would be differentiated: tail_view has a "
                       "const return value"):
        d(np.ones(3))
    f = derive_diff(two_floats, None, ["dup", "dup"], mode="forward", ret="const")
    with pytest.raises(ActivityError, match="nothing would be differentiated"):
        f(1.0, 1.0, 2.0, 0.0)


def test_bad_per_element_ret_is_an_activity_error():
    with pytest.raises(ActivityError, match=r"ret element 1: 'dup' is not valid"):
        derive_diff(two_floats, None, ["active", "active"], ret=("active", "dup"))
    with pytest.raises(ActivityError, match=r"ret=\(\.\.\.\) per tuple element is for reverse"):
        derive_diff(two_floats, None, ["dup", "dup"], mode="forward", ret=("dup", "const"))
    d = derive_diff(two_floats, None, ["active", "active"], ret=("active",) * 3)
    with pytest.raises(ActivityError, match=r"ret=\('active', 'active', 'active'\) has 3 "
                       r"element\(s\), but the function returns UniTuple\(float64 x 2\)"):
        d(1.0, 2.0, (1.0, 1.0, 1.0))
    d = derive_diff(with_constants, None, ["dup"], ret=("active", "active", "const", "const"))
    with pytest.raises(ActivityError, match="ret element 1 is 'active' but the function returns "
                       "int64 there: only floats and float arrays can be differentiated"):
        d(np.ones(3), np.zeros(3), (1.0, 1.0))
    d = derive_diff(int_range, None, ["dup"], ret="active")
    with pytest.raises(ActivityError, match=r"ret='active' needs a float return value, but the "
                       r"function returns array\(int64, 1d, C\)"):
        d(np.ones(3), np.zeros(3), np.ones(3))


def test_d_ret_mistakes_are_clear_errors():
    _shapes[squares] = ((5,),)
    d = derived(squares, "reverse")
    with pytest.raises(ActivityError, match=r"missing d_ret: squares returns "
                       r"array\(float64, 1d, C\); pass the adjoint of the result"):
        d(np.ones(5), np.zeros(5))
    with pytest.raises(ValueError, match="d_ret must have the shape of the returned array"):
        d(np.ones(5), np.zeros(5), np.ones(4))
    _shapes[two_floats] = ((), ())
    with pytest.raises(ActivityError, match=r"d_ret has type float64; expected a tuple of 2"):
        derived(two_floats, "reverse")(1.0, 2.0, 1.0)
    g = derive_diff(via_helper, None, ["active", "active"])
    with pytest.raises(ActivityError, match="d_ret was given, but via_helper returns float64"):
        g(1.0, 2.0, 1.0)


def test_d_ret_must_be_writable_and_not_overlap_other_arrays():
    _shapes[identity] = ((3,),)
    d = derived(identity, "reverse")
    x, d_x = np.ones(3), np.zeros(3)
    with pytest.raises(ValueError, match="'d_ret' and the shadow of 'x' overlap in memory"):
        d(x, d_x, d_x)
    with pytest.raises(ValueError, match="'d_ret' and 'x' overlap in memory"):
        d(x, d_x, x[::-1])
    frozen = np.ones(3)
    frozen.flags.writeable = False
    with pytest.raises(ActivityError, match="d_ret is read-only: the derivative consumes it"):
        d(x, d_x, frozen)
    _shapes[sum_and_squares] = ((4,),)
    d = derived(sum_and_squares, "reverse")
    x, d_x = np.ones(4), np.zeros(4)
    with pytest.raises(ValueError, match=r"'d_ret\[1\]' and the shadow of 'x' overlap in memory"):
        d(x, d_x, (1.0, d_x))
    assert not d_x.any()


def _square_all(x):
    return x * x


def test_a_read_only_input_of_an_array_returning_function_is_accepted():
    """The fresh result's data pointer is not a write to the input (JAX hands read-only
    arrays to callbacks)."""
    d = derive_diff(_square_all, "d_square_all", ("dup",))
    x = np.array([1.0, -2.0, 3.0])
    x.flags.writeable = False
    d_x, d_ret = np.zeros(3), np.array([1.0, 0.5, 2.0])
    d(x, d_x, d_ret)
    np.testing.assert_allclose(d_x, 2 * x * np.array([1.0, 0.5, 2.0]))


def test_vector_forward_mode_refuses_tuple_returns():
    f = derive_diff(two_floats, None, ["dup", "dup"], mode="forward", width=2)
    with pytest.raises(ActivityError, match=r"width > 1.*does not support functions returning"):
        f(1.0, np.ones(2), 2.0, np.ones(2))


def test_returned_active_array_with_const_ret_names_the_fix():
    d = derive_diff(value_and_copy, None, ["dup"], ret=("active", "const"))
    d_x = np.zeros(3)
    d(np.arange(3.0), d_x, 1.0)               # the const array element is simply ignored
    np.testing.assert_allclose(d_x, [1.0, 0.0, 0.0])
    d = derive_diff(value_and_copy, None, ["dup"], mode="forward", ret="const")
    with pytest.raises(UnsupportedError, match=r"a returned array holds active values, but "
                       r"the return value is not differentiated \(ret='const'\)"):
        d(np.arange(3.0), np.ones(3))


def value_and_copy(x):
    return x[0], x * 2.0


def test_returned_arrays_are_not_leaked():
    """Primal arrays dropped by reverse mode, shadow arrays of returned allocations and
    d_ret seeds: NRT allocation statistics balance over repeated calls (a fresh process,
    since statistics must be enabled before Numba starts)."""
    script = textwrap.dedent("""
        import numpy as np
        from numba.core.runtime import rtsys
        from enzyme_py import derive_diff
        from tests.test_returns import sum_and_squares, squares, tail_view, with_constants
        x = np.linspace(0.1, 1, 4)
        calls = [
            (derive_diff(sum_and_squares, "a", ["dup"]), (x, np.zeros(4)), (1.0, np.ones(4))),
            (derive_diff(squares, "b", ["dup"], return_primal=True), (x, np.zeros(4)), np.ones(4)),
            (derive_diff(tail_view, "c", ["dup"]), (x, np.zeros(4)), np.ones(3)),
            (derive_diff(squares, "d", ["dup"], mode="forward"), (x, np.ones(4)), None),
            (derive_diff(sum_and_squares, "e", ["dup"], mode="forward", ret="dupnoneed"),
             (x, np.ones(4)), None),
            (derive_diff(tail_view, "f", ["dup"], mode="forward"), (x, np.ones(4)), None),
            (derive_diff(with_constants, "g", ["dup"], mode="forward"), (x, np.ones(4)), None),
            (derive_diff(with_constants, "h", ["dup"]), (x, np.zeros(4)), (1.0, np.ones(2))),
        ]
        for f, args, d_ret in calls:
            extra = () if d_ret is None else (d_ret,)
            f(*args, *extra)
            before = rtsys.get_allocation_stats()
            for _ in range(5):
                r = f(*args, *extra)
            del r
            after = rtsys.get_allocation_stats()
            print(after.alloc - before.alloc - (after.free - before.free),
                  after.mi_alloc - before.mi_alloc - (after.mi_free - before.mi_free))
    """)
    env = dict(os.environ, NUMBA_NRT_STATS="1")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, cwd=root, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.split("\n")[:8]
    assert lines == ["0 0"] * 8, out.stdout


def with_flags(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i] * y
    return (s, x[0] > 0, x.shape[0], np.argmax(x), int(x[1]), len(x), math.sin(y) * x[2],
            y < 0.5)


def test_integer_and_boolean_tuple_elements_get_zero_tangents_in_every_mode():
    """Issue 24 item 8: booleans (comparisons) and integers (shape, argmax, int(), len) in a
    returned tuple have zero tangents in forward mode and take no d_ret part in reverse and
    split mode; the float elements are checked against finite differences and forward
    against reverse."""
    x, y, t_x, t_y = np.array([0.7, 2.4, -1.3]), 0.3, np.array([0.5, -1.0, 2.0]), 0.8
    f = numba.njit(with_flags)
    value, tangent = derive_diff(f, None, ["dup", "dup"], mode="forward")(x, t_x.copy(), y, t_y)
    assert value == f(x, y)
    assert tangent[1] is False and tangent[7] is False
    assert tangent[2:6] == (0, 0, 0, 0)
    h = 1e-6
    plus, minus = f(x + h * t_x, y + h * t_y), f(x - h * t_x, y - h * t_y)
    for k in (0, 6):
        assert tangent[k] == pytest.approx((plus[k] - minus[k]) / (2 * h), rel=1e-7)
    w = (0.9, -1.7)
    d_x = np.zeros(3)
    (g_y,) = derive_diff(f, None, ["dup", "active"])(x, d_x, y, w)
    assert w[0] * tangent[0] + w[1] * tangent[6] == pytest.approx(t_x @ d_x + t_y * g_y,
                                                                  rel=1e-12)
    fwd, rev = derive_diff(f, None, ["dup", "active"], mode="split")
    d_x2 = np.zeros(3)
    split_value, tape = fwd(x, d_x2, y)
    assert split_value == value
    assert rev(x, d_x2, y, w, tape) == pytest.approx((g_y,), rel=1e-14)
    np.testing.assert_allclose(d_x2, d_x, rtol=1e-14)
