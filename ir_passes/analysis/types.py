"""Type analysis: what lives in memory, per memory base.

LLVM's opaque pointers say nothing about their pointees, so the element type of each block of
memory (an array argument's data, a local allocation) is inferred from how the function
accesses it (the types of loads and stores through pointers derived from it, also through a
phi or select of several bases, and memcpy / memset extents), seeded by what the front end knows from the ABI (an array parameter's
dtype). A base accessed as both a float type and an integer type is "mixed": integer
reinterpretation of float data, which the synthesizers refuse when the data is active.
The result is immutable and printable (`print_types`).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..known.memory import pointer_base, pointer_bases
from ..ir.printer import Namer
from ..ir.types import FloatType, IntType, Type
from ..ir.values import Function, Instruction, Value


@dataclass(frozen=True)
class MemoryTypes:
    """Scalar types stored in the memory behind each base pointer."""
    accessed: dict[Value, frozenset[Type]]

    def element(self, ptr: Value) -> Type | None:
        """The one scalar type accessed through `ptr`'s base, if there is exactly one (for a
        phi or select of bases not accessed through it: the one type of all of them)."""
        types = self.accessed.get(pointer_base(ptr), frozenset())
        if not types:
            types = frozenset().union(*(self.accessed.get(b, frozenset())
                                        for b in pointer_bases(ptr)))
        return next(iter(types)) if len(types) == 1 else None

    def float_element(self, ptr: Value) -> FloatType | None:
        t = self.element(ptr)
        return t if isinstance(t, FloatType) else None

    def mixed(self, ptr: Value) -> bool:
        """Accessed both as a float type and as an integer type."""
        types = self.accessed.get(pointer_base(ptr), frozenset())
        return any(isinstance(t, FloatType) for t in types) and \
            any(isinstance(t, IntType) for t in types)


def analyze_memory_types(fn: Function, known: dict[Value, Type] | None = None) -> MemoryTypes:
    """`known`: element types the front end knows (e.g. an array argument's dtype)."""
    accessed: dict[Value, set[Type]] = {base: {t} for base, t in (known or {}).items()}
    for inst in fn.instructions():
        access = memory_access(inst)
        if access is not None:
            ptr, t = access          # a SIMD vector access accesses its element type
            for base in {pointer_base(ptr), *pointer_bases(ptr)}:
                accessed.setdefault(base, set()).add(t.scalar)
    return MemoryTypes({b: frozenset(ts) for b, ts in accessed.items()})


def memory_access(inst: Instruction) -> tuple[Value, Type] | None:
    """(address, type) of the value a load or store moves."""
    if inst.opcode == "load":
        return inst.operands[0], inst.type
    if inst.opcode == "store":
        return inst.operands[1], inst.operands[0].type
    return None


def print_types(fn: Function, info: MemoryTypes) -> str:
    """One line per memory base: its name and the scalar types accessed through it."""
    namer = Namer(fn)
    lines = [f"; memory types of @{fn.name}"]
    for base, types in info.accessed.items():
        kinds = ", ".join(sorted(str(t) for t in types))
        note = "  (mixed float/int: reinterpreted)" if info.mixed(base) else ""
        lines.append(f"{namer.ref(base):<24} {kinds}{note}")
    return "\n".join(lines)


__all__ = ["MemoryTypes", "analyze_memory_types", "memory_access", "print_types"]
