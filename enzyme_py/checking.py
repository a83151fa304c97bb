"""`check`: test a function's derivatives at a point, for users' own kernels.

The function is seen as a map `F: x -> y`: `x` holds the float scalars marked "active"/"dup"
and the entry contents of the "dup" arrays, `y` the float (or float array) return value and
the exit contents of the "dup" arrays (Enzyme's shadow semantics, as API.md states them).
Forward mode is compared with central differences of `F` along a random direction `t`,
reverse mode with central differences of `<w, F>` per input entry (`w` random, the float
return's seed 1.0), and the two modes with each other: `<w, J t> == <J^T w, t>`.
"""
from __future__ import annotations

import inspect

import numpy as np

from ir_passes.errors import ActivityError

from .api import derive_diff
from .typed_dispatch import primal_of

RETURN = "return value"          # the output name of f's result
_MODES = ("both", "forward", "reverse")
#: (step, rtol, atol) per float type: the step is relative to the largest input entry.
_SETTINGS = {np.dtype(np.float64): (1e-6, 1e-5, 1e-8), np.dtype(np.float32): (1e-3, 1e-2, 1e-4)}


def check(f, activities, *args, mode: str = "both", seed: int = 0, step: float | None = None,
          rtol: float | None = None, atol: float | None = None) -> None:
    """Check the derivatives `derive_diff(f, None, activities, mode)` computes at `args`.

    `activities` as for `derive_diff` (a float scalar may be given as "active" or "dup": each
    mode gets its own word). mode="forward" or "reverse" compares that mode with central
    finite differences; "both" (the default) compares both, and forward with reverse
    through the inner product identity. Raises `AssertionError` naming the mode, the
    parameter and its worst entry, with both values; returns None when all agree.
    Costs two evaluations of `f` per input entry (reverse mode): meant for small inputs.
    """
    if mode not in _MODES:
        raise ValueError(f"check: mode must be one of {_MODES}, not {mode!r}")
    problem = _Problem(primal_of(f), activities, args, seed)
    default_step, default_rtol, default_atol = _SETTINGS[problem.dtype]
    tol = (default_rtol if rtol is None else rtol, default_atol if atol is None else atol)
    h = (default_step if step is None else step) * problem.scale
    jt = jtw = None
    if mode != "reverse":
        jt = problem.forward()
        fd = problem.fd_jvp(h)
        for name, value in jt.items():
            _assert_close(problem.fname, "forward mode: the tangent of", name, value, fd[name],
                          tol)
    if mode != "forward":
        jtw = problem.reverse()
        fd = problem.fd_vjp(h)
        for name, value in jtw.items():
            _assert_close(problem.fname, "reverse mode: the gradient of", name, value,
                          fd[name], tol)
    if mode == "both":
        problem.assert_inner_product(jt, jtw, tol[0])


