"""tests/unit/enzyme_py/c/kernels.c as test `Kernel`s: each `fn` calls the C function (compiled by clang-22
into a shared library, loaded with ctypes; arrays passed as `a.ctypes`, which both Python and
Numba turn into pointers), so tests/support/gradcheck checks `enzyme_py.c.derive` exactly as
it checks the Numba API. `c_derive` adapts `derive`'s C conventions to that API's (gradients
always as a tuple; forward mode returns `(value, tangent)`, the value from the C primal)."""
from __future__ import annotations

import ctypes
import functools
import os
import subprocess
import tempfile

import numpy as np

from tests.support.arrays import copy_args
from tests.support.kernel import Kernel

KERNELS_C = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels.c")
_D, _I, _P = ctypes.c_double, ctypes.c_int, ctypes.c_void_p
_SIGNATURES = {
    "libm_mix": (_D, [_D, _D]), "three": (_D, [_D, _D, _D]), "dot_len": (_D, [_P, _P, _I]),
    "inplace": (None, [_P, _I]), "squares": (None, [_P, _P, _I, _D]),
    "pointer_walk": (_D, [_P, _I]), "heap_temp": (_D, [_P, _I]),
    "struct_norms": (_D, [_P, _I]), "advance": (None, [_P, _P, _I, _D]),
    "branchy": (_D, [_D, _D]), "rec_power": (_D, [_D, _I]), "rec_tree": (_D, [_P, _I]),
}


@functools.lru_cache(maxsize=None)
def library() -> ctypes.CDLL:
    """kernels.c compiled by clang-22 -O1 into a shared library (once per process)."""
    out = os.path.join(tempfile.mkdtemp(prefix="enzyme_py_ckernels_"), "libkernels.so")
    subprocess.run(["clang-22", "-O1", "-shared", "-fPIC", KERNELS_C, "-o", out, "-lm"],
                   check=True)
    lib = ctypes.CDLL(out)
    for name, (restype, argtypes) in _SIGNATURES.items():
        getattr(lib, name).restype = restype
        getattr(lib, name).argtypes = argtypes
    return lib


def _c(name: str):
    return getattr(library(), name)


def kernels() -> list[Kernel]:
    libm_mix, three, dot_len, inplace = (_c(n) for n in ("libm_mix", "three", "dot_len",
                                                        "inplace"))
    squares, pointer_walk, heap_temp = _c("squares"), _c("pointer_walk"), _c("heap_temp")
    struct_norms, advance, branchy = _c("struct_norms"), _c("advance"), _c("branchy")

    def k_libm_mix(x, y): return libm_mix(x, y)
    def k_three(a, b, c): return three(a, b, c)
    def k_dot_len(a, b, n): return dot_len(a.ctypes, b.ctypes, n)
    def k_inplace(x, n): inplace(x.ctypes, n)
    def k_squares(a, out, n, s): squares(a.ctypes, out.ctypes, n, s)
    def k_pointer_walk(x, n): return pointer_walk(x.ctypes, n)
    def k_heap_temp(x, n): return heap_temp(x.ctypes, n)
    def k_struct_norms(v, n): return struct_norms(v.ctypes, n)
    def k_advance(p, v, n, dt): advance(p.ctypes, v.ctypes, n, dt)
    def k_branchy(x, y): return branchy(x, y)
    rec_power, rec_tree = _c("rec_power"), _c("rec_tree")
    def k_rec_power(x, n): return rec_power(x, n)
    def k_rec_tree(a, n): return rec_tree(a.ctypes, n)

    def arr(rng, *shape):
        return rng.uniform(-1.2, 1.2, shape)

    return [
        Kernel("c_libm_mix", k_libm_mix, lambda rng: (0.7, -0.4)),
        Kernel("c_three", k_three, lambda rng: (0.6, 1.3, -0.8)),
        Kernel("c_dot_len", k_dot_len, lambda rng: (arr(rng, 6), arr(rng, 6), 6)),
        Kernel("c_inplace", k_inplace, lambda rng: (arr(rng, 6), 6), outputs=(0,)),
        Kernel("c_squares", k_squares, lambda rng: (arr(rng, 5), np.zeros(5), 5, 1.7),
               outputs=(1,)),
        Kernel("c_pointer_walk", k_pointer_walk, lambda rng: (arr(rng, 7), 7)),
        Kernel("c_heap_temp", k_heap_temp, lambda rng: (arr(rng, 6), 6)),
        Kernel("c_struct_norms", k_struct_norms, lambda rng: (arr(rng, 4, 3) + 2.0, 4)),
        Kernel("c_advance", k_advance, lambda rng: (arr(rng, 3, 3), arr(rng, 3, 3), 3, 0.1),
               outputs=(0,)),
        Kernel("c_branchy_then", k_branchy, lambda rng: (1.2, 0.3)),
        Kernel("c_branchy_else", k_branchy, lambda rng: (-0.2, 0.9)),
        Kernel("c_rec_power", k_rec_power, lambda rng: (1.3, 5)),
        Kernel("c_rec_tree", k_rec_tree, lambda rng: (arr(rng, 7), 7)),
    ]


@functools.lru_cache(maxsize=None)
def _derived(source: str, name: str, acts: tuple, mode: str):
    from enzyme_py.c import derive
    return derive(source, name, acts, mode=mode)


def derive_from(source: str):
    """`derive` of the C functions of `source` (a .c or .ll path) with the API conventions
    gradcheck expects (see module docstring)."""
    def c_derive(f, name, acts, mode="reverse", **kw):
        assert not kw, f"C derivatives take no options: {kw}"
        df = _derived(source, f.__name__[2:], tuple(acts), mode)

        def reverse(*args):
            g = df(*args)
            return () if g is None else g if isinstance(g, tuple) else (g,)

        def forward(*args):
            primal = [a for k, a in enumerate(args) if k not in _shadow_positions(acts)]
            value = f(*copy_args(tuple(primal)))
            return value, df(*args)

        return reverse if mode == "reverse" else forward
    return c_derive


c_derive = derive_from(KERNELS_C)


def _shadow_positions(acts) -> set[int]:
    out, k = set(), 0
    for a in acts:
        k += 1
        if a in ("dup", "dupnoneed"):
            out.add(k)
            k += 1
    return out
