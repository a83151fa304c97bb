"""The storage of a list of arrays (a reflected list's growable memory holding array structs).

A list's storage (the data of an owner of role HANDLE_VARSIZE) holding pointers is a list of
arrays or of other owned items: a header, then items {meminfo, parent, nitems, itemsize, data,
shape, strides}. Its shadow mirrors it: each pointer field holds the shadow of the pointer the
primal stores there (the shadow owner of a meminfo, the shadow of a data pointer, null for a
pointer without one) and each integer the primal's. So a pointer loaded from the list has its
shadow at the same place in the shadow list, and the list's destructor, run on the shadow,
releases the shadow items (forward mode mirrors their reference counts).

A field (the offset inside an item) receiving both pointers with a shadow and pointers
without one (a const array and a dup array in one list) would give a read-back pointer a null
shadow: refused (`unshadowed_item`).
"""
from __future__ import annotations

from typing import Callable

from ..ir.types import StructType, size_of
from ..ir.values import ConstInt, Function, Instruction, Value
from ..known.memory import pointer_bases
from ..known.model import Role, role_of
from .pointer_stores import base_and_offset, gep_offset


def in_list_storage(ptr: Value) -> bool:
    """Whether `ptr` addresses only the storage of lists (growable memory)."""
    bases = pointer_bases(ptr)
    return bool(bases) and all(role_of(b) is Role.HANDLE_DATA
                               and role_of(b.operands[0]) is Role.HANDLE_VARSIZE  # type: ignore
                               for b in bases)


def holds_pointers(fn: Function, owner: Instruction) -> bool:
    """Whether the primal stores pointers into the storage of list `owner` (owned items)."""
    return any(inst.opcode == "store" and inst.operands[0].type.is_pointer
               and _owners(inst.operands[1]) == {owner} for inst in fn.instructions())


def item_field(fn: Function, ptr: Value) -> int | None:
    """The offset inside an item of the field `ptr` addresses in a list's storage (items
    stepped over by a run-time index, or at a constant offset past the header of a list
    whose items `fn` also indexes at run time); None when it cannot be told."""
    layout = _layout(ptr)
    if layout is not None:
        return layout[2]
    owners = _owners(ptr)
    offset = base_and_offset(ptr)[1]
    layouts = {lay[:2] for inst in fn.instructions() if inst.opcode in ("load", "store")
               for a in inst.operands[-1:] if _owners(a) == owners
               for lay in [_layout(a)] if lay is not None}
    if offset is None or len(layouts) != 1:
        return None
    ((header, size),) = layouts
    return (offset - header) % size if offset >= header else None


def _layout(ptr: Value) -> tuple[int, int, int] | None:
    """(header bytes, item size, offset in the item) of `ptr` = constant offsets on a GEP
    stepping over items by a run-time index from a constant offset of its base."""
    offset = 0
    p = ptr
    while isinstance(p, Instruction) and p.opcode == "getelementptr":
        indices = p.operands[1:]
        if all(isinstance(i, ConstInt) for i in indices):
            step = gep_offset(p)
            if step is None:
                return None
            offset += step
            p = p.operands[0]
            continue
        header = base_and_offset(p.operands[0])[1]
        if len(indices) != 1 or not isinstance(p.source_type, StructType) or header is None:
            return None
        return header, size_of(p.source_type), offset
    return None


def unshadowed_item(fn: Function, store: Instruction,
                    has_shadow: Callable[[Value], bool]) -> bool:
    """Whether `store` puts a pointer without a shadow (`has_shadow(v)` false, not a
    constant) into a field of a list's items that other stores fill with shadowed pointers,
    or into a field that cannot be told apart."""
    field = item_field(fn, store.operands[1])
    if field is None:
        return True
    owners = _owners(store.operands[1])
    return any(inst.opcode == "store" and inst is not store and inst.operands[0].type.is_pointer
               and has_shadow(inst.operands[0]) and _owners(inst.operands[1]) == owners
               and item_field(fn, inst.operands[1]) in (field, None)
               for inst in fn.instructions())


def _owners(ptr: Value) -> set[Value]:
    return {b.operands[0] for b in pointer_bases(ptr)
            if isinstance(b, Instruction) and role_of(b) is Role.HANDLE_DATA}