class _Problem:
    """`F`, its inputs and outputs, a random direction `t` and a random seed `w`."""

    def __init__(self, primal, activities, args: tuple, seed: int) -> None:
        self.primal, self.args = primal, args
        self.fname = primal.py_func.__name__
        names = list(inspect.signature(primal.py_func).parameters)
        words = _words(activities, names, self.fname)
        self.names = names
        self.inputs = [i for i, w in enumerate(words) if w != "const" and _is_float(args[i])]
        self.arrays = [i for i in self.inputs if isinstance(args[i], np.ndarray)]
        self.words = words
        floats = [np.asarray(args[i]).dtype for i in self.inputs]
        self.dtype = np.dtype(np.float32) if np.dtype(np.float32) in floats \
            else np.dtype(np.float64)
        self.scale = max([1.0] + [float(np.max(np.abs(args[i]))) for i in self.inputs
                                  if np.size(args[i])])
        rng = np.random.default_rng(seed)
        self.t = {i: _like(rng, args[i]) for i in self.inputs}
        value = self._outputs(args)
        self.returns = RETURN in value
        self.w = {name: _like(rng, v) for name, v in value.items()}
        if self.returns and np.ndim(value[RETURN]) == 0:
            self.w[RETURN] = 1.0          # API.md: a float result is seeded with 1.0

    def _outputs(self, args: tuple) -> dict:
        """`F(x)`: the return value (if a float or float array) and the dup arrays' exits."""
        args = tuple(_copy(a) for a in args)
        ret = self.primal(*args)
        out = {}
        if ret is not None:
            if not _is_float(ret):
                raise ValueError(f"check({self.fname}): {self.fname} returns {type(ret)}; "
                                 "check supports float or float-array results (or none)")
            out[RETURN] = ret
        out.update((self.names[i], args[i]) for i in self.arrays)
        return out

    def _moved(self, h: float, direction: dict) -> tuple:
        return tuple(a + h * direction[i] if i in direction else a
                     for i, a in enumerate(self.args))

    def fd_jvp(self, h: float) -> dict:
        plus = self._outputs(self._moved(h, self.t))
        minus = self._outputs(self._moved(-h, self.t))
        return {k: (np.asarray(plus[k]) - minus[k]) / (2 * h) for k in plus}

    def _phi(self, args: tuple) -> float:
        return sum(float(np.sum(self.w[k] * v)) for k, v in self._outputs(args).items())

    def fd_vjp(self, h: float) -> dict:
        out = {}
        for i in self.inputs:
            grad = np.zeros(np.shape(self.args[i]))
            for idx in np.ndindex(grad.shape):
                e = np.zeros(grad.shape)
                e[idx] = 1.0
                d = {i: e if grad.shape else 1.0}
                up, down = self._phi(self._moved(h, d)), self._phi(self._moved(-h, d))
                grad[idx] = (up - down) / (2 * h)
            out[self.names[i]] = grad
        return out

    def forward(self) -> dict:
        """`J t` per output, from the forward derivative."""
        words = ["dup" if w == "active" else w for w in self.words]
        fwd = _derivative(self.primal, words, "forward")
        call, tangents = [], {}
        for i, (a, w) in enumerate(zip(self.args, words)):
            call.append(_copy(a))
            if w != "const":
                tangents[i] = _copy(self.t.get(i, a))     # not a float: refused by fwd
                call.append(tangents[i])
        result = fwd(*call)
        out = {RETURN: result[1]} if self.returns else {}
        out.update((self.names[i], tangents[i]) for i in self.arrays)
        return out

    def reverse(self) -> dict:
        """`J^T w` per input, from the reverse derivative."""
        words = ["active" if w == "dup" and np.ndim(a) == 0 and _is_float(a) else w
                 for a, w in zip(self.args, self.words)]
        rev = _derivative(self.primal, words, "reverse")
        call, shadows = [], {}
        for i, (a, w) in enumerate(zip(self.args, words)):
            call.append(_copy(a))
            if w in ("dup", "dupnoneed"):
                shadows[i] = _copy(self.w.get(self.names[i], a))  # not a float: refused
                call.append(shadows[i])
        if self.returns and np.ndim(self.w[RETURN]) > 0:
            call.append(_copy(self.w[RETURN]))
        grads = iter(rev(*call))
        return {self.names[i]: shadows[i] if i in shadows else next(grads) for i in self.inputs}

    def assert_inner_product(self, jt: dict, jtw: dict, rtol: float) -> None:
        forward = sum(float(np.sum(self.w[k] * v)) for k, v in jt.items())
        reverse = sum(float(np.sum(jtw[self.names[i]] * self.t[i])) for i in self.inputs)
        scale = sum(float(np.sum(np.abs(self.w[k] * v))) for k, v in jt.items())
        if abs(forward - reverse) > rtol * max(scale, 1e-300):
            raise AssertionError(
                f"check({self.fname}): forward and reverse mode disagree: <w, J t> = "
                f"{forward!r} (forward) but <J^T w, t> = {reverse!r} (reverse), for random t, w")


def _derivative(primal, words: list[str], mode: str):
    """`derive_diff(primal, None, words, mode)`, kept on `primal` for later checks."""
    kept = primal.__dict__.setdefault("_enzyme_checked", {})
    key = (tuple(words), mode)
    if key not in kept:
        kept[key] = derive_diff(primal, None, words, mode)
    return kept[key]


def _words(activities, names: list[str], fname: str) -> list[str]:
    words = activities.split(",") if isinstance(activities, str) else list(activities)
    words = [str(w).strip() for w in words]
    if len(words) != len(names):
        raise ActivityError(f"check({fname}): {len(words)} activities for {len(names)} "
                            f"parameters ({', '.join(names)})")
    return words


def _is_float(a) -> bool:
    return isinstance(a, (float, np.floating)) or (
        isinstance(a, np.ndarray) and np.issubdtype(a.dtype, np.floating))


def _like(rng, a):
    """A random value shaped and typed like `a` (a float or an array), in `a`'s memory order,
    as np.zeros_like would give a user's shadow."""
    if isinstance(a, np.ndarray):
        out = np.empty_like(a)
        out[...] = rng.standard_normal(a.shape)
        return out
    return float(rng.standard_normal())


def _copy(a):
    return np.array(a, copy=True, order="K") if isinstance(a, np.ndarray) else a


def _assert_close(fname: str, what: str, name: str, value, expected, tol) -> None:
    """Raise naming `name`'s worst entry unless `value` matches `expected` within `tol`
    (rtol, atol), the rtol part scaled by each entry and 1% of the largest."""
    rtol, atol = tol
    a = np.asarray(value, np.float64)
    e = np.asarray(expected, np.float64)
    allowed = atol + rtol * (np.abs(e) + 0.01 * (np.max(np.abs(e)) if e.size else 0.0))
    ratio = np.abs(a - e) / allowed
    if e.size == 0 or not (np.max(ratio) > 1 or np.isnan(ratio).any()):
        return
    worst = np.unravel_index(np.nanargmax(np.where(np.isnan(ratio), np.inf, ratio)), e.shape)
    what = f"{what} the return value" if name == RETURN else f"{what} '{name}'"
    at = f" at {name}[{', '.join(map(str, worst))}]" if e.ndim else ""
    raise AssertionError(
        f"check({fname}): {what} differs from central finite differences{at}: "
        f"{float(a[worst])!r} (derivative) vs {float(e[worst])!r} (finite differences), "
        f"|difference| {abs(a[worst] - e[worst]):.3g} > tolerance {allowed[worst]:.3g}")

__all__ = ["check"]
