"""Facts about memory operations shared by both modes: which calls only touch memory in
ways with a known derivative, which are inert, and where a pointer comes from."""
from __future__ import annotations

from ..ir.values import Instruction, Value

# llvm.<kind>.* memory intrinsics: "copy" moves values (the shadow is copied too), "set"
# writes constants (the shadow is zeroed).
MEMORY_INTRINSICS = {"memcpy": "copy", "memmove": "copy", "memset": "set",
                     "memcpy_inline": "copy", "memset_inline": "set"}

# Calls with no effect on derivatives whatever their arguments.
INERT_CALLS = ("llvm.lifetime.", "llvm.assume", "llvm.experimental.noalias.scope.decl",
               "llvm.dbg.", "llvm.invariant.", "llvm.prefetch", "NRT_incref", "NRT_decref")


# Numba's runtime: allocation of array memory (meminfo) and the data pointer of a meminfo.
NRT_ALLOC = ("NRT_MemInfo_alloc_aligned", "NRT_MemInfo_alloc_safe_aligned")
NRT_DATA = "NRT_MemInfo_data_fast"
# Raw buffers (no meminfo), e.g. the temporary copy of an overlapping slice assignment.
NRT_RAW_ALLOC, NRT_RAW_FREE = "NRT_Allocate", "NRT_Free"
# Constructors of meminfos: they return fresh memory.
NRT_CONSTRUCTORS = ("NRT_MemInfo_alloc", "NRT_MemInfo_new")

# Calls known not to copy, keep or write pointers through their pointer arguments (Numba's
# reshape helper reads shape and strides and writes new strides: enzyme_py declares it so).
POINTER_NEUTRAL_CALLS = INERT_CALLS + (NRT_DATA, "numba_attempt_nocopy_reshape")


def memory_intrinsic_kind(name: str) -> str | None:
    """"copy" or "set" for an `llvm.mem*` intrinsic, else None."""
    parts = name.split(".")
    return MEMORY_INTRINSICS.get(parts[1]) if len(parts) > 1 and parts[0] == "llvm" else None


def is_memory_intrinsic(name: str) -> bool:
    return memory_intrinsic_kind(name) is not None


def pointer_base(ptr: Value) -> Value:
    """The single value a pointer is derived from through address arithmetic, phis and
    selects (`ptr` itself when it has several or none)."""
    seen: set[int] = set()
    bases: list[Value] = []
    work = [ptr]
    while work:
        p = work.pop()
        if id(p) in seen:
            continue
        seen.add(id(p))
        if isinstance(p, Instruction) and p.opcode in ("getelementptr", "bitcast",
                                                       "addrspacecast", "freeze"):
            work.append(p.operands[0])
        elif isinstance(p, Instruction) and p.opcode == "phi":
            work.extend(p.operands)
        elif isinstance(p, Instruction) and p.opcode == "select":
            work.extend(p.operands[1:])
        elif not any(b is p for b in bases):
            bases.append(p)
    return bases[0] if len(bases) == 1 else ptr
