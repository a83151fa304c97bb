"""Both modes' handling of pointers held in shadowed memory (Enzyme's convention): the
shadow of memory holding a pointer holds that pointer's shadow at the same place. The caller
of a derivative allocates the shadow of a struct with shadow pointers inside (a struct
{n, data} marked dup: a shadow struct whose data points to the shadow array); a list of arrays
has a shadow list holding the items' shadows (`analysis/array_lists.py`); a differentiated
reverse derivative's tape has a shadow holding the shadows of the pointers it tapes
(`taped_pointers.py`).

So a pointer loaded from shadowed memory has as its shadow the pointer loaded from the same
place of the shadow memory (reverse mode keeps that shadow for its reverse, as it keeps any
shadow pointer: the memory may be overwritten in between), and a pointer stored into
shadowed memory puts its shadow there (null for a null pointer); a memcpy of bytes holding
pointers copies the shadow bytes with them (forward mode's copy of the shadows; in reverse
mode the forward sweep's, and the reverse then has no adjoint to move). Refused: a pointer
loaded where the type model of memory (`analysis/layout.py`) says floats live too, a pointer
without a shadow stored or copied where a shadow is expected, a struct holding pointers loaded
as one value, and in reverse mode a copy of bytes holding both pointers and floats. A list's
storage also mirrors the integers (its header and the items' sizes, which the list's
destructor reads on the shadow)."""
from __future__ import annotations

from typing import Callable

from ..analysis.activity import ActivityInfo, carries_float
from ..analysis.layout import FLOAT, PTR as PTR_KIND, UNKNOWN
from ..analysis.pointer_stores import is_pointer_like
from ..diagnostics import Diagnostics
from ..ir.builder import Builder
from ..ir.types import PTR, holds_pointer, size_of
from ..ir.values import NULL, ConstInt, Constant, Function, Instruction, Value
from ..analysis.array_lists import holds_pointers, in_list_storage, unshadowed_item
from ..known.memory import is_tape_memory, memory_intrinsic_kind, pointer_bases
from .common import stored_pointer_shadow
from .lanes import gather

ShadowLookup = Callable[[Value], "Value | None"]


def is_held_pointer_load(inst: Instruction, info: ActivityInfo) -> bool:
    """A pointer loaded from shadowed memory."""
    return inst.opcode == "load" and is_pointer_like(inst.type) \
        and inst.operands[0] in info.shadowed


def is_held_pointer_store(inst: Instruction, info: ActivityInfo) -> bool:
    """A pointer stored into shadowed memory that is neither a list's storage nor a tape (they
    have their own rules: `list_item_shadow`, `taped_pointers.taped_shadow`)."""
    return inst.opcode == "store" and is_pointer_like(inst.operands[0].type) \
        and inst.operands[1] in info.shadowed and not in_list_storage(inst.operands[1]) \
        and not is_tape_memory(inst.operands[1])


def is_held_copy(inst: Instruction, info: ActivityInfo) -> bool:
    """A memcpy/memmove into shadowed memory (not a list's storage or a tape) of bytes that
    may hold pointers (the type model of memory says)."""
    if inst.opcode != "call" or memory_intrinsic_kind(inst.callee_name or "") != "copy":
        return False
    dst = inst.operands[0]
    return dst in info.shadowed and not in_list_storage(dst) and not is_tape_memory(dst) \
        and PTR_KIND in copied_kinds(inst, info)


def copied_kinds(copy: Instruction, info: ActivityInfo) -> frozenset[str]:
    """What the bytes a memcpy/memmove moves may hold, seen from either side."""
    dst, src, length = copy.operands[:3]
    n = length.value if isinstance(length, ConstInt) else 0
    return info.layout.kinds(dst, n) | info.layout.kinds(src, n)


def check_held_copy(diag: Diagnostics, info: ActivityInfo, copy: Instruction,
                    reverse: bool) -> None:
    """Refuse a copy of pointers into shadowed memory from memory without a shadow (the
    pointers copied would have none), and in reverse mode one of bytes that also hold
    floats (the forward sweep copies the shadow pointers, the reverse moves the floats'
    adjoints: one copy of the shadow cannot do both)."""
    if copy.operands[1] not in info.shadowed:
        raise diag.unsupported(
            "memory holding pointers copied from memory without a derivative into memory "
            "that has one: the pointers copied would have no shadow", copy,
            "mark the source dup as well, or copy only the non-pointer fields")
    kinds = copied_kinds(copy, info)
    if reverse and (FLOAT in kinds or UNKNOWN in kinds):
        raise diag.unsupported(
            "a copy of memory holding both pointers and floats (a struct assignment) in "
            "reverse mode", copy,
            "not supported yet: assign the fields one by one, or use forward mode")


