"""The BLAS matrix products Numba calls for `@`, `np.dot` and `np.matmul`, as known calls.

`numba_xxgemv(kind, trans, m, n, alpha, a, lda, x, beta, y)`: y = alpha op(A) x + beta y, and
`numba_xxgemm(kind, transa, transb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)`:
C = alpha op(A) op(B) + beta C, column-major (Fortran) with leading dimensions, op(A) = A or
A^T as `trans` is 'n' or 't' (or 'c'). Numba passes alpha and beta through stack slots holding
1.0 and 0.0 (np.linalg.pinv: constant arrays) and constant `trans` flags; `check` refuses
anything else, and the complex kinds.

Derivatives are BLAS calls again (through small internal functions owning their alpha/beta
slots, `blas_calls.py`):
* gemv, forward: y' = op(A') x + op(A) x'; reverse: x' += op(A)^T y', A' += y' x^T (or
  x y'^T for op(A) = A^T: a gemm with k = 1), then y' = 0 (y is overwritten).
* gemm, forward: C' = op(A') op(B) + op(A) op(B'); reverse: A' += C' op(B)^T (transposed for
  op(A) = A^T), B' += op(A)^T C' (transposed for op(B) = B^T), then C' = 0.
The reverse reads A and x (A and B) as they were at the call (`reverse_reads`).
"""
from __future__ import annotations

import re
import struct

from ir_passes.ir.types import DOUBLE, FloatType, size_of
from ir_passes.ir.values import ConstFloat, ConstInt, GlobalRef, Instruction, Module, Value
from ir_passes.known.model import (CallContext, Flow, ForwardCalls, KnownCall, ReadInReverse,
                                   ReverseCalls)

from .blas import dot_type
from .blas_calls import call_gemm, call_gemv, zero_matrix
from .blas_operand_copy import copy_mixed_operands

GEMV, GEMM = "numba_xxgemv", "numba_xxgemm"
# Argument positions.
_V_TRANS, _V_M, _V_N, _V_ALPHA, _V_A, _V_LDA, _V_X, _V_BETA, _V_Y = range(1, 10)
(_M_TA, _M_TB, _M_M, _M_N, _M_K, _M_ALPHA, _M_A, _M_LDA, _M_B, _M_LDB, _M_BETA, _M_C,
 _M_LDC) = range(1, 14)
_FLIP = {"n": "t", "t": "n"}


def _flag(inst: Instruction, i: int) -> str | None:
    """A constant transpose flag ('n' or 't'), None otherwise."""
    op = inst.operands[i]
    if not isinstance(op, ConstInt):
        return None
    flag = chr(op.value & 0xFF).lower()
    flag = "t" if flag == "c" else flag      # conjugate transpose: the transpose (real kinds)
    return flag if flag in _FLIP else None


def _slot_constant(module: Module, inst: Instruction, ptr: Value) -> float | None:
    """The constant a stack slot holds at `inst`: the last store to it earlier in `inst`'s
    block (Numba sets its alpha and beta slots right before the call), or a constant global
    array's first element (np.linalg.pinv's), else None."""
    if isinstance(ptr, GlobalRef):
        return _global_constant(module, ptr.name, dot_type(inst))
    if not (isinstance(ptr, Instruction) and ptr.opcode == "alloca") or inst.block is None:
        return None
    block = inst.block.instructions
    stores = [s for s in block[:block.index(inst)]
              if s.opcode == "store" and s.operands[1] is ptr]
    value = stores[-1].operands[0] if stores else None
    return value.value if isinstance(value, ConstFloat) else None


def _global_constant(module: Module, name: str, t: FloatType | None) -> float | None:
    """The value of the one-element constant array `@name` of floats `t`: its bytes."""
    line = module.globals.get(name, "")
    found = re.search(r"= (?:internal |private )?(?:unnamed_addr )?constant "
                      r"\[(\d+) x i8\] (zeroinitializer|c\"([^\"]*)\")", line)
    if t is None or found is None or int(found.group(1)) != size_of(t):
        return None
    if found.group(2) == "zeroinitializer":
        return 0.0
    data = re.sub(rb"\\([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]),
                  found.group(3).encode("latin-1"))
    return struct.unpack("<d" if t == DOUBLE else "<f", data)[0] \
        if len(data) == size_of(t) else None


