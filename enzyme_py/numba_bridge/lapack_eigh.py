"""The symmetric eigendecomposition of `np.linalg.eigh` and `eigvalsh` (LAPACK syevd), as a
known call.

`numba_ez_xxxevd(kind, jobz, 'L', n, a, lda, w)` reads the lower triangle of the
column-major `a` (the symmetric matrix A), writes the eigenvalues w (ascending) and, for
jobz = 'V', the eigenvectors V over all of `a` (for 'N', `a` is left undefined: its tangent
and adjoint are zero). With E_ij = 1/(w_j - w_i) off the diagonal (eigenvalues must be
distinct) and S the symmetric matrix of the lower triangle of A':
* forward: M = V^T S V; w' = diag(M), V' = V (E o M) (gemms, Hadamard product);
* reverse: Abar = V (diag(wbar) + E o (V^T Vbar)) V^T; the lower triangle's adjoint is
  Abar + Abar^T off the diagonal and Abar on it; the upper triangle's is zero (overwritten).
np.linalg.eigvalsh calls with jobz = 'N' over Numba's copy of A, which nothing reads after
the call: `_prepare` makes such a call compute the eigenvectors too (the derivative needs
them), so it is differentiated as eigh's (the eigenvalues agree up to rounding).
"""
from __future__ import annotations

from ir_passes.ir.builder import Builder, counted_loop
from ir_passes.ir.types import I64, PTR, VOID, FloatType, FunctionType
from ir_passes.ir.values import ConstInt, Function, Instruction, Module, Value, const_int, \
    zero
from ir_passes.known.model import (CallContext, Flow, ForwardCalls, KnownCall, ReadInReverse,
                                   ReverseCalls)

from .blas_calls import zero_matrix
from .lapack_calls import call, mask_triangles, release, scratch
from .lapack_lu import element_type
from .lapack_uses import uses_after

EVD = "numba_ez_xxxevd"
_JOBZ, _UPLO, _N, _A, _LDA, _W = range(1, 7)
_WHAT = "symmetric eigendecomposition"


def _flag(inst: Instruction, pos: int) -> str | None:
    op = inst.operands[pos]
    return chr(op.value & 0xFF) if isinstance(op, ConstInt) else None


def _prepare(module: Module, inst: Instruction, _moving) -> None:
    """Eigenvalues alone (eigvalsh) computed with the eigenvectors, over the copy of A that
    nothing reads after the call."""
    if _flag(inst, _JOBZ) == "N" and not uses_after(inst, inst.operands[_A]):
        inst.operands[_JOBZ] = const_int(inst.operands[_JOBZ].type, ord("V"))


def _check(ctx: CallContext, inst: Instruction) -> None:
    element_type(ctx, inst, _WHAT)
    if _flag(inst, _JOBZ) != "V" or _flag(inst, _UPLO) != "L":
        raise ctx.diag.unsupported(f"eigenvalues without eigenvectors ({EVD}) over memory read "
                                   "after the call", inst, "use np.linalg.eigh(A)[0] or "
                                   "np.linalg.eigvalsh(A)")
    for pos in (_A, _W):
        if not ctx.has_shadow(inst.operands[pos]):
            raise ctx.diag.unsupported(f"{_WHAT} ({EVD}) into memory without a shadow "
                                       f"({ctx.describe(inst.operands[pos])})", inst)


def _values(ctx, inst: Instruction) -> tuple[Value, ...]:
    return tuple(ctx.value(inst.operands[i]) for i in (_N, _A, _LDA, _W))


def _forward(ctx: ForwardCalls, inst: Instruction) -> None:
    """M = V^T S V; w' = diag(M); V' = V (E o M), per lane."""
    t, b, m = element_type(ctx, inst, _WHAT), ctx.b, ctx.module
    n, v, lda, w = _values(ctx, inst)
    s, p = scratch(b, m, t, n, n), scratch(b, m, t, n, n)
    for j in range(ctx.width):
        d = ctx.shadow(inst.operands[_A], j)
        mask_triangles(b, m, t, n, d, lda, s, n, (0, 0, 0), (1, 1, 0))
        mask_triangles(b, m, t, n, d, lda, s, n, (1, 1, 1), (0, 0, 1), transposed=True)
        call(b, m, t, "gemm", "t", "n", n, n, n, 1.0, v, lda, s, n, 0.0, p, n)
        call(b, m, t, "gemm", "n", "n", n, n, n, 1.0, p, n, v, lda, 0.0, s, n)
        b.call(_spectral_function(m, t), [n, w, s, n, zero(PTR), ctx.shadow(
            inst.operands[_W], j)], VOID)
        call(b, m, t, "gemm", "n", "n", n, n, n, 1.0, v, lda, s, n, 0.0, d, lda)
    release(b, m, s)
    release(b, m, p)


