"""The thin singular value decomposition of `np.linalg.svd(A, full_matrices=False)` (LAPACK
gesdd), as a known call.

`numba_ez_gesdd(kind, 'S', m, n, a, lda, s, u, ldu, vt, ldvt)` writes A = U diag(s) Vt for
the column-major m x n `a` (k = min(m, n) singular values, U m x k, Vt k x n) and leaves
`a` undefined (nothing may read it later; np.linalg.pinv overwrites it with a product).
Singular values must be distinct and nonzero.
With F_ij = 1/(s_j^2 - s_i^2) off the diagonal and P = U^T A' V:
* forward: s' = diag(P); U' = U (F o (P S + S P^T)) + (A' V - U P) S^-1;
  Vt' = (F o (S P + P^T S))^T Vt + S^-1 (U^T A' - P Vt);
* reverse (Townsend, "Differentiating the singular value decomposition"):
  A' = (U Z + (Ubar - U Ga) S^-1) Vt + U S^-1 (Vtbar - Gb^T Vt), where Ga = U^T Ubar,
  Gb = Vt Vtbar^T and Z = (F o (Ga - Ga^T)) S + diag(sbar) + S (F o (Gb - Gb^T)).
Products are gemms; the element-wise parts (F o ..., diagonal scalings) small loops.
Singular values alone (norm 2, cond), full_matrices=True and results changed after the call
(pinv) are rewritten into such calls first (`lapack_svd_prepare.py`).
"""
from __future__ import annotations

from typing import Callable

from ir_passes.ir.builder import Builder, counted_loop
from ir_passes.ir.types import I64, PTR, VOID, FloatType, FunctionType
from ir_passes.ir.values import Function, Instruction, Module, Value, const_float, zero
from ir_passes.known.model import (CallContext, Flow, ForwardCalls, KnownCall, ReadInReverse,
                                   ReverseCalls)

from .blas_calls import zero_matrix
from .lapack_calls import call, release, scratch
from .lapack_lu import element_type
from .lapack_svd_prepare import (A as _A, LDA as _LDA, LDU as _LDU, LDVT as _LDVT, M as _M,
                                 N as _N, S as _S, U as _U, VT as _VT, jobz, prepare)
from .lapack_uses import overwrites_by_product, uses_after

GESDD = "numba_ez_gesdd"
_WHAT = "singular value decomposition"


def _check(ctx: CallContext, inst: Instruction) -> None:
    element_type(ctx, inst, _WHAT)
    if jobz(inst) != "S":
        raise ctx.diag.unsupported(f"{_WHAT} ({GESDD}) other than the thin one (np.linalg.svd "
                                   "with full_matrices=True)", inst,
                                   "call np.linalg.svd(A, full_matrices=False)")
    overwrites = overwrites_by_product(inst.operands[_A])
    if not all(overwrites(u) for u in uses_after(inst, inst.operands[_A], overwrites)):
        raise ctx.diag.unsupported(f"{_WHAT} ({GESDD}) whose overwritten input is read after "
                                   "the call", inst, "not supported yet: take the SVD of a copy")
    for pos in (_S, _U, _VT):
        if not ctx.has_shadow(inst.operands[pos]):
            raise ctx.diag.unsupported(f"{_WHAT} ({GESDD}) into memory without a shadow "
                                       f"({ctx.describe(inst.operands[pos])})", inst)


def _values(ctx, inst: Instruction) -> tuple[Value, ...]:
    m, n = ctx.value(inst.operands[_M]), ctx.value(inst.operands[_N])
    k = ctx.b.select(ctx.b.icmp("slt", m, n), m, n)
    return (m, n, k, *(ctx.value(inst.operands[i]) for i in (_LDA, _S, _U, _LDU, _VT, _LDVT)))


