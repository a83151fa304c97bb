"""Activity analysis: which values carry derivatives, which pointers address shadowed memory.

Forward ("varied"): a value is varied when it may depend on an active input: a float scalar
argument marked active/dup, or a load through a shadowed pointer. A pointer is shadowed when
it is derived (GEP, select, phi, bitcast) from a shadowed argument (the data pointer of a dup
array, the return slot of an active return) or from an alloca that holds varied values, or
when it is loaded from shadowed memory (a held pointer: its shadow is held at the same place
in the shadow memory, `diff/held_pointers.py`), or from unshadowed memory that may hold a
shadowed pointer (`pointer_stores`): such a pointer's shadow is unknown, and the
synthesizers refuse it. An integer loaded from shadowed memory is varied (it may be the
bits of a float) unless the type model of memory (`layout`) says only integers live there.
Backward ("useful"): a value is useful when it may reach an output, i.e. flows into a store
through a shadowed pointer. Active = varied and useful; inactive values get no derivative
code. The result is immutable and printable (`print_activity`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection

from ..ir.printer import print_function
from ..ir.types import (ArrayType, FloatType, IntType, NamedStructType, StructType, Type,
                        VectorType, size_of)
from ..ir.values import Argument, Function, Instruction, Value
from .array_lists import in_list_storage
from .layout import INT, MemoryLayout, analyze_layout
from ..known.memory import is_tape_memory, pointer_base, pointer_bases
from ..known.model import Role, call_record, is_local_allocation, role_of
from .pointer_stores import PointerStores, is_pointer_like

# Opcodes whose (float) result is varied if any operand is.
_PROPAGATE = {"fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "fpext", "fptrunc", "select",
              "phi", "extractvalue", "insertvalue", "extractelement", "insertelement",
              "shufflevector", "freeze", "call", "bitcast", "load"}
_POINTER_DERIVING = {"getelementptr", "select", "phi", "bitcast", "addrspacecast", "freeze"}


def carries_float(t: Type) -> bool:
    """Whether values of type `t` can hold a differentiable float (a named struct, whose
    layout is not resolved here, may: the synthesizers refuse it, `diff/default_deny.py`)."""
    if isinstance(t, (FloatType, NamedStructType)):
        return True
    if isinstance(t, (VectorType, ArrayType)):
        return carries_float(t.element)
    if isinstance(t, StructType):
        return any(carries_float(e) for e in t.elements)
    return False


@dataclass(frozen=True)
class ActivityInfo:
    varied: frozenset[Value]
    useful: frozenset[Value]
    shadowed: frozenset[Value]       # pointers into memory that has a shadow
    layout: MemoryLayout             # what lives where in memory

    def is_varied(self, v: Value) -> bool:
        return v in self.varied

    def is_active(self, v: Value) -> bool:
        return v in self.varied and v in self.useful

    def has_shadow(self, v: Value) -> bool:
        return v in self.shadowed


def analyze_activity(fn: Function, varied_args: set[Argument], shadowed_args: set[Argument],
                     callees: Collection[str] = (),
                     known: dict[Value, Type] | None = None,
                     named: dict[str, Type] | None = None) -> ActivityInfo:
    """`callees`: the functions defined beside `fn` that it calls without inlining them
    (their derivatives are their own functions): such a call handed an active value may store
    active values into every function-local float memory it is handed. `known`, `named`: the
    element types the front end knows and the module's struct types (`layout`)."""
    layout = analyze_layout(fn, known, named)
    varied: set[Value] = set(varied_args)
    shadowed: set[Value] = set(shadowed_args)
    stores = PointerStores(fn, callees)
    numbers = tape_numbers(fn) | _growable_header_numbers(fn)
    same_owner = _data_pointers_by_owner(fn)
    changed = True
    while changed:
        changed = False
        for inst in fn.instructions():
            if is_pointer_like(inst.type):
                if inst not in shadowed and (_derives_shadowed(inst, shadowed, stores) or any(
                        d in shadowed for d in same_owner.get(inst, ()))):
                    shadowed.add(inst)
                    changed = True
            elif inst not in varied and inst not in numbers \
                    and _is_varied(inst, varied, shadowed, layout):
                varied.add(inst)
                changed = True
            for base in _local_memory_receiving(inst, varied, shadowed, callees) \
                    + _local_memory_merged(inst, shadowed) \
                    + _local_memory_taped(inst, shadowed, stores) \
                    + _list_storage_listing(inst, shadowed):
                if base not in shadowed:
                    shadowed.add(base)
                    changed = True
            changed |= stores.record(inst, shadowed)
    useful = _useful(fn, varied, shadowed)
    return ActivityInfo(frozenset(varied), frozenset(useful), frozenset(shadowed), layout)


