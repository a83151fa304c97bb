"""Allocations per call of derivatives in steady state, printed as JSON; run by
tests/test_kept_memory.py in a subprocess with `malloc_counter.c` preloaded.

For each case (a kernel and a mode: reverse, forward, vector forward, split): libc
allocations (the preloaded counter) and NRT allocations (Numba's statistics: raw buffers and
array owners) per call (in split mode: per forward and reverse half), from Python and from an
`@njit` loop, after a first call with the same sizes. Numba itself allocates to pass arrays in (from Python
per call, into the loop once): the probe subtracts what an `@njit` function with the same
signature that does nothing costs, and what entering the loop costs.
"""
import ctypes
import json
import math

import numba
import numpy as np
from numba.core.runtime import _nrt_python, rtsys

from enzyme_py import derive_diff

CALLS = 200


def residual_cubes(x, A, b):
    """Its reverse pass tapes each residual."""
    s = 0.0
    for i in range(A.shape[0]):
        r = -b[i]
        for j in range(x.shape[0]):
            r += A[i, j] * x[j]
        s += r * r * r
    return s


def with_temporary(x, A, b):
    """A temporary holding active values: it gets a shadow."""
    t = np.empty(A.shape[0])
    for i in range(A.shape[0]):
        t[i] = -b[i]
        for j in range(x.shape[0]):
            t[i] += A[i, j] * x[j]
    s = 0.0
    for i in range(t.shape[0]):
        s += t[i] * t[i] * t[i]
    return s


def expression_temporaries(x, A, b):
    """Temporaries of array expressions (`np.sin(x) * 2.0 + x`) holding active values."""
    y = np.sin(x) * 2.0 + x
    s = 0.0
    for i in range(A.shape[0]):
        r = -b[i]
        for j in range(y.shape[0]):
            r += A[i, j] * y[j]
        s += r * r
    return s


_with_temporary = numba.njit(with_temporary)
_expression_temporaries = numba.njit(expression_temporaries)


def temporary_out(x, A, b, out):
    """`with_temporary` writing its result into `out` (vector forward mode's tangents of it
    are the caller's array: a returned float's tangents would be a new array per call)."""
    out[0] = _with_temporary(x, A, b)


def expression_out(x, A, b, out):
    """`expression_temporaries` writing its result into `out`."""
    out[0] = _expression_temporaries(x, A, b)


WIDTH = 3
_REVERSE = ("dup", "const", "const")
#: name -> (kernel, activities, derive_diff keywords)
CASES = {
    "residual_cubes": (residual_cubes, _REVERSE, {}),
    "with_temporary": (with_temporary, _REVERSE, {}),
    "forward_temporary": (with_temporary, _REVERSE, {"mode": "forward"}),
    "forward_expression": (expression_temporaries, _REVERSE, {"mode": "forward"}),
    "vector_temporary": (temporary_out, _REVERSE + ("dup",),
                         {"mode": "forward", "width": WIDTH}),
    "vector_expression": (expression_out, _REVERSE + ("dup",),
                          {"mode": "forward", "width": WIDTH}),
    "split_residual": (residual_cubes, _REVERSE, {"mode": "split"}),
    "split_temporary": (with_temporary, _REVERSE, {"mode": "split"}),
}


def arguments(name: str, rows: int = 3000, seed: int = 0) -> tuple:
    """The arguments of case `name`'s derivative (shadows and tangents random)."""
    fn, acts, kw = CASES[name]
    rng = np.random.default_rng(seed)
    x, A, b = rng.standard_normal(4), rng.standard_normal((rows, 4)), rng.standard_normal(rows)
    lanes = (kw["width"],) if "width" in kw else ()
    if fn in (temporary_out, expression_out):
        return x, rng.standard_normal(lanes + (4,)), A, b, np.zeros(1), np.zeros(lanes + (1,))
    return x, rng.standard_normal(4) if kw else np.zeros(4), A, b


def _counters():
    libc = ctypes.CDLL(None).enzyme_py_allocations
    libc.restype = ctypes.c_long

    def read():
        s = rtsys.get_allocation_stats()
        return libc(), s.alloc, s.mi_alloc
    return read


def _count(read, run) -> dict:
    before = read()
    run()
    return {k: a - b for k, a, b in zip(("libc", "nrt", "nrt_owners"), read(), before)}


def _minus(a: dict, b: dict) -> dict:
    return {k: (a[k] - b[k]) / CALLS for k in a}


def _both_halves(fwd, rev):
    """`@njit`: the forward half, then the reverse half with the tape it returned."""
    @numba.njit
    def both(x, dx, A, b):
        _, tape = fwd(x, dx, A, b)
        rev(x, dx, A, b, 1.0, tape)
    both.release = fwd.release
    return both


def _nothing(arity: int):
    """An `@njit` function of `arity` parameters doing nothing (star arguments cost an
    allocation more to pass from Python)."""
    params = ", ".join(f"a{i}" for i in range(arity))
    scope: dict = {}
    exec(f"def nothing({params}):\n    return 0.0\n", scope)
    return numba.njit(scope["nothing"])


def probe(name: str, read) -> dict:
    """Per call: `python` and `njit` in steady state (the derivative's own allocations: the
    cost of passing arrays in subtracted), `after_release` the first calls after
    `release()` (in all, not per call)."""
    fn, acts, kw = CASES[name]
    d = _both_halves(*derive_diff(fn, None, acts, **kw)) if kw.get("mode") == "split" \
        else derive_diff(fn, None, acts, **kw)

    @numba.njit
    def loop(n, *args):
        for _ in range(n):
            d(*args)

    args = arguments(name)
    nothing = _nothing(len(args))
    d(*args), loop(1, *args), nothing(*args)                        # compile, first calls
    calls = _count(read, lambda: [d(*args) for _ in range(CALLS)])
    passing = _count(read, lambda: [nothing(*args) for _ in range(CALLS)])
    looped, entered = (_count(read, lambda: loop(n, *args)) for n in (CALLS, 0))
    d.release()
    again = _count(read, lambda: loop(CALLS, *args))
    return {"python": _minus(calls, passing), "njit": _minus(looped, entered),
            "after_release": {k: again[k] - entered[k] for k in again}}


def main() -> None:
    _nrt_python.memsys_enable_stats()
    read = _counters()
    print(json.dumps({name: probe(name, read) for name in CASES}))


if __name__ == "__main__":
    main()
