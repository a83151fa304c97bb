"""A typed instruction builder (after llvmlite's IRBuilder).

Every method checks its operand types before emitting, so a pass bug shows up as a Python
assertion at the faulty call rather than as an LLVM verifier failure later.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

from .types import (I1, I64, PTR, VOID, ArrayType, FunctionType, IntType, StructType, Type,
                    VectorType)
from .values import Block, Constant, Function, GlobalRef, Instruction, Module, Value

_FLOAT_BINOPS = {"fadd", "fsub", "fmul", "fdiv", "frem"}
_INT_BINOPS = {"add", "sub", "mul", "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr", "and",
               "or", "xor"}


class Builder:
    """Appends instructions at the end of a block, or inserts them before a given index."""

    def __init__(self, block: Block | None = None, fast_math: tuple[str, ...] = ()) -> None:
        self.block = block
        self.index: int | None = None
        self.fast_math = fast_math     # flags put on every float op this builder emits

    # ---- positioning
    def position_at_end(self, block: Block) -> None:
        self.block, self.index = block, None

    def position_before(self, inst: Instruction) -> None:
        assert inst.block is not None
        self.block, self.index = inst.block, inst.block.instructions.index(inst)

    def position_after_phis(self, block: Block) -> None:
        self.block, self.index = block, sum(1 for _ in block.phis())

    @contextmanager
    def at_end(self, block: Block) -> Iterator[Builder]:
        saved = (self.block, self.index)
        self.position_at_end(block)
        try:
            yield self
        finally:
            self.block, self.index = saved

    def insert(self, inst: Instruction) -> Instruction:
        assert self.block is not None, "builder is not positioned"
        if self.index is None:
            self.block.append(inst)
        else:
            self.block.insert(self.index, inst)
            self.index += 1
        return inst

    # ---- arithmetic
    def binop(self, op: str, a: Value, b: Value, name: str | None = None,
              flags: tuple[str, ...] = ()) -> Instruction:
        assert a.type == b.type, f"{op}: {a.type} vs {b.type}"
        if op in _FLOAT_BINOPS:
            assert a.type.scalar.is_float, f"{op} on {a.type}"
            flags = flags or self.fast_math
        else:
            assert op in _INT_BINOPS and a.type.scalar.is_int, f"{op} on {a.type}"
        return self.insert(Instruction(op, a.type, [a, b], name, flags=flags))

    def fadd(self, a: Value, b: Value, name: str | None = None) -> Instruction:
        return self.binop("fadd", a, b, name)

    def fsub(self, a: Value, b: Value, name: str | None = None) -> Instruction:
        return self.binop("fsub", a, b, name)

    def fmul(self, a: Value, b: Value, name: str | None = None) -> Instruction:
        return self.binop("fmul", a, b, name)

    def fdiv(self, a: Value, b: Value, name: str | None = None) -> Instruction:
        return self.binop("fdiv", a, b, name)

    def fneg(self, a: Value, name: str | None = None) -> Instruction:
        assert a.type.scalar.is_float
        return self.insert(Instruction("fneg", a.type, [a], name, flags=self.fast_math))

    def add(self, a: Value, b: Value, name: str | None = None) -> Instruction:
        return self.binop("add", a, b, name)

    def sub(self, a: Value, b: Value, name: str | None = None) -> Instruction:
        return self.binop("sub", a, b, name)

    def mul(self, a: Value, b: Value, name: str | None = None) -> Instruction:
        return self.binop("mul", a, b, name)

    def fcmp(self, pred: str, a: Value, b: Value, name: str | None = None) -> Instruction:
        assert a.type == b.type and a.type.scalar.is_float
        return self.insert(Instruction("fcmp", _bool_like(a.type), [a, b], name, predicate=pred))

    def icmp(self, pred: str, a: Value, b: Value, name: str | None = None) -> Instruction:
        assert a.type == b.type, f"icmp: {a.type} vs {b.type}"
        return self.insert(Instruction("icmp", _bool_like(a.type), [a, b], name, predicate=pred))

    def select(self, cond: Value, a: Value, b: Value, name: str | None = None) -> Instruction:
        assert cond.type.scalar == I1 and a.type == b.type, f"select {cond.type} {a.type} {b.type}"
        return self.insert(Instruction("select", a.type, [cond, a, b], name))

    def cast(self, op: str, v: Value, to: Type, name: str | None = None) -> Instruction:
        return self.insert(Instruction(op, to, [v], name))

    # ---- memory
    def load(self, ty: Type, ptr: Value, name: str | None = None,
             align: int | None = None) -> Instruction:
        assert ptr.type == PTR, f"load from {ptr.type}"
        return self.insert(Instruction("load", ty, [ptr], name, align=align))

    def store(self, v: Value, ptr: Value, align: int | None = None) -> Instruction:
        assert ptr.type == PTR, f"store to {ptr.type}"
        return self.insert(Instruction("store", VOID, [v, ptr], align=align))

    def gep(self, source: Type, ptr: Value, indices: Sequence[Value], name: str | None = None,
            flags: tuple[str, ...] = ()) -> Instruction:
        assert ptr.type.scalar == PTR, f"gep on {ptr.type}"
        assert all(i.type.is_int for i in indices)
        return self.insert(Instruction("getelementptr", ptr.type, [ptr, *indices], name,
                                       source_type=source, flags=flags))

    def alloca(self, ty: Type, name: str | None = None, count: Value | None = None,
               align: int | None = None) -> Instruction:
        inst = Instruction("alloca", PTR, [count] if count else [], name, source_type=ty)
        inst.align = align
        return self.insert(inst)

    # ---- aggregates
    def extractvalue(self, agg: Value, indices: tuple[int, ...],
                     name: str | None = None) -> Instruction:
        ty = agg.type
        for i in indices:
            ty = ty.elements[i] if isinstance(ty, StructType) else ty.element  # type: ignore[attr-defined]
        return self.insert(Instruction("extractvalue", ty, [agg], name, indices=indices))

    def insertvalue(self, agg: Value, v: Value, indices: tuple[int, ...],
                    name: str | None = None) -> Instruction:
        assert isinstance(agg.type, (StructType, ArrayType))
        return self.insert(Instruction("insertvalue", agg.type, [agg, v], name, indices=indices))

    # ---- vectors
    def extractelement(self, vec: Value, index: int, name: str | None = None) -> Instruction:
        assert isinstance(vec.type, VectorType)
        return self.insert(Instruction("extractelement", vec.type.element,
                                       [vec, Constant(I64, str(index))], name))

    def insertelement(self, vec: Value, v: Value, index: int,
                      name: str | None = None) -> Instruction:
        assert isinstance(vec.type, VectorType) and vec.type.element == v.type
        return self.insert(Instruction("insertelement", vec.type,
                                       [vec, v, Constant(I64, str(index))], name))

    def splat(self, v: Value, count: int) -> Value:
        """A vector of `count` copies of scalar `v` (a constant vector when `v` is constant)."""
        vty = VectorType(count, v.type)
        if isinstance(v, Constant):
            return Constant(vty, "<" + ", ".join([f"{v.type} {v.text}"] * count) + ">")
        one = self.insertelement(Constant(vty, "poison"), v, 0)
        mask = Constant(VectorType(count, IntType(32)), "zeroinitializer")
        return self.insert(Instruction("shufflevector", vty, [one, Constant(vty, "poison"), mask]))

    # ---- calls
    def call(self, callee: Function | GlobalRef, args: Sequence[Value], ret: Type,
             name: str | None = None, flags: tuple[str, ...] = ()) -> Instruction:
        if isinstance(callee, Function):
            params = callee.ftype.params
            assert len(params) == len(args) or callee.ftype.vararg, f"call @{callee.name}: arity"
            assert all(p == a.type for p, a in zip(params, args)), \
                f"call @{callee.name}: {[str(a.type) for a in args]} vs {[str(p) for p in params]}"
            callee = GlobalRef(callee.name or "")
        return self.insert(Instruction("call", ret, list(args), name, callee=callee,
                                       flags=flags or (self.fast_math if ret.scalar.is_float else ())))

    # ---- control flow
    def phi(self, ty: Type, name: str | None = None) -> Instruction:
        return self.insert(Instruction("phi", ty, [], name))

    def br(self, dest: Block) -> Instruction:
        return self.insert(Instruction("br", VOID, [dest]))

    def cbr(self, cond: Value, if_true: Block, if_false: Block) -> Instruction:
        assert cond.type == I1
        return self.insert(Instruction("br", VOID, [cond, if_true, if_false]))

    def switch(self, v: Value, default: Block, cases: list[tuple[Constant, Block]]) -> Instruction:
        return self.insert(Instruction("switch", VOID, [v, default], cases=cases))

    def ret(self, v: Value | None = None) -> Instruction:
        return self.insert(Instruction("ret", VOID, [v] if v is not None else []))

    def unreachable(self) -> Instruction:
        return self.insert(Instruction("unreachable", VOID, []))


def counted_loop(b: Builder, count: Value, body: Callable[[Builder, Value], None]) -> None:
    """Emit `for i in range(count): body(b, i)` at the end of `b`'s block (a terminator-free
    block of a function); `b` is left at the end of the loop's exit block."""
    fn = b.block.function  # type: ignore[union-attr]
    assert fn is not None
    entry = b.block
    loop, done = fn.add_block("loop"), fn.add_block("done")
    zero_ = Constant(count.type, "0")
    b.cbr(b.icmp("sle", count, zero_), done, loop)
    b.position_at_end(loop)
    i = b.phi(count.type, "i")
    body(b, i)
    nxt = b.add(i, Constant(count.type, "1"))
    b.cbr(b.icmp("eq", nxt, count), done, loop)
    add_incoming(i, zero_, entry)  # type: ignore[arg-type]
    add_incoming(i, nxt, b.block)  # type: ignore[arg-type]
    b.position_at_end(done)


def add_incoming(phi: Instruction, value: Value, block: Block) -> None:
    assert phi.opcode == "phi" and value.type == phi.type, f"phi {phi.type} <- {value.type}"
    phi.operands.append(value)
    phi.incoming.append(block)


def declare(module: Module, name: str, ret: Type, params: Sequence[Type],
            vararg: bool = False) -> Function:
    """Declare (or reuse) an external function or intrinsic in `module`."""
    return module.get_or_declare(name, FunctionType(ret, tuple(params), vararg))


def _bool_like(t: Type) -> Type:
    return VectorType(t.count, I1) if isinstance(t, VectorType) else I1


__all__ = ["Builder", "add_incoming", "declare", "I64", "IntType"]
