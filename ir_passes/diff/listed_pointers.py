"""Both modes' handling of pointers kept in a list's storage (a list of arrays): the shadow
list mirrors the primal's (`analysis/array_lists.py`). A pointer read back from the list has
its shadow at the same address in the shadow list; a store into the list puts there the
shadow of a pointer (null for a constant) and the same integer (the list's header and the
items' sizes, which the list's destructor reads on the shadow too)."""
from __future__ import annotations

from typing import Callable

from ..analysis.activity import ActivityInfo, carries_float
from ..diagnostics import Diagnostics
from ..ir.types import PTR
from ..ir.values import NULL, Constant, Function, Instruction, Value
from ..analysis.array_lists import holds_pointers, in_list_storage, unshadowed_item
from ..known.memory import pointer_bases

ShadowLookup = Callable[[Value], "Value | None"]


def is_list_item_load(inst: Instruction, info: ActivityInfo) -> bool:
    """A pointer read back from a list's storage that has a shadow."""
    return inst.opcode == "load" and inst.type == PTR and inst.operands[0] in info.shadowed \
        and in_list_storage(inst.operands[0])


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
