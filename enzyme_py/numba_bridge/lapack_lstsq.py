"""Least squares of `np.linalg.lstsq` (LAPACK gelsd), as a known call, for a matrix of full
column rank (m >= n = rank).

`numba_ez_gelsd(kind, m, n, nrhs, a, lda, b, ldb, s, rcond, rank)` destroys Numba's copy `a`
of A, overwrites the first n rows of `b` (B, m x nrhs) with X = A^+ B and its rows n..m-1
with coordinates c of the residual B - A X in a basis of range(A)'s complement that gelsd
chooses (Numba sums their squares for the residuals), and writes A's singular values to `s`
and its rank. `prepare` rewrites the call into one of an internal function this module
defines, `enzyme_py.lstsq.<t>(..., q, r, z)`, which also keeps, in fresh arrays, the thin QR
factors Q (m x n) and R (n x n) of A and the residual Z = B - A X (m x nrhs); a matrix with
fewer rows than columns, or of lower rank, raises at run time. With W = B' - A' X:
* forward: X' = R^-1 (R^-T A'^T Z + Q^T W); for each column j, c_j' = c_j (z_j . w_j) / |c_j|^2
  (the tangent of |c_j|^2 = |z_j|^2, all Numba reads of c, is exact);
* reverse: Y = R^-T Xbar, H = Q Y + Z diag((cbar_j . c_j) / |c_j|^2), G = R^-1 Y;
  B' = H (over b's shadow), A' = Z G^T - H X^T (over a's shadow: `a` is destroyed).
The singular values' derivative is not made: reading `s` after the call is refused.
"""
from __future__ import annotations

from ir_passes.diff.raising import raise_unless
from ir_passes.errors import UnsupportedError
from ir_passes.ir.builder import Builder, counted_loop, declare
from ir_passes.ir.types import DOUBLE, I8, I32, I64, PTR, VOID, FloatType, FunctionType
from ir_passes.ir.values import Function, Instruction, Module, Value, const_float, const_int, \
    zero
from ir_passes.known.model import (CallContext, Flow, ForwardCalls, KnownCall, ReadInReverse,
                                   ReverseCalls)

from .blas import dot_type
from .blas_calls import zero_matrix
from .lapack_calls import call, release, scratch
from .lapack_rewrite import fresh_array, position_after, release_arrays, replace_call
from .lapack_uses import uses_after

GELSD, LSTSQ = "numba_ez_gelsd", "enzyme_py.lstsq."
_M, _N, _NRHS, _A, _LDA, _B, _LDB, _S, _RCOND, _RANK, _Q, _R, _Z = range(1, 14)
WIDE = ("np.linalg.lstsq of a matrix with fewer rows than columns (numba_ez_gelsd): not "
        "differentiable yet; fix: x = A.T @ np.linalg.solve(A @ A.T, b) (A of full row rank)")
DEFICIENT = ("np.linalg.lstsq of a matrix of lower rank than its number of columns "
             "(numba_ez_gelsd): its derivative is not defined here; fix: regularise, "
             "x = np.linalg.solve(A.T @ A + lam * np.eye(A.shape[1]), A.T @ b)")


# ------------------------------------------------------------------ the rewrite

def prepare(module: Module, gelsd: Instruction, _moving) -> None:
    t = dot_type(gelsd)
    if t is None:
        return                  # complex: refused by the record of numba_ez_gelsd
    b = Builder()
    b.position_before(gelsd)
    m, n, nrhs = (gelsd.operands[i] for i in (_M, _N, _NRHS))
    raise_unless(module, gelsd, b.icmp("sge", m, n), UnsupportedError, WIDE)
    b.position_before(gelsd)
    owners, buffers = [], []
    for rows, cols in ((m, n), (n, n), (m, nrhs)):
        owner, data = fresh_array(b, module, b.mul(rows, cols), t)
        owners.append(owner)
        buffers.append(data)
    call_ = b.call(_lstsq_function(module, t), [*gelsd.operands, *buffers], I32)
    replace_call(gelsd, call_)
    position_after(b, call_)
    after = b.block.instructions[b.index]
    rank = b.cast("sext", b.load(I32, gelsd.operands[_RANK]), I64)
    raise_unless(module, after, b.icmp("eq", rank, n), UnsupportedError, DEFICIENT)
    b.position_before(after)
    release_arrays(b, module, owners)


