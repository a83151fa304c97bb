"""Which owned allocations the primal makes need shadows (arrays from Numba's runtime, NRT).

When active values are stored into an array allocated inside the function (a call of role
HANDLE_ALLOC, e.g. `NRT_MemInfo_alloc_aligned`, whose data a HANDLE_DATA call such as
`NRT_MemInfo_data_fast` returns), the derivative allocates a zeroed shadow of the same size
next to it (`shadows.py`). Such an array may be returned (stored to the return slot, whose
shadow slot then holds the shadow array), but not stored elsewhere or passed to calls.
Forward mode mirrors the primal's reference counting on the shadow; reverse mode keeps the
shadow alive until the reverse of the allocation, where it is released.
"""
from __future__ import annotations

from ..analysis.activity import ActivityInfo
from ..analysis.array_lists import holds_pointers
from ..analysis.pointer_stores import never_reloaded
from ..diagnostics import Diagnostics
from ..ir.types import holds_pointer
from ..ir.values import Constant, Function, GlobalRef, Instruction, Value
from ..known.calls import demangle_numba
from ..known.memory import is_tape_memory, pointer_base
from ..known.model import Role, call_record, role_of
from .held_pointers import is_list_item_store

_NOT_ESCAPING = (Role.HANDLE_DATA, Role.INCREF, Role.DECREF, Role.VARSIZE_REALLOC)


def shadowed_allocations(fn: Function, info: ActivityInfo, diag: Diagnostics,
                         retptr: Value | None = None) -> set[Instruction]:
    """The allocation calls whose memory needs a shadow (checked not to escape other than
    through the return slot `retptr`, when it is shadowed)."""
    allocs: set[Instruction] = set()
    for inst in fn.instructions():
        if role_of(inst) is Role.HANDLE_DATA and inst in info.shadowed:
            meminfo = inst.operands[0]
            if role_of(meminfo) is Role.HANDLE_VARSIZE:
                _check_growable(fn, meminfo, diag)  # type: ignore[arg-type]
            elif not (isinstance(meminfo, Instruction) and role_of(meminfo) is Role.HANDLE_ALLOC):
                origin = meminfo.callee_name if isinstance(meminfo, Instruction) else None
                raise diag.unsupported(
                    f"active data in memory allocated by '{origin or 'unknown'}' (the storage "
                    "of a Python list or other container?)", inst,
                    "keep active values in NumPy arrays (np.empty), not Python containers")
            allocs.add(meminfo)
    _refuse_escapes(fn, allocs, diag, retptr, info)
    return allocs


def _check_growable(fn: Function, owner: Instruction, diag: Diagnostics) -> None:
    """Growable memory (a list's storage, role HANDLE_VARSIZE) gets a shadow whose release
    calls no destructor, unless the primal stores pointers into it (a list of arrays: its
    shadow mirrors it and is released by the primal's destructor, `analysis/array_lists.py`):
    refused when the primal's destructor releases anything else."""
    if holds_pointers(fn, owner):
        return
    dtor = pointer_base(owner.operands[1])
    body = diag.module.functions.get(dtor.name or "") if isinstance(dtor, GlobalRef) else None
    if body is not None and not body.is_declaration \
            and not any(i.opcode == "call" for i in body.instructions()):
        return
    raise diag.unsupported(
        f"a list of arrays (or of other owned values) holding active values "
        f"('{owner.callee_name}' with a destructor releasing its items)", owner,
        "not supported yet: keep the arrays in a 2-D NumPy array (np.empty((n, m))), or "
        "write the loop over their elements")


def growable_allocations(fn: Function, diag: Diagnostics, allocs: set[Instruction],
                         split: bool) -> set[Instruction]:
    """Reverse mode: the allocations of growable memory among `allocs` (their shadows are
    versioned, `reverse/growable.py`). Refused in split mode, and when a resize reaches one
    only through a phi or select of owners."""
    growable = {a for a in allocs if role_of(a) is Role.HANDLE_VARSIZE}
    if not growable:
        return growable
    first = next(iter(growable))
    if split:
        raise diag.unsupported(
            f"a Python list holding active values ('{first.callee_name}', e.g. built by "
            "np.extract, np.unique or list.append) in split mode", first,
            "not supported yet in split mode: use mode='reverse'")
    merged = set(meminfo_merges(fn, growable))
    for inst in fn.instructions():
        if role_of(inst) is Role.VARSIZE_REALLOC and inst.operands[0] in merged:
            raise diag.unsupported(
                "a resize of a Python list holding active values, chosen between at run "
                "time", inst, "not supported yet in reverse mode: build one list")
    return growable