def _growable_header_numbers(fn: Function) -> set[Instruction]:
    """Integers loaded from growable memory (a list's storage, role HANDLE_VARSIZE) and used
    as numbers: its header's lengths, which have no derivative. (Only stored or reinterpreted,
    an integer load may be bytes of floats and stays varied.)"""
    loads = [inst for inst in fn.instructions() if inst.opcode == "load"
             and isinstance(inst.type, IntType) and _in_growable_memory(inst.operands[0])]
    if not loads:
        return set()
    used = {op for u in fn.instructions() if u.opcode != "store" for op in u.operands}
    reinterpreted = {op for u in fn.instructions() if u.opcode in ("bitcast", "inttoptr")
                     for op in u.operands}
    return {inst for inst in loads if inst in used and inst not in reinterpreted}


def _in_growable_memory(ptr: Value) -> bool:
    bases = pointer_bases(ptr)
    return bool(bases) and all(role_of(b) is Role.HANDLE_DATA
                               and role_of(b.operands[0]) is Role.HANDLE_VARSIZE  # type: ignore
                               for b in bases)


def _data_pointers_by_owner(fn: Function) -> dict[Value, list[Instruction]]:
    """Each data-pointer call (role HANDLE_DATA) -> the others asking the same owner: they
    address the same memory (a list's storage is asked again after each access)."""
    by_owner: dict[Value, list[Instruction]] = {}
    for inst in fn.instructions():
        if role_of(inst) is Role.HANDLE_DATA:
            by_owner.setdefault(inst.operands[0], []).append(inst)
    return {d: calls for calls in by_owner.values() if len(calls) > 1 for d in calls}


def tape_numbers(fn: Function) -> set[Instruction]:
    """The integers a derivative being differentiated reads back from its tape (loop counts,
    branches taken) and uses as numbers: they have no derivative. (An integer load that is
    only stored copies bytes, maybe of floats, and stays varied.)"""
    loads = [inst for inst in fn.instructions() if inst.opcode == "load"
             and isinstance(inst.type, IntType) and is_tape_memory(inst.operands[0])]
    if not loads:
        return set()
    used = {op for u in fn.instructions() if u.opcode != "store" for op in u.operands}
    return {inst for inst in loads if inst in used}


def _derives_shadowed(inst: Instruction, shadowed: set[Value], stores: PointerStores) -> bool:
    if inst.opcode == "load":      # held in shadowed memory, or reloaded from memory that
        return inst.operands[0] in shadowed or stores.may_hold(inst.operands[0])  # may hold one
    if inst.opcode == "call":
        return stores.may_return(inst, shadowed) or _listed_owner_data(inst, shadowed)
    if inst.opcode in _POINTER_DERIVING:
        ops = inst.operands[1:] if inst.opcode == "select" else inst.operands
        return any(op in shadowed for op in ops)
    return False


def _listed_owner_data(inst: Instruction, shadowed: set[Value]) -> bool:
    """The data of an owner read back from a list holding shadowed pointers: its shadow is
    the data of the owner's shadow, read back from the shadow list (`array_lists.py`)."""
    owner = inst.operands[0] if role_of(inst) is Role.HANDLE_DATA else None
    return isinstance(owner, Instruction) and owner.opcode == "load" and owner in shadowed \
        and in_list_storage(owner.operands[0])


def _is_varied(inst: Instruction, varied: set[Value], shadowed: set[Value],
               layout: MemoryLayout) -> bool:
    if inst.opcode not in _PROPAGATE:
        return False
    if inst.opcode == "load":
        return inst.operands[0] in shadowed and (carries_float(inst.type) or (
            inst.type.scalar.is_int                                # i64, <2 x i64>
            and not layout.holds_only(inst.operands[0], size_of(inst.type), frozenset({INT}))))
    if not carries_float(inst.type):
        return False
    ops = inst.operands[1:] if inst.opcode == "select" else inst.operands
    return any(op in varied for op in ops)


def _local_memory_receiving(inst: Instruction, varied: set[Value], shadowed: set[Value],
                            callees: Collection[str] = ()) -> list[Instruction]:
    """Function-local memory (allocas, NRT allocations) that `inst` fills with active data."""
    if inst.opcode == "call" and inst.callee_name in callees:
        if not any(op in varied or op in shadowed for op in inst.operands):
            return []
        bases = (local_memory_base(op) for op in inst.operands if op.type.is_pointer)
        return [base for base in bases if base is not None and _may_hold_floats(base)]
    if inst.opcode == "store":
        value, ptr = inst.operands
        return local_memory_bases(ptr) if value in varied else []
    record = call_record(inst)      # a known call moving values into memory
    flows = (record.flow, *record.more_flows) if record is not None and record.flow else ()
    return [base for flow in flows
            if any(inst.operands[i] in shadowed or inst.operands[i] in varied
                   for i in flow.sources)
            for base in local_memory_bases(inst.operands[flow.dest])]