def check_aggregate_load(diag: Diagnostics, info: ActivityInfo, load: Instruction) -> None:
    """Refuse a struct, array or vector holding pointers loaded from shadowed memory (not a
    list's storage or a tape): the shadows of the pointers in it are not followed."""
    if load.opcode == "load" and load.operands[0] in info.shadowed \
            and not is_pointer_like(load.type) and holds_pointer(load.type) \
            and not in_list_storage(load.operands[0]) and not is_tape_memory(load.operands[0]):
        raise diag.unsupported(
            f"a {load.type} holding pointers loaded from shadowed memory as one value", load,
            "not supported yet: read the struct's fields one by one")


def held_load_shadow(b: Builder, diag: Diagnostics, info: ActivityInfo, load: Instruction,
                     shadow_ptr: Value, width: int = 1) -> Value:
    """The shadow of held pointer `load`: loaded from `shadow_ptr`, the shadow of its address
    (`width` lanes in vector forward mode)."""
    if not (in_list_storage(load.operands[0]) or is_tape_memory(load.operands[0])):
        _check_held_load(diag, info, load)
    if width == 1:
        return b.load(load.type, shadow_ptr, align=load.align)
    if load.type != PTR:
        raise diag.unsupported(f"a vector of pointers loaded from shadowed memory in vector "
                               f"forward mode (width {width})", load, "use width=1")
    return gather(b, PTR, shadow_ptr, width)


def _check_held_load(diag: Diagnostics, info: ActivityInfo, load: Instruction) -> None:
    """Refuse a pointer loaded from bytes that are also read or written as floats (or that
    a call may have filled with anything): its shadow would be a float's derivative."""
    kinds = info.layout.kinds(load.operands[0], size_of(load.type))
    if FLOAT in kinds or UNKNOWN in kinds:
        what = "floats" if FLOAT in kinds else "values a call wrote"
        raise diag.unsupported(
            f"pointer loaded from shadowed memory whose bytes also hold {what}: the type "
            "model of memory cannot tell what its shadow holds there", load,
            "keep pointers and floats in separate fields (a struct), not in the same bytes "
            "(a union or a cast)")


def held_shadow(diag: Diagnostics, store: Instruction, shadow: ShadowLookup) -> Value:
    """What the shadow memory holds where `store` puts a pointer: its shadow, null for a
    null pointer; refused for a pointer without one."""
    s = stored_pointer_shadow(store, shadow)
    if s is not None:
        return s
    raise diag.unsupported(
        "pointer without a derivative (into const memory, or memory holding no active "
        "values) stored into memory that has one: a pointer loaded back from there would "
        "have no shadow", store,
        "mark the memory it points to dup (pass it as an argument with a shadow), or keep "
        "the pointer out of differentiated memory")


def is_list_item_store(fn: Function, inst: Instruction) -> bool:
    """A pointer or integer stored into the storage of a list of arrays (not a float: its
    shadow store is a tangent's)."""
    if inst.opcode != "store" or carries_float(inst.operands[0].type) \
            or not in_list_storage(inst.operands[1]):
        return False
    owners = {b.operands[0] for b in pointer_bases(inst.operands[1])}  # type: ignore[attr-defined]
    return all(holds_pointers(fn, o) for o in owners)  # type: ignore[arg-type]


def list_item_shadow(diag: Diagnostics, fn: Function, store: Instruction,
                     value: Callable[[Value], Value], shadow: ShadowLookup,
                     tangent: ShadowLookup) -> Value:
    """What the shadow list holds where `store` writes into the list: the same integer (its
    tangent if it has one: bytes copied from shadowed memory), the shadow of a pointer, null
    for a constant or for a pointer without a shadow in a field no shadowed pointer goes to
    (an array's parent object); refused for one mixed with them."""
    v = store.operands[0]
    if not v.type.is_pointer:
        t = tangent(v)
        return value(v) if t is None else t
    s = shadow(v)
    if s is not None:
        return s
    if isinstance(v, Constant) or not unshadowed_item(fn, store, lambda p: shadow(p) is not None):
        return NULL
    raise diag.unsupported(
        "an array without a derivative (const, or not yet written with active values) put in "
        "a list that also holds arrays with one: the derivative cannot tell them apart when "
        "they are read back", store,
        "not supported yet: keep the const arrays in a list of their own, or mark them dup")
