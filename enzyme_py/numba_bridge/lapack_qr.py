"""The thin QR factorisation of `np.linalg.qr` (LAPACK geqrf, then orgqr), as a known call.

Numba factors its column-major copy `a` of A in place (`numba_ez_geqrf(kind, m, n, a, lda,
tau)`: R in the upper triangle, Householder reflectors below it), copies R out of the upper
triangle, then forms Q over `a` (`numba_ez_xxgqr(kind, m, k, k, a, lda, tau)`). `prepare`
rewrites that pair into one call of an internal function this module defines,
`enzyme_py.qr.<t>(kind, m, n, a, lda, tau, q, r)`, which factors `a` as geqrf does and also
forms Q in the fresh m x k array `q` and copies R into the fresh k x n array `r` (both read by
the derivative); the second call becomes a copy of `q` into `a`. For m >= n (k = n; a wide
matrix raises at run time), with R invertible:
* forward: Y = A' R^-1 (trsm), X = Q^T Y, Z = triu(X) + tril(X, -1)^T; R' = Z R (trmm) into
  the upper triangle of a's shadow, Q' = Y - Q Z (gemm) into q's;
* reverse: M = R Rbar^T - Qbar^T Q, A' = (Qbar + Q copyltu(M)) R^-T with
  copyltu(M) = tril(M) + tril(M, -1)^T (trmm, gemms, trsm).
The reflectors below a's diagonal and tau are read by nothing after the rewrite (Numba reads
R from the upper triangle only): their tangent is zero, their adjoint dropped.
"""
from __future__ import annotations

from ir_passes.diff.raising import raise_unless
from ir_passes.errors import UnsupportedError
from ir_passes.ir.builder import Builder, declare
from ir_passes.ir.types import I8, I32, I64, PTR, FloatType, FunctionType
from ir_passes.ir.values import Function, Instruction, Module, Value, const_int
from ir_passes.known.memory import pointer_base
from ir_passes.known.model import Flow, ForwardCalls, KnownCall, ReadInReverse, ReverseCalls

from .blas import dot_type
from .blas_calls import zero_matrix
from .lapack_calls import call, mask_triangles, release, scratch
from .lapack_rewrite import copy_floats, fresh_array, release_arrays, replace_call
from .lapack_uses import uses_after

GEQRF, ORGQR, QR = "numba_ez_geqrf", "numba_ez_xxgqr", "enzyme_py.qr."
_M, _N, _A, _LDA, _TAU, _Q, _R = range(1, 8)        # enzyme_py.qr (geqrf's first six)
_G_M, _G_N, _G_K, _G_A, _G_LDA, _G_TAU = range(1, 7)  # numba_ez_xxgqr
WIDE = ("np.linalg.qr of a matrix with more columns than rows (numba_ez_geqrf): not "
        "differentiable yet; fix: Q, R1 = np.linalg.qr(A[:, :m].copy()) (m rows), then "
        "R = np.empty((m, n)), R[:, :m] = R1 and R[:, m:] = Q.T @ A[:, m:]")


# ------------------------------------------------------------------ the rewrite

def _orgqr_of(geqrf: Instruction) -> Instruction | None:
    """Numba's orgqr call forming Q from `geqrf`'s factors, when the other uses of them after
    the call are loads (np.linalg.qr: of R, then of Q)."""
    used = uses_after(geqrf, geqrf.operands[_A])
    calls = [u for u in used if u.opcode != "load"]
    first = calls[0] if len(calls) == 1 else None
    if first is None or first.callee_name != ORGQR:
        return None
    same = (pointer_base(first.operands[_G_A]) is pointer_base(geqrf.operands[_A])
            and pointer_base(first.operands[_G_TAU]) is pointer_base(geqrf.operands[_TAU])
            and first.operands[_G_M] is geqrf.operands[_M]
            and first.operands[_G_LDA] is geqrf.operands[_LDA])
    return first if same else None


def prepare(module: Module, geqrf: Instruction, _moving) -> None:
    orgqr = _orgqr_of(geqrf)
    t = dot_type(geqrf)
    if orgqr is None or t is None:
        return
    b = Builder()
    b.position_before(geqrf)
    m, n = geqrf.operands[_M], geqrf.operands[_N]
    raise_unless(module, geqrf, b.icmp("sge", m, n), UnsupportedError, WIDE)
    b.position_before(geqrf)
    q_owner, q = fresh_array(b, module, b.mul(m, n), t)
    r_owner, r = fresh_array(b, module, b.mul(n, n), t)
    replace_call(geqrf, b.call(_qr_function(module, t), [*geqrf.operands[:6], q, r], I32))
    b.position_before(orgqr)
    copy_floats(b, module, t, orgqr.operands[_G_A], q, b.mul(m, n))
    release_arrays(b, module, [q_owner, r_owner])
    replace_call(orgqr, const_int(orgqr.type, 0))


