"""The adjoint of `llvm.memmove` (`move_adjoint_function`), whose ranges may overlap (a list's
items moving down for `pop`, up for `insert`): against the transpose of the move written as a
matrix, for moves in both directions, overlapping or not, of float64 and float32."""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest

from ir_passes.ir.printer import print_module
from ir_passes.ir.types import DOUBLE, FLOAT
from ir_passes.ir.values import Module
from ir_passes.known.generic import move_adjoint_function

_N = 12


def _compiled(t):
    module = Module()
    fn = move_adjoint_function(module, t)
    fn.linkage = ""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(print_module(module)), machine)
    engine.finalize_object()
    address = engine.get_function_address(fn.name)
    return engine, ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p,
                                    ctypes.c_int64)(address)


def _move_matrix(dst: int, src: int, count: int) -> np.ndarray:
    """M with new = M @ old for memmove(buf + dst, buf + src, count) on a buffer of _N."""
    m = np.eye(_N)
    for k in range(count):
        m[dst + k] = 0.0
        m[dst + k, src + k] = 1.0
    return m


@pytest.mark.parametrize("dtype, t", [(np.float64, DOUBLE), (np.float32, FLOAT)])
@pytest.mark.parametrize("dst, src, count", [(2, 3, 7), (3, 2, 7), (0, 6, 5), (6, 0, 5),
                                             (4, 4, 3), (1, 2, 0)])
def test_move_adjoint_is_the_transpose_of_the_move(dtype, t, dst, src, count):
    engine, move_adjoint = _compiled(t)
    adjoint = np.random.default_rng(dst * 13 + src).normal(size=_N).astype(dtype)
    expected = _move_matrix(dst, src, count).T @ adjoint.astype(np.float64)
    base = adjoint.ctypes.data
    size = adjoint.itemsize
    move_adjoint(base + src * size, base + dst * size, count * size)
    np.testing.assert_allclose(adjoint, expected, rtol=1e-6)
    del engine
