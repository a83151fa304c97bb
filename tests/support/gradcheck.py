"""Derivative checkers written against the public API contract (design/API.md).

The math. A kernel ``f(*args)`` at a point is viewed as a map on its differentiable state
``F: x -> y``. ``x`` holds every float scalar argument and the ENTRY contents of every float
array argument (minus ``kernel.const``); ``y`` holds the float return value (if any) and the
EXIT contents of every one of those arrays. Arrays the kernel only reads pass through
unchanged, pure outputs ignore their entry contents, in-place arrays do both. This one view
gives Enzyme's shadow semantics, which API.md adopts:

- forward:  tangent arrays hold ``dx`` on entry and the matching part of ``J dx`` on exit;
  the returned tangent is the return value's part of ``J dx``.
- reverse:  shadow arrays hold the seed ``w`` on entry and the matching part of ``Jᵀ w`` on
  exit; the return value is seeded with 1.0. Hence a read-only array's shadow ACCUMULATES
  (exit = seed + gradient) and a pure output's shadow is CONSUMED (exit = 0).

Every checker compares what the derivative computes with finite differences of ``F`` (or
forward with reverse, or width-k with k single calls), raising ``AssertionError`` with the
kernel, the argument, the worst element and both values. Inputs are copied for every
evaluation (layout preserved), so nothing leaks between evaluations.

``derive`` (default ``enzyme_py.derive_diff``) is called as
``derive(f, name, activities, mode=..., **kw)`` where ``f`` is ``kernel.fn`` (or, with
``jit_options``, ``numba.njit(**jit_options)(kernel.fn)``) and ``kw`` only holds the keywords
the check needs (``ret``, ``width``, ``return_primal``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

import numba
import numpy as np

from tests.support.arrays import (copy_args, differentiable_indices, float_dtype, is_float_array,
                                  is_float_scalar, make_shadow)
from tests.support.kernel import Kernel

__all__ = [
    "FDSettings", "Outcome", "Problem", "CheckResult",
    "settings_for", "activities", "compiled", "as_kernel", "evaluate", "fd_gradient", "fd_jvp",
    "check_forward", "check_reverse", "check_inner_product", "check_vector_forward",
    "check_all", "run_check", "assert_close",
]


# --------------------------------------------------------------------------------------------
# Settings


@dataclass(frozen=True)
class FDSettings:
    """Finite-difference step/order and the tolerance for comparing against it.

    step:  relative step, ``h_i = step * max(1, |x_i|)``.
    order: 2 (central) or 4 (five-point stencil).
    rtol, atol: a derivative component ``a`` matches FD value ``e`` of a group (one argument)
        when ``|a - e| <= atol + rtol * (|e| + NORM_FRACTION * max|e_group|)``.
    value_rtol: relative tolerance for primal values recomputed by a derivative, and for
        comparisons between two derivative computations (no FD noise involved).
    """

    step: float
    order: int
    rtol: float
    atol: float
    value_rtol: float


#: Fraction of a group's largest FD component added to every component's tolerance: FD noise
#: scales with the function's magnitude, not with each (possibly tiny) component.
NORM_FRACTION = 1e-2

DEFAULTS: dict[np.dtype, FDSettings] = {
    np.dtype(np.float64): FDSettings(step=1e-6, order=2, rtol=1e-5, atol=1e-8, value_rtol=1e-9),
    np.dtype(np.float32): FDSettings(step=1e-2, order=4, rtol=2e-3, atol=1e-4, value_rtol=1e-4),
}


def settings_for(kernel: Kernel, args: tuple | None = None, **overrides: Any) -> FDSettings:
    """Defaults for the kernel's float type, then the kernel's ``fd_*`` fields, then
    ``overrides`` (``rtol=``, ``atol=``, ``step=``, ``order=``, ``value_rtol=``; ``None`` is
    ignored)."""
    args = kernel.args() if args is None else args
    dtypes = {float_dtype(a) for a in args if is_float_scalar(a) or is_float_array(a)}
    base = DEFAULTS[np.dtype(np.float32)] if np.dtype(np.float32) in dtypes or kernel.is_float32 \
        else DEFAULTS[np.dtype(np.float64)]
    fields = {"step": kernel.fd_step, "order": kernel.fd_order, "rtol": kernel.fd_rtol,
              "atol": kernel.fd_atol}
    fields.update(overrides)
    return replace(base, **{k: v for k, v in fields.items() if v is not None})


# --------------------------------------------------------------------------------------------
# Compilation and activities

_COMPILED: dict[tuple, Any] = {}


def _options_key(jit_options: Mapping[str, Any] | None) -> tuple:
    return tuple(sorted((jit_options or {}).items(), key=lambda kv: kv[0]))


def compiled(fn: Callable[..., Any], jit_options: Mapping[str, Any] | None = None) -> Any:
    """``numba.njit(**jit_options)(fn)``, one dispatcher per (fn, options)."""
    key = (fn, _options_key(jit_options))
    if key not in _COMPILED:
        _COMPILED[key] = numba.njit(**dict(jit_options or {}))(fn)
    return _COMPILED[key]


def as_kernel(kernel: Kernel | Callable[..., Any], args: tuple | None = None, **fields: Any
              ) -> tuple[Kernel, tuple]:
    """Accept a ``Kernel`` or a bare function (then ``args`` is required); return the kernel
    and the arguments to use (``kernel.args(seed=0)`` when ``args`` is None)."""
    if not isinstance(kernel, Kernel):
        if args is None:
            raise TypeError("a bare function needs explicit args")
        frozen = tuple(args)
        kernel = Kernel(name=getattr(kernel, "__name__", "fn"), fn=kernel,
                        make_args=lambda rng: copy_args(frozen), **fields)
    elif fields:
        kernel = replace(kernel, **fields)
    return kernel, (kernel.args() if args is None else tuple(args))


def activities(kernel: Kernel, args: tuple, mode: str) -> tuple[str, ...]:
    """API.md activities: reverse: float scalar "active", float array "dup"; forward: "dup"
    for both; "const" for everything else and for ``kernel.const``."""
    diff = set(differentiable_indices(args, kernel.const))
    acts = []
    for i, a in enumerate(args):
        if i not in diff:
            acts.append("const")
        elif is_float_scalar(a):
            acts.append("active" if mode == "reverse" else "dup")
        else:
            acts.append("dup")
    return tuple(acts)


_DERIVED: dict[tuple, Any] = {}


def _derive(kernel: Kernel, derive: Callable[..., Any] | None, jit_options: Mapping | None,
            acts: tuple[str, ...], mode: str, cache: bool, **kw: Any) -> Any:
    if derive is None:
        from enzyme_py import derive_diff as derive  # the API under test; imported lazily
    kw = {k: v for k, v in kw.items() if v is not None}
    key = (derive, kernel.fn, _options_key(jit_options), acts, mode, tuple(sorted(kw.items())))
    if cache and key in _DERIVED:
        return _DERIVED[key]
    f = kernel.fn if jit_options is None else compiled(kernel.fn, jit_options)
    suffix = "".join(ch if ch.isalnum() else "_" for ch in kernel.name)
    df = derive(f, f"d_{suffix}_{mode}", list(acts), mode=mode, **kw)
    if cache:
        _DERIVED[key] = df
    return df


# --------------------------------------------------------------------------------------------
# The map F: x -> y and finite differences of it


@dataclass
class Outcome:
    """One primal run: the return value and the exit contents of the differentiable arrays
    (float64 copies, keyed by argument index)."""

    ret: Any
    arrays: dict[int, np.ndarray]


class Problem:
    """A kernel at a point, as the map ``F: x -> y`` described in the module docstring.

    Values in x- and y-space are passed around as dicts ``{arg index: float | ndarray}``
    (float64); the key ``"ret"`` is the return value in y-space.
    """

    def __init__(self, kernel: Kernel, args: tuple, jit_options: Mapping | None = None,
                 settings: FDSettings | None = None) -> None:
        self.kernel = kernel
        self.args = tuple(args)
        self.primal = compiled(kernel.fn, jit_options)
        self.settings = settings or settings_for(kernel, self.args)
        self.diff = differentiable_indices(self.args, kernel.const)
        self.scalars = tuple(i for i in self.diff if is_float_scalar(self.args[i]))
        self.arrays = tuple(i for i in self.diff if is_float_array(self.args[i]))
        self.base = self.evaluate(self.args)
        self.returns_float = is_float_scalar(self.base.ret)

    # -- evaluation ---------------------------------------------------------------------------
    def evaluate(self, args: tuple) -> Outcome:
        """Run the primal on copies of ``args``."""
        call = copy_args(args)
        ret = self.primal(*call)
        return Outcome(ret, {i: np.array(call[i], dtype=np.float64) for i in self.arrays})

    def x0(self) -> dict:
        return {i: (float(self.args[i]) if i in self.scalars
                    else np.array(self.args[i], dtype=np.float64)) for i in self.diff}

    def with_x(self, x: Mapping) -> tuple:
        """Arguments with differentiable values replaced by ``x`` (cast to each argument's
        type; arrays keep their layout)."""
        out = list(copy_args(self.args))
        for i in self.diff:
            a = self.args[i]
            if i in self.scalars:
                out[i] = float(x[i]) if type(a) is float else float_dtype(a).type(x[i])
            else:
                out[i][...] = x[i]
        return tuple(out)

    def y(self, outcome: Outcome) -> dict:
        y: dict = dict(outcome.arrays)
        if self.returns_float:
            y["ret"] = float(outcome.ret)
        return y

    def F(self, x: Mapping) -> dict:
        return self.y(self.evaluate(self.with_x(x)))

    # -- x-space helpers --------------------------------------------------------------------
    def random_x(self, rng: np.random.Generator, scaled: bool = True) -> dict:
        """Uniform(-1, 1) per component, times ``max(1, |x_i|)`` when ``scaled``; rounded to
        each argument's float type so what the derivative sees is exactly what FD uses."""
        x0 = self.x0()
        out = {}
        for i in self.diff:
            dt = float_dtype(self.args[i])
            u = rng.uniform(-1.0, 1.0, size=np.shape(x0[i]))
            if scaled:
                u = u * np.maximum(1.0, np.abs(x0[i]))
            u = np.asarray(u, dtype=dt).astype(np.float64)
            out[i] = float(u) if i in self.scalars else u
        return out

    def random_y_weights(self, rng: np.random.Generator) -> dict:
        """Random adjoint seeds for every differentiable array (rounded to its dtype)."""
        return {i: rng.uniform(-1.0, 1.0, size=self.args[i].shape)
                .astype(self.args[i].dtype).astype(np.float64) for i in self.arrays}

    # -- finite differences -------------------------------------------------------------------
    def _stencil(self, g: Callable[[float], Any], h: float, order: int) -> Any:
        if order == 2:
            return (g(h) - g(-h)) / (2.0 * h)
        if order == 4:
            return (g(-2 * h) - 8 * g(-h) + 8 * g(h) - g(2 * h)) / (12.0 * h)
        raise ValueError(f"FD order must be 2 or 4, got {order}")

    def fd_gradient(self, ret_weight: float = 1.0, weights: Mapping | None = None,
                    step: float | None = None, order: int | None = None) -> dict:
        """Gradient of ``L(x) = ret_weight * ret + sum_a <weights[a], a_exit>`` by FD, one
        component at a time; the expected ``Jᵀ w`` in x-space."""
        step = self.settings.step if step is None else step
        order = self.settings.order if order is None else order
        weights = weights or {}
        x0 = self.x0()

        def L(x: Mapping) -> float:
            y = self.F(x)
            total = ret_weight * y["ret"] if (self.returns_float and ret_weight) else 0.0
            for i, w in weights.items():
                total += float(np.sum(np.asarray(w) * y[i]))
            return total

        grad: dict = {}
        for i in self.diff:
            if i in self.scalars:
                h = step * max(1.0, abs(x0[i]))

                def g(d: float, i: int = i) -> float:
                    x = dict(x0)
                    x[i] = x0[i] + d
                    return L(x)
                grad[i] = float(self._stencil(g, h, order))
            else:
                gi = np.zeros_like(x0[i])
                for idx in np.ndindex(x0[i].shape):
                    h = step * max(1.0, abs(x0[i][idx]))

                    def g(d: float, i: int = i, idx: tuple = idx) -> float:
                        x = dict(x0)
                        x[i] = x0[i].copy()
                        x[i][idx] += d
                        return L(x)
                    gi[idx] = self._stencil(g, h, order)
                grad[i] = gi
        return grad

    def fd_jvp(self, tangent: Mapping, step: float | None = None, order: int | None = None
               ) -> dict:
        """Directional derivative ``J t`` (y-space dict) by FD along ``tangent`` (x-space);
        the step keeps every component's perturbation within ``step * max(1, |x_i|)``."""
        step = self.settings.step if step is None else step
        order = self.settings.order if order is None else order
        x0 = self.x0()
        ratio = max([float(np.max(np.abs(np.asarray(tangent[i]))
                                  / np.maximum(1.0, np.abs(x0[i]))))
                     for i in self.diff if np.size(x0[i])] + [0.0])
        if ratio == 0.0:
            return {k: np.zeros_like(v) if isinstance(v, np.ndarray) else 0.0
                    for k, v in self.y(self.base).items()}
        h = step / ratio

        def g(d: float) -> dict:
            return self.F({i: x0[i] + d * np.asarray(tangent[i]) if i in self.arrays
                           else x0[i] + d * float(tangent[i]) for i in self.diff})
        ys = {d: g(d) for d in ((-h, h) if order == 2 else (-2 * h, -h, h, 2 * h))}
        return {k: self._stencil(lambda d, k=k: ys[d][k], h, order) for k in ys[h]}


