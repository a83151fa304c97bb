"""BLAS and LAPACK routines the derivatives of `np.linalg` call, by their Fortran entry points.

Numba's helper library wraps only the routines its primal code needs (getrf, gesv, potrf, ...);
the derivatives also need triangular solves and products (trsm, trmm), LU solves (getrs), row
interchanges (laswp), matrix copies (lacpy) and gemm with any alpha and beta. They come from
the same BLAS/LAPACK Numba uses: the function pointers scipy exports in
`scipy.linalg.cython_blas` and `cython_lapack`, made known to LLVM as `enzyme_py.f.<routine>`
(`llvmlite.binding.add_symbol`).

Each routine is called through a small internal function `enzyme_py.lapack.<routine>.<t>`
taking values (i8 flags, i64 sizes, T scalars, pointers) that stores them in stack slots and
passes their addresses, as Fortran expects; the hidden lengths of the flag arguments follow.
Sizes are LAPACK's 32-bit integers (Numba refuses an ILP64 LAPACK as well). Also here: the
triangle masks the rules apply between routines (`mask_triangles`) and scratch matrices.
"""
from __future__ import annotations

import ctypes
from functools import lru_cache

from ir_passes.ir.builder import Builder, counted_loop, declare
from ir_passes.ir.types import (DOUBLE, I1, I8, I32, I64, PTR, VOID, FloatType, FunctionType,
                                Type, size_of)
from ir_passes.ir.values import Function, Module, Value, const_float, const_int
from ir_passes.known.model import Role, runtime_call

# Parameter kinds: c a flag (char), i a size (int), f a scalar of the routine's float type,
# p an array (pointer), o the info output (int, ignored: arguments are valid by construction).
_SIGNATURES = {
    "gemm": "cciiifpipifpi",      # transa transb m n k alpha a lda b ldb beta c ldc
    "trsm": "cccciifpipi",        # side uplo transa diag m n alpha a lda b ldb
    "trmm": "cccciifpipi",
    "getrs": "ciipippio",         # trans n nrhs a lda ipiv b ldb info
    "laswp": "ipiiipi",           # n a lda k1 k2 ipiv incx
    "lacpy": "ciipipi",           # uplo m n a lda b ldb
}
_BLAS = ("gemm", "trsm", "trmm")
_PARAM = {"c": I8, "i": I64, "p": PTR}


def _prefix(t: FloatType) -> str:
    return "d" if t == DOUBLE else "s"


@lru_cache(maxsize=None)
def _symbol(routine: str) -> str:
    """Make the Fortran routine (e.g. "dtrsm") known to LLVM; its symbol name."""
    import llvmlite.binding as llvm
    import scipy.linalg.cython_blas as blas
    import scipy.linalg.cython_lapack as lapack
    library = blas if routine[1:] in _BLAS else lapack
    capsule = library.__pyx_capi__[routine]
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    symbol = f"enzyme_py.f.{routine}"
    llvm.add_symbol(symbol, get(capsule, name(capsule)))
    return symbol


def _wrapper(module: Module, t: FloatType, routine: str) -> Function:
    """`void enzyme_py.lapack.<routine>.<t>(...)`: the Fortran routine called with values."""
    name = f"enzyme_py.lapack.{routine}.{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    kinds = _SIGNATURES[routine]
    params = [t if k == "f" else _PARAM[k] for k in kinds if k != "o"]
    flags = kinds.count("c")
    target = declare(module, _symbol(_prefix(t) + routine), VOID,
                     [PTR] * len(kinds) + [I64] * flags)
    fn = Function(name, FunctionType(VOID, tuple(params)), [f"a{i}" for i in range(len(params))],
                  linkage="internal")
    b = Builder(fn.add_block("entry"))
    given = iter(fn.args)
    passed: list[Value] = []
    for kind in kinds:
        if kind == "p":
            passed.append(next(given))
            continue
        slot_type: Type = {"c": I8, "f": t}.get(kind, I32)
        slot = b.alloca(slot_type)
        value = const_int(I32, 0) if kind == "o" else next(given)
        b.store(b.cast("trunc", value, I32) if kind == "i" else value, slot)
        passed.append(slot)
    b.call(target, passed + [const_int(I64, 1)] * flags, VOID)
    b.ret()
    module.add_function(fn)
    return fn