def returns_memory(fn: Function, retptr: Value | None) -> bool:
    """Whether `fn` stores a pointer (an array, say) into its return slot `retptr`: memory it
    allocates may then outlive the call. A constant (None's null) is no memory."""
    return retptr is not None and any(
        inst.opcode == "store" and pointer_base(inst.operands[1]) is retptr
        and holds_pointer(inst.operands[0].type) and not isinstance(inst.operands[0], Constant)
        for inst in fn.instructions())


def meminfo_merges(fn: Function, allocs: set[Instruction] | set[Value]) -> list[Instruction]:
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
    counted, handed to a known call that keeps no pointer, merged by phis/selects whose
    results are used the same way, returned through a shadowed return slot, parked in a stack
    slot nothing reads back, put in a list of arrays (whose shadow holds its shadow:
    `held_pointers.py`), or kept on the tape of a derivative being differentiated with its
    shadow (`taped_pointers.py`). Anything else (stored, passed to a call) lets the array
    outlive what the pass tracks."""
    merges = meminfo_merges(fn, allocs)
    meminfos = set(allocs) | set(merges)
    for inst in fn.instructions():
        if inst in merges or inst.opcode == "icmp" or role_of(inst) in _NOT_ESCAPING \
                or _reads_only(inst):
            continue
        if inst.opcode == "store" and (_returned(inst, retptr, info) or never_reloaded(fn, inst)
                                       or is_tape_memory(inst.operands[1])):
            continue
        escaping = next((op for op in inst.operands if op in meminfos), None)
        if escaping is not None and not _listed_array(fn, inst, _origin(escaping, allocs)):
            origin = _origin(escaping, allocs)
            raise diag.unsupported(*_escape_message(fn, inst, retptr, origin), located=origin)


def _reads_only(inst: Instruction) -> bool:
    """A call the pass differentiates by its record, which keeps none of its pointers (e.g.
    np.linalg.det's, handed the whole array: what its reverse reads is held for it)."""
    record = call_record(inst)
    return record is not None and record.pointer_neutral and record.reverse is not None


def _listed_array(fn: Function, inst: Instruction, origin: Instruction | None) -> bool:
    """An array (not a list: the data of a list read back from a list is not followed) put
    in a list of arrays."""
    return role_of(origin) is Role.HANDLE_ALLOC and is_list_item_store(fn, inst)


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


def _escape_message(fn: Function, inst: Instruction, retptr: Value | None,
                    origin: Instruction | None) -> tuple[str, Instruction, str]:
    what = "an array holding active values escapes the function: "
    hint = ("not supported yet: compute the result with explicit loops into an output array "
            "argument marked 'dup', or into a temporary from np.empty")
    if inst.opcode == "store" and role_of(origin) is Role.HANDLE_VARSIZE:
        return ("a list holding active values is stored into another list (a list of lists, "
                "as np.array([[a, b], [c, d]]) builds from active scalars)", inst,
                "not supported yet: fill an array from np.empty instead (M = np.empty((2, 2)); "
                "M[0, 0] = a; M[0, 1] = b; ...)")
    if inst.opcode == "store" and retptr is not None and pointer_base(inst.operands[1]) is retptr:
        return ("a returned array holds active values, but the return value is not "
                "differentiated (ret='const')", inst,
                "leave ret at its default so the returned array is differentiated "
                "(reverse mode then takes its adjoint d_ret)")
    python_name = demangle_numba(inst.callee_name or "") if inst.opcode == "call" else None
    if python_name is not None:
        return (what + f"it is passed to {python_name} ('{inst.callee_name}'), which is not "
                "inlined", inst, "not supported yet: pass the helper an array argument of the function "
                "(marked 'dup') instead of a temporary, or drop its inline=\"never\" so that "
                "it is inlined")
    if inst.opcode == "call":
        return what + f"it is passed to '{inst.callee_name}'", inst, hint
    if inst.opcode == "store" and pointer_base(inst.operands[1]) in fn.args:
        return (what + "it is returned (or stored into an argument)", inst,
                "write the result into an output array argument marked 'dup' instead of "
                "returning it")
    if inst.opcode == "store":
        return (what + "it is stored into memory (a tuple, a list, or an array-building helper "
                "such as np.select or np.linalg.*)", inst, hint)
    return what + f"it flows into '{inst.opcode}'", inst, hint
