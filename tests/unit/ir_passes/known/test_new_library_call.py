"""Adding a library call is one record.

`lib_cube(dst, src, n)` (dst[i] = src[i]**3) is an external function the pass has never seen;
one `KnownCall` makes a C function calling it differentiable in both modes. Its emitters call
the library's own derivative routines (`lib_cube_jvp`, `lib_cube_vjp`), as a gemv record calls
gemv again. The library is Python (ctypes callbacks) that the JIT links by symbol. Checked
against finite differences and forward against reverse, with tests/support/gradcheck.
"""
from __future__ import annotations

import ctypes
import functools
import os
import tempfile

import llvmlite.binding as llvm
import numpy as np
import pytest

from ir_passes.ir.builder import declare
from ir_passes.ir.types import I64, PTR, VOID
from ir_passes.ir.values import Instruction
from ir_passes.known.model import (CallContext, Flow, ForwardCalls, KnownCall, ReadInReverse,
                                   ReverseCalls, register)
from tests.unit.enzyme_py.c.conftest import HAVE_CLANG
from tests.support.arrays import copy_args
from tests.support.gradcheck import check_forward, check_inner_product, check_reverse
from tests.support.kernel import Kernel

pytestmark = pytest.mark.skipif(not HAVE_CLANG, reason="clang-22 is not installed")

_C = """
void lib_cube(double *dst, const double *src, long n);
void cubes(double *out, const double *x, long n) { lib_cube(out, x, n); }
"""
_P, _N = ctypes.c_void_p, ctypes.c_long


def _array(p: int, n: int) -> np.ndarray:
    return np.ctypeslib.as_array(ctypes.cast(p, ctypes.POINTER(ctypes.c_double)), (n,))


@ctypes.CFUNCTYPE(None, _P, _P, _N)
def _cube(dst, src, n):
    _array(dst, n)[:] = _array(src, n) ** 3


@ctypes.CFUNCTYPE(None, _P, _P, _P, _N)
def _cube_jvp(dst_t, src, src_t, n):
    _array(dst_t, n)[:] = 3 * _array(src, n) ** 2 * _array(src_t, n)


@ctypes.CFUNCTYPE(None, _P, _P, _P, _N)
def _cube_vjp(src_adj, src, dst_adj, n):
    _array(src_adj, n)[:] += 3 * _array(src, n) ** 2 * _array(dst_adj, n)
    _array(dst_adj, n)[:] = 0.0


def _check(ctx: CallContext, inst: Instruction) -> None:
    if not all(ctx.has_shadow(p) for p in inst.operands[:2]):
        raise ctx.diag.unsupported("lib_cube between arrays without shadows", inst)


def _forward(ctx: ForwardCalls, inst: Instruction) -> None:
    dst, src, n = inst.operands
    jvp = declare(ctx.module, "lib_cube_jvp", VOID, [PTR, PTR, PTR, I64])
    for j in range(ctx.width):
        ctx.b.call(jvp, [ctx.shadow(dst, j), ctx.value(src), ctx.shadow(src, j), ctx.value(n)],
                   VOID)


def _reverse(ctx: ReverseCalls, inst: Instruction) -> None:
    dst, src, n = inst.operands
    vjp = declare(ctx.module, "lib_cube_vjp", VOID, [PTR, PTR, PTR, I64])
    ctx.b.call(vjp, [ctx.shadow(src), ctx.value(src), ctx.shadow(dst), ctx.value(n)], VOID)


LIB_CUBE = KnownCall(
    "lib_cube", pointer_neutral=True, writes=(0,), flow=Flow(0, (1,)), check=_check,
    forward=_forward, reverse=_reverse,
    reverse_reads=ReadInReverse((1,), "lib_cube of an array the function also writes",
                                "cube a copy"))


@functools.lru_cache(maxsize=None)
def _source() -> str:
    for name, fn in (("lib_cube", _cube), ("lib_cube_jvp", _cube_jvp),
                     ("lib_cube_vjp", _cube_vjp)):
        llvm.add_symbol(name, ctypes.cast(fn, ctypes.c_void_p).value)
    register(LIB_CUBE)
    path = os.path.join(tempfile.mkdtemp(prefix="enzyme_py_lib_cube_"), "cubes.c")
    with open(path, "w", encoding="utf-8") as f:
        f.write(_C)
    return path


@functools.lru_cache(maxsize=None)
def _derived(acts: tuple, mode: str):
    from enzyme_py.c import derive
    return derive(_source(), "cubes", acts, mode=mode)


def _derive(f, name, acts, mode="reverse", **kw):
    """`derive` with the conventions gradcheck expects (as tests/unit/enzyme_py/c/ckernels.c_derive)."""
    df = _derived(tuple(acts), mode)
    if mode == "reverse":
        return lambda *args: df(*args) or ()
    return lambda out, d_out, x, d_x, n: (f(*copy_args((out, x, n))), df(out, d_out, x, d_x, n))


def _cubes(out, x, n):
    out[:n] = x[:n] ** 3


KERNEL = Kernel("lib_cube", _cubes, lambda rng: (np.zeros(5), rng.uniform(-1.2, 1.2, 5), 5),
                outputs=(0,))


def test_reverse_against_finite_differences():
    check_reverse(KERNEL, derive=_derive)


def test_forward_against_finite_differences():
    check_forward(KERNEL, derive=_derive)


def test_forward_against_reverse():
    check_inner_product(KERNEL, derive=_derive)