def _local_memory_merged(inst: Instruction, shadowed: set[Value]) -> list[Instruction]:
    """Function-local memory a phi or select merges with shadowed memory (e.g. the zeros
    Numba returns for an empty matrix product): it gets a shadow too (zero until written)."""
    if inst.opcode not in ("phi", "select") or inst not in shadowed:
        return []
    ops = inst.operands[1:] if inst.opcode == "select" else inst.operands
    bases = (local_memory_base(op) for op in ops)
    return [base for base in bases if base is not None]


def _local_memory_taped(inst: Instruction, shadowed: set[Value],
                        stores: PointerStores) -> list[Instruction]:
    """A derivative being differentiated keeping addresses on its tape: the tape, when one
    of them has a shadow (kept beside it, in the tape's shadow: `diff/taped_pointers.py`);
    function-local memory whose address is kept beside such addresses (the pointers read
    back cannot be told apart, so it gets a shadow too, zero unless written)."""
    if inst.opcode != "store" or not inst.operands[0].type.is_pointer \
            or not is_tape_memory(inst.operands[1]):
        return []
    v, ptr = inst.operands
    if v in shadowed:
        return local_memory_bases(ptr)
    if not stores.may_hold(ptr):
        return []
    if role_of(v) is Role.HANDLE_ALLOC:       # an owner: the memory of its data
        return [u for u in _users(v) if role_of(u) is Role.HANDLE_DATA]
    base = local_memory_base(v)
    return [base] if base is not None and base.opcode != "alloca" else []


def _list_storage_listing(inst: Instruction, shadowed: set[Value]) -> list[Instruction]:
    """A list's storage receiving a pointer with a shadow (an array put in a list): it gets
    a shadow holding the items' shadows (`array_lists.py`)."""
    if inst.opcode != "store" or inst.operands[0] not in shadowed \
            or not in_list_storage(inst.operands[1]):
        return []
    return local_memory_bases(inst.operands[1])


def _users(v: Instruction) -> list[Instruction]:
    fn = v.block.function if v.block is not None else None
    return [u for u in fn.instructions() if any(op is v for op in u.operands)] if fn else []


def _may_hold_floats(base: Instruction) -> bool:
    """Whether local memory may hold floats: a stack slot of a float type, or any heap memory."""
    return base.opcode != "alloca" or carries_float(base.source_type)  # type: ignore[arg-type]


def local_memory_bases(ptr: Value) -> list[Instruction]:
    """The function-local memory `ptr` addresses when every value it derives from is such
    memory (a tape grown into fresh buffers: a phi of several allocations), else none."""
    bases = pointer_bases(ptr)
    local = [b for b in map(local_memory_base, bases) if b is not None]
    return local if len(local) == len(bases) else []


def local_memory_base(ptr: Value) -> Instruction | None:
    """The alloca, or the call returning the memory of an owner or a raw buffer, that `ptr`
    addresses, if it addresses function-local memory."""
    base = pointer_base(ptr)
    if isinstance(base, Instruction) and (base.opcode == "alloca" or is_local_allocation(base)):
        return base
    return None


def _useful(fn: Function, varied: set[Value], shadowed: set[Value]) -> set[Value]:
    useful: set[Value] = set()
    work: list[Value] = []
    for inst in fn.instructions():
        if inst.opcode == "store" and inst.operands[1] in shadowed and inst.operands[0] in varied:
            work.append(inst.operands[0])
        elif inst.opcode == "call" and any(op in shadowed for op in inst.operands):
            work.extend(op for op in inst.operands if op in varied)
    while work:
        v = work.pop()
        if v in useful:
            continue
        useful.add(v)
        if isinstance(v, Instruction):
            work.extend(op for op in v.operands if op in varied and op not in useful)
    return useful


def print_activity(fn: Function, info: ActivityInfo) -> str:
    """The function's IR with each instruction annotated, like Enzyme's print-activity."""
    lines = print_function(fn, keep_metadata=False).splitlines()
    insts = list(fn.instructions())
    out: list[str] = []
    k = 0
    for line in lines:
        if line.startswith("  ") and k < len(insts):
            inst = insts[k]
            k += 1
            line = f"{line:<72} ; {_label(inst, info)}"
        out.append(line)
    return "\n".join(out)


def _label(inst: Instruction, info: ActivityInfo) -> str:
    if inst.opcode == "store":
        ptr = inst.operands[1]
        return "active store (shadowed memory)" if ptr in info.shadowed else "inactive"
    if inst in info.shadowed:
        return "shadowed pointer"
    if info.is_active(inst):
        return "active"
    if inst in info.varied:
        return "varied, not useful"
    return "inactive"


__all__ = ["ActivityInfo", "analyze_activity", "carries_float", "print_activity"]
