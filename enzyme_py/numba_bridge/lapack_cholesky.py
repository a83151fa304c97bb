"""The Cholesky factorisation of `np.linalg.cholesky` (LAPACK potrf), as a known call.

`numba_xxpotrf(kind, 'U', n, a, lda)` overwrites the upper triangle of the column-major `a`
with U, A = U^T U, A being the symmetric matrix of a's upper triangle (Numba passes its
C-ordered copy, so U^T is the lower factor it returns); the strict lower triangle stays
(Numba then zeroes it). With Phi(X) = the upper triangle of X with its diagonal halved:
* forward: U' = Phi(U^-T S U^-1) U for S the symmetric matrix of the upper triangle of A';
* reverse: with Y = U^-1 Phi(triu(Ubar) U^T) U^-T, the upper triangle's adjoint is Y + Y^T
  off the diagonal and Y on it.
The strict lower triangle's tangent and adjoint pass through (triangular solves and products
with U: trsm, trmm). The reverse reads U, which Numba's zeroing of the other triangle (stores
of 0.0 made by Numba's implementation of np.linalg.cholesky itself, told apart from the user's
code by `origins`) leaves alone; any other later write is refused.
"""
from __future__ import annotations

from ir_passes.ir.values import ConstFloat, ConstInt, Instruction
from ir_passes.known.memory import pointer_base
from ir_passes.known.model import (CallContext, Flow, ForwardCalls, KnownCall, ReadInReverse,
                                   ReverseCalls)

from .lapack_calls import call, mask_triangles, release, scratch
from .lapack_lu import element_type
from .origins import same_origin, watch

POTRF = "numba_xxpotrf"
_UPLO, _N, _A, _LDA = range(1, 5)
_UPPER = (0, 1, 1)          # mask factors selecting the upper triangle (with the diagonal)


def _zeroing(call_: Instruction, write: Instruction) -> bool:
    """Numba's zeroing of the other triangle: a store of 0.0 into the factored array by the
    function that made the call (Numba's implementation of np.linalg.cholesky)."""
    return write.opcode == "store" and isinstance(write.operands[0], ConstFloat) \
        and write.operands[0].value == 0.0 and same_origin(call_, write) \
        and pointer_base(write.operands[1]) is pointer_base(call_.operands[_A])


def _check(ctx: CallContext, inst: Instruction) -> None:
    element_type(ctx, inst, "Cholesky factorisation")
    uplo = inst.operands[_UPLO]
    if not (isinstance(uplo, ConstInt) and chr(uplo.value & 0xFF) == "U"):
        raise ctx.diag.unsupported("Cholesky factorisation (numba_xxpotrf) of a lower triangle",
                                   inst, "not supported yet: call np.linalg.cholesky")
    if not ctx.has_shadow(inst.operands[_A]):
        raise ctx.diag.unsupported("Cholesky factorisation (numba_xxpotrf) into memory without "
                                   f"a shadow ({ctx.describe(inst.operands[_A])})", inst)


def _values(ctx, inst: Instruction):
    return tuple(ctx.value(inst.operands[i]) for i in (_N, _A, _LDA))


def _forward(ctx: ForwardCalls, inst: Instruction) -> None:
    """U' = Phi(U^-T S U^-1) U into the upper triangle of a's shadow, per lane."""
    t, b, m = element_type(ctx, inst, "Cholesky factorisation"), ctx.b, ctx.module
    n, u, lda = _values(ctx, inst)
    s = scratch(b, m, t, n, n)
    for j in range(ctx.width):
        d = ctx.shadow(inst.operands[_A], j)
        mask_triangles(b, m, t, n, d, lda, s, n, (0, 0, 0), _UPPER)
        mask_triangles(b, m, t, n, d, lda, s, n, (1, 1, 1), (1, 0, 0), transposed=True)
        call(b, m, t, "trsm", "l", "u", "t", "n", n, n, 1.0, u, lda, s, n)
        call(b, m, t, "trsm", "r", "u", "n", "n", n, n, 1.0, u, lda, s, n)
        mask_triangles(b, m, t, n, s, n, s, n, (0, 0, 0), (0, 0.5, 1))
        call(b, m, t, "trmm", "r", "u", "n", "n", n, n, 1.0, u, lda, s, n)
        mask_triangles(b, m, t, n, s, n, d, lda, (1, 0, 0), _UPPER)
    release(b, m, s)


def _reverse(ctx: ReverseCalls, inst: Instruction) -> None:
    """Upper triangle of a's shadow := Y + Y^T (Y on the diagonal)."""
    t, b, m = element_type(ctx, inst, "Cholesky factorisation"), ctx.b, ctx.module
    n, u, lda = _values(ctx, inst)
    g = ctx.shadow(inst.operands[_A])
    y = scratch(b, m, t, n, n)
    mask_triangles(b, m, t, n, g, lda, y, n, (0, 0, 0), _UPPER)
    call(b, m, t, "trmm", "r", "u", "t", "n", n, n, 1.0, u, lda, y, n)
    mask_triangles(b, m, t, n, y, n, y, n, (0, 0, 0), (0, 0.5, 1))
    call(b, m, t, "trsm", "l", "u", "n", "n", n, n, 1.0, u, lda, y, n)
    call(b, m, t, "trsm", "r", "u", "t", "n", n, n, 1.0, u, lda, y, n)
    mask_triangles(b, m, t, n, y, n, g, lda, (1, 0, 0), _UPPER)
    mask_triangles(b, m, t, n, y, n, g, lda, (1, 1, 1), (0, 0, 1), transposed=True)
    release(b, m, y)


watch(POTRF)
POTRF_RECORD = KnownCall(
    POTRF, writes=(_A,), flow=Flow(_A, (_A,)), check=_check, forward=_forward,
    reverse=_reverse,
    reverse_reads=ReadInReverse((_A,), "Cholesky factor (numba_xxpotrf: np.linalg.cholesky) "
                                "written after the call (the derivative reads it)",
                                "write into a copy of the factor (np.linalg.cholesky(A).copy())",
                                allowed=_zeroing))
