"""Small integer expressions over named sizes (`n`, `x.shape[0]`): trip counts and tape bytes
of the tape report, printed symbolically and evaluated for given sizes.

A loop nested in a loop whose bound depends on the outer loop's iteration (`range(j + 1, d)`)
has a trip count in terms of the outer loop's counter `k[header]` (0 on its first
iteration); the executions of the inner loop's blocks are then a sum over that counter."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

__all__ = ["Expr", "counter_symbol"]


def counter_symbol(header: str) -> str:
    """The name of the iteration counter (from 0) of the loop whose header is `header`."""
    return f"k[{header}]"


@dataclass(frozen=True)
class Expr:
    """A small integer expression over named sizes: op in const, sym, +, -, *, ceildiv,
    floordiv (by a constant) and sum (over a counter: `sum(k < count: body)`)."""
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

    def floordiv(self, d: int) -> Expr:
        if d == 1:
            return self
        if self.value is not None:
            return Expr.const(self.value // d)
        return Expr("floordiv", (self, Expr.const(d)))

    @staticmethod
    def sum(counter: str, count: Expr, body: Expr) -> Expr:
        """`body` summed over `counter` = 0 .. count - 1."""
        if counter not in body.symbols():
            return count * body
        return Expr("sum", (Expr.sym(counter), count, body))

    def evaluate(self, sizes: Mapping[str, int]) -> int | None:
        """The value for `sizes` (symbol -> int), None if a symbol is missing."""
        if self.op == "const":
            return self.args[0]
        if self.op == "sym":
            return sizes.get(self.args[0])
        if self.op == "sum":
            return self._evaluate_sum(sizes)
        a, b = (x.evaluate(sizes) for x in self.args)
        if a is None or b is None:
            return None
        if self.op == "+":
            return a + b
        if self.op == "-":
            return a - b
        if self.op == "*":
            return a * b
        if self.op == "floordiv":
            return a // b
        return -(-a // b)

    def _evaluate_sum(self, sizes: Mapping[str, int]) -> int | None:
        counter, count, body = self.args
        n = count.evaluate(sizes)
        if n is None:
            return None
        total = 0
        for k in range(max(n, 0)):
            v = body.evaluate({**sizes, counter.args[0]: k})
            if v is None:
                return None
            total += v
        return total

    def symbols(self) -> set[str]:
        """The free size names (a sum's counter is bound by it)."""
        if self.op == "sym":
            return {self.args[0]}
        if self.op == "const":
            return set()
        if self.op == "sum":
            counter, count, body = self.args
            return count.symbols() | (body.symbols() - counter.symbols())
        return set().union(*(a.symbols() for a in self.args))

    def __str__(self) -> str:
        return self._fmt(0)

    def _fmt(self, parent: int) -> str:
        if self.op == "const":
            return str(self.args[0])
        if self.op == "sym":
            return self.args[0]
        if self.op in ("ceildiv", "floordiv"):
            name = "ceil" if self.op == "ceildiv" else "floor"
            return f"{name}({self.args[0]._fmt(0)}/{self.args[1]._fmt(0)})"
        if self.op == "sum":
            counter, count, body = self.args
            return f"sum({counter._fmt(0)} < {count._fmt(0)}: {body._fmt(0)})"
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
