"""The type model of memory (Enzyme's TypeAnalysis, for memory): what each byte holds.

A memory object is a pointer base (`known.memory.pointer_bases`): an argument, an alloca or
allocation, or a pointer loaded from memory (the object it addresses: a struct's array, a
row of a matrix of rows). Each load and store through a pointer derived from a base says
what its bytes hold: FLOAT, INT or PTR (an integer made from a pointer by `ptrtoint`, or
only made into one by `inttoptr`, is a PTR; an aggregate or vector access says it per
element). Where the access lies is a `Span`: a constant byte offset from the base (GEPs with
constant indices), repeated every `stride` bytes for run-time indices (the elements of an
array), anywhere for an offset through a phi or select. `llvm.memcpy` / `memmove` carry the
kinds of the copied bytes to the other side, at the same offset from the copy's start (they
are the same bytes; modulo the strides of a copy at a run-time index); memory handed to calls
that are not known to leave it alone holds UNKNOWN bytes. The front end seeds the element
types it knows (an array parameter's dtype, at every element).

What the model decides (`MemoryLayout.kinds`): whether an integer loaded from shadowed
memory is an integer (no float ever lives there: a length, an index), whether a pointer
loaded from it is a pointer (no float lives there either), and whether a memcpy moves
pointers (their shadows move with them). Printable with `print_layout`.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable

from ..ir.printer import Namer
from ..ir.types import (ArrayType, FloatType, IntType, NamedStructType, StructType, Type,
                        VectorType, size_of)
from ..ir.values import ConstInt, Function, Instruction, Value
from ..known.memory import memory_intrinsic_kind, pointer_bases
from ..known.model import call_record
from .pointer_stores import field_offset, is_pointer_like
from .types import memory_access

FLOAT, INT, PTR, UNKNOWN = "float", "int", "pointer", "unknown"
_CASTS = ("bitcast", "addrspacecast", "freeze")


@dataclass(frozen=True)
class Span:
    """Bytes [start, start + size) of a base, also shifted by every multiple of `stride`
    (0: once); start None: anywhere in the object."""
    start: int | None
    stride: int
    size: int

    def overlaps(self, other: Span) -> bool:
        if self.start is None or other.start is None or self.size <= 0 or other.size <= 0:
            return True
        g = math.gcd(self.stride, other.stride)
        d = other.start - self.start        # other's bytes relative to self's, modulo g
        if g == 0:
            return -other.size < d < self.size
        r = d % g
        return r < self.size or g - r < other.size

    def shifted(self, by: int, size: int) -> Span:
        """`size` bytes `by` bytes further, at every repetition."""
        return Span(None if self.start is None else self.start + by, self.stride, size)


Access = tuple[Span, str]


@dataclass(frozen=True)
class MemoryLayout:
    """The kinds of value each memory base holds where."""
    held: dict[Value, tuple[Access, ...]]

    def kinds(self, ptr: Value, size: int) -> frozenset[str]:
        """What the `size` bytes at `ptr` may hold, in every object `ptr` may address."""
        out: set[str] = set()
        for base, span in spans(ptr, size):
            out.update(k for s, k in self.held.get(base, ()) if s.overlaps(span))
        return frozenset(out)

    def holds_only(self, ptr: Value, size: int, allowed: frozenset[str]) -> bool:
        """Whether the bytes at `ptr` are known to hold nothing but `allowed` kinds."""
        return self.kinds(ptr, size) <= allowed


def analyze_layout(fn: Function, known: dict[Value, Type] | None = None,
                   named: dict[str, Type] | None = None) -> MemoryLayout:
    """`known`: element types the front end knows (an array argument's dtype); `named`: the
    module's named struct types (`%struct.vec`), by name."""
    resolve = functools.partial(_resolved, named or {})
    held: dict[Value, set[Access]] = {}
    for base, t in (known or {}).items():      # every element of an array of `t`
        held[base] = {(Span(offset, stride, size), kind)
                      for offset, size, kind, stride in _elements(resolve(t))}
    copies: list[Instruction] = []
    int_pointers = _int_pointers(fn)
    for inst in fn.instructions():
        access = memory_access(inst)
        if access is not None:
            ptr, t = access
            scalars = _scalars(resolve(t), PTR if _pointer_bits(inst, int_pointers) else None)
            for base, span in spans(ptr, 0, resolve):
                for offset, size, kind in scalars:
                    held.setdefault(base, set()).add((span.shifted(offset, size), kind))
        elif inst.opcode == "call":
            if memory_intrinsic_kind(inst.callee_name or "") == "copy":
                copies.append(inst)
            elif memory_intrinsic_kind(inst.callee_name or "") is None:
                _touch_unknown(inst, held)
    _carry_copies(copies, held, resolve)
    return MemoryLayout({b: tuple(sorted(a, key=str)) for b, a in held.items()})


def spans(ptr: Value, size: int, resolve: Callable[[Type], Type] | None = None
          ) -> list[tuple[Value, Span]]:
    """The objects `ptr` may address and where in them (`size` bytes); `resolve` gives the
    body of a named struct type."""
    start: int | None = 0
    stride = 0
    p = ptr
    while isinstance(p, Instruction) and p.opcode in ("getelementptr", *_CASTS):
        if p.opcode == "getelementptr":
            step, every = _gep_terms(p, resolve or (lambda t: t))
            start = None if start is None or step is None else start + step
            stride = math.gcd(stride, every)
        p = p.operands[0]
    bases = pointer_bases(p)
    if len(bases) != 1 or bases[0] is not p:        # through a phi or select
        return [(b, Span(None, 0, size)) for b in bases]
    return [(p, Span(start, stride, size))]


def _gep_terms(gep: Instruction, resolve: Callable[[Type], Type]) -> tuple[int | None, int]:
    """(constant byte offset, gcd of the strides of its run-time indices); (None, 0) through
    a named struct whose body is not known."""
    try:
        return _sized_gep_terms(gep, resolve(gep.source_type))  # type: ignore[arg-type]
    except TypeError:
        return None, 0


def _sized_gep_terms(gep: Instruction, t: Type) -> tuple[int | None, int]:
    offset, stride = 0, 0
    for n, index in enumerate(gep.operands[1:]):
        if n > 0:
            if isinstance(t, StructType):
                if not isinstance(index, ConstInt):
                    return None, 0
                offset += field_offset(t, index.value)
                t = t.elements[index.value]
                continue
            if not isinstance(t, (ArrayType, VectorType)):
                return None, 0
            t = t.element
        if isinstance(index, ConstInt):
            offset += index.value * size_of(t)
        else:
            stride = math.gcd(stride, size_of(t))
    return offset, stride


def _resolved(named: dict[str, Type], t: Type) -> Type:
    """`t` with the bodies of named struct types in place of their names (left as they are
    when unknown)."""
    if isinstance(t, NamedStructType):
        body = named.get(t.name)
        return t if body is None else _resolved(named, body)
    if isinstance(t, StructType):
        return StructType(tuple(_resolved(named, e) for e in t.elements), t.packed)
    if isinstance(t, (ArrayType, VectorType)):
        return type(t)(t.count, _resolved(named, t.element))
    return t


def kind_of(t: Type) -> str:
    if isinstance(t, FloatType):
        return FLOAT
    if isinstance(t, IntType):
        return INT
    return PTR if t.is_pointer else UNKNOWN


def _int_pointers(fn: Function) -> set[Value]:
    """Integers used only to make pointers (`inttoptr`): a pointer's bits."""
    made = {u.operands[0] for u in fn.instructions() if u.opcode == "inttoptr"}
    return made - {op for u in fn.instructions() if u.opcode != "inttoptr" for op in u.operands}


def _pointer_bits(inst: Instruction, int_pointers: set[Value]) -> bool:
    """An integer access of a pointer's bits: a store of `ptrtoint`, a load only made into a
    pointer."""
    if inst.opcode == "store":
        v = inst.operands[0]
        return isinstance(v, Instruction) and v.opcode == "ptrtoint"
    return inst in int_pointers


def _elements(t: Type) -> list[tuple[int, int, str, int]]:
    """(offset, size, kind, stride) of each scalar of the elements of an array of `t`."""
    try:
        stride = size_of(t)
    except TypeError:                       # a named struct whose body is not known
        return [(0, 0, UNKNOWN, 0)]
    return [(offset, size, kind, stride) for offset, size, kind in _scalars(t, None)]


def _scalars(t: Type, kind: str | None, at: int = 0) -> list[tuple[int, int, str]]:
    """(offset, size, kind) of each scalar of a value of type `t` (size 0: everywhere)."""
    try:
        return _sized_scalars(t, kind, at)
    except TypeError:                       # a named struct inside: anything, anywhere
        return [(at, 0, UNKNOWN)]


def _sized_scalars(t: Type, kind: str | None, at: int = 0) -> list[tuple[int, int, str]]:
    if isinstance(t, StructType):
        return [s for i, e in enumerate(t.elements)
                for s in _sized_scalars(e, kind, at + field_offset(t, i))]
    if isinstance(t, (ArrayType, VectorType)):
        step = size_of(t.element)
        return [s for i in range(t.count)
                for s in _sized_scalars(t.element, kind, at + i * step)]
    return [(at, size_of(t), kind or kind_of(t))]


def _touch_unknown(call: Instruction, held: dict[Value, set[Access]]) -> None:
    """Memory handed to a call that may write it: anything may live there afterwards."""
    record = call_record(call)
    if record is not None and (record.inert or record.pointer_neutral and record.flow is None):
        return
    for op in call.operands:
        if is_pointer_like(op.type):
            for base, _ in spans(op, 0):
                held.setdefault(base, set()).add((Span(None, 0, 0), UNKNOWN))


def _carry_copies(copies: list[Instruction], held: dict[Value, set[Access]],
                  resolve: Callable[[Type], Type]) -> None:
    """The kinds of the bytes each copy moves, on both of its sides, to a fixpoint."""
    for _ in range(8):
        changed = False
        for copy in copies:
            dst, src, length = copy.operands[:3]
            n = length.value if isinstance(length, ConstInt) else None
            for (db, ds), (sb, ss) in ((d, s) for d in spans(dst, n or 0, resolve)
                                       for s in spans(src, n or 0, resolve)):
                changed |= _carry(held, sb, ss, db, ds)
                changed |= _carry(held, db, ds, sb, ss)
        if not changed:
            return


def _carry(held: dict[Value, set[Access]], fb: Value, fs: Span, tb: Value, ts: Span) -> bool:
    """Copy the kinds in span `fs` of `fb` to the same place of span `ts` of `tb`."""
    new = {(_relocated(span, fs, ts), kind) for span, kind in held.get(fb, ())
           if span.overlaps(fs)}
    target = held.setdefault(tb, set())
    grown = new - target
    target |= grown
    return bool(grown)


def _relocated(span: Span, fs: Span, ts: Span) -> Span:
    """Where the bytes of `span`, copied from span `fs`, land in span `ts`: at the same
    offset from the copy's start, modulo the strides involved (a superset of the bytes)."""
    if span.start is None or fs.start is None or ts.start is None:
        return Span(None, 0, span.size)
    stride = math.gcd(span.stride, fs.stride)
    offset = span.start - fs.start
    return Span(ts.start + (offset % stride if stride else offset),
                math.gcd(stride, ts.stride), span.size)


def print_layout(fn: Function, layout: MemoryLayout) -> str:
    """One line per memory object: its name and what lives where."""
    namer = Namer(fn)
    lines = [f"; memory layout of @{fn.name}"]
    for base, accesses in layout.held.items():
        parts = [f"{'?' if s.start is None else s.start}"
                 f"{f'+{s.stride}k' if s.stride else ''}:{k}" for s, k in accesses]
        lines.append(f"{namer.ref(base):<24} {', '.join(parts)}")
    return "\n".join(lines)


__all__ = ["FLOAT", "INT", "PTR", "UNKNOWN", "MemoryLayout", "Span", "analyze_layout",
           "kind_of", "print_layout", "spans"]