def evaluate(kernel: Kernel, args: tuple | None = None,
             jit_options: Mapping | None = None) -> Outcome:
    """One compiled primal run on copies of the arguments."""
    kernel, args = as_kernel(kernel, args)
    return Problem(kernel, args, jit_options).base


def fd_gradient(kernel: Kernel, args: tuple | None = None, *, ret_weight: float = 1.0,
                weights: Mapping | None = None, jit_options: Mapping | None = None,
                step: float | None = None, order: int | None = None) -> dict:
    """FD gradient of ``ret_weight * ret + sum <weights[a], a_exit>`` w.r.t. every
    differentiable argument (entry values), as ``{arg index: float | ndarray}``."""
    kernel, args = as_kernel(kernel, args)
    return Problem(kernel, args, jit_options).fd_gradient(ret_weight, weights, step, order)


def fd_jvp(kernel: Kernel, args: tuple | None, tangent: Mapping, *,
           jit_options: Mapping | None = None, step: float | None = None,
           order: int | None = None) -> dict:
    """FD directional derivative: ``{"ret": float, arg index: ndarray}`` (exit tangents)."""
    kernel, args = as_kernel(kernel, args)
    return Problem(kernel, args, jit_options).fd_jvp(tangent, step, order)


# --------------------------------------------------------------------------------------------
# Comparison


