"""The local names of one function being parsed: values, forward references, blocks."""
from __future__ import annotations

from ..errors import InvalidIRError
from .lexer import unquote
from .types import NamedStructType, Type
from .values import Block, Function, Value

__all__ = ["Forward", "Scope", "local_name"]


class Forward(Value):
    """A local referenced before its definition; replaced when the function is complete."""
    __slots__ = ()


class Scope:
    """Local names of one function being parsed."""

    def __init__(self, fn: Function, named_types: dict[str, Type]) -> None:
        self.fn = fn
        self.named_types = named_types
        self.values: dict[str, Value] = {}
        self.forwards: dict[str, Forward] = {}
        self.blocks: dict[str, Block] = {}
        unnamed = 0
        for arg in fn.args:
            if arg.name is not None:
                self.values["%" + arg.name] = arg
            else:                      # `%0`, `%1`, ...: numbered in order
                self.values[f"%{unnamed}"] = arg
                unnamed += 1

    def resolve(self, ty: Type) -> Type:
        """The body of a named struct type (`%pair`), other types unchanged."""
        while isinstance(ty, NamedStructType) and ty.name in self.named_types:
            ty = self.named_types[ty.name]
        return ty

    def ref(self, token: str, ty: Type) -> Value:
        key = _canonical_local(token)
        if key in self.values:
            return self.values[key]
        fwd = self.forwards.get(key)
        if fwd is None:
            fwd = self.forwards[key] = Forward(ty, key)
        return fwd

    def define(self, token: str, value: Value) -> None:
        key = _canonical_local(token)
        self.values[key] = value
        value.name = local_name(token)

    def block(self, token: str) -> Block:
        key = _canonical_local(token)
        blk = self.blocks.get(key)
        if blk is None:
            blk = self.blocks[key] = Block(local_name(token), self.fn)
        return blk

    def resolve_forwards(self) -> None:
        missing = [k for k in self.forwards if k not in self.values]
        if missing:
            raise InvalidIRError(f"undefined values {missing} in @{self.fn.name}")
        fix = {id(f): self.values[k] for k, f in self.forwards.items()}
        for inst in self.fn.instructions():
            if any(isinstance(op, Forward) for op in inst.operands):
                inst.operands = [fix.get(id(op), op) if isinstance(op, Forward) else op
                                 for op in inst.operands]


def _canonical_local(token: str) -> str:
    return "%" + unquote(token) if token.startswith("%") else "%" + token


def local_name(token: str) -> str | None:
    """Keep real names; numbered temporaries become unnamed (the printer renames them)."""
    name = unquote(token) if token.startswith("%") else token
    return None if name.isdigit() else name
