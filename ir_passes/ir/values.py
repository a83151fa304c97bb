"""IR objects: values, constants, instructions, blocks, functions, modules.

Plain mutable Python objects; identity is object identity. Operands are `Value` objects, never
names: the parser resolves names, the printer invents them. Opcode-specific data lives in
named attributes of `Instruction` (predicate, flags, alignment, GEP source type, indices, phi
incoming blocks, switch cases, callee), all read and written only by the parser, printer,
builder and passes, never by text manipulation.
"""
from __future__ import annotations

import math
import struct
from typing import Iterator

from .types import (DOUBLE, FLOAT, I1, LABEL, PTR, FloatType, FunctionType, IntType, Type,
                    VectorType, VOID)


class Value:
    """Anything an instruction can use."""
    __slots__ = ("type", "name")

    def __init__(self, type: Type, name: str | None = None) -> None:
        self.type = type
        self.name = name

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name or ''}: {self.type}>"


# ---------------------------------------------------------------- constants

class Constant(Value):
    """A constant printed as `text` (null, undef, poison, zeroinitializer, aggregates, expressions)."""
    __slots__ = ("text",)

    def __init__(self, type: Type, text: str) -> None:
        super().__init__(type)
        self.text = text

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.type == self.type and other.text == self.text

    def __hash__(self) -> int:
        return hash((self.type, self.text))


class ConstInt(Constant):
    __slots__ = ("value",)

    def __init__(self, type: IntType, value: int) -> None:
        text = ("true" if value else "false") if type.bits == 1 else str(value)
        super().__init__(type, text)
        self.value = value


class ConstFloat(Constant):
    __slots__ = ("value",)

    def __init__(self, type: FloatType, value: float, text: str | None = None) -> None:
        super().__init__(type, text if text is not None else format_float(type, value))
        self.value = value


def format_float(type: FloatType, value: float) -> str:
    """LLVM text for a float constant: short decimal when exact, otherwise hex bits of the double."""
    if type.kind == "float":
        value = struct.unpack("<f", struct.pack("<f", value))[0]
    if math.isfinite(value):
        text = f"{value:e}"
        if float(text) == value:
            return text
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    return f"0x{bits:016X}"


def const_float(type: Type, value: float) -> ConstFloat:
    """The float constant `value` of a float type, or of a fixed float vector type (every lane
    `value`; `.value` is that lane value, so a vector of ones is recognised like a scalar)."""
    if isinstance(type, VectorType) and isinstance(type.element, FloatType) \
            and not type.scalable:
        lane = format_float(type.element, float(value))
        return ConstFloat(type, float(value),  # type: ignore[arg-type]
                          "<" + ", ".join([f"{type.element} {lane}"] * type.count) + ">")
    assert isinstance(type, FloatType), type
    return ConstFloat(type, float(value))


def const_int(type: Type, value: int) -> ConstInt:
    assert isinstance(type, IntType), type
    return ConstInt(type, int(value))


def int_constant(v: Value) -> int | None:
    """The integer a constant `v` holds, else None."""
    if isinstance(v, ConstInt):
        return v.value
    if isinstance(v, Constant) and v.type.is_int:
        text = v.text if hasattr(v, "text") else ""
        if text.lstrip("-").isdigit():
            return int(text)
    return None


def zero(type: Type) -> Constant:
    """The zero of a scalar or aggregate type."""
    if isinstance(type, FloatType):
        return const_float(type, 0.0)
    if isinstance(type, IntType):
        return const_int(type, 0)
    if type == PTR:
        return Constant(PTR, "null")
    return Constant(type, "zeroinitializer")


TRUE = ConstInt(I1, 1)
FALSE = ConstInt(I1, 0)
NULL = Constant(PTR, "null")


class GlobalRef(Value):
    """A reference to a module-level global (`@name`), by name."""
    __slots__ = ()

    def __init__(self, name: str, type: Type = PTR) -> None:
        super().__init__(type, name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GlobalRef) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("@", self.name))


# ---------------------------------------------------------------- instructions

class Instruction(Value):
    """One instruction. `type` is the result type (void when it has none)."""
    __slots__ = ("opcode", "operands", "flags", "predicate", "align", "volatile", "source_type",
                 "indices", "incoming", "cases", "callee", "fn_type", "arg_attrs", "ret_attrs",
                 "fn_attrs", "tail", "ordering", "metadata", "block", "extra")

    def __init__(self, opcode: str, type: Type, operands: list[Value], name: str | None = None,
                 **attrs: object) -> None:
        super().__init__(type, name)
        self.opcode = opcode
        self.operands = list(operands)
        self.flags: tuple[str, ...] = ()
        self.predicate: str | None = None
        self.align: int | None = None
        self.volatile = False
        self.source_type: Type | None = None      # getelementptr source / alloca allocated type
        self.indices: tuple[int, ...] = ()        # extractvalue / insertvalue
        self.incoming: list[Block] = []           # phi: block of each operand
        self.cases: list[tuple[Constant, Block]] = []   # switch: operands are [cond, default]
        self.callee: Value | None = None          # call: operands are the arguments
        self.fn_type: FunctionType | None = None  # call: only needed for varargs callees
        self.arg_attrs: list[str] = []
        self.ret_attrs = ""
        self.fn_attrs = ""
        self.tail = ""
        self.ordering = ""                        # atomics: syncscope and memory ordering
        self.metadata: dict[str, str] = {}        # kind -> metadata ref text, e.g. {"prof": "!3"}
        self.block: Block | None = None
        self.extra = ""                           # trailing text the printer keeps (e.g. syncscope)
        for key, val in attrs.items():
            setattr(self, key, val)

    @property
    def is_terminator(self) -> bool:
        return self.opcode in TERMINATORS

    @property
    def has_result(self) -> bool:
        return not self.type.is_void

    @property
    def callee_name(self) -> str | None:
        return self.callee.name if self.opcode == "call" and self.callee is not None else None

    def successors(self) -> list[Block]:
        if self.opcode == "br":
            return [op for op in self.operands if isinstance(op, Block)]
        if self.opcode == "switch":
            return [self.operands[1]] + [b for _, b in self.cases]  # type: ignore[list-item]
        return []

    def replace_uses(self, old: Value, new: Value) -> None:
        self.operands = [new if op is old else op for op in self.operands]
        if self.callee is old:
            self.callee = new