def assert_close(actual: Any, expected: Any, rtol: float, atol: float, what: str,
                 norm_fraction: float = NORM_FRACTION) -> None:
    """Elementwise ``|a - e| <= atol + rtol * (|e| + norm_fraction * max|e|)``; NaN fails."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        raise AssertionError(f"{what}: shape {a.shape} != expected {e.shape}")
    if e.size == 0:
        return
    scale = float(np.max(np.abs(e))) if np.all(np.isfinite(e)) else 0.0
    tol = atol + rtol * (np.abs(e) + norm_fraction * scale)
    err = np.abs(a - e)
    bad = ~(err <= tol)  # NaN counts as bad
    if np.any(bad):
        with np.errstate(invalid="ignore"):
            ratio = np.where(bad, np.where(np.isnan(err), np.inf, err / tol), -1.0)
        worst = np.unravel_index(int(np.argmax(ratio)), e.shape)
        where = f"[{', '.join(map(str, worst))}]" if e.ndim else ""
        lines = [f"{what}: {int(bad.sum())} of {e.size} component(s) off "
                 f"(rtol={rtol:g}, atol={atol:g})",
                 f"  worst{where}: got {float(a[worst])!r}, expected {float(e[worst])!r}, "
                 f"|diff|={err[worst]:.3g} > tol={tol[worst]:.3g}"]
        if e.ndim and e.size <= 12:
            lines += [f"  got      {np.array2string(a.ravel(), precision=8)}",
                      f"  expected {np.array2string(e.ravel(), precision=8)}"]
        raise AssertionError("\n".join(lines))


@dataclass
class CheckResult:
    """What a checker compared (for debugging and for composing further checks)."""

    kernel: Kernel
    args: tuple
    acts: tuple[str, ...]
    expected: dict
    actual: dict
    df: Any = None


def _label(kernel: Kernel, mode: str, i: Any, args: tuple) -> str:
    if i == "ret":
        return f"{kernel.name} [{mode}] return tangent"
    kind = "scalar" if is_float_scalar(args[i]) else f"array{np.shape(args[i])}"
    return f"{kernel.name} [{mode}] arg {i} ({kind})"


def _check_primal_writes(p: Problem, call_args: tuple, mode: str) -> None:
    """Arrays the kernel writes must hold the primal's results after a derivative call."""
    for i in p.kernel.outputs:
        assert_close(np.asarray(call_args[i], np.float64), p.base.arrays[i],
                     p.settings.value_rtol, p.settings.value_rtol * 1e-3,
                     f"{p.kernel.name} [{mode}] primal output arg {i} after the derivative call")


