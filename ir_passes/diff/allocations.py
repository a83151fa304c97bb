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
from ..known.memory import NRT_ALLOC, NRT_DATA, NRT_RAW_ALLOC, NRT_RAW_FREE, pointer_base

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
    _refuse_escapes(fn, allocs, diag, retptr, info)
    return allocs


def meminfo_merges(fn: Function, allocs: set[Instruction]) -> list[Instruction]:
    """The phis and selects through which the meminfo of a shadowed allocation flows (e.g. one
    decref at the join of two branches, of either array or of another meminfo)."""
    merges: list[Instruction] = []
    flowing: set[Value] = set(allocs)
    changed = True
    while changed:
        changed = False
        for inst in fn.instructions():
            if inst not in flowing and _merges(inst, flowing):
                flowing.add(inst)
                merges.append(inst)
                changed = True
    return merges


def _merges(inst: Instruction, meminfos: set[Value]) -> bool:
    values = inst.operands[1:] if inst.opcode == "select" else inst.operands
    return inst.opcode in ("phi", "select") and any(v in meminfos for v in values)


def _refuse_escapes(fn: Function, allocs: set[Instruction], diag: Diagnostics,
                    retptr: Value | None, info: ActivityInfo) -> None:
    """The meminfo of a shadowed allocation may only be compared, asked for its data, reference
    counted, merged by phis/selects whose results are used the same way, returned through a
    shadowed return slot, or parked in a stack slot nothing reads back. Anything else (stored,
    passed to a call) lets the array outlive what the pass tracks."""
    merges = meminfo_merges(fn, allocs)
    meminfos = set(allocs) | set(merges)
    for inst in fn.instructions():
        if inst in merges or inst.opcode == "icmp" or inst.callee_name in (NRT_DATA, *_REFCOUNT):
            continue
        if inst.opcode == "store" and (_returned(inst, retptr, info) or never_reloaded(fn, inst)):
            continue
        escaping = next((op for op in inst.operands if op in meminfos), None)
        if escaping is not None:
            raise diag.unsupported(*_escape_message(fn, inst, retptr),
                                   located=_origin(escaping, allocs))


def _returned(inst: Instruction, retptr: Value | None, info: ActivityInfo) -> bool:
    """A store of the allocation into the (shadowed) return slot."""
    return retptr is not None and retptr in info.shadowed and inst.opcode == "store" \
        and pointer_base(inst.operands[1]) is retptr


def _origin(meminfo: Value, allocs: set[Instruction]) -> Instruction | None:
    """The allocation a (possibly merged) meminfo comes from, for the error's location."""
    seen: set[int] = set()
    work = [meminfo]
    while work:
        v = work.pop()
        if v in allocs:
            return v  # type: ignore[return-value]
        if isinstance(v, Instruction) and id(v) not in seen:
            seen.add(id(v))
            work.extend(v.operands)
    return None


def _escape_message(fn: Function, inst: Instruction,
                    retptr: Value | None) -> tuple[str, Instruction, str]:
    what = "an array holding active values escapes the function: "
    hint = ("not supported yet: compute the result with explicit loops into an output array "
            "argument marked 'dup', or into a temporary from np.empty")
    if inst.opcode == "store" and retptr is not None and pointer_base(inst.operands[1]) is retptr:
        return ("a returned array holds active values, but the return value is not "
                "differentiated (ret='const')", inst,
                "leave ret at its default so the returned array is differentiated "
                "(reverse mode then takes its adjoint d_ret)")
    if inst.opcode == "call":
        return what + f"it is passed to '{inst.callee_name}'", inst, hint
    if inst.opcode == "store" and pointer_base(inst.operands[1]) in fn.args:
        return (what + "it is returned (or stored into an argument)", inst,
                "write the result into an output array argument marked 'dup' instead of "
                "returning it")
    if inst.opcode == "store":
        return (what + "it is stored into memory (a tuple, a list, or an array-building helper "
                "such as np.median or np.linalg.*)", inst, hint)
    return what + f"it flows into '{inst.opcode}'", inst, hint


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
