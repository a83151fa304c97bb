"""The LU-based LAPACK calls of `np.linalg` (solve, inv, det, slogdet), as known calls.

Numba copies the matrix into a fresh column-major array and calls its helper library:
* `numba_xgesv(kind, n, nrhs, a, lda, ipiv, b, ldb)` (solve): A = P L U over a, X = A^-1 B
  over b. Forward: X' = A^-1 (B' - A' X), one gemm and one LU solve (getrs) with the same
  factors. Reverse: B' = A^-T X' (getrs with the transposed system), A' = -B' X^T (gemm).
  Nothing may read the factors left in `a` (Numba's solve does not): their tangent is not made.
* `numba_xxgetrf(kind, m, n, a, lda, ipiv)`: the factors themselves. When the function reads
  them (slogdet and det walk U's diagonal), their tangent is exact: with
  F = L^-1 P^T A' U^-1, L' = L tril(F, -1) and U' = triu(F) U; the adjoint is
  A' = P L^-T (tril(L^T Lbar, -1) + triu(Ubar U^T)) U^-T (laswp, trsm, trmm). When only
  getri reads them (inv), the factors' shadow stands for the matrix's own (identity rules).
* `numba_ez_xxgetri(kind, n, a, lda, ipiv)` (inv, after such a getrf): with W = A^-1 in `a`,
  W' = -W A' W and A' = -W^T W' W^T (two gemms each).
Complex kinds are refused.
"""
from __future__ import annotations

from ir_passes.ir.types import FloatType
from ir_passes.ir.values import Instruction, Value
from ir_passes.known.model import (CallContext, Flow, ForwardCalls, KnownCall, ReadInReverse,
                                   ReverseCalls)

from .blas import dot_type
from .lapack_calls import call, mask_triangles, release, scratch
from .lapack_uses import uses_after

GESV, GETRF, GETRI = "numba_xgesv", "numba_xxgetrf", "numba_ez_xxgetri"
_V_N, _V_NRHS, _V_A, _V_LDA, _V_IPIV, _V_B, _V_LDB = range(1, 8)     # gesv
_F_M, _F_N, _F_A, _F_LDA, _F_IPIV = range(1, 6)                      # getrf
_I_N, _I_A, _I_LDA, _I_IPIV = range(1, 5)                            # getri
_HINT = "not supported yet: only float32 and float64 matrices are differentiable"


def element_type(ctx: CallContext, inst: Instruction, what: str) -> FloatType:
    t = dot_type(inst)
    if t is None:
        raise ctx.diag.unsupported(f"{what} of a complex matrix ({inst.callee_name})", inst,
                                   _HINT)
    return t


def _require_shadow(ctx: CallContext, inst: Instruction, pos: int, what: str) -> None:
    if not ctx.has_shadow(inst.operands[pos]):
        raise ctx.diag.unsupported(f"{what} ({inst.callee_name}) into memory without a shadow "
                                   f"({ctx.describe(inst.operands[pos])})", inst)


# ------------------------------------------------------------------ gesv: np.linalg.solve

def _check_gesv(ctx: CallContext, inst: Instruction) -> None:
    element_type(ctx, inst, "linear solve")
    _require_shadow(ctx, inst, _V_B, "linear solve")
    used = uses_after(inst, inst.operands[_V_A])
    if used:
        raise ctx.diag.unsupported("LU factors of a linear solve (numba_xgesv) read after the "
                                   "solve", used[0], "not supported yet: factor the matrix "
                                   "again where its factors are needed")


def _forward_gesv(ctx: ForwardCalls, inst: Instruction) -> None:
    """X' = A^-1 (B' - A' X) per lane."""
    t, b = element_type(ctx, inst, "linear solve"), ctx.b
    n, nrhs, a, lda, ipiv, x, ldb = (ctx.value(inst.operands[i]) for i in range(1, 8))
    for j in range(ctx.width):
        dx = ctx.shadow(inst.operands[_V_B], j)
        if ctx.has_shadow(inst.operands[_V_A]):
            da = ctx.shadow(inst.operands[_V_A], j)
            call(b, ctx.module, t, "gemm", "n", "n", n, nrhs, n, -1.0, da, lda, x, ldb, 1.0,
                 dx, ldb)
        call(b, ctx.module, t, "getrs", "n", n, nrhs, a, lda, ipiv, dx, ldb)


