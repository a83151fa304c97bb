"""tests/unit/enzyme_py/c/simd.c as test `Kernel`s, and derivatives of it compiled at a chosen
optimisation level.

The primal the checkers call (and take finite differences of) is simd.c compiled by clang-22
-O2 into a shared library. `derive_at("-O3")` returns a `derive` for tests/support/gradcheck
that differentiates the IR clang-22 makes at that level (with vectorisation, unlike the C front
end's own -O1), with the conventions of `ckernels.c_derive`.
"""
from __future__ import annotations

import ctypes
import functools
import os
import subprocess
import tempfile

import numpy as np

from tests.support.arrays import copy_args
from tests.support.kernel import Kernel
from tests.unit.enzyme_py.c.ckernels import _shadow_positions

SIMD_C = os.path.join(os.path.dirname(os.path.abspath(__file__)), "simd.c")
_D, _F, _I, _P = ctypes.c_double, ctypes.c_float, ctypes.c_int, ctypes.c_void_p
_SIGNATURES = {
    "v2_product": (None, [_P, _P, _P]), "v2_arith": (None, [_P, _P, _P]),
    "v4_math": (_D, [_P, _P, _P]), "v4_shuffle": (_D, [_P, _P, _I]), "v4_max": (_D, [_P]),
    "f4_mix": (_F, [_P, _P, _I]), "v2_loop": (_D, [_P, _I]), "v2_extrema": (None, [_P, _P, _P]),
    "axpy_sq": (None, [_P, _P, _D, _I]), "dot": (_D, [_P, _P, _I]),
    "sum_of_products": (_D, [_P, _I]), "v2_pair": (None, [_P, _P]),
}


@functools.lru_cache(maxsize=None)
def _tmp() -> str:
    return tempfile.mkdtemp(prefix="enzyme_py_simd_")


@functools.lru_cache(maxsize=None)
def library() -> ctypes.CDLL:
    out = os.path.join(_tmp(), "libsimd.so")
    subprocess.run(["clang-22", "-O2", "-shared", "-fPIC", SIMD_C, "-o", out, "-lm"],
                   check=True, capture_output=True)
    lib = ctypes.CDLL(out)
    for name, (restype, argtypes) in _SIGNATURES.items():
        getattr(lib, name).restype = restype
        getattr(lib, name).argtypes = argtypes
    return lib


@functools.lru_cache(maxsize=None)
def ir_at(opt: str) -> str:
    """Path of the IR clang-22 makes of simd.c with flags `opt` (e.g. "-O3 -ffast-math")."""
    out = os.path.join(_tmp(), f"simd{opt.replace(' ', '')}.ll")
    subprocess.run(["clang-22", *opt.split(), "-gline-tables-only", "-gno-call-site-info", "-emit-llvm",
                    "-S", SIMD_C, "-o", out], check=True, capture_output=True)
    return out


def _c_name(f) -> str:
    return f.__name__[2:]


def kernels() -> list[Kernel]:
    lib = library()     # Numba calls ctypes functions bound to local names (not attributes)
    v2_product, v2_arith, v4_math, v4_shuffle, v4_max, f4_mix, v2_loop, v2_extrema, axpy_sq, \
        dot, sum_of_products, v2_pair = (getattr(lib, n) for n in _SIGNATURES)

    def k_v2_product(out, a, b): v2_product(out.ctypes, a.ctypes, b.ctypes)
    def k_v2_arith(out, a, b): v2_arith(out.ctypes, a.ctypes, b.ctypes)
    def k_v4_math(a, b, c): return v4_math(a.ctypes, b.ctypes, c.ctypes)
    def k_v4_shuffle(a, b, k): return v4_shuffle(a.ctypes, b.ctypes, k)
    def k_v4_max(a): return v4_max(a.ctypes)
    def k_f4_mix(a, b, n): return f4_mix(a.ctypes, b.ctypes, n)
    def k_v2_loop(a, n): return v2_loop(a.ctypes, n)
    def k_v2_extrema(out, a, b): v2_extrema(out.ctypes, a.ctypes, b.ctypes)
    def k_axpy_sq(y, x, a, n): axpy_sq(y.ctypes, x.ctypes, a, n)
    def k_dot(x, y, n): return dot(x.ctypes, y.ctypes, n)
    def k_sum_of_products(x, n): return sum_of_products(x.ctypes, n)
    def k_v2_pair(out, p): v2_pair(out.ctypes, p.ctypes)

    def arr(rng, n, dtype=np.float64):
        return rng.uniform(-1.2, 1.2, n).astype(dtype)

    def pos(rng, n):
        return rng.uniform(0.4, 1.3, n)

    return [
        Kernel("v2_product", k_v2_product, lambda r: (np.zeros(2), arr(r, 2), arr(r, 2)),
               outputs=(0,)),
        Kernel("v2_arith", k_v2_arith, lambda r: (np.zeros(2), arr(r, 2), arr(r, 2)),
               outputs=(0,)),
        Kernel("v4_math", k_v4_math, lambda r: (pos(r, 4), arr(r, 4), arr(r, 4) + 3.0)),
        Kernel("v4_shuffle", k_v4_shuffle, lambda r: (arr(r, 4), arr(r, 4), 2)),
        Kernel("v4_max", k_v4_max, lambda r: (np.array([0.3, -0.9, 1.1, 0.2]),)),
        Kernel("f4_mix", k_f4_mix, lambda r: (arr(r, 4, np.float32), arr(r, 4, np.float32), 3)),
        Kernel("v2_loop", k_v2_loop, lambda r: (arr(r, 10), 5)),
        Kernel("v2_extrema", k_v2_extrema,
               lambda r: (np.zeros(2), np.array([0.7, -0.4]), np.array([1.1, 0.3])),
               outputs=(0,)),
        Kernel("axpy_sq", k_axpy_sq, lambda r: (arr(r, 11), arr(r, 11), 0.8, 11), outputs=(0,)),
        Kernel("dot", k_dot, lambda r: (arr(r, 13), arr(r, 13), 13)),
        Kernel("sum_of_products", k_sum_of_products, lambda r: (arr(r, 9), 9)),
        Kernel("v2_pair", k_v2_pair, lambda r: (np.zeros(4), arr(r, 4)), outputs=(0,)),
    ]


@functools.lru_cache(maxsize=None)
def _derived(opt: str, name: str, acts: tuple, mode: str):
    from enzyme_py.c import derive
    return derive(ir_at(opt), name, acts, mode=mode)


@functools.lru_cache(maxsize=None)
def derive_at(opt: str):
    """A `derive` for gradcheck differentiating simd.c's IR made at `opt`."""
    def c_derive(f, name, acts, mode="reverse", **kw):
        assert not kw, f"C derivatives take no options: {kw}"
        df = _derived(opt, _c_name(f), tuple(acts), mode)

        def reverse(*args):
            g = df(*args)
            return () if g is None else g if isinstance(g, tuple) else (g,)

        def forward(*args):
            primal = [a for k, a in enumerate(args) if k not in _shadow_positions(acts)]
            return f(*copy_args(tuple(primal))), df(*args)

        return reverse if mode == "reverse" else forward
    return c_derive
