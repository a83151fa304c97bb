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


def is_memory_intrinsic(name: str) -> bool:
    parts = name.split(".")
    return len(parts) > 1 and parts[0] == "llvm" and parts[1] in MEMORY_INTRINSICS


def pointer_base(ptr: Value) -> Value:
    """The value a pointer is derived from through address arithmetic."""
    while isinstance(ptr, Instruction) and ptr.opcode in ("getelementptr", "bitcast",
                                                          "addrspacecast", "freeze"):
        ptr = ptr.operands[0]
    return ptr