def _lstsq_function(module: Module, t: FloatType) -> Function:
    """`i32 enzyme_py.lstsq.<t>(gelsd's arguments, ptr q, ptr r, ptr z)`: Z = B, gelsd,
    Z -= A X, then the QR factors of A into q and r (for m >= n); gelsd's status."""
    name = f"{LSTSQ}{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    params = (I8, I64, I64, I64, PTR, I64, PTR, I64, PTR, DOUBLE, PTR, PTR, PTR, PTR)
    fn = Function(name, FunctionType(I32, params), ["kind", "m", "n", "nrhs", "a", "lda", "b",
                                                     "ldb", "s", "rcond", "rank", "q", "r",
                                                     "z"], linkage="internal")
    kind, m, n, nrhs, a, lda, bm, ldb, _, _, _, q, r, z = fn.args
    b = Builder(fn.add_block("entry"))
    call(b, module, t, "lacpy", "A", m, n, a, lda, q, m)
    call(b, module, t, "lacpy", "A", m, nrhs, bm, ldb, z, m)
    gelsd = declare(module, GELSD, I32, list(params[:11]))
    status = b.call(gelsd, fn.args[:11], I32)
    call(b, module, t, "gemm", "n", "n", m, nrhs, n, -1.0, q, m, bm, ldb, 1.0, z, m)
    tau = scratch(b, module, t, n, const_int(I64, 1))
    geqrf = declare(module, "numba_ez_geqrf", I32, [I8, I64, I64, PTR, I64, PTR])
    orgqr = declare(module, "numba_ez_xxgqr", I32, [I8, I64, I64, I64, PTR, I64, PTR])
    b.call(geqrf, [kind, m, n, q, m, tau], I32)
    call(b, module, t, "lacpy", "U", n, n, q, m, r, n)
    b.call(orgqr, [kind, m, n, n, q, m, tau], I32)
    release(b, module, tau)
    b.ret(status)
    module.add_function(fn)
    return fn


# ------------------------------------------------------------------ the derivative

def _check(ctx: CallContext, inst: Instruction) -> None:
    if not ctx.has_shadow(inst.operands[_B]):
        raise ctx.diag.unsupported(f"least squares ({inst.callee_name}) into memory without a "
                                   f"shadow ({ctx.describe(inst.operands[_B])})", inst)
    for pos, what, hint in (
            (_A, "matrix (destroyed)", "not supported yet: solve with a copy of the matrix"),
            (_S, "singular values", "not supported yet: np.linalg.svd(A, full_matrices=False)"
             "[1] gives the singular values")):
        used = uses_after(inst, inst.operands[pos])
        if used:
            raise ctx.diag.unsupported(f"least squares (np.linalg.lstsq) whose {what} the "
                                       "function reads after the call", used[0], hint)


def _values(ctx, inst: Instruction) -> tuple[Value, ...]:
    return tuple(ctx.value(inst.operands[i])
                 for i in (_M, _N, _NRHS, _LDA, _B, _LDB, _Q, _R, _Z))


def _type(inst: Instruction) -> FloatType:
    t = dot_type(inst)
    assert t is not None
    return t


def _forward(ctx: ForwardCalls, inst: Instruction) -> None:
    """W = B' - A' X; X' = R^-1 (R^-T A'^T Z + Q^T W); c_j' = c_j (z_j . w_j) / |c_j|^2."""
    t, b, mod = _type(inst), ctx.b, ctx.module
    m, n, nrhs, lda, x, ldb, q, r, z = _values(ctx, inst)
    w, p = scratch(b, mod, t, m, nrhs), scratch(b, mod, t, n, nrhs)
    active_a = ctx.has_shadow(inst.operands[_A])
    for lane in range(ctx.width):
        db = ctx.shadow(inst.operands[_B], lane)
        call(b, mod, t, "lacpy", "A", m, nrhs, db, ldb, w, m)
        zero_matrix(b, mod, t, p, b.mul(n, nrhs))
        if active_a:
            da = ctx.shadow(inst.operands[_A], lane)
            call(b, mod, t, "gemm", "n", "n", m, nrhs, n, -1.0, da, lda, x, ldb, 1.0, w, m)
            call(b, mod, t, "gemm", "t", "n", n, nrhs, m, 1.0, da, lda, z, m, 0.0, p, n)
            call(b, mod, t, "trsm", "l", "u", "t", "n", n, nrhs, 1.0, r, n, p, n)
            zero_matrix(b, mod, t, da, m, n, lda)
        call(b, mod, t, "gemm", "t", "n", n, nrhs, m, 1.0, q, m, w, m, 1.0, p, n)
        call(b, mod, t, "trsm", "l", "u", "n", "n", n, nrhs, 1.0, r, n, p, n)
        b.call(_residual_function(mod, t, "forward"), [m, n, nrhs, x, ldb, z, w, db], VOID)
        call(b, mod, t, "lacpy", "A", n, nrhs, p, n, db, ldb)
    release(b, mod, w)
    release(b, mod, p)