def _check_value(p: Problem, value: Any, mode: str) -> None:
    assert_close(float(value), float(p.base.ret), p.settings.value_rtol,
                 p.settings.value_rtol * 1e-3, f"{p.kernel.name} [{mode}] primal return value")


# --------------------------------------------------------------------------------------------
# Forward mode


def _forward_call(p: Problem, df: Any, tangent: Mapping, width: int | None, ret: str | None,
                  layout: str) -> tuple[dict, tuple]:
    """Call a forward derivative; return the y-space tangents it produced and its args."""
    call: list = []
    primal_args = copy_args(p.args)
    shadows: dict = {}
    for i, a in enumerate(primal_args):
        call.append(a)
        if i in p.diff:
            shadows[i] = make_shadow(a, tangent[i], width=width, layout=layout)
            call.append(shadows[i])
    result = df(*call)
    got: dict = {i: np.array(shadows[i], dtype=np.float64) for i in p.arrays}
    if p.returns_float and ret != "const":
        if ret == "dupnoneed":
            t_ret = result
        else:
            if not (isinstance(result, tuple) and len(result) == 2):
                raise AssertionError(f"{p.kernel.name} [forward] expected (value, tangent), "
                                     f"got {result!r}")
            value, t_ret = result
            _check_value(p, value, "forward")
        got["ret"] = np.array(t_ret, dtype=np.float64) if width else float(t_ret)
    return got, tuple(primal_args)


