"""Shadow memory, written once for both synthesizers (as Enzyme's GradientUtils is shared).

The shadow of a pointer derived by address arithmetic is the same arithmetic on the shadow of
its base (`derived_shadow`); the shadow of memory the function allocates is a zeroed
allocation of the same kind, made by the runtime function registered for that role
(`call_shadow`, `allocate_shadow`), and released the way the primal releases its memory.
The synthesizers keep what differs: forward mode's lanes (width k: k shadows back to back),
reverse mode's release of shadows in the reverse of their allocation.
"""
from __future__ import annotations

from typing import Callable

from ..ir.builder import Builder, declare
from ..ir.types import I32, I64, PTR, VOID
from ..ir.values import FALSE, NULL, Instruction, Module, Value, const_int
from ..known.generic import zero_memory
from ..known.model import Role, role_of, runtime_call

_CASTS = ("bitcast", "addrspacecast", "freeze")
Map = Callable[[Value], Value]
ShadowOf = Callable[[Value, Instruction], Value]    # shadow of an operand, for its user


def derived_shadow(b: Builder, inst: Instruction, value: Map,
                   shadow_of: ShadowOf) -> Value | None:
    """The shadow of a pointer computed from other pointers (GEP, select, casts), else None."""
    op = inst.opcode
    if op == "getelementptr":
        base, *idx = inst.operands
        return b.gep(inst.source_type, shadow_of(base, inst),  # type: ignore[arg-type]
                     [value(i) for i in idx], flags=inst.flags)
    if op == "select":
        c, x, y = inst.operands
        return b.select(value(c), shadow_of(x, inst), shadow_of(y, inst))
    if op in _CASTS:
        return shadow_of(inst.operands[0], inst)
    return None


def call_shadow(b: Builder, module: Module, inst: Instruction, value: Map,
                owner_shadow: Map, width: int = 1) -> Value | None:
    """The shadow of memory a call returns: the data of the owner's shadow, or a zeroed raw
    buffer (`width` of them back to back); None when the call returns no such memory."""
    role = role_of(inst)
    if role is Role.HANDLE_DATA:
        return data_pointer(b, module, owner_shadow(inst.operands[0]))
    if role is Role.RAW_ALLOC:
        size = value(inst.operands[0])
        total = size if width == 1 else b.mul(size, const_int(I64, width))
        return allocate_raw_shadow(b, module, total)
    return None


def allocate_shadow(b: Builder, module: Module, size: Value, align: Value) -> tuple[Value, Value]:
    """Emit a zeroed owned allocation like the primal's; returns (owner, data pointer)."""
    alloc = declare(module, runtime_call(Role.HANDLE_ALLOC).name, PTR, [I64, I32])
    owner = b.call(alloc, [size, align], PTR)
    data = data_pointer(b, module, owner)
    zero_memory(b, module, data, size, FALSE)
    return owner, data


def allocate_growable_shadow(b: Builder, module: Module, size: Value,
                             dtor: Value = NULL) -> Value:
    """A zeroed owner of growable memory like a list's storage, released by `dtor` (none
    when the primal's releases nothing; a list of arrays' own, which releases the shadow
    items: `allocations._check_growable`)."""
    alloc = declare(module, runtime_call(Role.HANDLE_VARSIZE).name, PTR, [I64, PTR])
    owner = b.call(alloc, [size, dtor], PTR)
    zero_memory(b, module, data_pointer(b, module, owner), size, FALSE)
    return owner


def resize_shadow(b: Builder, module: Module, owner_shadow: Value, size: Value) -> None:
    """Resize the shadow's growable memory with the primal's (the primal zeroes what grew)."""
    resize = declare(module, runtime_call(Role.VARSIZE_REALLOC).name, PTR, [PTR, I64])
    b.call(resize, [owner_shadow, size], PTR)


def allocate_raw_shadow(b: Builder, module: Module, size: Value) -> Value:
    """A zeroed raw buffer like one from the runtime's raw allocator."""
    data = b.call(declare(module, runtime_call(Role.RAW_ALLOC).name, PTR, [I64]), [size], PTR)
    zero_memory(b, module, data, size, FALSE)
    return data


def free_raw(b: Builder, module: Module, data: Value) -> None:
    b.call(declare(module, runtime_call(Role.RAW_FREE).name, VOID, [PTR]), [data], VOID)


def data_pointer(b: Builder, module: Module, owner: Value) -> Value:
    return b.call(declare(module, runtime_call(Role.HANDLE_DATA).name, PTR, [PTR]), [owner], PTR)


def mirror_refcount(b: Builder, module: Module, call: Instruction, owner_shadow: Value) -> None:
    """The primal's reference count change `call`, on the owner's shadow."""
    b.call(declare(module, call.callee_name or "", VOID, [PTR]), [owner_shadow], VOID)


def release(b: Builder, module: Module, owner: Value) -> None:
    """Drop a reference to an owner (its memory is freed with the last one)."""
    b.call(declare(module, runtime_call(Role.DECREF).name, VOID, [PTR]), [owner], VOID)
