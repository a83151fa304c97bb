"""Facts about memory shared by the analyses and both modes: what an `llvm.mem*` intrinsic
does, which intrinsics touch no memory, and where a pointer comes from. (What other calls do:
their records, `model`.)"""
from __future__ import annotations

from ..ir.values import Argument, Instruction, Value

# llvm.<kind>.* memory intrinsics: "copy" moves values (the shadow is copied too), "set"
# writes constants (the shadow is zeroed).
MEMORY_INTRINSICS = {"memcpy": "copy", "memmove": "copy", "memset": "set",
                     "memcpy_inline": "copy", "memset_inline": "set"}

#: Intrinsics computed from their operands alone (no memory, no side effect), by name prefix.
#: Integer min/max/abs are as cheap as a compare and select.
PURE_INTEGER_INTRINSICS = ("llvm.smax.", "llvm.smin.", "llvm.umax.", "llvm.umin.", "llvm.abs.")
PURE_FLOAT_INTRINSICS = ("llvm.fmuladd.", "llvm.fma.", "llvm.fabs.", "llvm.sqrt.",
                         "llvm.copysign.", "llvm.minnum.", "llvm.maxnum.")


#: The allocator of the tape of a derivative that is itself differentiated
#: (`diff/reverse/tape_captured.py`): a raw allocation (role RAW_ALLOC) the front end binds to
#: its runtime's, distinct so that the analyses know which memory is such a tape.
TAPE_ALLOCATE = "enzyme_py.tape.allocate"


def is_tape_memory(ptr: Value) -> bool:
    """Whether `ptr` addresses only tapes of derivatives being differentiated."""
    bases = pointer_bases(ptr)
    return bool(bases) and all(isinstance(b, Instruction) and b.opcode == "call"
                               and (b.callee_name or "").startswith(TAPE_ALLOCATE)
                               for b in bases)


def memory_intrinsic_kind(name: str) -> str | None:
    """"copy" or "set" for an `llvm.mem*` intrinsic, else None."""
    parts = name.split(".")
    return MEMORY_INTRINSICS.get(parts[1]) if len(parts) > 1 and parts[0] == "llvm" else None


def is_memory_intrinsic(name: str) -> bool:
    return memory_intrinsic_kind(name) is not None


def pointer_base(ptr: Value) -> Value:
    """The single value a pointer is derived from through address arithmetic, phis and
    selects (`ptr` itself when it has several or none)."""
    bases = pointer_bases(ptr)
    return bases[0] if len(bases) == 1 else ptr


def noalias_argument(ptr: Value) -> Argument | None:
    """The `noalias` argument `ptr` is an offset of (through geps only), or None."""
    while isinstance(ptr, Instruction) and ptr.opcode == "getelementptr":
        ptr = ptr.operands[0]
    return ptr if isinstance(ptr, Argument) and "noalias" in ptr.attrs.split() else None


def pointer_sources(p: Value) -> list[Value] | None:
    """The values pointer `p` is computed from: the base of address arithmetic, the incoming
    values of a phi, the choices of a select; None when `p` is a base itself."""
    if not isinstance(p, Instruction):
        return None
    if p.opcode in ("getelementptr", "bitcast", "addrspacecast", "freeze"):
        return [p.operands[0]]
    if p.opcode == "phi":
        return p.operands
    if p.opcode == "select":
        return p.operands[1:]
    return None


def pointer_bases(ptr: Value) -> list[Value]:
    """The values a pointer is derived from through address arithmetic, phis and selects."""
    seen: set[int] = set()
    bases: list[Value] = []
    work = [ptr]
    while work:
        p = work.pop()
        if id(p) in seen:
            continue
        seen.add(id(p))
        sources = pointer_sources(p)
        if sources is not None:
            work.extend(sources)
        elif not any(b is p for b in bases):
            bases.append(p)
    return bases
