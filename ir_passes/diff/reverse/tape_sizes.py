"""Small integer expressions over named sizes (`n`, `x.shape[0]`): trip counts and tape bytes
of the tape report, printed symbolically and evaluated for given sizes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

__all__ = ["Expr"]


@dataclass(frozen=True)
class Expr:
    """A small integer expression over named sizes: op in const, sym, +, -, *, ceildiv."""
    op: str
    args: tuple = ()

    @staticmethod
    def const(v: int) -> Expr:
        return Expr("const", (int(v),))

    @staticmethod
    def sym(name: str) -> Expr:
        return Expr("sym", (name,))

    @property
    def value(self) -> int | None:
        return self.args[0] if self.op == "const" else None

    def __add__(self, other: Expr) -> Expr:
        a, ca = self._split()
        b, cb = other._split()
        if a is None:
            return _join(b, ca + cb)
        return _join(a if b is None else Expr("+", (a, b)), ca + cb)

    def __sub__(self, other: Expr) -> Expr:
        a, ca = self._split()
        b, cb = other._split()
        if b is None or a == b:
            return _join(None if a == b else a, ca - cb)
        if a is None:
            return Expr("-", (Expr.const(ca), other))
        return _join(Expr("-", (a, b)), ca - cb)

    def _split(self) -> tuple[Expr | None, int]:
        """(symbolic part, constant part): `n - 1` -> (n, -1), `3` -> (None, 3)."""
        if self.op == "const":
            return None, self.args[0]
        if self.op in ("+", "-") and self.args[1].op == "const":
            return self.args[0], self.args[1].args[0] * (1 if self.op == "+" else -1)
        return self, 0

    def __mul__(self, other: Expr) -> Expr:
        if self.value == 1:
            return other
        if other.value == 1:
            return self
        if 0 in (self.value, other.value):
            return Expr.const(0)
        if self.value is not None and other.value is not None:
            return Expr.const(self.value * other.value)
        if other.value is not None:       # constants first: 8*n
            return Expr("*", (other, self))
        return Expr("*", (self, other))

    def ceildiv(self, d: int) -> Expr:
        if d == 1:
            return self
        if self.value is not None:
            return Expr.const(-(-self.value // d))
        return Expr("ceildiv", (self, Expr.const(d)))

    def evaluate(self, sizes: Mapping[str, int]) -> int | None:
        """The value for `sizes` (symbol -> int), None if a symbol is missing."""
        if self.op == "const":
            return self.args[0]
        if self.op == "sym":
            return sizes.get(self.args[0])
        a, b = (x.evaluate(sizes) for x in self.args)
        if a is None or b is None:
            return None
        if self.op == "+":
            return a + b
        if self.op == "-":
            return a - b
        if self.op == "*":
            return a * b
        return -(-a // b)

    def symbols(self) -> set[str]:
        if self.op == "sym":
            return {self.args[0]}
        if self.op == "const":
            return set()
        return set().union(*(a.symbols() for a in self.args))

    def __str__(self) -> str:
        return self._fmt(0)

    def _fmt(self, parent: int) -> str:
        if self.op == "const":
            return str(self.args[0])
        if self.op == "sym":
            return self.args[0]
        if self.op == "ceildiv":
            return f"ceil({self.args[0]._fmt(0)}/{self.args[1]._fmt(0)})"
        prec = {"+": 1, "-": 1, "*": 2}[self.op]
        a, b = self.args
        text = f"{a._fmt(prec)} {self.op} {b._fmt(prec + (self.op == '-'))}"
        return f"({text})" if prec < parent else text


def _join(base: Expr | None, c: int) -> Expr:
    if base is None:
        return Expr.const(c)
    if c == 0:
        return base
    return Expr("+", (base, Expr.const(c))) if c > 0 else Expr("-", (base, Expr.const(-c)))
