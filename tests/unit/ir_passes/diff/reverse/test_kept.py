"""Writes after a call whose reverse reads an allocated array (`ir_passes.diff.reverse.kept`):
once the allocation runs again, a write through a pointer computed from it since goes to a new
array; a write through a phi carrying the old array past that allocation does not."""
from __future__ import annotations

import numpy as np

from enzyme_py.inspection import inspect
from ir_passes.diff.reverse.kept import local_owner, written_after
from ir_passes.ir.parser import parse_module

_GEMV_X = 7          # numba_xxgemv(kind, trans, m, n, alpha, a, lda, x, beta, y)


def _product_operand(py):
    """The gemv call of `py` (one float64[::1] argument) and the allocations behind its x."""
    module = parse_module(inspect(py, ("dup",), stage="canonical", types="float64[::1]"))
    fn = next(f for f in module.functions.values() if not f.is_declaration)
    call = next(i for i in fn.instructions() if i.callee_name == "numba_xxgemv")
    owned = local_owner(call.operands[_GEMV_X])
    assert owned is not None
    return call, owned[1]


def carried(z):
    F = np.array([[1.0, 0.5], [-0.2, 0.9]])
    x = np.zeros(2)
    s = 0.0
    for t in range(z.shape[0]):
        x = F @ x                  # x: the zeros, or the previous step's product
        s += x[0] * z[t]
    return s


def stale(z):
    F = np.array([[1.0, 0.5], [-0.2, 0.9]])
    prev = np.zeros(2)
    s = 0.0
    for t in range(z.shape[0]):
        a = np.empty(2)
        a[0] = z[t]
        a[1] = z[t] * z[t]
        prev[1] = 0.0              # the previous step's `a`, after `a` was allocated again
        y = F @ a
        s += y[0] * y[1]
        prev = a
    return s


def test_writes_to_the_arrays_of_later_steps_do_not_count():
    call, leaves = _product_operand(carried)
    assert len(leaves) > 1                             # a phi of the zeros and the products
    assert not written_after(call, leaves)


def test_a_write_through_a_phi_carrying_the_old_array_counts():
    call, leaves = _product_operand(stale)
    assert len(leaves) == 1
    assert written_after(call, leaves)
