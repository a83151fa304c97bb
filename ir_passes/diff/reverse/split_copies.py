"""Whole copies of argument arrays in a split derivative's state (`split_inputs.py` decides
which arrays: never written by the function, not declared unchanged).

The forward half copies the bytes such an array spans into its state (after the fixed part,
so the state's size is known only then); the reverse half reads the copy in place of the
argument: its data pointer stands for the copy, moved so that the array's own shape and
strides (the same as `fwd`'s: the front end checks them) address the copied bytes. Everything
the reverse reads from the array, a reloaded element, a matrix product's operand, a callee's
argument, so sees the values `fwd` saw, for one memcpy and the array's bytes (taping each
load would keep an element once per read: GMM's data once per component).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...ir.builder import Builder, declare
from ...ir.types import I1, I8, I64, PTR, VOID
from ...ir.values import Argument, Block, Value, const_int
from ...known.array_layout import DATA, ITEMSIZE, NITEMS, shape_args, stride_args

_ALIGN = 16                   # of each copy in the state (as the state's own)


@dataclass(frozen=True)
class ArrayCopy:
    """One copied array: its exploded arguments and where its state fields are (the byte
    offset of the copy, and `lo`, the offset of its first byte from the data pointer)."""
    args: tuple[Argument, ...]
    offset_at: int
    lo_at: int

    @property
    def data(self) -> Argument:
        return self.args[DATA]


def read_copies(copied: list[tuple[Argument, ...]], rev_blocks: list[Block]
                ) -> list[tuple[Argument, ...]]:
    """Of the `copied` arrays (exploded arguments), those the reverse blocks read."""
    used = {id(op) for b in rev_blocks for i in b.instructions for op in i.operands}
    return [args for args in copied if id(args[DATA]) in used]


def emit_copies(b: Builder, module, copies: list[ArrayCopy], mapped, fixed: int
                ) -> tuple[Value, list[tuple[ArrayCopy, Value, Value, Value]]]:
    """Before the state is allocated: the state's size (`fixed` bytes, then each copy) and per
    copy (its offset, lo, byte count), from the forward half's arguments (`mapped`)."""
    size: Value = const_int(I64, fixed)
    out = []
    for c in copies:
        lo, count = _extent(b, [mapped(a) for a in c.args])
        at = _aligned(b, size)
        out.append((c, at, lo, count))
        size = b.add(at, count)
    return size, out


def fill_copies(b: Builder, module, data: Value, placed, mapped) -> None:
    """Store each copy's offset and lo in the state `data`, and copy its bytes there."""
    memcpy = declare(module, "llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
    for c, at, lo, count in placed:
        b.store(at, b.gep(I8, data, [const_int(I64, c.offset_at)]))
        b.store(lo, b.gep(I8, data, [const_int(I64, c.lo_at)]))
        src = b.gep(I8, mapped(c.data), [lo])
        b.call(memcpy, [b.gep(I8, data, [at]), src, count, const_int(I1, 0)], VOID)


def restore_copies(b: Builder, data: Value, copies: list[ArrayCopy]) -> dict[Value, Value]:
    """In the reverse half: each copied array's data pointer, standing for the copy."""
    out: dict[Value, Value] = {}
    for c in copies:
        at = b.load(I64, b.gep(I8, data, [const_int(I64, c.offset_at)]))
        lo = b.load(I64, b.gep(I8, data, [const_int(I64, c.lo_at)]))
        out[c.data] = b.gep(I8, data, [b.sub(at, lo)], (c.data.name or "") + ".copy")
    return out


def _extent(b: Builder, args: list[Value]) -> tuple[Value, Value]:
    """`(lo, bytes)`: the bytes an array spans, `[data + lo, data + lo + bytes)` (none when it
    has no element; strides may be negative)."""
    zero = const_int(I64, 0)
    lo, hi = zero, args[ITEMSIZE]
    for n, stride in zip(shape_args(args), stride_args(args)):
        span = b.mul(b.sub(n, const_int(I64, 1)), stride)
        negative = b.icmp("slt", span, zero)
        lo = b.add(lo, b.select(negative, span, zero))
        hi = b.add(hi, b.select(negative, zero, span))
    empty = b.icmp("eq", args[NITEMS], zero)
    return b.select(empty, zero, lo), b.select(empty, zero, b.sub(hi, lo))


def _aligned(b: Builder, size: Value) -> Value:
    mask = const_int(I64, _ALIGN - 1)
    return b.sub(b.add(size, mask), b.binop("and", b.add(size, mask), mask))


__all__ = ["ArrayCopy", "emit_copies", "fill_copies", "read_copies", "restore_copies"]