def _size(v: Value | int) -> Value:
    return const_int(I64, v) if isinstance(v, int) else v


def call(b: Builder, module: Module, t: FloatType, routine: str, *args: Value | str | float | int
         ) -> None:
    """Call `routine` (a key of `_SIGNATURES`) for float type `t`; flags are one-letter strings,
    scalars Python floats, sizes i64 values or ints, arrays pointers."""
    kinds = [k for k in _SIGNATURES[routine] if k != "o"]
    assert len(kinds) == len(args), routine
    values = [const_int(I8, ord(a)) if k == "c" else const_float(t, a) if k == "f"
              else _size(a) if k == "i" else a for k, a in zip(kinds, args)]
    b.call(_wrapper(module, t, routine), values, VOID)  # type: ignore[arg-type]


def scratch(b: Builder, module: Module, t: FloatType, n: Value, cols: Value) -> Value:
    """A fresh n x cols buffer of `t` (release it with `release`)."""
    alloc = declare(module, runtime_call(Role.RAW_ALLOC).name, PTR, [I64])
    return b.call(alloc, [b.mul(b.mul(n, cols), const_int(I64, size_of(t)))], PTR)


def release(b: Builder, module: Module, buffer: Value) -> None:
    b.call(declare(module, runtime_call(Role.RAW_FREE).name, VOID, [PTR]), [buffer], VOID)


def mask_triangles(b: Builder, module: Module, t: FloatType, n: Value, src: Value, lds: Value,
                   dst: Value, ldd: Value, keep: tuple[float, float, float],
                   scale: tuple[float, float, float], transposed: bool = False) -> None:
    """dst = keep * dst + scale * src (src^T when `transposed`) over an n x n column-major
    matrix, with factors per region: (strictly lower, diagonal, strictly upper)."""
    factors = [const_float(t, float(f)) for f in (*keep, *scale)]
    b.call(_mask_function(module, t), [n, src, lds, dst, ldd, *factors,
                                       const_int(I1, int(transposed))], VOID)


def _times(b: Builder, factor: Value, v: Value) -> Value:
    """factor * v, exactly 0 for a factor 0 (scratch memory may hold NaNs)."""
    is_zero = b.fcmp("oeq", factor, const_float(factor.type, 0.0))
    return b.select(is_zero, const_float(factor.type, 0.0), b.fmul(factor, v))


def _mask_function(module: Module, t: FloatType) -> Function:
    name = f"enzyme_py.mask_triangles.{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    fn = Function(name, FunctionType(VOID, (I64, PTR, I64, PTR, I64) + (t,) * 6 + (I1,)),
                  ["n", "src", "lds", "dst", "ldd", "kl", "kd", "ku", "sl", "sd", "su", "tr"],
                  linkage="internal")
    n, src, lds, dst, ldd, kl, kd, ku, sl, sd, su, tr = fn.args

    def column(b: Builder, j: Value) -> None:
        def element(b: Builder, i: Value) -> None:
            below, on = b.icmp("sgt", i, j), b.icmp("eq", i, j)
            keep = b.select(below, kl, b.select(on, kd, ku))
            scale = b.select(below, sl, b.select(on, sd, su))
            read = b.select(tr, b.add(b.mul(i, lds), j), b.add(b.mul(j, lds), i))
            at = b.gep(t, dst, [b.add(b.mul(j, ldd), i)])
            kept = _times(b, keep, b.load(t, at))
            b.store(b.fadd(kept, _times(b, scale, b.load(t, b.gep(t, src, [read])))), at)
        counted_loop(b, n, element)

    b = Builder(fn.add_block("entry"))
    counted_loop(b, n, column)
    b.ret()
    module.add_function(fn)
    return fn
