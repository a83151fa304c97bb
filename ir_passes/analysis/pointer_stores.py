"""Memory that may hold the address of shadowed memory.

Numba keeps array structs (meminfo, parent, nitems, itemsize, data, shape, strides) in stack
slots around runtime calls such as `numba_attempt_nocopy_reshape`, and reloads the data
pointer afterwards. Canonicalisation forwards such reloads to the stored value when it can
prove nothing overwrote the field; a pointer still loaded from memory that may hold a shadowed
pointer has a shadow the pass cannot know, so activity analysis marks it (and the synthesizers
refuse it) instead of treating it as the address of memory without derivatives. (A pointer
stored into shadowed memory the function did not allocate has its shadow stored beside it:
`diff/held_pointers.py`.)

Memory is tracked per (base, byte offset): a base is the alloca or allocation a pointer is
derived from (`pointer_base`). Memory the function did not allocate, memory reached through
an unknown offset, and memory handed to a call that may copy pointers are tracked coarsely.
"""
from __future__ import annotations

from typing import Collection

from ..ir.types import ArrayType, StructType, Type, VectorType, align_of, size_of
from ..ir.values import ConstInt, Function, Instruction, Value
from ..known.memory import pointer_base
from ..known.model import KnownCall, Role, call_record, role_of


def is_pointer_like(t: Type) -> bool:
    return t.is_pointer or isinstance(t, VectorType) and t.element.is_pointer


class PointerStores:
    """Where pointers into shadowed memory may have been stored (grown to a fixpoint)."""

    def __init__(self, fn: Function, callees: Collection[str] = ()) -> None:
        self._fields: set[tuple[Value, int | None]] = set()   # (local memory, offset)
        self._anywhere = False      # some pointer went to memory tracked only coarsely
        self._escaped = _escaped_memory(fn)
        self._callees = callees     # not inlined: their own derivatives follow their pointers

    def record(self, inst: Instruction, shadowed: set[Value]) -> bool:
        """Note what `inst` stores or copies; True when something new may hold a pointer."""
        if inst.opcode == "store":
            value, ptr = inst.operands
            if ptr in shadowed and local_memory(ptr)[0] is None:
                return False        # held in shadowed memory: its shadow is held beside it
            return is_pointer_like(value.type) and value in shadowed and self._mark(ptr)
        if inst.opcode != "call" or inst.callee_name in self._callees:
            return False
        record = call_record(inst)
        source = _raw_copy_source(record)
        if source is not None:
            assert record is not None and record.flow is not None
            return self.may_hold(inst.operands[source]) and \
                self._mark(inst.operands[record.flow.dest], whole=True)
        if record is not None and record.pointer_neutral:
            return False
        # Any other call may copy pointers from one argument to another, or keep them.
        pointers = [op for op in inst.operands if is_pointer_like(op.type)]
        if not any(op in shadowed or self.may_hold(op) for op in pointers):
            return False
        changed = False
        for op in pointers:
            changed |= self._mark(op, whole=True)
        return changed

    def may_return(self, call: Instruction, shadowed: set[Value]) -> bool:
        """Whether pointer-returning `call` may return an address of shadowed memory: it is
        handed a shadowed pointer, or memory that may hold one, and is not known."""
        record = call_record(call)
        if record is not None and (record.pointer_neutral or record.fresh):
            return False            # allocators return fresh memory
        return any(op in shadowed or self.may_hold(op)
                   for op in call.operands if is_pointer_like(op.type))

    def may_hold(self, ptr: Value) -> bool:
        """Whether memory at `ptr` may hold a pointer into shadowed memory."""
        memory, offset = local_memory(ptr)
        if memory is None:
            return self._anywhere
        return any(m is memory and (o is None or offset is None or o == offset)
                   for m, o in self._fields)

    def _mark(self, ptr: Value, whole: bool = False) -> bool:
        memory, offset = local_memory(ptr)
        changed = False
        if memory is None or memory in self._escaped:
            changed = not self._anywhere
            self._anywhere = True
        if memory is not None and (memory, None if whole else offset) not in self._fields:
            self._fields.add((memory, None if whole else offset))
            changed = True
        return changed


