"""IR edits shared by the rewrites of LAPACK calls before differentiation (`KnownCall.prepare`
of the svd, qr and lstsq records): fresh arrays the rewritten calls also fill (NRT owners, as
Numba allocates, so the reverse pass can keep them alive), their release, byte copies, and
replacing a call."""
from __future__ import annotations

from ir_passes.ir.builder import Builder, declare
from ir_passes.ir.types import I1, I32, I64, PTR, VOID, FloatType, size_of
from ir_passes.ir.values import Instruction, Module, Value, const_int
from ir_passes.known.model import Role, runtime_call


def fresh_array(b: Builder, module: Module, count: Value, t: FloatType) -> tuple[Value, Value]:
    """A fresh array of `count` floats `t`: its owner and its data."""
    alloc = declare(module, runtime_call(Role.HANDLE_ALLOC).name, PTR, [I64, I32])
    data = declare(module, runtime_call(Role.HANDLE_DATA).name, PTR, [PTR])
    owner = b.call(alloc, [b.mul(count, const_int(I64, size_of(t))), const_int(I32, 32)], PTR)
    return owner, b.call(data, [owner], PTR)


def release_arrays(b: Builder, module: Module, owners: list[Value]) -> None:
    decref = declare(module, runtime_call(Role.DECREF).name, VOID, [PTR])
    for owner in owners:
        b.call(decref, [owner], VOID)


def copy_floats(b: Builder, module: Module, t: FloatType, dest: Value, src: Value,
                count: Value) -> None:
    """dest[:count] = src[:count] (llvm.memcpy, whose derivative copies the shadows)."""
    memcpy = declare(module, "llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
    size = b.mul(count, const_int(I64, size_of(t)))
    b.call(memcpy, [dest, src, size, const_int(I1, 0)], VOID)


def position_after(b: Builder, inst: Instruction) -> None:
    block = inst.block
    assert block is not None
    b.position_before(block.instructions[block.instructions.index(inst) + 1])


def replace_call(inst: Instruction, new: Value) -> None:
    """Remove `inst`, its uses taking `new`."""
    block = inst.block
    assert block is not None and block.function is not None
    block.instructions.remove(inst)
    for other in block.function.instructions():
        other.replace_uses(inst, new)
