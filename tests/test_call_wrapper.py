"""The generated wrapper around every derivative and what it checks at call time.

- Generated code never uses the user's names: parameters named like the wrapper's internals
  (`d_x`, `t_x`, `np`, `impl`, ...), derivatives of derivatives and derivatives named like
  Python keywords work, checked against finite differences.
- Arrays the derivative writes (reverse-mode shadows, tangents of written arrays, written
  primals) must be writeable and share no memory with any other array argument.
- A derivative that raises releases every array it was given (reference counts and NRT
  counters stay balanced).
- Errors at the first call name the missing arguments and come without Numba's traceback.
"""
from __future__ import annotations

import math
import subprocess
import sys
import traceback

import numba
import numpy as np
import pytest

import enzyme_py
from enzyme_py import ActivityError, ArgumentError, derive_diff
from tests.support.gradcheck import check_all, check_forward, check_reverse
from tests.support.kernel import Kernel

MODES = ("reverse", "forward")


# --------------------------------------------------------------------------------- names

def collide(x, d_x, t_x, np, impl, __call, check_shadow, a1):
    """Parameters named like the wrapper's identifiers and like other parameters' shadows."""
    s = 0.0
    for i in range(x.shape[0]):
        s += math.sin(x[i]) * d_x[i] + t_x * x[i] * x[i]
    return s * np + impl * __call + math.exp(check_shadow * a1)


def test_parameter_names_that_look_like_generated_ones():
    rng = np.random.default_rng(0)
    args = (rng.standard_normal(4), rng.standard_normal(4), 0.7, 1.3, -0.4, 0.9, 0.2, -1.1)
    check_all(collide, args, width=2)


def bilinear(x, y):
    return x * x * y + math.sin(x * y)


FORWARD_TANGENT = derive_diff(bilinear, None, ("dup", "dup"), mode="forward", ret="dupnoneed")


def test_derivative_of_a_forward_derivative():
    """Reverse over forward and forward over forward through the forward derivative's own
    function (whose parameters are the generated identifiers): checked against finite
    differences of its tangent."""
    kernel = Kernel(name="forward_tangent", fn=FORWARD_TANGENT.py_func,
                    make_args=lambda rng: (1.0, 0.3, 2.0, -0.7))
    check_reverse(kernel)
    check_forward(kernel)


def test_hessian_vector_product_from_the_forward_dispatcher():
    """derive_diff on the dispatcher derive_diff returned: H v, against closed form and
    against central differences of the forward derivative itself."""
    hvp = derive_diff(FORWARD_TANGENT, "hvp", ("active", "const", "active", "const"))
    x, y, vx, vy = 1.0, 2.0, 0.3, -0.7
    c, s = math.cos(x * y), math.sin(x * y)
    hxx, hxy, hyy = 2 * y - y * y * s, 2 * x + c - x * y * s, -x * x * s
    got = hvp(x, vx, y, vy)
    assert got == pytest.approx((hxx * vx + hxy * vy, hxy * vx + hyy * vy), rel=1e-12)
    h = 1e-6
    fd = ((FORWARD_TANGENT(x + h, vx, y, vy) - FORWARD_TANGENT(x - h, vx, y, vy)) / (2 * h),
          (FORWARD_TANGENT(x, vx, y + h, vy) - FORWARD_TANGENT(x, vx, y - h, vy)) / (2 * h))
    assert got == pytest.approx(fd, rel=1e-7)


def test_a_derivative_of_a_derivative_names_its_arguments():
    with pytest.raises(ActivityError, match=r"d_bilinear has 4 parameter\(s\) \(x, t_x, y, "
                       r"t_y\) but 1 activities were given"):
        derive_diff(FORWARD_TANGENT, None, ("active",))
    d = derive_diff(FORWARD_TANGENT, "dd", ("active", "active", "dup", "const"))
    with pytest.raises(ActivityError, match="parameter 'y' is a float passed by value"):
        d(1.0, 0.3, 2.0, 0.0, -0.7)


@pytest.mark.parametrize("name, shown", [("if", "if"), ("class", "class"),
                                         ("my grad!", "my_grad_"), ("2nd", "_2nd"),
                                         ("d_bilinear", "d_bilinear")])