TERMINATORS = frozenset({"ret", "br", "switch", "unreachable", "indirectbr", "resume", "invoke"})


class Argument(Value):
    __slots__ = ("index", "attrs")

    def __init__(self, type: Type, name: str | None, index: int, attrs: str = "") -> None:
        super().__init__(type, name)
        self.index = index
        self.attrs = attrs


class Block(Value):
    __slots__ = ("instructions", "function")

    def __init__(self, name: str | None = None, function: Function | None = None) -> None:
        super().__init__(LABEL, name)
        self.instructions: list[Instruction] = []
        self.function = function

    @property
    def terminator(self) -> Instruction | None:
        if self.instructions and self.instructions[-1].is_terminator:
            return self.instructions[-1]
        return None

    def successors(self) -> list[Block]:
        term = self.terminator
        return term.successors() if term else []

    def phis(self) -> Iterator[Instruction]:
        for inst in self.instructions:
            if inst.opcode != "phi":
                return
            yield inst

    def append(self, inst: Instruction) -> Instruction:
        inst.block = self
        self.instructions.append(inst)
        return inst

    def insert(self, index: int, inst: Instruction) -> Instruction:
        inst.block = self
        self.instructions.insert(index, inst)
        return inst


class Function(Value):
    """A function definition (with blocks) or declaration (without)."""
    __slots__ = ("ftype", "args", "blocks", "linkage", "prefix_attrs", "ret_attrs",
                 "fn_attrs", "metadata")

    def __init__(self, name: str, ftype: FunctionType, arg_names: list[str | None] | None = None,
                 linkage: str = "") -> None:
        super().__init__(PTR, name)
        self.ftype = ftype
        names = arg_names or [None] * len(ftype.params)
        self.args = [Argument(t, n, i) for i, (t, n) in enumerate(zip(ftype.params, names))]
        self.blocks: list[Block] = []
        self.linkage = linkage        # e.g. "internal", "linkonce_odr"; "" = external
        self.prefix_attrs = ""        # between linkage and return type (cconv, visibility...)
        self.ret_attrs = ""
        self.fn_attrs = ""            # after the parameter list: "local_unnamed_addr #0"
        self.metadata = ""            # trailing "!dbg !5" etc.

    @property
    def is_declaration(self) -> bool:
        return not self.blocks

    @property
    def entry(self) -> Block:
        return self.blocks[0]

    def add_block(self, name: str | None = None) -> Block:
        block = Block(name, self)
        self.blocks.append(block)
        return block

    def instructions(self) -> Iterator[Instruction]:
        for block in self.blocks:
            yield from block.instructions

    def predecessors(self) -> dict[Block, list[Block]]:
        preds: dict[Block, list[Block]] = {b: [] for b in self.blocks}
        for block in self.blocks:
            for succ in block.successors():
                if block not in preds[succ]:
                    preds[succ].append(block)
        return preds

    def users(self) -> dict[int, list[Instruction]]:
        """The instructions using each value, by the value's id (in block order)."""
        users: dict[int, list[Instruction]] = {}
        for inst in self.instructions():
            for op in inst.operands:
                users.setdefault(id(op), []).append(inst)
        return users


class Module:
    """A module: functions plus the top-level text we carry through unchanged.

    Globals, type definitions, attribute groups and metadata nodes are kept as their source
    lines (keyed by name) because passes only ever reference them, never rewrite them.
    """

    def __init__(self) -> None:
        self.header: list[str] = []                  # source_filename, datalayout, triple
        self.type_defs: dict[str, str] = {}          # "%name" -> whole line
        self.named_types: dict[str, Type] = {}       # "%name" -> its body
        self.globals: dict[str, str] = {}            # "name" (no @) -> whole line
        self.functions: dict[str, Function] = {}
        self.attribute_groups: dict[str, str] = {}   # "#0" -> whole line
        self.metadata: dict[str, str] = {}           # "!0" / "!name" -> right-hand side text

    def add_function(self, fn: Function) -> Function:
        self.functions[fn.name] = fn  # type: ignore[index]
        return fn

    def get_or_declare(self, name: str, ftype: FunctionType) -> Function:
        fn = self.functions.get(name)
        if fn is None:
            fn = self.add_function(Function(name, ftype))
        return fn


def float_type_of(bits: int) -> FloatType:
    return {32: FLOAT, 64: DOUBLE}[bits]


__all__ = ["Argument", "Block", "ConstFloat", "ConstInt", "Constant", "FALSE", "Function",
           "GlobalRef", "Instruction", "Module", "TERMINATORS", "TRUE", "VOID", "Value",
           "const_float", "const_int", "float_type_of", "format_float", "int_constant", "zero"]
