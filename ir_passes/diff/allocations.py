"""Shadows of memory the primal allocates itself (arrays from Numba's runtime, NRT).

When active values are stored into an array allocated inside the function
(`NRT_MemInfo_alloc_aligned` + `NRT_MemInfo_data_fast`), the derivative allocates a zeroed
shadow of the same size next to it. Such an array may be returned (stored to the return
slot, whose shadow slot then holds the shadow array), but not stored elsewhere or passed
to calls. Forward mode mirrors the primal's reference counting on
the shadow; reverse mode keeps the shadow alive until the reverse of the allocation, where it
is released.
"""
from __future__ import annotations

from ..analysis.activity import ActivityInfo
from ..analysis.pointer_stores import never_reloaded
from ..diagnostics import Diagnostics
from ..ir.builder import Builder, declare
from ..ir.types import I1, I8, I32, I64, PTR, VOID
from ..ir.values import FALSE, Function, Instruction, Module, Value, const_int
from .memory import NRT_ALLOC, NRT_DATA, NRT_RAW_ALLOC, NRT_RAW_FREE, pointer_base

_REFCOUNT = ("NRT_incref", "NRT_decref")


def shadowed_allocations(fn: Function, info: ActivityInfo, diag: Diagnostics,
                         retptr: Value | None = None) -> set[Instruction]:
    """The allocation calls whose memory needs a shadow (checked not to escape other than
    through the return slot `retptr`, when it is shadowed)."""
    allocs: set[Instruction] = set()
    for inst in fn.instructions():
        if inst.callee_name == NRT_DATA and inst in info.shadowed:
            meminfo = inst.operands[0]
            if not (isinstance(meminfo, Instruction) and meminfo.callee_name in NRT_ALLOC):
                origin = meminfo.callee_name if isinstance(meminfo, Instruction) else None
                raise diag.unsupported(
                    f"active data in memory allocated by '{origin or 'unknown'}' (the storage "
                    "of a Python list or other container?)", inst,
                    "keep active values in NumPy arrays (np.empty), not Python containers")
            allocs.add(meminfo)
    for inst in fn.instructions():
        if any(op in allocs for op in inst.operands) and inst.opcode != "icmp" and \
                inst.callee_name not in (NRT_DATA, *_REFCOUNT) and \
                not _returned(inst, retptr, info) and \
                not (inst.opcode == "store" and never_reloaded(fn, inst)):
            if inst.opcode == "store" and retptr is not None \
                    and pointer_base(inst.operands[1]) is retptr:
                raise diag.unsupported(
                    "a returned array holds active values, but the return value is not "
                    "differentiated (ret='const')", inst,
                    "leave ret at its default so the returned array is differentiated "
                    "(reverse mode then takes its adjoint d_ret)")
            raise diag.unsupported("an array holding active values escapes the function "
                                   "(returned, stored or passed to a call)", inst,
                                   "write the result into an output array argument marked "
                                   "'dup' instead of returning it")
    return allocs


def _returned(inst: Instruction, retptr: Value | None, info: ActivityInfo) -> bool:
    """A store of the allocation into the (shadowed) return slot."""
    return retptr is not None and retptr in info.shadowed and inst.opcode == "store" \
        and pointer_base(inst.operands[1]) is retptr


def allocate_shadow(b: Builder, module: Module, size: Value, align: Value) -> tuple[Value, Value]:
    """Emit a zeroed allocation like the primal's; returns (meminfo, data pointer)."""
    alloc = declare(module, NRT_ALLOC[0], PTR, [I64, I32])
    meminfo = b.call(alloc, [size, align], PTR)
    data = data_pointer(b, module, meminfo)
    memset = declare(module, "llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1])
    b.call(memset, [data, const_int(I8, 0), size, FALSE], VOID)
    return meminfo, data


def allocate_raw_shadow(b: Builder, module: Module, size: Value) -> Value:
    """A zeroed raw buffer like one from `NRT_Allocate`."""
    data = b.call(declare(module, NRT_RAW_ALLOC, PTR, [I64]), [size], PTR)
    memset = declare(module, "llvm.memset.p0.i64", VOID, [PTR, I8, I64, I1])
    b.call(memset, [data, const_int(I8, 0), size, FALSE], VOID)
    return data


def free_raw(b: Builder, module: Module, data: Value) -> None:
    b.call(declare(module, NRT_RAW_FREE, VOID, [PTR]), [data], VOID)


def data_pointer(b: Builder, module: Module, meminfo: Value) -> Value:
    return b.call(declare(module, NRT_DATA, PTR, [PTR]), [meminfo], PTR)


def refcount(b: Builder, module: Module, name: str, meminfo: Value) -> None:
    b.call(declare(module, name, VOID, [PTR]), [meminfo], VOID)