def _reverse_gesv(ctx: ReverseCalls, inst: Instruction) -> None:
    """B' = A^-T X' (in place of X'), A' = -B' X^T (the factors' adjoint is 0: unread)."""
    t, b = element_type(ctx, inst, "linear solve"), ctx.b
    n, nrhs, a, lda, ipiv, x, ldb = (ctx.value(inst.operands[i]) for i in range(1, 8))
    g = ctx.shadow(inst.operands[_V_B])
    call(b, ctx.module, t, "getrs", "t", n, nrhs, a, lda, ipiv, g, ldb)
    if ctx.has_shadow(inst.operands[_V_A]):
        call(b, ctx.module, t, "gemm", "n", "t", n, n, nrhs, -1.0, g, ldb, x, ldb, 0.0,
             ctx.shadow(inst.operands[_V_A]), lda)


# ------------------------------------------------------------------ getrf: the LU factors

def _is_inverse_of(getrf: Instruction, inst: Instruction) -> bool:
    return inst.callee_name == GETRI and inst.operands[_I_A] is getrf.operands[_F_A] \
        and inst.operands[_I_IPIV] is getrf.operands[_F_IPIV]


def _factors_inverted(ctx: CallContext, inst: Instruction) -> bool:
    """Whether only getri reads the factors (inv), else only the function's own code."""
    used = uses_after(inst, inst.operands[_F_A], lambda u: _is_inverse_of(inst, u))
    inverted = [u for u in used if _is_inverse_of(inst, u)]
    if inverted and len(inverted) < len(used):
        other = next(u for u in used if u not in inverted)
        raise ctx.diag.unsupported("LU factors (numba_xxgetrf) read both by an inverse and by "
                                   "other code", other, "not supported yet: invert a copy")
    return bool(inverted)


def _check_getrf(ctx: CallContext, inst: Instruction) -> None:
    element_type(ctx, inst, "LU factorisation")
    if inst.operands[_F_M] is not inst.operands[_F_N]:
        raise ctx.diag.unsupported("LU factorisation (numba_xxgetrf) of a matrix not known to "
                                   "be square", inst, "not supported yet: call np.linalg.inv, "
                                   "det, slogdet or solve")
    _require_shadow(ctx, inst, _F_A, "LU factorisation")
    _factors_inverted(ctx, inst)


def _sizes(ctx, inst: Instruction) -> tuple[Value, Value, Value, Value]:
    return tuple(ctx.value(inst.operands[i])  # type: ignore[return-value]
                 for i in (_F_N, _F_A, _F_LDA, _F_IPIV))


def _forward_getrf(ctx: ForwardCalls, inst: Instruction) -> None:
    """L' = L tril(F, -1), U' = triu(F) U with F = L^-1 P^T A' U^-1, into A's shadow."""
    if _factors_inverted(ctx, inst):
        return
    t, b, m = element_type(ctx, inst, "LU factorisation"), ctx.b, ctx.module
    n, lu, lda, ipiv = _sizes(ctx, inst)
    low = scratch(b, m, t, n, n)
    for j in range(ctx.width):
        d = ctx.shadow(inst.operands[_F_A], j)
        call(b, m, t, "laswp", n, d, lda, 1, n, ipiv, 1)
        call(b, m, t, "trsm", "l", "l", "n", "u", n, n, 1.0, lu, lda, d, lda)
        call(b, m, t, "trsm", "r", "u", "n", "n", n, n, 1.0, lu, lda, d, lda)
        mask_triangles(b, m, t, n, d, lda, low, n, (0, 0, 0), (1, 0, 0))
        mask_triangles(b, m, t, n, d, lda, d, lda, (0, 0, 0), (0, 1, 1))
        call(b, m, t, "trmm", "l", "l", "n", "u", n, n, 1.0, lu, lda, low, n)
        call(b, m, t, "trmm", "r", "u", "n", "n", n, n, 1.0, lu, lda, d, lda)
        mask_triangles(b, m, t, n, low, n, d, lda, (1, 1, 1), (1, 0, 0))
    release(b, m, low)


def _reverse_getrf(ctx: ReverseCalls, inst: Instruction) -> None:
    """A' = P L^-T (tril(L^T Lbar, -1) + triu(Ubar U^T)) U^-T, in place of the factors'."""
    if _factors_inverted(ctx, inst):
        return
    t, b, m = element_type(ctx, inst, "LU factorisation"), ctx.b, ctx.module
    n, lu, lda, ipiv = _sizes(ctx, inst)
    g = ctx.shadow(inst.operands[_F_A])
    low = scratch(b, m, t, n, n)
    mask_triangles(b, m, t, n, g, lda, low, n, (0, 0, 0), (1, 0, 0))
    mask_triangles(b, m, t, n, g, lda, g, lda, (0, 0, 0), (0, 1, 1))
    call(b, m, t, "trmm", "l", "l", "t", "u", n, n, 1.0, lu, lda, low, n)
    call(b, m, t, "trmm", "r", "u", "t", "n", n, n, 1.0, lu, lda, g, lda)
    mask_triangles(b, m, t, n, low, n, g, lda, (0, 1, 1), (1, 0, 0))
    release(b, m, low)
    call(b, m, t, "trsm", "r", "u", "t", "n", n, n, 1.0, lu, lda, g, lda)
    call(b, m, t, "trsm", "l", "l", "t", "u", n, n, 1.0, lu, lda, g, lda)
    call(b, m, t, "laswp", n, g, lda, 1, n, ipiv, -1)