def _qr_function(module: Module, t: FloatType) -> Function:
    """`i32 enzyme_py.qr.<t>(i8 kind, i64 m, i64 n, ptr a, i64 lda, ptr tau, ptr q, ptr r)`:
    geqrf over a; R into r (n x n), Q into q (m x n); the first nonzero status."""
    name = f"{QR}{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    fn = Function(name, FunctionType(I32, (I8, I64, I64, PTR, I64, PTR, PTR, PTR)),
                  ["kind", "m", "n", "a", "lda", "tau", "q", "r"], linkage="internal")
    kind, m, n, a, lda, tau, q, r = fn.args
    b = Builder(fn.add_block("entry"))
    geqrf = declare(module, GEQRF, I32, [I8, I64, I64, PTR, I64, PTR])
    orgqr = declare(module, ORGQR, I32, [I8, I64, I64, I64, PTR, I64, PTR])
    factored = b.call(geqrf, [kind, m, n, a, lda, tau], I32)
    call(b, module, t, "lacpy", "U", n, n, a, lda, r, n)
    call(b, module, t, "lacpy", "A", m, n, a, lda, q, m)
    formed = b.call(orgqr, [kind, m, n, n, q, m, tau], I32)
    b.ret(b.select(b.icmp("eq", factored, const_int(I32, 0)), formed, factored))
    module.add_function(fn)
    return fn


# ------------------------------------------------------------------ the derivative

def _check(ctx, inst: Instruction) -> None:
    for pos in (_A, _Q):
        if not ctx.has_shadow(inst.operands[pos]):
            raise ctx.diag.unsupported(f"QR factorisation ({inst.callee_name}) into memory "
                                       f"without a shadow ({ctx.describe(inst.operands[pos])})",
                                       inst)


def _values(ctx, inst: Instruction) -> tuple[Value, ...]:
    return tuple(ctx.value(inst.operands[i]) for i in (_M, _N, _LDA, _Q, _R))


def _type(inst: Instruction) -> FloatType:
    t = dot_type(inst)
    assert t is not None
    return t


def _forward(ctx: ForwardCalls, inst: Instruction) -> None:
    """Y = A' R^-1, X = Q^T Y, Z = triu(X) + tril(X, -1)^T; Q' = Y - Q Z; R' = Z R."""
    t, b, mod = _type(inst), ctx.b, ctx.module
    m, n, lda, q, r = _values(ctx, inst)
    x, z = scratch(b, mod, t, n, n), scratch(b, mod, t, n, n)
    for lane in range(ctx.width):
        da, dq = ctx.shadow(inst.operands[_A], lane), ctx.shadow(inst.operands[_Q], lane)
        call(b, mod, t, "lacpy", "A", m, n, da, lda, dq, m)
        call(b, mod, t, "trsm", "r", "u", "n", "n", m, n, 1.0, r, n, dq, m)
        call(b, mod, t, "gemm", "t", "n", n, n, m, 1.0, q, m, dq, m, 0.0, x, n)
        mask_triangles(b, mod, t, n, x, n, z, n, (0, 0, 0), (0, 1, 1))
        mask_triangles(b, mod, t, n, x, n, z, n, (1, 1, 1), (0, 0, 1), transposed=True)
        call(b, mod, t, "gemm", "n", "n", m, n, n, -1.0, q, m, z, n, 1.0, dq, m)
        call(b, mod, t, "trmm", "r", "u", "n", "n", n, n, 1.0, r, n, z, n)
        zero_matrix(b, mod, t, da, m, n, lda)
        call(b, mod, t, "lacpy", "U", n, n, z, n, da, lda)
        zero_matrix(b, mod, t, ctx.shadow(inst.operands[_TAU], lane), n)
    release(b, mod, x)
    release(b, mod, z)


def _reverse(ctx: ReverseCalls, inst: Instruction) -> None:
    """M = R Rbar^T - Qbar^T Q; A' = (Qbar + Q copyltu(M)) R^-T over a's shadow."""
    t, b, mod = _type(inst), ctx.b, ctx.module
    m, n, lda, q, r = _values(ctx, inst)
    ga, gq = ctx.shadow(inst.operands[_A]), ctx.shadow(inst.operands[_Q])
    mm, c = scratch(b, mod, t, n, n), scratch(b, mod, t, n, n)
    mask_triangles(b, mod, t, n, ga, lda, mm, n, (0, 0, 0), (1, 1, 0), transposed=True)
    call(b, mod, t, "trmm", "l", "u", "n", "n", n, n, 1.0, r, n, mm, n)
    call(b, mod, t, "gemm", "t", "n", n, n, m, -1.0, gq, m, q, m, 1.0, mm, n)
    mask_triangles(b, mod, t, n, mm, n, c, n, (0, 0, 0), (1, 1, 0))
    mask_triangles(b, mod, t, n, mm, n, c, n, (1, 1, 1), (0, 0, 1), transposed=True)
    call(b, mod, t, "gemm", "n", "n", m, n, n, 1.0, q, m, c, n, 1.0, gq, m)
    call(b, mod, t, "trsm", "r", "u", "t", "n", m, n, 1.0, r, n, gq, m)
    call(b, mod, t, "lacpy", "A", m, n, gq, m, ga, lda)
    zero_matrix(b, mod, t, gq, b.mul(m, n))
    zero_matrix(b, mod, t, ctx.shadow(inst.operands[_TAU]), n)
    release(b, mod, mm)
    release(b, mod, c)


QR_RECORD = KnownCall(
    QR, prefix=True, writes=(_A, _TAU, _Q, _R), flow=Flow(_A, (_A,)),
    more_flows=(Flow(_Q, (_A,)), Flow(_TAU, (_A,))), check=_check, forward=_forward,
    reverse=_reverse,
    reverse_reads=ReadInReverse((_Q, _R), "QR factorisation (np.linalg.qr) whose factors the "
                                "function also writes", "write into copies of Q and R"))