def _forward(ctx: ForwardCalls, inst: Instruction) -> None:
    t, b, mod = element_type(ctx, inst, _WHAT), ctx.b, ctx.module
    m, n, k, lda, s, u, ldu, vt, ldvt = _values(ctx, inst)
    p, j_ = scratch(b, mod, t, k, k), scratch(b, mod, t, k, k)
    for lane in range(ctx.width):
        da, ds, du, dvt = (ctx.shadow(inst.operands[i], lane) for i in (_A, _S, _U, _VT))
        call(b, mod, t, "gemm", "t", "n", k, n, m, 1.0, u, ldu, da, lda, 0.0, dvt, ldvt)
        call(b, mod, t, "gemm", "n", "t", k, k, n, 1.0, dvt, ldvt, vt, ldvt, 0.0, p, k)
        call(b, mod, t, "gemm", "n", "t", m, k, n, 1.0, da, lda, vt, ldvt, 0.0, du, ldu)
        call(b, mod, t, "gemm", "n", "n", m, k, k, -1.0, u, ldu, p, k, 1.0, du, ldu)
        call(b, mod, t, "gemm", "n", "n", k, n, k, -1.0, p, k, vt, ldvt, 1.0, dvt, ldvt)
        _scale(b, mod, t, "columns", m, k, du, ldu, s)
        _scale(b, mod, t, "rows", k, n, dvt, ldvt, s)
        _elementwise(b, mod, t, "left", k, s, p, zero(PTR), j_, ds)
        call(b, mod, t, "gemm", "n", "n", m, k, k, 1.0, u, ldu, j_, k, 1.0, du, ldu)
        _elementwise(b, mod, t, "right", k, s, p, zero(PTR), j_, zero(PTR))
        call(b, mod, t, "gemm", "t", "n", k, n, k, 1.0, j_, k, vt, ldvt, 1.0, dvt, ldvt)
        zero_matrix(b, mod, t, da, m, n, lda)
    release(b, mod, p)
    release(b, mod, j_)


def _reverse(ctx: ReverseCalls, inst: Instruction) -> None:
    t, b, mod = element_type(ctx, inst, _WHAT), ctx.b, ctx.module
    m, n, k, lda, s, u, ldu, vt, ldvt = _values(ctx, inst)
    ga_, gs, gu, gvt = (ctx.shadow(inst.operands[i]) for i in (_A, _S, _U, _VT))
    ga, gb, z = (scratch(b, mod, t, k, k) for _ in range(3))
    call(b, mod, t, "gemm", "t", "n", k, k, m, 1.0, u, ldu, gu, ldu, 0.0, ga, k)
    call(b, mod, t, "gemm", "n", "t", k, k, n, 1.0, vt, ldvt, gvt, ldvt, 0.0, gb, k)
    _elementwise(b, mod, t, "core", k, s, ga, gb, z, gs)
    call(b, mod, t, "gemm", "n", "n", m, k, k, -1.0, u, ldu, ga, k, 1.0, gu, ldu)
    call(b, mod, t, "gemm", "t", "n", k, n, k, -1.0, gb, k, vt, ldvt, 1.0, gvt, ldvt)
    _scale(b, mod, t, "columns", m, k, gu, ldu, s)
    _scale(b, mod, t, "rows", k, n, gvt, ldvt, s)
    call(b, mod, t, "gemm", "n", "n", m, k, k, 1.0, u, ldu, z, k, 1.0, gu, ldu)
    call(b, mod, t, "gemm", "n", "n", m, n, k, 1.0, gu, ldu, vt, ldvt, 0.0, ga_, lda)
    call(b, mod, t, "gemm", "n", "n", m, n, k, 1.0, u, ldu, gvt, ldvt, 1.0, ga_, lda)
    for ptr, rows, cols, ld in ((gu, m, k, ldu), (gvt, k, n, ldvt)):
        zero_matrix(b, mod, t, ptr, rows, cols, ld)
    zero_matrix(b, mod, t, gs, k)
    for buffer in (ga, gb, z):
        release(b, mod, buffer)


def _scale(b: Builder, module: Module, t: FloatType, what: str, rows: Value, cols: Value,
           x: Value, ld: Value, s: Value) -> None:
    """Divide the columns (or rows) of the rows x cols matrix x by s."""
    b.call(_scale_function(module, t, what), [rows, cols, x, ld, s], VOID)