def _getrf_reads(inst: Instruction) -> ReadInReverse | None:
    """The factors and pivots, unless the factors are only inverted (identity rules)."""
    used = uses_after(inst, inst.operands[_F_A], lambda u: _is_inverse_of(inst, u))
    if any(_is_inverse_of(inst, u) for u in used):
        return None
    return ReadInReverse((_F_A, _F_IPIV), "LU factors (numba_xxgetrf: np.linalg.det, slogdet) "
                         "of an array the function also writes",
                         "factor a copy, or write the array only after its last use")


# ------------------------------------------------------------------ getri: np.linalg.inv

def _check_getri(ctx: CallContext, inst: Instruction) -> None:
    element_type(ctx, inst, "matrix inverse")
    fn = inst.block.function if inst.block is not None else None
    factored = fn is not None and any(
        i.opcode == "call" and i.callee_name == GETRF and _is_inverse_of(i, inst)
        for blk in fn.blocks for i in blk.instructions)
    if not factored:
        raise ctx.diag.unsupported("matrix inverse (numba_ez_xxgetri) of factors not made by "
                                   "numba_xxgetrf in the same function", inst,
                                   "not supported yet: call np.linalg.inv")
    _require_shadow(ctx, inst, _I_A, "matrix inverse")


def _inverse_sizes(ctx, inst: Instruction) -> tuple[Value, Value, Value]:
    return tuple(ctx.value(inst.operands[i])  # type: ignore[return-value]
                 for i in (_I_N, _I_A, _I_LDA))


def _forward_getri(ctx: ForwardCalls, inst: Instruction) -> None:
    """W' = -W A' W per lane (A' in the factors' shadow, see getrf)."""
    t, b, m = element_type(ctx, inst, "matrix inverse"), ctx.b, ctx.module
    n, w, lda = _inverse_sizes(ctx, inst)
    tmp = scratch(b, m, t, n, n)
    for j in range(ctx.width):
        d = ctx.shadow(inst.operands[_I_A], j)
        call(b, m, t, "gemm", "n", "n", n, n, n, 1.0, w, lda, d, lda, 0.0, tmp, n)
        call(b, m, t, "gemm", "n", "n", n, n, n, -1.0, tmp, n, w, lda, 0.0, d, lda)
    release(b, m, tmp)


def _reverse_getri(ctx: ReverseCalls, inst: Instruction) -> None:
    """A' = -W^T W' W^T, in place of W'."""
    t, b, m = element_type(ctx, inst, "matrix inverse"), ctx.b, ctx.module
    n, w, lda = _inverse_sizes(ctx, inst)
    g = ctx.shadow(inst.operands[_I_A])
    tmp = scratch(b, m, t, n, n)
    call(b, m, t, "gemm", "t", "n", n, n, n, 1.0, w, lda, g, lda, 0.0, tmp, n)
    call(b, m, t, "gemm", "n", "t", n, n, n, -1.0, tmp, n, w, lda, 0.0, g, lda)
    release(b, m, tmp)


_WRITTEN = "of an array the function also writes"
GESV_RECORD = KnownCall(
    GESV, writes=(_V_A, _V_IPIV, _V_B), flow=Flow(_V_B, (_V_A, _V_B)), check=_check_gesv,
    forward=_forward_gesv, reverse=_reverse_gesv,
    reverse_reads=ReadInReverse((_V_A, _V_IPIV, _V_B), f"linear solve (numba_xgesv) {_WRITTEN}",
                                "solve into a copy, or write the result only after its last "
                                "use"))
GETRF_RECORD = KnownCall(
    GETRF, writes=(_F_A, _F_IPIV), flow=Flow(_F_A, (_F_A,)), check=_check_getrf,
    forward=_forward_getrf, reverse=_reverse_getrf, reverse_reads=_getrf_reads)
GETRI_RECORD = KnownCall(
    GETRI, writes=(_I_A,), flow=Flow(_I_A, (_I_A,)), check=_check_getri,
    forward=_forward_getri, reverse=_reverse_getri,
    reverse_reads=ReadInReverse((_I_A,), f"matrix inverse (numba_ez_xxgetri: np.linalg.inv) "
                                f"{_WRITTEN}", "invert a copy, or write the inverse only "
                                "after its last use"))