def check_forward(kernel: Kernel | Callable, args: tuple | None = None, *, seed: int = 0,
                  jit_options: Mapping | None = None, derive: Callable | None = None,
                  ret: str | None = None, rtol: float | None = None, atol: float | None = None,
                  tangent: Mapping | None = None, shadow_layout: str = "match",
                  check_primal: bool = True, cache: bool = True) -> CheckResult:
    """Forward mode against the FD directional derivative along a random tangent.

    Every differentiable argument is "dup" (float scalars included); every array (inputs AND
    outputs) gets a random entry tangent. Checks the returned ``(value, tangent)``, the exit
    tangents of all arrays, and (``check_primal``) that the primal outputs were written.
    """
    kernel, args = as_kernel(kernel, args)
    p = Problem(kernel, args, jit_options, settings_for(kernel, args, rtol=rtol, atol=atol))
    rng = np.random.default_rng(seed)
    t = tangent if tangent is not None else p.random_x(rng)
    acts = activities(kernel, args, "forward")
    df = _derive(kernel, derive, jit_options, acts, "forward", cache, ret=ret)
    got, call_args = _forward_call(p, df, t, None, ret, shadow_layout)
    expected = p.fd_jvp(t)
    if not p.returns_float or ret == "const":
        expected.pop("ret", None)
    for k in expected:
        assert_close(got[k], expected[k], p.settings.rtol, p.settings.atol,
                     _label(kernel, "forward", k, args))
    if check_primal and ret != "dupnoneed":
        _check_primal_writes(p, call_args, "forward")
    return CheckResult(kernel, args, acts, expected, got, df)