def test_derivative_names_need_not_be_identifiers(name, shown):
    d = derive_diff(bilinear, name, ("active", "active"))
    assert d.__name__ == shown
    x, y = 0.5, -1.5
    gx = 2 * x * y + y * math.cos(x * y)
    gy = x * x + x * math.cos(x * y)
    assert d(x, y) == pytest.approx((gx, gy), rel=1e-14)


# --------------------------------------------------------------------------------- read-only

def sumsq(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s


def sin_scale(a, out):
    for i in range(a.shape[0]):
        out[i] = 3.0 * a[i] + math.sin(a[i])


def pair_sum(a, b):
    """sum(a * b)"""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s


D_SUMSQ = {m: derive_diff(sumsq, None, ["dup"], mode=m) for m in MODES}
D_SIN_SCALE = {m: derive_diff(sin_scale, None, ["dup", "dup"], mode=m) for m in MODES}
D_PAIR_SUM = {m: derive_diff(pair_sum, None, ["dup", "dup"], mode=m) for m in MODES}
A = np.array([0.5, -1.25, 2.0, 0.75])


def read_only(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


def test_read_only_shadow_is_refused_untouched():
    shadow = read_only(np.zeros(4))
    with pytest.raises(ArgumentError, match=r"^the shadow of 'a' is written by the derivative "
                       r"but is a read-only array \(readonly array\(float64, 1d, C\)\); pass a "
                       r"writeable array"):
        D_SUMSQ["reverse"](A, shadow)
    assert not shadow.any()


@pytest.mark.parametrize("mode", MODES)
def test_read_only_output_is_refused(mode):
    out = read_only(np.zeros(4))
    with pytest.raises(ArgumentError, match="^'out' is written by the function but is a "
                       "read-only array"):
        D_SIN_SCALE[mode](A, np.zeros(4), out, np.ones(4))
    assert not out.any()


def test_read_only_output_tangent_is_refused_in_forward_mode():
    with pytest.raises(ArgumentError, match="^the tangent of 'out' is written by the derivative"):
        D_SIN_SCALE["forward"](A, np.ones(4), np.zeros(4), read_only(np.zeros(4)))


def test_read_only_inputs_and_input_tangents_are_fine():
    """Only written arrays must be writeable: a read-only primal input (both modes) and a
    read-only tangent of an input (forward) give the right derivative."""
    a, t = read_only(A), read_only(np.linspace(-1.0, 1.0, 4))
    da = np.zeros(4)
    assert D_SUMSQ["reverse"](a, da) == ()
    np.testing.assert_allclose(da, 2 * A, rtol=1e-15)
    value, tangent = D_SUMSQ["forward"](a, t)
    assert value == pytest.approx(float(A @ A)) and tangent == pytest.approx(float(2 * A @ t))


MEMMAP_SCRIPT = """
import sys, numpy as np
from enzyme_py import derive_diff, ArgumentError
path = sys.argv[1]
np.zeros(4).tofile(path)
shadow = np.memmap(path, dtype=np.float64, mode="r")
def sumsq(a):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * a[i]
    return s
try:
    derive_diff(sumsq, None, ["dup"])(np.ones(4), shadow)
except ArgumentError as exc:
    print("refused:", exc)
"""


def test_read_only_memmap_shadow_is_refused_not_a_crash(tmp_path):
    """Writing into a read-only memory map would crash the process: run it in a child."""
    run = subprocess.run([sys.executable, "-c", MEMMAP_SCRIPT, str(tmp_path / "shadow.bin")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "refused: the shadow of 'a' is written by the derivative but is a read-only" \
        in run.stdout


# --------------------------------------------------------------------------------- overlaps

def _overlap_message(a: str, b: str, written: str) -> str:
    return (f"{a} and {b} overlap in memory: the derivative writes {written} and assumes no "
            "other array argument shares its memory (pass separate arrays, e.g. a copy)")


def test_one_buffer_as_two_shadows_is_refused():
    shadow = np.zeros(4)
    with pytest.raises(ArgumentError) as err:
        D_PAIR_SUM["reverse"](A, shadow, A + 1.0, shadow)
    assert str(err.value) == _overlap_message("the shadow of 'a'", "the shadow of 'b'",
                                              "the shadow of 'a'")


def test_shadow_overlapping_a_primal_is_refused():
    a = A.copy()
    with pytest.raises(ArgumentError, match="^'a' and the shadow of 'a' overlap in memory"):
        D_SUMSQ["reverse"](a, a)
    b = A + 1.0
    with pytest.raises(ArgumentError, match="^the shadow of 'a' and 'b' overlap in memory"):
        D_PAIR_SUM["reverse"](A[::-1], b[::-1], b, np.zeros(4))   # b, seen backwards


def test_forward_output_tangent_overlapping_an_input_tangent_is_refused():
    t = np.ones(4)
    with pytest.raises(ArgumentError, match="^the tangent of 'a' and the tangent of 'out' "
                       "overlap in memory: the derivative writes the tangent of 'out'"):
        D_SIN_SCALE["forward"](A, t, np.zeros(4), t)


def test_disjoint_parts_of_one_buffer_are_accepted_and_correct():
    """Shadows in two halves of one buffer, and input tangents sharing memory in forward mode
    (only read), are legitimate calls; checked against finite differences."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(4), rng.standard_normal(4)
    buf = np.zeros(8)
    D_PAIR_SUM["reverse"](a, buf[:4], b, buf[4:])
    np.testing.assert_allclose(buf, np.concatenate([b, a]), rtol=1e-15)
    t = rng.standard_normal(4)
    _, tangent = D_PAIR_SUM["forward"](a, t, b, t)       # one direction for both
    h = 1e-6
    fd = (pair_sum(a + h * t, b + h * t) - pair_sum(a - h * t, b - h * t)) / (2 * h)
    assert tangent == pytest.approx(fd, rel=1e-8)


def test_empty_arrays_share_no_memory():
    """An empty array spans no address: one empty buffer as a primal and its shadow is no
    overlap (and nothing to differentiate)."""
    empty = np.zeros((3, 0))[0]
    assert D_SUMSQ["reverse"](empty, empty) == ()


def test_overlap_of_written_primal_with_an_input_still_refused():
    a = A.copy()
    with pytest.raises(ArgumentError, match="^'a' and 'out' overlap in memory: the derivative "
                       "writes 'out'"):
        D_SIN_SCALE["reverse"](a, np.zeros(4), a, np.zeros(4))


def test_first_overlapping_pair_in_order_is_named():
    """Two pairs overlap: the message names the first in argument order (one raise site
    picks the message of the pair `_first_overlap` found)."""
    shadow = np.zeros(4)
    with pytest.raises(ArgumentError) as err:
        D_PAIR_SUM["reverse"](shadow, shadow, A + 1.0, shadow)
    assert str(err.value) == _overlap_message("'a'", "the shadow of 'a'", "the shadow of 'a'")


def test_refused_overlapping_calls_release_every_array(nrt_stats):
    a = A.copy()
    D_SUMSQ["reverse"](a, np.zeros(4))
    nrt_stats.start()
    _raising_calls(D_SUMSQ["reverse"], (a, a), ArgumentError, n=20)
    alloc, free, mi_alloc, mi_free = nrt_stats.delta()
    assert (alloc, mi_alloc) == (free, mi_free)
    assert sys.getrefcount(a) == 2


# --------------------------------------------------------------------------------- leaks

@numba.njit(boundscheck=True)
def pick(a, i):
    s = 0.0
    for k in range(a.shape[0]):
        s += a[k] * a[k]
    return s * a[i]


def _raising_calls(df, args, error, n=100):
    for _ in range(n):
        with pytest.raises(error):
            df(*args)


@pytest.mark.parametrize("mode", MODES)
def test_raising_calls_release_every_array(mode):
    df = derive_diff(pick, None, ["dup", "const"], mode=mode)
    a, da = np.linspace(0.1, 1.0, 5), np.zeros(5)
    df(a, da, 1)
    before = sys.getrefcount(a), sys.getrefcount(da)
    _raising_calls(df, (a, da, 9), IndexError)
    _raising_calls(df, (a, np.zeros(4), 1), ArgumentError)       # refused by a check
    assert (sys.getrefcount(a), sys.getrefcount(da)) == before


def test_raising_vector_forward_calls_release_their_tangent_buffer(nrt_stats):
    df = derive_diff(pick, None, ["dup", "const"], mode="forward", width=3)
    a, ta = np.linspace(0.1, 1.0, 5), np.ones((3, 5))
    df(a, ta, 1)
    nrt_stats.start()
    _raising_calls(df, (a, ta, 9), IndexError, n=20)
    alloc, free, mi_alloc, mi_free = nrt_stats.delta()
    assert (alloc, mi_alloc) == (free, mi_free)
    assert sys.getrefcount(a) == sys.getrefcount(ta) == 2


# --------------------------------------------------------------------------------- first calls

def scale3(w, x, pred):
    return w[0] * x + pred[0]


def test_missing_shadows_are_named():
    d = derive_diff(scale3, "d_f", ["dup", "active", "dup"])
    with pytest.raises(ArgumentError) as err:
        d(np.ones(2), np.zeros(2), 1.0)
    assert str(err.value) == ("d_f expected 5 arguments (w, d_w, x, pred, d_pred), got 3: "
                              "missing pred, d_pred")


def _frames(exc: BaseException) -> int:
    return len(traceback.extract_tb(exc.__traceback__))


@pytest.mark.parametrize("call, error, match", [
    (lambda d: d(np.ones(2), np.zeros(2), 1, np.ones(2), np.zeros(2)), ActivityError,
     r"parameter 'x' has type int64: .*pass a float \(e\.g\. 1\.0, not 1\), or mark it "
     r"'const' if it is not differentiated"),
    (lambda d: d(np.ones(2), np.zeros(3), 1.0, np.ones(2), np.zeros(2)), ArgumentError,
     "the shadow of 'w' must have the shape and strides of 'w'"),
    (lambda d: d(np.ones(2), 0.0, 1.0, np.ones(2), np.zeros(2)), ArgumentError,
     r"the shadow of 'w' must be an array like 'w' \(array\(float64, 1d, C\)\), not float64"),
])
def test_first_call_errors_come_alone(call, error, match):
    """Our error from the call itself (at typing time or by the wrapper at run time): no Numba
    chain, a traceback of a few frames."""
    d = derive_diff(scale3, "d_f", ["dup", "active", "dup"])
    with pytest.raises(error, match=match) as err:
        call(d)
    exc = err.value
    assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)
    assert _frames(exc) <= 3, traceback.format_tb(exc.__traceback__)


@pytest.mark.parametrize("tangent, shown", [(1, "int64"), (np.float32(1.0), "float32"),
                                             (np.ones(2), r"array\(float64, 1d, C\)")])
def test_float_tangent_of_another_type_is_refused(tangent, shown):
    """It would be reinterpreted as a float64 (a wrong tangent), so it is refused."""
    d = derive_diff(bilinear, None, ("dup", "dup"), mode="forward")
    with pytest.raises(ArgumentError, match=rf"^the tangent of 'x' must be a float64 like "
                       rf"'x', not {shown} \(e\.g\. 1\.0, not 1\)$"):
        d(0.5, tangent, 2.0, 0.0)
    assert d(0.5, 1.0, 2.0, 0.0)[1] == pytest.approx(2 * 0.5 * 2.0 + 2.0 * math.cos(1.0))


# --------------------------------------------------------------------------------- docstrings

@pytest.mark.parametrize("obj", [enzyme_py.derive_diff, enzyme_py.autodiff,
                                 enzyme_py.register_rule, enzyme_py.inspect, enzyme_py])
def test_docstrings_stand_alone(obj):
    doc = obj.__doc__ or ""
    assert "API.md" not in doc and len(doc.split()) > 20


def test_derive_diff_docstring_covers_the_contract():
    doc = " ".join(enzyme_py.derive_diff.__doc__.split())
    for topic in ("const", "active", "dupnoneed", "reverse", "forward", "accumulated",
                  "width", "return_primal", "ActivityError", "UnsupportedError",
                  "ArgumentError", "@njit"):
        assert topic in doc, topic
