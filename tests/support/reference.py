"""An FD-based stand-in for ``enzyme_py.derive_diff`` with the API.md calling convention.

It exists to test the checkers in ``gradcheck`` (and their shadow / seed / accumulate /
consume / width bookkeeping) before and independently of the real pass: its derivatives are
high-accuracy five-point finite differences of the compiled primal, so the checkers must
accept it, and must reject it once a bug is injected (see ``test_gradcheck.py``).
It validates activities only as far as it needs to; it is not a model of ``ActivityError``.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from tests.support.arrays import copy_args, float_dtype, is_float_array, is_float_scalar
from tests.support.gradcheck import DEFAULTS, Problem
from tests.support.kernel import Kernel

_WORDS = ("const", "active", "dup", "dupnoneed")


def reference_derive(f: Callable[..., Any], name: str, acts: Sequence[str], *,
                     mode: str = "reverse", ret: str | None = None, width: int | None = None,
                     return_primal: bool = False) -> Callable[..., Any]:
    """Return ``df`` following API.md for ``f`` (a plain function or an njit dispatcher)."""
    fn = getattr(f, "py_func", f)
    acts = tuple(acts)
    if any(a not in _WORDS for a in acts):
        raise ValueError(f"{name}: unknown activity in {acts}")
    if mode == "forward" and "active" in acts:
        raise ValueError(f"{name}: 'active' is invalid in forward mode, use 'dup'")
    if mode not in ("forward", "reverse"):
        raise ValueError(f"{name}: unknown mode {mode!r}")
    const = tuple(i for i, a in enumerate(acts) if a == "const")

    def problem(args: tuple) -> Problem:
        dts = {float_dtype(a) for a in args if is_float_scalar(a) or is_float_array(a)}
        f32 = np.dtype(np.float32) in dts
        base = DEFAULTS[np.dtype(np.float32 if f32 else np.float64)]
        settings = type(base)(step=2e-2 if f32 else 1e-4, order=4, rtol=base.rtol,
                              atol=base.atol, value_rtol=base.value_rtol)
        frozen = copy_args(args)
        kern = Kernel(name=name, fn=fn, make_args=lambda rng: copy_args(frozen), const=const)
        return Problem(kern, args, None, settings)

    def split(call: tuple) -> tuple[list, dict]:
        it = iter(call)
        args, shadows = [], {}
        for i, act in enumerate(acts):
            args.append(next(it))
            if act in ("dup", "dupnoneed"):
                shadows[i] = next(it)
        rest = list(it)
        if rest:
            raise TypeError(f"{name}: {len(rest)} argument(s) too many")
        return args, shadows

    def reverse(*call: Any) -> Any:
        args, shadows = split(call)
        p = problem(tuple(args))
        seeds = {i: np.array(shadows[i], dtype=np.float64) for i in p.arrays}
        grad = p.fd_gradient(0.0 if ret == "const" else 1.0, seeds)
        value = p.primal(*args)              # the primal's writes land in the caller's arrays
        for i in p.arrays:
            shadows[i][...] = grad[i]
        grads = tuple(float_dtype(args[i]).type(grad[i]) for i in p.scalars)
        return (value, grads) if return_primal else grads

    def forward(*call: Any) -> Any:
        args, shadows = split(call)
        p = problem(tuple(args))
        rows = [None] if width is None else list(range(width))
        outs = []
        for r in rows:
            t = {i: np.array(shadows[i] if r is None else shadows[i][r], dtype=np.float64)
                 for i in p.diff}
            outs.append(p.fd_jvp({i: (float(v) if i in p.scalars else v) for i, v in t.items()}))
        value = p.primal(*args)
        for i in p.arrays:
            for r, o in zip(rows, outs):
                if r is None:
                    shadows[i][...] = o[i]
                else:
                    shadows[i][r] = o[i]
        if not p.returns_float:
            return None
        dt = float_dtype(value)
        tan = dt.type(outs[0]["ret"]) if width is None else \
            np.array([o["ret"] for o in outs], dtype=dt)
        return tan if ret == "dupnoneed" else (value, tan)

    df = reverse if mode == "reverse" else forward
    df.__name__ = name
    return df