def check_vector_forward(kernel: Kernel | Callable, k: int, args: tuple | None = None, *,
                         seed: int = 0, jit_options: Mapping | None = None,
                         derive: Callable | None = None, rtol: float | None = None,
                         shadow_layout: str = "match", check_primal: bool = True,
                         cache: bool = True) -> CheckResult:
    """``width=k`` forward mode against k single forward calls (same tangents, row by row).

    Scalar tangents are 1-D arrays of k; an array of shape s gets tangents of shape
    ``(k,) + s`` (each row with the primal's strides); the returned tangent has shape (k,).
    """
    kernel, args = as_kernel(kernel, args)
    p = Problem(kernel, args, jit_options)
    rtol = p.settings.value_rtol if rtol is None else rtol
    rng = np.random.default_rng(seed)
    rows = [p.random_x(rng) for _ in range(k)]
    stacked = {i: np.stack([np.asarray(r[i], dtype=np.float64) for r in rows]) for i in p.diff}
    acts = activities(kernel, args, "forward")
    dfk = _derive(kernel, derive, jit_options, acts, "forward", cache, width=k)
    df1 = _derive(kernel, derive, jit_options, acts, "forward", cache)
    got, call_args = _forward_call(p, dfk, stacked, k, None, shadow_layout)
    singles = [_forward_call(p, df1, r, None, None, shadow_layout)[0] for r in rows]
    expected = {key: np.stack([np.asarray(s[key], dtype=np.float64) for s in singles])
                for key in singles[0]}
    for key in expected:
        assert_close(got[key], expected[key], rtol, rtol * 1e-3,
                     _label(kernel, f"forward width={k}", key, args).replace(
                         "return tangent", "return tangents"))
    if check_primal:
        _check_primal_writes(p, call_args, f"forward width={k}")
    return CheckResult(kernel, args, acts, expected, got, dfk)


# --------------------------------------------------------------------------------------------
# Reverse mode


def _reverse_call(p: Problem, df: Any, seeds: Mapping, primal_args: tuple | None = None,
                  shadows: dict | None = None, return_primal: bool = False,
                  layout: str = "match") -> tuple[dict, tuple, dict]:
    """Call a reverse derivative with shadows holding ``seeds`` (or the given ``shadows``);
    return x-space results ``{scalar index: grad, array index: shadow exit}``."""
    primal_args = copy_args(p.args) if primal_args is None else primal_args
    if shadows is None:
        shadows = {i: make_shadow(primal_args[i], seeds.get(i, 0.0), layout=layout)
                   for i in p.arrays}
    call: list = []
    for i, a in enumerate(primal_args):
        call.append(a)
        if i in p.arrays:
            call.append(shadows[i])
    result = df(*call)
    name = p.kernel.name
    if return_primal:
        if not (isinstance(result, tuple) and len(result) == 2):
            raise AssertionError(f"{name} [reverse] return_primal=True: expected "
                                 f"(value, grads), got {result!r}")
        value, result = result
        if p.returns_float:
            _check_value(p, value, "reverse")
    if not isinstance(result, tuple) or len(result) != len(p.scalars):
        raise AssertionError(f"{name} [reverse] expected a tuple of {len(p.scalars)} gradient(s) "
                             f"for the active args {p.scalars}, got {result!r}")
    got: dict = {i: float(g) for i, g in zip(p.scalars, result)}
    got.update({i: np.array(shadows[i], dtype=np.float64) for i in p.arrays})
    return got, primal_args, shadows


