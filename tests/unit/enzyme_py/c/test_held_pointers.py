"""Pointers held in differentiated memory (held_pointers.c), compiled by clang-22 at -O0 and
-O2: `double **`, structs mixing `long`, `double` and `double *`, an array of row pointers, a
two-level linked structure, a std::vector-like {begin, end, cap}. Enzyme's convention: the
shadow of a struct is a struct of the same layout whose pointers point to the shadows.

Each kernel takes NumPy arrays; `pack` builds the C arguments from them (ctypes structs
holding the arrays' addresses), and the derivative's shadow structs are built the same way
from the shadow arrays. Forward and reverse are checked against central finite differences
and against each other (<J t, w> == <t, J^T w>) with tests/support/gradcheck.
"""
from __future__ import annotations

import ctypes
import functools
import os
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from tests.support.arrays import copy_args
from tests.support.gradcheck import check_forward, check_inner_product, check_reverse
from tests.support.kernel import Kernel
from tests.unit.enzyme_py.c.conftest import HAVE_CLANG

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "held_pointers.c")
CXX_SOURCE = os.path.join(HERE, "held_vector.cpp")       # std::vector<double> const &
_P, _L, _D = ctypes.c_void_p, ctypes.c_long, ctypes.c_double


class Vec(ctypes.Structure):
    _fields_ = [("n", _L), ("data", _P)]


class Pair(ctypes.Structure):
    _fields_ = [("a", _P), ("b", _P)]


class DVector(ctypes.Structure):
    _fields_ = [("begin", _P), ("end", _P), ("cap", _P)]


class Outer(ctypes.Structure):
    _fields_ = [("n", _L), ("w", _D), ("child", ctypes.POINTER(Vec))]


class Mem:
    """A C argument pointing at memory built from the kernel's arrays (`keep` holds what it
    points to); `dup`: it has a shadow, built the same way from the shadow arrays;
    `back(arrays)` copies float fields of the structs back into the arrays after a call."""

    def __init__(self, obj, dup: bool = True, keep=(), back=None) -> None:
        self.obj, self.dup, self.keep, self.back = obj, dup, keep, back

    @property
    def address(self) -> int:
        return ctypes.addressof(self.obj)


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def _pp(x):
    return [Mem(ctypes.c_void_p(_ptr(x)), keep=(x,))]


def _vec(x):
    return [Mem(Vec(len(x), _ptr(x)), keep=(x,))]


def _pair(a, b, n, s):
    return [Mem(Pair(_ptr(a), _ptr(b)), keep=(a, b)), n, s]


def _rows(x, m, n):
    rows = (_P * m)(*[_ptr(x[i]) for i in range(m)])
    return [Mem(rows, keep=(x,)), m, n]


def _outer(w, x):
    child = Vec(len(x), _ptr(x))
    outer = Outer(7, w[0], ctypes.pointer(child))

    def back():
        w[0] = outer.w
    return [Mem(outer, keep=(w, x, child), back=back)]


def _dvectors(a, b):
    def dv(x):
        return Mem(DVector(_ptr(x), _ptr(x) + 8 * len(x), _ptr(x) + 8 * len(x)), keep=(x,))
    return [dv(a), dv(b)]


def _const_index(idx, x, n):
    return [Mem(ctypes.c_void_p(_ptr(idx)), dup=False, keep=(idx,)), x, n]


def _struct_copy(d0, s0, s1):
    n = len(d0)
    dst, src = (Vec * 1)(Vec(n, _ptr(d0))), (Vec * 2)(Vec(n, _ptr(s0)), Vec(n, _ptr(s1)))
    return [Mem(dst, keep=(d0,)), Mem(src, keep=(s0, s1)), 0]


def _set_data(v_data, x, n):
    return [Mem(Vec(0, _ptr(v_data)), keep=(v_data,)), x, n]


@dataclass(frozen=True)
class Case:
    name: str                       # the C function; its primal for the tests: `name`_flat
    pack: Callable                  # kernel arguments -> C arguments of `name`
    primal: Callable                # the flat C function -> the (Numba-compilable) kernel
    make_args: Callable
    outputs: tuple[int, ...] = ()
    const: tuple[int, ...] = ()
    source: str = SOURCE


def _arr(rng, *shape):
    return rng.uniform(-1.2, 1.2, shape)