def _reverse(ctx: ReverseCalls, inst: Instruction) -> None:
    """Lower triangle of a's shadow := sym(V (diag(wbar) + E o (V^T Vbar)) V^T); w' = 0."""
    t, b, m = element_type(ctx, inst, _WHAT), ctx.b, ctx.module
    n, v, lda, w = _values(ctx, inst)
    g, gw = ctx.shadow(inst.operands[_A]), ctx.shadow(inst.operands[_W])
    k, p = scratch(b, m, t, n, n), scratch(b, m, t, n, n)
    call(b, m, t, "gemm", "t", "n", n, n, n, 1.0, v, lda, g, lda, 0.0, k, n)
    b.call(_spectral_function(m, t), [n, w, k, n, gw, zero(PTR)], VOID)
    call(b, m, t, "gemm", "n", "n", n, n, n, 1.0, v, lda, k, n, 0.0, p, n)
    call(b, m, t, "gemm", "n", "t", n, n, n, 1.0, p, n, v, lda, 0.0, k, n)
    mask_triangles(b, m, t, n, k, n, g, lda, (0, 0, 0), (1, 1, 0))
    mask_triangles(b, m, t, n, k, n, g, lda, (1, 1, 1), (1, 0, 0), transposed=True)
    zero_matrix(b, m, t, gw, n)
    release(b, m, k)
    release(b, m, p)


def _spectral_function(module: Module, t: FloatType) -> Function:
    """`void spectral(i64 n, ptr w, ptr m, i64 ldm, ptr diag_in, ptr diag_out)`: M := E o M
    off the diagonal; the diagonal is first copied to diag_out (if not null), then replaced by
    diag_in (if not null, else zero)."""
    name = f"enzyme_py.spectral.{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    fn = Function(name, FunctionType(VOID, (I64, PTR, PTR, I64, PTR, PTR)),
                  ["n", "w", "m", "ldm", "diag_in", "diag_out"], linkage="internal")
    n, w, mat, ldm, diag_in, diag_out = fn.args

    def diagonal(b: Builder, i: Value) -> None:
        at = b.gep(t, mat, [b.add(b.mul(i, ldm), i)])
        _if_not_null(b, diag_out, lambda b: b.store(b.load(t, at), b.gep(t, diag_out, [i])))
        b.store(zero(t), at)
        _if_not_null(b, diag_in, lambda b: b.store(b.load(t, b.gep(t, diag_in, [i])), at))

    def column(b: Builder, j: Value) -> None:
        wj = b.load(t, b.gep(t, w, [j]))

        def element(b: Builder, i: Value) -> None:
            at = b.gep(t, mat, [b.add(b.mul(j, ldm), i)])
            gap = b.fsub(wj, b.load(t, b.gep(t, w, [i])))
            scaled = b.fdiv(b.load(t, at), gap)
            b.store(b.select(b.icmp("eq", i, j), b.load(t, at), scaled), at)
        counted_loop(b, n, element)

    b = Builder(fn.add_block("entry"))
    counted_loop(b, n, column)
    counted_loop(b, n, diagonal)
    b.ret()
    module.add_function(fn)
    return fn


def _if_not_null(b: Builder, ptr: Value, then) -> None:
    fn = b.block.function  # type: ignore[union-attr]
    body, done = fn.add_block("set"), fn.add_block("next")
    b.cbr(b.icmp("ne", ptr, zero(PTR)), body, done)
    b.position_at_end(body)
    then(b)
    b.br(done)
    b.position_at_end(done)


EVD_RECORD = KnownCall(
    EVD, writes=(_A, _W), flow=Flow(_A, (_A,)), more_flows=(Flow(_W, (_A,)),), check=_check,
    forward=_forward, reverse=_reverse, prepare=_prepare,
    reverse_reads=ReadInReverse((_A, _W), f"{_WHAT} ({EVD}: np.linalg.eigh, eigvalsh) whose "
                                "results the function also writes", "write into copies of the "
                                "eigenvalues and eigenvectors"))
