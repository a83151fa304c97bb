"""Copies of matrix-product operands whose memory the reverse pass cannot keep
(`KnownCall.prepare` of dot, gemv and gemm), as Enzyme caches overwritten BLAS operands:
- an operand that is now an argument, now an array the function allocated (a phi of both, as
  in Numba's loop for `np.linalg.matrix_power(A, n)`, |n| >= 4, whose running power starts
  as A);
- an operand the function writes after the product (`w -= lr * X.T @ (X @ w - y)` in a
  gradient-descent loop: `w` is read by `X @ w`, then updated), an argument or an array it
  allocated (`written_after`, the walk the reverse pass's own check uses);
- an argument the caller of a split derivative may change between its halves
  (`ir_passes.diff.split_inputs`: a copy of the whole operand costs what taping it would, in
  one memcpy).
The product reads a fresh copy instead, released after the call; the reverse pass keeps the
copy alive as it keeps any allocated operand (one copy per call executed: the memory a tape
would take). The copy is a call of `enzyme_py.operand_copy.<type>(dst, src, count)`, a memcpy
whose record (`COPY_RECORD`) knows the element type: its adjoint adds d_dst into d_src. Other
operands stay as they are; in forward mode the copy costs one pass over the operand and
changes nothing."""
from __future__ import annotations

from typing import Callable

from ir_passes.diff.reverse.kept import local_owner, written_after
from ir_passes.ir.builder import Builder, declare
from ir_passes.ir.types import DOUBLE, FLOAT, I1, I64, PTR, VOID, FloatType, FunctionType, size_of
from ir_passes.ir.values import Argument, Function, Instruction, Module, Value, const_int
from ir_passes.known.generic import copy_adjoint_function, zero_memory
from ir_passes.known.memory import pointer_bases
from ir_passes.known.model import Flow, ForwardCalls, KnownCall, ReverseCalls

from .lapack_rewrite import fresh_array, position_after, release_arrays

COPY = "enzyme_py.operand_copy."
_TYPES = {str(t): t for t in (DOUBLE, FLOAT)}

# An operand: (argument position, leading dimension, rows, columns as stored column-major)
Operand = tuple[int, Value, Value, Value]


def _not_kept(inst: Instruction, v: Value) -> bool:
    """Whether the reverse of product `inst` could not read operand `v` as it was at `inst`:
    memory of several origins that are not all arrays the function allocated, or memory the
    function writes after `inst`."""
    owned = local_owner(v)
    if owned is not None:
        return written_after(inst, owned[1])
    bases = pointer_bases(v)
    if len(bases) > 1:
        return True
    return isinstance(bases[0], Argument) and written_after(inst, bases)


def copy_mixed_operands(module: Module, inst: Instruction, t: FloatType | None,
                        operands: tuple[Operand, ...], moving: Callable[[Value], bool]) -> None:
    """Copy the `operands` of `inst` (floats `t`) that `_not_kept` finds, or whose memory
    is `moving` (may change before the call's reverse: an argument of a split derivative),
    before `inst`; release the copies after it."""
    if t is None:
        return                  # complex: the record's check refuses it
    owners = []
    for pos, ld, rows, cols in operands:
        if not (_not_kept(inst, inst.operands[pos]) or moving(inst.operands[pos])):
            continue
        b = Builder()
        b.position_before(inst)
        zero = const_int(cols.type, 0)
        last = b.add(b.mul(ld, b.sub(cols, const_int(cols.type, 1))), rows)
        count = b.select(b.icmp("sgt", cols, zero), last, zero)
        owner, data = fresh_array(b, module, count, t)
        b.call(_copy_function(module, t), [data, inst.operands[pos], count], VOID)
        inst.operands[pos] = data
        owners.append(owner)
    if owners:
        b = Builder()
        position_after(b, inst)
        release_arrays(b, module, owners)


def _copy_function(module: Module, t: FloatType) -> Function:
    """`void enzyme_py.operand_copy.<t>(ptr dst, ptr src, i64 count)`: dst[:count] = src."""
    name = f"{COPY}{t}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    fn = Function(name, FunctionType(VOID, (PTR, PTR, I64)), ["dst", "src", "count"],
                  linkage="internal")
    dst, src, count = fn.args
    b = Builder(fn.add_block("entry"))
    memcpy = declare(module, "llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
    b.call(memcpy, [dst, src, _bytes(b, t, count), const_int(I1, 0)], VOID)
    b.ret()
    module.add_function(fn)
    return fn


def _bytes(b: Builder, t: FloatType, count: Value) -> Value:
    return b.mul(count, const_int(I64, size_of(t)))


def _type(inst: Instruction) -> FloatType:
    return _TYPES[(inst.callee_name or "")[len(COPY):]]


def _forward(ctx: ForwardCalls, inst: Instruction) -> None:
    """The same copy between the shadows (zeros when the source has none), per lane."""
    dst, src = inst.operands[0], inst.operands[1]
    count = ctx.value(inst.operands[2])
    for j in range(ctx.width):
        if ctx.has_shadow(src):
            ctx.b.call(_copy_function(ctx.module, _type(inst)),
                       [ctx.shadow(dst, j), ctx.shadow(src, j), count], VOID)
        else:
            zero_memory(ctx.b, ctx.module, ctx.shadow(dst, j), _bytes(ctx.b, _type(inst), count),
                        const_int(I1, 0))


def _reverse(ctx: ReverseCalls, inst: Instruction) -> None:
    """d_src += d_dst, then d_dst = 0."""
    dst, src, t = inst.operands[0], inst.operands[1], _type(inst)
    size = _bytes(ctx.b, t, ctx.value(inst.operands[2]))
    if ctx.has_shadow(src):
        ctx.b.call(copy_adjoint_function(ctx.module, t), [ctx.shadow(src), ctx.shadow(dst), size],
                   VOID)
    else:
        zero_memory(ctx.b, ctx.module, ctx.shadow(dst), size, const_int(I1, 0))


COPY_RECORD = KnownCall(COPY, prefix=True, pointer_neutral=True, writes=(0,),
                        flow=Flow(0, (1,)), forward=_forward, reverse=_reverse)
