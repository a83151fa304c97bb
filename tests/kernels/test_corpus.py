"""Self-test of the kernel corpus, independent of enzyme_py.

Every kernel must compile under numba.njit with its arguments, be deterministic, agree with
its plain-Python execution, honour its metadata (outputs written, nothing else mutated, tags
truthful), and sit at a point where finite differences are finite, nonzero somewhere, and
stable (two different stencils agree well inside the tolerance the AD checks use). The quick
tier checks a quarter of the kernels and one of the two finite-difference seeds per run.
"""
from __future__ import annotations

import inspect

import numba
import numpy as np
import pytest
from numba.core.registry import CPUDispatcher

from tests._params import sampled
from tests.kernels import KERNELS, by_name, by_tag, by_tags, params
from tests.support.arrays import (copy_args, copy_like, differentiable_indices, is_float_array,
                                  is_float_scalar, layout_name)
from tests.support.gradcheck import Problem, assert_close, compiled, settings_for
from tests.support.kernel import TAGS

#: What the quick tier runs of the per-kernel checks: a quarter of the kernels, chosen by its
#: seed (``tests/_params.py``); these checks test the corpus, not enzyme_py.
SAMPLED = sampled(params(KERNELS), keep=len(KERNELS) // 4, family="corpus-self-test")
SEEDS = (0, 1)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
    return type(a) is type(b) and (a == b or (a != a and b != b))


# --- the corpus as a whole -------------------------------------------------------------------


def test_corpus_size_and_names():
    assert len(KERNELS) >= 60
    assert len({k.name for k in KERNELS}) == len(KERNELS)
    assert len({k.fn for k in KERNELS}) >= 60, "at least 60 distinct functions"


def test_every_tag_is_used():
    unused = [t for t in TAGS if not by_tag(t)]
    assert not unused, f"tags with no kernel: {unused}"


def test_selectors():
    assert by_name("rosenbrock").name == "rosenbrock"
    assert all({"output", "strided"} <= k.tags for k in by_tags("output", "strided"))
    assert by_tags("output", "strided")
    assert not any("float32" in k.tags for k in by_tags("loop", exclude=("float32",)))
    with pytest.raises(KeyError):
        by_tag("no-such-tag")


REQUIRED_CALLS = [
    "math.sin(", "math.cos(", "math.tan(", "math.exp(", "math.log(", "math.log10(",
    "math.pow(", "math.sqrt(", "math.fabs(", "abs(", "math.tanh(", "math.atan(", "math.atan2(",
    "math.asin(", "math.acos(", "math.sinh(", "math.cosh(", "math.erf(", "math.erfc(",
    "math.lgamma(", "math.log1p(", "math.expm1(", "math.hypot(", "math.floor(", "np.floor(",
    "math.copysign(", "min(", "max(", "** 2", "** 3", "** y", "** 3.5", "** n", "np.empty(",
    ".copy()", "while ", "break", "continue", "return",
]


def test_required_constructs_are_covered():
    sources = "\n".join(inspect.getsource(k.fn) for k in KERNELS)
    missing = [c for c in REQUIRED_CALLS if c not in sources]
    assert not missing, f"no kernel uses {missing}"


# --- each kernel ---------------------------------------------------------------------------------


@pytest.mark.parametrize("k", SAMPLED)
def test_runs_deterministically(k):
    a1, a2 = k.args(0), k.args(0)
    assert all(_same(x, y) for x, y in zip(a1, a2)), "make_args is not deterministic"
    f = compiled(k.fn)
    c1, c2 = copy_args(a1), copy_args(a2)
    r1, r2 = f(*c1), f(*c2)
    assert r1 is None or is_float_scalar(r1), f"returns {type(r1)}; expected a float or None"
    assert _same(r1, r2), f"return value not deterministic: {r1!r} vs {r2!r}"
    assert all(_same(x, y) for x, y in zip(c1, c2)), "array results not deterministic"
    if r1 is not None:
        assert np.isfinite(r1)
    for x in c1:
        if is_float_array(x):
            assert np.all(np.isfinite(x))
    # numba's return type is float32 exactly for the float32 kernels
    (sig,) = [s for s in f.nopython_signatures if len(s.args) == len(a1)][:1]
    if r1 is not None:
        want = numba.float32 if k.is_float32 else numba.float64
        assert sig.return_type == want, f"return type {sig.return_type}, expected {want}"


@pytest.mark.parametrize("k", SAMPLED)
def test_metadata_is_truthful(k):
    args = k.args(0)
    arrays = [i for i, a in enumerate(args) if isinstance(a, np.ndarray)]
    for i in k.outputs:
        assert is_float_array(args[i]), f"outputs index {i} is not a float array"
    for i in k.const:
        assert is_float_array(args[i]) or is_float_scalar(args[i]), f"const index {i} not float"
    assert not set(k.const) & set(k.outputs), "an output cannot be const"
    assert differentiable_indices(args, k.const), "nothing to differentiate"

    # outputs are written, every other argument is left untouched
    call = copy_args(args)
    compiled(k.fn)(*call)
    for i in arrays:
        changed = not np.array_equal(call[i], args[i])
        if i in k.outputs:
            assert changed, f"arg {i} is listed as an output but was not written"
        else:
            assert not changed, f"arg {i} was modified but is not listed in outputs"

    # copies and shadows keep the layout numba sees
    for i in arrays:
        assert copy_like(args[i]).strides == args[i].strides

    tags = k.tags
    has = lambda pred: any(pred(a) for a in args)  # noqa: E731
    f32 = has(lambda a: (is_float_array(a) or is_float_scalar(a))
              and np.asarray(a).dtype == np.float32)
    assert ("float32" in tags) == f32, "float32 tag must match float32 arguments"
    assert bool(k.outputs) == ("output" in tags), "output tag iff outputs are listed"
    if "inplace-overwrite" in tags and not k.outputs:
        assert "alloc" in tags, "in-place overwrite of neither an argument nor a local array"
    assert ("scalar" in tags) == (not arrays), "scalar tag iff no array arguments"
    assert ("array1d" in tags) == has(lambda a: isinstance(a, np.ndarray) and a.ndim == 1)
    assert ("array2d" in tags) == has(lambda a: isinstance(a, np.ndarray) and a.ndim == 2)
    assert ("strided" in tags) == has(lambda a: isinstance(a, np.ndarray)
                                      and layout_name(a) != "C")
    assert ("int-arg" in tags) == has(lambda a: isinstance(a, (int, np.integer))
                                      and not isinstance(a, bool))
    assert ("const-array" in tags) == any(isinstance(args[i], np.ndarray) for i in k.const)
    src = inspect.getsource(k.fn)
    calls_njit = any(isinstance(k.fn.__globals__.get(n), CPUDispatcher)
                     for n in k.fn.__code__.co_names)
    assert ("callee" in tags) == calls_njit, "callee tag iff the kernel calls an @njit function"
    assert ("while" in tags) == ("while " in src)
    assert ("break" in tags) == ("break" in src)
    assert ("alloc" in tags) == ("np.empty(" in src or ".copy()" in src)
    assert ("minmax" in tags) == ("min(" in src or "max(" in src)


@pytest.mark.parametrize("k", SAMPLED)
def test_matches_plain_python(k):
    args = k.args(0)
    cj, cp = copy_args(args), copy_args(args)
    rj = compiled(k.fn)(*cj)
    rp = k.fn(*cp)
    rtol = 1e-4 if k.is_float32 else 1e-9
    if rj is None:
        assert rp is None
    else:
        assert_close(rj, rp, rtol, rtol * 1e-3, f"{k.name}: njit vs Python return value")
    for i in k.outputs:
        assert_close(cj[i], cp[i], rtol, rtol * 1e-3, f"{k.name}: njit vs Python arg {i}")


@pytest.mark.parametrize("seed", sampled(SEEDS, family="corpus-fd-seed"))
@pytest.mark.parametrize("k", SAMPLED)
def test_finite_differences_are_usable(k, seed):
    """FD gradient finite, nonzero somewhere, stable under a change of stencil, and
    consistent with the FD directional derivative."""
    args = k.args(seed)
    p = Problem(k, args)
    s = settings_for(k, args)
    rng = np.random.default_rng(100 + seed)
    w = p.random_y_weights(rng)
    g = p.fd_gradient(1.0, w)
    assert all(np.all(np.isfinite(v)) for v in g.values()), "FD gradient not finite"
    if p.returns_float:
        # the gradient of the return value alone must not vanish (else AD checks prove little)
        g_ret = p.fd_gradient(1.0, {})
        assert any(np.any(np.asarray(v) != 0) for v in g_ret.values()), "d(ret)/dx is zero"
    assert any(np.any(np.asarray(v) != 0) for v in g.values()), "FD gradient is zero"
    # the same gradient with another stencil and step must agree well inside the AD rtol
    other = p.fd_gradient(1.0, w, order=4, step=s.step * (10.0 if s.order == 2 else 2.0))
    for i in g:
        assert_close(g[i], other[i], s.rtol / 10, s.atol / 10,
                     f"{k.name} seed {seed}: FD unstable for arg {i} (a kink or bad step?)")
    # <J t, w> from the FD directional derivative equals <t, grad>
    t = p.random_x(rng)
    jt = p.fd_jvp(t)
    lhs = jt.get("ret", 0.0) + sum(float(np.sum(jt[i] * w[i])) for i in p.arrays)
    rhs = sum(float(np.sum(np.asarray(t[i]) * np.asarray(g[i]))) for i in p.diff)
    scale = abs(lhs) + sum(float(np.sum(np.abs(np.asarray(t[i]) * np.asarray(g[i]))))
                           for i in p.diff)
    assert abs(lhs - rhs) <= s.rtol * scale + s.atol, f"FD jvp {lhs} vs FD gradient {rhs}"