def _scale_function(module: Module, t: FloatType, what: str) -> Function:
    name = f"enzyme_py.scale_{what}.{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    fn = Function(name, FunctionType(VOID, (I64, I64, PTR, I64, PTR)),
                  ["rows", "cols", "x", "ld", "s"], linkage="internal")
    rows, cols, x, ld, s = fn.args

    def column(b: Builder, j: Value) -> None:
        def element(b: Builder, i: Value) -> None:
            at = b.gep(t, x, [b.add(b.mul(j, ld), i)])
            by = b.load(t, b.gep(t, s, [j if what == "columns" else i]))
            b.store(b.fdiv(b.load(t, at), by), at)
        counted_loop(b, rows, element)

    b = Builder(fn.add_block("entry"))
    counted_loop(b, cols, column)
    b.ret()
    module.add_function(fn)
    return fn


# out_ij from (s_i, s_j, F_ij, p_ij, p_ji, q_ij, q_ji); the diagonal separately.
_Formula = Callable[[Builder, Value, Value, Value, Value, Value, Value, Value], Value]
_FORMULAS: dict[str, _Formula] = {
    # F o (P S + S P^T)
    "left": lambda b, si, sj, f, pij, pji, qij, qji: b.fmul(f, b.fadd(b.fmul(pij, sj),
                                                                     b.fmul(si, pji))),
    # F o (S P + P^T S)
    "right": lambda b, si, sj, f, pij, pji, qij, qji: b.fmul(f, b.fadd(b.fmul(si, pij),
                                                                      b.fmul(pji, sj))),
    # (F o (P - P^T)) S + S (F o (Q - Q^T))
    "core": lambda b, si, sj, f, pij, pji, qij, qji: b.fmul(f, b.fadd(
        b.fmul(b.fsub(pij, pji), sj), b.fmul(si, b.fsub(qij, qji)))),
}


def _elementwise(b: Builder, module: Module, t: FloatType, formula: str, k: Value, s: Value,
                 p: Value, q: Value, out: Value, diagonal: Value) -> None:
    """out (k x k) from p, q and s by `formula` off the diagonal; on it: for "left", p_ii
    is copied to `diagonal` (s') and out_ii = 0; for "core", out_ii = diagonal_i (sbar)."""
    b.call(_elementwise_function(module, t, formula), [k, s, p, q, out, diagonal], VOID)


def _elementwise_function(module: Module, t: FloatType, formula: str) -> Function:
    name = f"enzyme_py.svd_{formula}.{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    fn = Function(name, FunctionType(VOID, (I64, PTR, PTR, PTR, PTR, PTR)),
                  ["k", "s", "p", "q", "out", "diagonal"], linkage="internal")
    k, s, p, q, out, diagonal = fn.args
    one = const_float(t, 1.0)

    def column(b: Builder, j: Value) -> None:
        sj = b.load(t, b.gep(t, s, [j]))

        def element(b: Builder, i: Value) -> None:
            ij, ji = b.add(b.mul(j, k), i), b.add(b.mul(i, k), j)
            si = b.load(t, b.gep(t, s, [i]))
            gap = b.fsub(b.fmul(sj, sj), b.fmul(si, si))
            f = b.fdiv(one, gap)
            loads = [b.load(t, b.gep(t, ptr, [at])) if ptr is p or formula == "core"
                     else zero(t) for ptr in (p, q) for at in (ij, ji)]
            value = _FORMULAS[formula](b, si, sj, f, *loads)
            if formula == "core":
                on = b.load(t, b.gep(t, diagonal, [i]))
            else:
                on = zero(t)
            b.store(b.select(b.icmp("eq", i, j), on, value), b.gep(t, out, [ij]))
        counted_loop(b, k, element)

    def singular_value(b: Builder, i: Value) -> None:
        b.store(b.load(t, b.gep(t, p, [b.add(b.mul(i, k), i)])), b.gep(t, diagonal, [i]))

    b = Builder(fn.add_block("entry"))
    counted_loop(b, k, column)
    if formula == "left":
        counted_loop(b, k, singular_value)
    b.ret()
    module.add_function(fn)
    return fn


SVD_RECORD = KnownCall(
    GESDD, writes=(_A, _S, _U, _VT), flow=Flow(_S, (_A,)),
    more_flows=(Flow(_U, (_A,)), Flow(_VT, (_A,))), check=_check, forward=_forward,
    reverse=_reverse, prepare=prepare,
    reverse_reads=ReadInReverse((_S, _U, _VT), f"{_WHAT} ({GESDD}: np.linalg.svd) whose "
                                "results the function also writes", "write into copies of "
                                "U, s and Vt"))