def _on_array(c):
    def k(x): return c(x.ctypes, x.size)
    return k


def _on_array_n(c):
    def k(x, n): return c(x.ctypes, n)
    return k


def _on_pair(c):
    def k(a, b, n, s): c(a.ctypes, b.ctypes, n, s)
    return k


def _on_matrix(c):
    def k(x, m, n): return c(x.ctypes, m, n)
    return k


def _on_two(c):
    def k(a, b): return c(a.ctypes, b.ctypes, a.size)
    return k


def _on_deep(c):
    def k(w, x): return c(w.ctypes, x.ctypes, x.size)
    return k


def _on_three_n(c):
    def k(a, b, d): return c(a.ctypes, b.ctypes, d.ctypes, a.size)
    return k


def _on_index(c):
    def k(idx, x, n): return c(idx.ctypes, x.ctypes, n)
    return k


def _on_set(c):
    def k(vd, x, n): c(vd.ctypes, x.ctypes, n)
    return k


CASES = [
    Case("pp_cube", lambda x, n: _pp(x) + [n], _on_array_n, lambda rng: (_arr(rng, 5), 5)),
    Case("vec_norm2", _vec, _on_array, lambda rng: (_arr(rng, 6),)),
    Case("pair_axpy", _pair, _on_pair, lambda rng: (_arr(rng, 5), _arr(rng, 5), 5, 0.7),
         outputs=(1,), const=(3,)),
    Case("rows_weighted", _rows, _on_matrix, lambda rng: (_arr(rng, 3, 4), 3, 4)),
    Case("rows_square", _rows, _on_matrix, lambda rng: (_arr(rng, 3, 4), 3, 4),
         outputs=(0,)),
    Case("swap_square", _rows, _on_matrix, lambda rng: (_arr(rng, 3, 4), 3, 4),
         outputs=(0,)),
    Case("deep", _outer, _on_deep, lambda rng: (_arr(rng, 1), _arr(rng, 5))),
    Case("dvec_dot", _dvectors, _on_two, lambda rng: (_arr(rng, 6), _arr(rng, 6))),
    Case("const_index", _const_index, _on_index,
         lambda rng: (np.array([3, 0, 2, 1], dtype=np.int32), _arr(rng, 4), 4)),
    Case("struct_copy", _struct_copy, _on_three_n,
         lambda rng: (_arr(rng, 4), _arr(rng, 4), _arr(rng, 4))),
    Case("set_data", _set_data, _on_set, lambda rng: (np.zeros(4), _arr(rng, 4), 4),
         outputs=(1,)),
    Case("vdot", _dvectors, _on_two, lambda rng: (_arr(rng, 6), _arr(rng, 6)),
         source=CXX_SOURCE),
]
OPTS = ("-O0", "-O2")


@functools.lru_cache(maxsize=None)
def _build(opt: str, source: str = SOURCE) -> tuple[str, ctypes.CDLL]:
    """`source` as IR (what `derive` reads) and as a library (the primal), at `opt` (-O2
    without vectorisation, as the front end compiles: vectors are not this test's)."""
    tmp = tempfile.mkdtemp(prefix="enzyme_py_held_")
    flags = [opt, "-fno-vectorize", "-fno-slp-vectorize", "-fno-exceptions"]
    ll, so = os.path.join(tmp, "held.ll"), os.path.join(tmp, "libheld.so")
    subprocess.run(["clang-22", *flags, "-gline-tables-only", "-emit-llvm", "-S", source,
                    "-o", ll], check=True)
    libs = ["-lstdc++"] if source.endswith(".cpp") else []
    subprocess.run(["clang-22", *flags, "-shared", "-fPIC", source, "-o", so, *libs],
                   check=True)
    return ll, ctypes.CDLL(so)


def _c_args(values) -> list:
    return [v.address if isinstance(v, Mem) else _ptr(v) if isinstance(v, np.ndarray)
            else v for v in values]


_FLAT_TYPES = {"pp_cube": [_P, _L], "vec_norm2": [_P, _L], "pair_axpy": [_P, _P, _L, _D],
               "rows_weighted": [_P, _L, _L], "rows_square": [_P, _L, _L], "swap_square": [_P, _L, _L],
               "deep": [_P, _P, _L], "dvec_dot": [_P, _P, _L], "const_index": [_P, _P, _L],
               "set_data": [_P, _P, _L], "struct_copy": [_P, _P, _P, _L], "vdot": [_P, _P, _L]}