def _check(ctx: CallContext, inst: Instruction, flags: tuple[int, ...], alpha: int,
           beta: int, out: int) -> None:
    name = inst.callee_name
    if dot_type(inst) is None:
        raise ctx.diag.unsupported(f"complex matrix product ({name})", inst,
                                   "not supported yet: only float32 and float64 products are "
                                   "differentiable")
    if any(_flag(inst, i) is None for i in flags) \
            or _slot_constant(ctx.module, inst, inst.operands[alpha]) != 1.0 \
            or _slot_constant(ctx.module, inst, inst.operands[beta]) != 0.0:
        raise ctx.diag.unsupported(f"{name} with other than constant transposes, alpha = 1 "
                                   "and beta = 0", inst,
                                   "not supported yet: call it as Numba's np.dot does")
    if not ctx.has_shadow(inst.operands[out]):
        raise ctx.diag.unsupported(f"matrix product ({name}) into memory without a shadow "
                                   f"({ctx.describe(inst.operands[out])})", inst)


def _check_gemv(ctx: CallContext, inst: Instruction) -> None:
    _check(ctx, inst, (_V_TRANS,), _V_ALPHA, _V_BETA, _V_Y)


def _check_gemm(ctx: CallContext, inst: Instruction) -> None:
    _check(ctx, inst, (_M_TA, _M_TB), _M_ALPHA, _M_BETA, _M_C)


def _out_length(trans: str, m: Value, n: Value) -> Value:
    """The length of gemv's y: m for op(A) = A, n for op(A) = A^T."""
    return m if trans == "n" else n


def _type(inst: Instruction) -> FloatType:
    t = dot_type(inst)
    assert t is not None
    return t


def _forward_gemv(ctx: ForwardCalls, inst: Instruction) -> None:
    """y' = op(A') x + op(A) x', per lane (the second call accumulates: beta = 1)."""
    t, trans = _type(inst), _flag(inst, _V_TRANS)
    assert trans is not None
    m, n, lda = (ctx.value(inst.operands[i]) for i in (_V_M, _V_N, _V_LDA))
    a_, x_, y_ = inst.operands[_V_A], inst.operands[_V_X], inst.operands[_V_Y]
    for j in range(ctx.width):
        beta = 0.0
        for pos, shadowed in enumerate((a_, x_)):   # by position: a_ may be x_
            if not ctx.has_shadow(shadowed):
                continue
            lane = ctx.shadow(shadowed, j)
            mat, vec = (lane, ctx.value(x_)) if pos == 0 else (ctx.value(a_), lane)
            call_gemv(ctx.b, ctx.module, t, trans, m, n, mat, lda, vec, beta, ctx.shadow(y_, j))
            beta = 1.0
        if beta == 0.0:
            zero_matrix(ctx.b, ctx.module, t, ctx.shadow(y_, j), _out_length(trans, m, n))


def _reverse_gemv(ctx: ReverseCalls, inst: Instruction) -> None:
    """x' += op(A)^T y';  A' += y' x^T (op(A) = A) or x y'^T (op(A) = A^T);  y' = 0."""
    b, module, t, trans = ctx.b, ctx.module, _type(inst), _flag(inst, _V_TRANS)
    assert trans is not None
    a_, x_ = inst.operands[_V_A], inst.operands[_V_X]
    m, n, lda = (ctx.value(inst.operands[i]) for i in (_V_M, _V_N, _V_LDA))
    g = ctx.shadow(inst.operands[_V_Y])
    if ctx.has_shadow(x_):
        call_gemv(b, module, t, _FLIP[trans], m, n, ctx.value(a_), lda, g, 1.0,
                  ctx.shadow(x_))
    if ctx.has_shadow(a_):
        one = ConstInt(m.type, 1)
        left, right = (g, ctx.value(x_)) if trans == "n" else (ctx.value(x_), g)
        call_gemm(b, module, t, "n", "t", m, n, one, left, m, right, n, 1.0,
                  ctx.shadow(a_), lda)
    zero_matrix(b, module, t, g, _out_length(trans, m, n))


def _forward_gemm(ctx: ForwardCalls, inst: Instruction) -> None:
    """C' = op(A') op(B) + op(A) op(B'), per lane (the second call accumulates)."""
    t, ta, tb = _type(inst), _flag(inst, _M_TA), _flag(inst, _M_TB)
    m, n, k, a, lda, bm, ldb, ldc = (ctx.value(inst.operands[i]) for i in (
        _M_M, _M_N, _M_K, _M_A, _M_LDA, _M_B, _M_LDB, _M_LDC))
    a_, b_, c_ = inst.operands[_M_A], inst.operands[_M_B], inst.operands[_M_C]
    for j in range(ctx.width):
        beta = 0.0
        for pos, shadowed in enumerate((a_, b_)):   # by position: a_ may be b_ (X @ X.T)
            if not ctx.has_shadow(shadowed):
                continue
            lane = ctx.shadow(shadowed, j)
            left, right = (lane, bm) if pos == 0 else (a, lane)
            call_gemm(ctx.b, ctx.module, t, ta, tb, m, n, k, left, lda, right, ldb, beta,
                      ctx.shadow(c_, j), ldc)
            beta = 1.0
        if beta == 0.0:
            zero_matrix(ctx.b, ctx.module, t, ctx.shadow(c_, j), m, n, ldc)