def local_memory(ptr: Value) -> tuple[Value | None, int | None]:
    """The function-local memory `ptr` addresses (an alloca, or the allocation call behind
    an NRT data pointer) and its constant byte offset (None: unknown); (None, None) for
    memory the function did not allocate."""
    base, offset = base_and_offset(ptr)
    if not isinstance(base, Instruction):
        return None, None
    if base.opcode == "alloca" or role_of(base) is Role.RAW_ALLOC:
        return base, offset
    meminfo = base.operands[0] if role_of(base) is Role.HANDLE_DATA else None
    return (meminfo, offset) if _is_constructed(meminfo) else (None, None)


def _is_constructed(v: Value | None) -> bool:
    """Whether `v` is a meminfo made by an NRT constructor in this function."""
    return role_of(v) in (Role.HANDLE_ALLOC, Role.HANDLE_NEW, Role.HANDLE_VARSIZE)


def _escaped_memory(fn: Function) -> set[Value]:
    """Local memory whose address is stored to memory or handed to a call that may keep it."""
    out: set[Value] = set()
    for inst in fn.instructions():
        record = call_record(inst)
        if inst.opcode == "store":
            candidates = [inst.operands[0]]
        elif inst.opcode == "call" and not (record is not None and record.pointer_neutral):
            candidates = list(inst.operands)
        else:
            continue
        for v in candidates:
            memory = v if _is_constructed(v) else local_memory(v)[0] if v.type.is_pointer \
                else None
            if memory is not None:
                out.add(memory)
    return out


def never_reloaded(fn: Function, store: Instruction) -> bool:
    """Whether the pointer `store` writes into a stack slot is never read back: no pointer
    load or memory copy may read that field, and the slot's address does not escape (Numba
    parks array structs around runtime calls that read only their shape and strides)."""
    memory, offset = local_memory(store.operands[1])
    if not (isinstance(memory, Instruction) and memory.opcode == "alloca") or offset is None \
            or memory in _escaped_memory(fn):
        return False
    for inst in fn.instructions():
        if inst.opcode == "load" and is_pointer_like(inst.type):
            source = inst.operands[0]
        elif (copied := _raw_copy_source(call_record(inst))) is not None:
            source = inst.operands[copied]
        else:
            continue
        m, o = local_memory(source)
        if m is memory and (o is None or o == offset):
            return False
    return True


def base_and_offset(ptr: Value) -> tuple[Value, int | None]:
    """The base `ptr` is derived from and its constant byte offset from it (None: unknown)."""
    base = pointer_base(ptr)
    offset: int | None = 0
    p = ptr
    while p is not base:
        if not (isinstance(p, Instruction) and p.opcode in ("getelementptr", "bitcast",
                                                              "addrspacecast", "freeze")):
            return base, None           # through a phi or select
        if p.opcode == "getelementptr" and offset is not None:
            step = gep_offset(p)
            offset = None if step is None else offset + step
        p = p.operands[0]
    return base, offset


def gep_offset(gep: Instruction) -> int | None:
    """The constant byte offset a GEP adds to its base, or None when an index varies."""
    indices = gep.operands[1:]
    if not all(isinstance(i, ConstInt) for i in indices):
        return None
    t: Type = gep.source_type  # type: ignore[assignment]
    offset = indices[0].value * size_of(t)  # type: ignore[attr-defined]
    for index in indices[1:]:
        k = index.value  # type: ignore[attr-defined]
        if isinstance(t, StructType):
            offset += field_offset(t, k)
            t = t.elements[k]
        elif isinstance(t, (ArrayType, VectorType)):
            t = t.element
            offset += k * size_of(t)
        else:
            return None
    return offset


def field_offset(t: StructType, k: int) -> int:
    """Byte offset of element `k` of struct `t` (natural alignment unless packed)."""
    offset = 0
    for i, e in enumerate(t.elements[:k + 1]):
        a = 1 if t.packed else align_of(e)
        offset = (offset + a - 1) // a * a
        if i < k:
            offset += size_of(e)
    return offset


def _raw_copy_source(record: KnownCall | None) -> int | None:
    """The argument a known call copies bytes (pointers included) from, if it copies."""
    if record is None or record.flow is None or not record.flow.raw:
        return None
    return record.flow.sources[0]
