"""Allocations per call of reverse derivatives in steady state, printed as JSON; run by
tests/test_kept_memory.py in a subprocess with `malloc_counter.c` preloaded.

For each kernel: libc allocations (the preloaded counter) and NRT allocations (Numba's
statistics: raw buffers and array owners) per call, from Python and from an `@njit` loop,
after a first call with the same sizes. Numba itself allocates to pass arrays in (from Python
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


def probe(fn, read) -> dict:
    """Per call: `python` and `njit` in steady state (the derivative's own allocations: the
    cost of passing arrays in subtracted), `after_release` the first calls after
    `release()` (in all, not per call)."""
    d = derive_diff(fn, None, ("dup", "const", "const"))

    @numba.njit
    def loop(x, dx, A, b, n):
        for _ in range(n):
            d(x, dx, A, b)

    @numba.njit
    def nothing(x, dx, A, b):
        return 0.0

    rng = np.random.default_rng(0)
    A, b, x = rng.standard_normal((3000, 4)), rng.standard_normal(3000), rng.standard_normal(4)
    dx = np.zeros(4)
    d(x, dx, A, b), loop(x, dx, A, b, 1), nothing(x, dx, A, b)      # compile, first calls
    calls = _count(read, lambda: [d(x, dx, A, b) for _ in range(CALLS)])
    passing = _count(read, lambda: [nothing(x, dx, A, b) for _ in range(CALLS)])
    looped, entered = (_count(read, lambda: loop(x, dx, A, b, n)) for n in (CALLS, 0))
    d.release()
    again = _count(read, lambda: loop(x, dx, A, b, CALLS))
    return {"python": _minus(calls, passing), "njit": _minus(looped, entered),
            "after_release": {k: again[k] - entered[k] for k in again}}


def main() -> None:
    _nrt_python.memsys_enable_stats()
    read = _counters()
    print(json.dumps({fn.__name__: probe(fn, read) for fn in (residual_cubes, with_temporary)}))


if __name__ == "__main__":
    main()