_VOID = ("pair_axpy", "rows_square", "swap_square", "set_data")


@functools.lru_cache(maxsize=None)
def _kernel(case: Case, opt: str) -> Kernel:
    flat = getattr(_build(opt, case.source)[1], f"{case.name}_flat")
    flat.restype = None if case.name in _VOID else _D
    flat.argtypes = _FLAT_TYPES[case.name]
    return Kernel(f"{case.name}{opt}", case.primal(flat), case.make_args,
                  outputs=case.outputs, const=case.const)


def _derive(case: Case, opt: str):
    """`derive`'s C derivative with the conventions gradcheck expects: kernel arguments with
    shadows after dup arrays in, gradients (reverse) or (value, tangent) (forward) out."""
    from enzyme_py.c import derive

    def make(f, name, acts, mode="reverse", **kw):
        assert not kw, kw
        c_acts: dict[str, object] = {}

        def call(*dargs):
            primal, shadowed, k = [], [], 0
            for a in acts:
                primal.append(dargs[k])
                shadowed.append(dargs[k + 1] if a in ("dup", "dupnoneed") else dargs[k])
                k += 2 if a in ("dup", "dupnoneed") else 1
            values, shadows = case.pack(*primal), case.pack(*shadowed)
            words = [_activity(v, mode) for v in values]
            key = ",".join(words)
            if key not in c_acts:
                c_acts[key] = derive(_build(opt, case.source)[0], case.name, key, mode=mode)
            args = []
            for v, s, w in zip(values, shadows, words):
                args += _c_args([v]) + (_c_args([s]) if w == "dup" else [])
            out = c_acts[key](*args)
            for s in shadows:
                if isinstance(s, Mem) and s.back is not None:
                    s.back()
            if mode == "forward":
                return f(*copy_args(tuple(primal))), out
            return () if out is None else out if isinstance(out, tuple) else (out,)
        return call
    return make


def _activity(v, mode: str) -> str:
    if isinstance(v, Mem):
        return "dup" if v.dup else "const"
    if isinstance(v, np.ndarray):
        return "dup"
    return "const"                  # sizes, and the scalars these kernels declare const


PARAMS = [pytest.param(c, o, id=f"{c.name}{o}") for c in CASES for o in OPTS] \
    if HAVE_CLANG else []


@pytest.mark.parametrize("case, opt", PARAMS)
def test_reverse_against_finite_differences(case, opt):
    check_reverse(_kernel(case, opt), derive=_derive(case, opt))


@pytest.mark.parametrize("case, opt", PARAMS)
def test_forward_against_finite_differences(case, opt):
    check_forward(_kernel(case, opt), derive=_derive(case, opt))


@pytest.mark.parametrize("case, opt", PARAMS)
def test_forward_against_reverse(case, opt):
    check_inner_product(_kernel(case, opt), derive=_derive(case, opt))


def _line(text: str) -> str:
    """`held_pointers.c:N` of the source line holding `text`."""
    with open(SOURCE) as f:
        n = next(i for i, line in enumerate(f, 1) if text in line)
    return f"held_pointers.c:{n}"


@pytest.mark.parametrize("fn, acts, what, where", [
    # a union of a double and a pointer: the type model sees both kinds in the same bytes
    ("punned", "dup,const", "pointer loaded from shadowed memory whose bytes also hold floats",
     "return (u[0].p)[0];"),
    # a const array's address stored into a dup struct: loaded back (by the caller too), it
    # would have no shadow
    ("keep_const", "dup,const,const", "pointer without a derivative",
     "v->data = (double *)c;"),
    # a struct holding pointers copied from const memory into dup memory
    ("copy_from_const", "dup,const,const", "the pointers copied would have no shadow",
     "dst[i] = *src;"),
])
def test_refused_in_both_modes(fn, acts, what, where):
    """Refused by name, at the C line, in both modes."""
    from enzyme_py.c import derive
    from ir_passes.errors import UnsupportedError
    for mode in ("reverse", "forward"):
        with pytest.raises(UnsupportedError) as err:
            derive(SOURCE, fn, acts, mode=mode)
        assert what in str(err.value) and _line(where) in str(err.value)