def check_reverse(kernel: Kernel | Callable, args: tuple | None = None, *, seed: int = 0,
                  jit_options: Mapping | None = None, derive: Callable | None = None,
                  ret: str | None = None, rtol: float | None = None, atol: float | None = None,
                  return_primal: bool = False, check_accumulation: bool = True,
                  check_primal: bool = True, shadow_layout: str = "match",
                  cache: bool = True) -> CheckResult:
    """Reverse mode against the FD gradient of ``L = ret + sum_a <w_a, a_exit>``.

    Float scalars are "active", float arrays "dup". Every array's shadow is seeded with a
    random ``w_a`` (so read-only arrays test accumulation: exit = w_a + gradient; pure
    outputs test consumption: exit = 0). The return seed is 1.0 (``ret="const"``: 0).
    With ``check_accumulation``: zeroed read-only shadows, two calls with the outputs
    re-seeded in between, must hold twice the gradient, and active gradients must repeat.
    With ``check_primal``: arrays the kernel writes hold the primal results afterwards.
    """
    kernel, args = as_kernel(kernel, args)
    p = Problem(kernel, args, jit_options, settings_for(kernel, args, rtol=rtol, atol=atol))
    rng = np.random.default_rng(seed)
    w = p.random_y_weights(rng)
    ret_weight = 0.0 if ret == "const" else 1.0
    acts = activities(kernel, args, "reverse")
    df = _derive(kernel, derive, jit_options, acts, "reverse", cache, ret=ret,
                 return_primal=return_primal or None)
    got, call_args, _ = _reverse_call(p, df, w, return_primal=return_primal,
                                      layout=shadow_layout)
    expected = p.fd_gradient(ret_weight, w)
    for i in p.diff:
        label = _label(kernel, "reverse", i, args)
        if i in p.arrays:
            role = ("written" if i in kernel.outputs else "read-only, must accumulate")
            label = label.replace("arg", "shadow of arg") + f" [{role}]"
            if i in kernel.outputs and not np.any(expected[i]):
                label += " (pure output: d_out must be consumed, i.e. zeroed)"
        assert_close(got[i], expected[i], p.settings.rtol, p.settings.atol, label)
    if check_primal:
        _check_primal_writes(p, call_args, "reverse")

    if check_accumulation:
        readonly = [i for i in p.arrays if i not in kernel.outputs]
        seeds = {i: w[i] for i in kernel.outputs if i in w}
        first, _, shadows = _reverse_call(p, df, seeds, return_primal=return_primal,
                                          layout=shadow_layout)
        once = {i: first[i].copy() for i in readonly}
        for i in kernel.outputs:
            if i in shadows:
                shadows[i][...] = w[i]
        second, _, _ = _reverse_call(p, df, seeds, shadows=shadows, return_primal=return_primal)
        for i in readonly:
            assert_close(second[i], 2.0 * once[i], p.settings.value_rtol,
                         p.settings.value_rtol * 1e-3 * (1 + float(np.max(np.abs(once[i]),
                                                                        initial=0.0))),
                         f"{kernel.name} [reverse] shadow of read-only arg {i} after two calls "
                         f"(dup must accumulate: d_p += grad)")
        for i in p.scalars:
            assert_close(second[i], first[i], p.settings.value_rtol,
                         p.settings.value_rtol * 1e-3,
                         f"{kernel.name} [reverse] active arg {i}: gradient changed between "
                         f"identical calls")
    return CheckResult(kernel, args, acts, expected, got, df)


# --------------------------------------------------------------------------------------------
# Forward against reverse