def _reverse_gemm(ctx: ReverseCalls, inst: Instruction) -> None:
    """A' += C' op(B)^T (transposed when op(A) = A^T), B' += op(A)^T C' (transposed when
    op(B) = B^T), then C' = 0."""
    b, module, t = ctx.b, ctx.module, _type(inst)
    ta, tb = _flag(inst, _M_TA), _flag(inst, _M_TB)
    assert ta is not None and tb is not None
    m, n, k, lda, ldb, ldc = (ctx.value(inst.operands[i]) for i in (
        _M_M, _M_N, _M_K, _M_LDA, _M_LDB, _M_LDC))
    a_, b_ = inst.operands[_M_A], inst.operands[_M_B]
    g = ctx.shadow(inst.operands[_M_C])
    if ctx.has_shadow(a_):
        bv, da = ctx.value(b_), ctx.shadow(a_)
        if ta == "n":       # A (m x k) += G op(B)^T
            call_gemm(b, module, t, "n", _FLIP[tb], m, k, n, g, ldc, bv, ldb, 1.0, da, lda)
        else:               # A (k x m) += op(B) G^T
            call_gemm(b, module, t, tb, "t", k, m, n, bv, ldb, g, ldc, 1.0, da, lda)
    if ctx.has_shadow(b_):
        av, db = ctx.value(a_), ctx.shadow(b_)
        if tb == "n":       # B (k x n) += op(A)^T G
            call_gemm(b, module, t, _FLIP[ta], "n", k, n, m, av, lda, g, ldc, 1.0, db, ldb)
        else:               # B (n x k) += G^T op(A)
            call_gemm(b, module, t, "t", ta, n, k, m, g, ldc, av, lda, 1.0, db, ldb)
    zero_matrix(b, module, t, g, m, n, ldc)


def _prepare_gemv(module: Module, inst: Instruction, moving) -> None:
    """Copies of operands of mixed origin or `moving` (`blas_operand_copy.py`)."""
    m, n = inst.operands[_V_M], inst.operands[_V_N]
    length = m if _flag(inst, _V_TRANS) == "t" else n
    copy_mixed_operands(module, inst, dot_type(inst), (
        (_V_A, inst.operands[_V_LDA], m, n), (_V_X, length, length, ConstInt(n.type, 1))), moving)


def _prepare_gemm(module: Module, inst: Instruction, moving) -> None:
    """Copies of operands of mixed origin or `moving` (`blas_operand_copy.py`)."""
    m, n, k = (inst.operands[i] for i in (_M_M, _M_N, _M_K))
    a_shape = (k, m) if _flag(inst, _M_TA) == "t" else (m, k)
    b_shape = (n, k) if _flag(inst, _M_TB) == "t" else (k, n)
    copy_mixed_operands(module, inst, dot_type(inst), (
        (_M_A, inst.operands[_M_LDA], *a_shape), (_M_B, inst.operands[_M_LDB], *b_shape)), moving)


_HINT = ("multiply a copy of the operand written later (A.copy() @ x or A @ x.copy()), or "
         "write the array only after its last product")

GEMV_RECORD = KnownCall(
    GEMV, writes=(_V_Y,), flow=Flow(_V_Y, (_V_A, _V_X)), check=_check_gemv,
    forward=_forward_gemv, reverse=_reverse_gemv, prepare=_prepare_gemv,
    reverse_reads=ReadInReverse((_V_A, _V_X), "matrix product (numba_xxgemv: A @ x, np.dot "
                                "or np.matmul) of an array the function also writes", _HINT))
GEMM_RECORD = KnownCall(
    GEMM, writes=(_M_C,), flow=Flow(_M_C, (_M_A, _M_B)), check=_check_gemm,
    forward=_forward_gemm, reverse=_reverse_gemm, prepare=_prepare_gemm,
    reverse_reads=ReadInReverse((_M_A, _M_B), "matrix product (numba_xxgemm: A @ B, np.dot "
                                "or np.matmul) of an array the function also writes", _HINT))