def _reverse(ctx: ReverseCalls, inst: Instruction) -> None:
    """Y = R^-T Xbar; H = Q Y + Z diag(gamma); G = R^-1 Y; B' = H; A' = Z G^T - H X^T."""
    t, b, mod = _type(inst), ctx.b, ctx.module
    m, n, nrhs, lda, x, ldb, q, r, z = _values(ctx, inst)
    gb = ctx.shadow(inst.operands[_B])
    y, h = scratch(b, mod, t, n, nrhs), scratch(b, mod, t, m, nrhs)
    call(b, mod, t, "lacpy", "A", n, nrhs, gb, ldb, y, n)
    call(b, mod, t, "trsm", "l", "u", "t", "n", n, nrhs, 1.0, r, n, y, n)
    call(b, mod, t, "gemm", "n", "n", m, nrhs, n, 1.0, q, m, y, n, 0.0, h, m)
    call(b, mod, t, "trsm", "l", "u", "n", "n", n, nrhs, 1.0, r, n, y, n)
    b.call(_residual_function(mod, t, "reverse"), [m, n, nrhs, x, ldb, z, gb, h], VOID)
    call(b, mod, t, "lacpy", "A", m, nrhs, h, m, gb, ldb)
    if ctx.has_shadow(inst.operands[_A]):
        ga = ctx.shadow(inst.operands[_A])
        call(b, mod, t, "gemm", "n", "t", m, n, nrhs, 1.0, z, m, y, n, 0.0, ga, lda)
        call(b, mod, t, "gemm", "n", "t", m, n, nrhs, -1.0, h, m, x, ldb, 1.0, ga, lda)
    release(b, mod, y)
    release(b, mod, h)


def _residual_function(module: Module, t: FloatType, mode: str) -> Function:
    """`void (i64 m, i64 n, i64 nrhs, ptr b, i64 ldb, ptr z, ptr v, ptr out)`, per column j with
    c_j = rows n..m-1 of b's column: forward (v = W, out = b's shadow), out[n:m, j] =
    c_j (z_j . v_j) / |c_j|^2; reverse (v = b's shadow, out = H, m x nrhs),
    out[:, j] += z_j (v[n:m, j] . c_j) / |c_j|^2. Zero where c_j = 0."""
    name = f"enzyme_py.lstsq_residual.{mode}.{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    fn = Function(name, FunctionType(VOID, (I64, I64, I64, PTR, I64, PTR, PTR, PTR)),
                  ["m", "n", "nrhs", "b", "ldb", "z", "v", "out"], linkage="internal")
    m, n, _, bm, ldb, z, v, out = fn.args
    forward = mode == "forward"
    acc = Builder(fn.add_block("entry")).alloca(t), None

    def column(b: Builder, j: Value) -> None:
        def at(ptr: Value, ld: Value, i: Value) -> Value:
            return b.gep(t, ptr, [b.add(b.mul(j, ld), i)])

        def sum_over(count: Value, offset: Value, term) -> Value:
            b.store(zero(t), acc[0])
            counted_loop(b, count, lambda b, i: b.store(
                b.fadd(b.load(t, acc[0]), term(b.add(i, offset))), acc[0]))
            return b.load(t, acc[0])

        rows, tail = m, b.sub(m, n)
        c = lambda i: b.load(t, at(bm, ldb, i))   # noqa: E731
        norm = sum_over(tail, n, lambda i: b.fmul(c(i), c(i)))
        if forward:
            dot = sum_over(rows, zero(I64), lambda i: b.fmul(b.load(t, at(z, m, i)),
                                                            b.load(t, at(v, m, i))))
        else:
            dot = sum_over(tail, n, lambda i: b.fmul(b.load(t, at(v, ldb, i)), c(i)))
        is_zero = b.fcmp("oeq", norm, zero(t))
        g = b.select(is_zero, zero(t), b.fdiv(dot, b.select(is_zero, const_float(t, 1.0), norm)))
        if forward:
            counted_loop(b, tail, lambda b, i: b.store(b.fmul(c(b.add(i, n)), g),
                                                       at(out, ldb, b.add(i, n))))
        else:
            counted_loop(b, rows, lambda b, i: b.store(b.fadd(
                b.load(t, at(out, m, i)), b.fmul(g, b.load(t, at(z, m, i)))), at(out, m, i)))

    b = Builder(fn.blocks[0])
    counted_loop(b, fn.args[2], column)
    b.ret()
    module.add_function(fn)
    return fn


LSTSQ_RECORD = KnownCall(
    LSTSQ, prefix=True, writes=(_A, _B, _S, _RANK, _Q, _R, _Z), flow=Flow(_B, (_A, _B)),
    check=_check, forward=_forward, reverse=_reverse,
    reverse_reads=ReadInReverse((_B, _Q, _R, _Z), "least squares (np.linalg.lstsq) whose "
                                "solution the function also writes", "write into a copy of "
                                "the solution"))
