"""The derivative of `np.linalg.det` as a whole, valid at singular matrices.

Numba's det (`numba.np.linalg.det_impl.<locals>.det_impl`) is sign * exp(log|U_11| + ...) of
the LU factors, and returns the constant 0.0 when getrf finds an exactly zero pivot: through
the factors its derivative is 0 there (forward) or 0 * inf = NaN (reverse), although
d det(A) = <adj(A)^T, dA> is finite (the adjugate has rank 1 at rank n-1, is 0 below). So the
call stays a call (`capture` inlines no function with emitters) and this record differentiates
it with the cofactor matrix adj(A)^T from a fully pivoted LU, P A Q = L U, whose pivots
decrease so that only the last can be 0 at rank n-1:

    adj(U)^T = det(U11) [[u_nn U11^-T, 0], [-(U11^-1 u12)^T, 1]]
    adj(A)^T = s P^T L^-T adj(U)^T Q^T

(U11 the leading n-1 block, s the permutations' sign) -- exact for any u_nn, and 0 when an
earlier pivot is 0 (rank <= n-2). Forward: t = <adj(A)^T, A'>; reverse: A' += d * adj(A)^T.
The work is done by the `@njit` helpers below (no allocation, no raise) on a scratch buffer
the emitters allocate; their code libraries are linked into the derivative.
"""
from __future__ import annotations

import re

from numba import njit, types

from ir_passes.ir.builder import declare
from ir_passes.ir.types import DOUBLE, FLOAT, I32, I64, PTR, FloatType
from ir_passes.ir.values import Constant, Instruction, Value, const_int, zero
from ir_passes.known.model import (CallContext, Flow, ForwardCalls, KnownCall, ReadInReverse,
                                   ReverseCalls)

from .custom_calls import register_library
from .lapack_calls import release, scratch
from .link import llvm_abi

DET = "_ZN5numba2np6linalg8det_impl12_3clocals_3e8det_impl"   # every signature's symbol
_DTYPE = re.compile(r"5ArrayI([df])Li2E")                       # the matrix's element type
_RET, _A = 0, 2                  # operands: retptr, excinfo, then the matrix's 9 fields
_FIELDS = 9
_NULL = Constant(PTR, "null")
_PARAMS = {"ptr": PTR, "i64": I64, "double": DOUBLE, "float": FLOAT}


@njit(error_model="numpy", cache=False)
def _cofactors(a, w):
    """Leave the cofactor matrix adj(a)^T / (s det(U11)) in w[n*n:2*n*n] with the row and
    column permutations in w[2*n*n:]; return s det(U11) (0.0 when the rank is <= n-2)."""
    n = a.shape[0]
    nn = n * n
    for i in range(n):
        w[2 * nn + i] = i
        w[2 * nn + n + i] = i
        for j in range(n):
            w[i * n + j] = a[i, j]
    scale = 1.0
    for k in range(n):
        p, q, best = k, k, -1.0
        for i in range(k, n):
            for j in range(k, n):
                if abs(w[i * n + j]) > best:
                    p, q, best = i, j, abs(w[i * n + j])
        if p != k:
            scale = -scale
            for j in range(n):
                w[k * n + j], w[p * n + j] = w[p * n + j], w[k * n + j]
            w[2 * nn + k], w[2 * nn + p] = w[2 * nn + p], w[2 * nn + k]
        if q != k:
            scale = -scale
            for i in range(n):
                w[i * n + k], w[i * n + q] = w[i * n + q], w[i * n + k]
            w[2 * nn + n + k], w[2 * nn + n + q] = w[2 * nn + n + q], w[2 * nn + n + k]
        pivot = w[k * n + k]
        if pivot == 0.0:            # the rest is 0: rank k
            if k < n - 1:
                return 0.0
            break
        for i in range(k + 1, n):
            w[i * n + k] /= pivot
            for j in range(k + 1, n):
                w[i * n + j] -= w[i * n + k] * w[k * n + j]
    g, m = nn, n - 1                # G = adj(U)^T / det(U11), row-major at w[g:]
    for c in range(m):              # row c of G = column c of U11^-1, times u_nn
        for i in range(m - 1, -1, -1):
            s = 1.0 if i == c else 0.0
            for l in range(i + 1, m):
                s -= w[i * n + l] * w[g + c * n + l]
            w[g + c * n + i] = s / w[i * n + i]
        scale *= w[c * n + c]
    for c in range(m):
        for i in range(m):
            w[g + c * n + i] *= w[m * n + m]
        w[g + c * n + m] = 0.0
    for i in range(m - 1, -1, -1):  # last row: -(U11^-1 u12)^T
        s = w[i * n + m]
        for l in range(i + 1, m):
            s -= w[i * n + l] * -w[g + m * n + l]
        w[g + m * n + i] = -s / w[i * n + i]
    w[g + m * n + m] = 1.0
    for c in range(n):              # G <- L^-T G (L unit lower, below w's diagonal)
        for i in range(n - 1, -1, -1):
            s = w[g + i * n + c]
            for l in range(i + 1, n):
                s -= w[l * n + i] * w[g + l * n + c]
            w[g + i * n + c] = s
    return scale


@njit(error_model="numpy", cache=False)
def _det_tangent(a, t_a, w):
    """<adj(a)^T, t_a> (a float64, as Numba's det returns for float32 matrices too)."""
    n = a.shape[0]
    nn, total = n * n, 0.0
    scale = _cofactors(a, w) if n > 0 else 0.0
    if scale != 0.0:
        for i in range(n):
            for j in range(n):
                r, c = int(w[2 * nn + i]), int(w[2 * nn + n + j])
                total += w[nn + i * n + j] * t_a[r, c]
    return scale * total