def check_inner_product(kernel: Kernel | Callable, args: tuple | None = None, *, seed: int = 0,
                        jit_options: Mapping | None = None, derive: Callable | None = None,
                        rtol: float | None = None, shadow_layout: str = "match",
                        cache: bool = True) -> CheckResult:
    """``<J t, w> == <t, Jᵀ w>`` with a random tangent ``t`` (forward) and random seeds ``w``
    (reverse; the return value's seed is 1.0 as API.md fixes it). No FD involved."""
    kernel, args = as_kernel(kernel, args)
    p = Problem(kernel, args, jit_options)
    rtol = p.settings.value_rtol * 10 if rtol is None else rtol
    rng = np.random.default_rng(seed)
    t = p.random_x(rng)
    w = p.random_y_weights(rng)
    fwd = _derive(kernel, derive, jit_options, activities(kernel, args, "forward"), "forward",
                  cache)
    rev = _derive(kernel, derive, jit_options, activities(kernel, args, "reverse"), "reverse",
                  cache)
    jt, _ = _forward_call(p, fwd, t, None, None, shadow_layout)
    jtw, _, _ = _reverse_call(p, rev, w, layout=shadow_layout)
    lhs_terms = [jt.get("ret", 0.0) * 1.0] + [float(np.sum(jt[i] * w[i])) for i in p.arrays]
    rhs_terms = [float(np.sum(np.asarray(t[i]) * jtw[i])) for i in p.diff]
    lhs, rhs = math.fsum(lhs_terms), math.fsum(rhs_terms)
    scale = math.fsum(abs(v) for v in lhs_terms + rhs_terms)
    if not abs(lhs - rhs) <= rtol * scale + 1e-300:
        raise AssertionError(
            f"{kernel.name} inner product: <J t, w> = {lhs!r} but <t, J^T w> = {rhs!r} "
            f"(|diff| = {abs(lhs - rhs):.3g}, tol = {rtol * scale:.3g})")
    return CheckResult(kernel, args, ("forward", "reverse"), {"<J t, w>": lhs},
                       {"<t, J^T w>": rhs})


def check_all(kernel: Kernel | Callable, args: tuple | None = None, *, width: int = 3,
              **kw: Any) -> None:
    """Forward, reverse, inner product and width-``width`` vector forward."""
    check_forward(kernel, args, **kw)
    check_reverse(kernel, args, **kw)
    kw2 = {k: v for k, v in kw.items() if k not in ("rtol", "atol", "ret", "return_primal",
                                                    "check_accumulation", "check_primal",
                                                    "tangent")}
    check_inner_product(kernel, args, **kw2)
    if width:
        check_vector_forward(kernel, width, args, check_primal=kw.get("check_primal", True),
                             **kw2)


def run_check(kernel: Kernel, check: str, width: int = 3) -> CheckResult:
    """The check named ``check`` ("forward", "reverse", "inner_product", "vector_forward" of
    width ``width``) with its defaults."""
    if check == "vector_forward":
        return check_vector_forward(kernel, width)
    return {"forward": check_forward, "reverse": check_reverse,
            "inner_product": check_inner_product}[check](kernel)


def seeded_reverse(kernel: Kernel, activities: tuple[str, ...], name: str,
                   **derive_options: Any) -> tuple[Any, list[np.ndarray]]:
    """`derive_diff(kernel.fn, name, activities, **derive_options)` called once on the
    kernel's arguments (seed 5) with fixed random shadows for its `dup` arrays: (its result,
    those shadows after the call), for comparing two builds of one derivative bit for bit."""
    from enzyme_py import derive_diff
    d = derive_diff(kernel.fn, name, activities, **derive_options)
    call, shadows = [], []
    for a, act in zip(kernel.make_args(np.random.default_rng(5)), activities):
        call.append(a.copy() if isinstance(a, np.ndarray) else a)
        if act == "dup":
            shadows.append(np.random.default_rng(len(shadows)).standard_normal(a.shape))
            call.append(shadows[-1])
    return d(*call), shadows