@njit(error_model="numpy", cache=False)
def _det_gradient(a, d_a, w, d_ret):
    """d_a += d_ret * adj(a)^T."""
    n = a.shape[0]
    nn = n * n
    scale = _cofactors(a, w) * d_ret if n > 0 else 0.0
    if scale != 0.0:
        for i in range(n):
            for j in range(n):
                r, c = int(w[2 * nn + i]), int(w[2 * nn + n + j])
                d_a[r, c] += scale * w[nn + i * n + j]


def _element(ctx: CallContext, inst: Instruction) -> FloatType:
    match = _DTYPE.search(inst.callee_name or "")
    if match is None:
        raise ctx.diag.unsupported(f"determinant of a complex matrix ({inst.callee_name})",
                                   inst, "not supported yet: only float32 and float64 "
                                   "matrices are differentiable")
    return DOUBLE if match.group(1) == "d" else FLOAT


def _result(ctx: CallContext, inst: Instruction) -> FloatType:
    """The type of the determinant, which the call stores through its first argument."""
    slot = inst.operands[_RET]
    t = slot.source_type if isinstance(slot, Instruction) and slot.opcode == "alloca" else None
    if not isinstance(t, FloatType):
        raise ctx.diag.unsupported(f"np.linalg.det ({inst.callee_name}) returning its value "
                                   "other than into a stack slot of a float", inst)
    return t


def _helper(ctx: CallContext, inst: Instruction, fn) -> tuple[Value, FloatType]:
    """The compiled helper `fn` for the call's element type, declared in the module."""
    t = _element(ctx, inst)
    dtype = types.float64 if t == DOUBLE else types.float32
    matrix, work = types.Array(dtype, 2, "A"), types.Array(dtype, 1, "C")
    argtypes = (matrix, matrix, work) + ((dtype,) if fn is _det_gradient else ())
    fn.compile(argtypes)
    cres = fn.overloads[argtypes]
    symbol = cres.fndesc.llvm_func_name
    register_library(symbol, cres.library)
    groups, _ = llvm_abi(argtypes, cres.signature.return_type)
    params = [PTR, PTR] + [_PARAMS[x] for g in groups for x in g]
    return declare(ctx.module, symbol, I32, params), t


def _matrix(ctx, inst: Instruction, data: Value | None = None) -> list[Value]:
    """The matrix's fields (without its owner), its data replaced by `data` if given."""
    fields = [ctx.value(inst.operands[_A + k]) for k in range(_FIELDS)]
    fields[0] = fields[1] = _NULL
    if data is not None:
        fields[4] = data
    return fields


def _work(ctx, inst: Instruction, t: FloatType) -> tuple[Value, list[Value]]:
    """A scratch vector of n (2n + 2) floats: its buffer and its fields."""
    b, n = ctx.b, ctx.value(inst.operands[_A + 5])
    cols = b.add(b.mul(n, const_int(I64, 2)), const_int(I64, 2))
    size = b.mul(n, cols)
    buffer = scratch(b, ctx.module, t, n, cols)
    width = const_int(I64, 8 if t == DOUBLE else 4)
    return buffer, [_NULL, _NULL, size, width, buffer, size, width]


def _check(ctx: CallContext, inst: Instruction) -> None:
    _element(ctx, inst)
    _result(ctx, inst)


def _forward(ctx: ForwardCalls, inst: Instruction) -> None:
    """The tangent <adj(A)^T, A'> per lane, into the result's shadow."""
    b, result = ctx.b, _result(ctx, inst)
    data = inst.operands[_A + 4]
    if not ctx.has_shadow(data):
        for lane in range(ctx.width):
            b.store(zero(result), ctx.shadow(inst.operands[_RET], lane))
        return
    fn, t = _helper(ctx, inst, _det_tangent)
    out, exc = ctx.entry_alloca(DOUBLE), ctx.entry_alloca(PTR)
    buffer, work = _work(ctx, inst, t)
    for lane in range(ctx.width):
        shadow = ctx.shadow(data, lane)
        b.call(fn, [out, exc, *_matrix(ctx, inst), *_matrix(ctx, inst, shadow), *work], I32)
        tangent = b.load(DOUBLE, out)
        if result != DOUBLE:
            tangent = b.cast("fptrunc", tangent, result)
        b.store(tangent, ctx.shadow(inst.operands[_RET], lane))
    release(b, ctx.module, buffer)


def _reverse(ctx: ReverseCalls, inst: Instruction) -> None:
    """A' += d * adj(A)^T, d the result's adjoint (then zeroed)."""
    b = ctx.b
    seed_slot, result = ctx.shadow(inst.operands[_RET]), _result(ctx, inst)
    seed = b.load(result, seed_slot)
    b.store(zero(result), seed_slot)
    data = inst.operands[_A + 4]
    if not ctx.has_shadow(data):
        return
    fn, t = _helper(ctx, inst, _det_gradient)
    if result != t:
        seed = b.cast("fptrunc" if result == DOUBLE else "fpext", seed, t)
    buffer, work = _work(ctx, inst, t)
    b.call(fn, [ctx.entry_alloca(PTR), ctx.entry_alloca(PTR), *_matrix(ctx, inst),
                *_matrix(ctx, inst, ctx.shadow(data)), *work, seed], I32)
    release(b, ctx.module, buffer)


DET_RECORD = KnownCall(
    DET, prefix=True, pointer_neutral=True, writes=(_RET,), flow=Flow(_RET, (_A + 4,)),
    check=_check, forward=_forward, reverse=_reverse,
    reverse_reads=ReadInReverse((_A + 4,), "np.linalg.det of an array the function also "
                                "writes", "take the determinant of a copy, or write the array "
                                "only after its last use"))
