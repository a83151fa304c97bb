"""Addresses in a single-block loop counting down, as `base + coef * iv + offset`.

The reverse pass's loops count `iv = init, init - 1, .., last` (`phi [init, pre], [iv - 1,
loop]`, leaving when `iv == 0`: last 0, or when `iv - 1 == 0`: last 1). `DownLoop.of`
recognises such a loop; `DownLoop.address` writes a pointer of it as a loop-invariant base
(a value, or a pointer stepping by a constant per iteration: `PointerStep`) plus `coef * iv +
offset` bytes, through single-index geps, integer `add`/`sub`/`mul`/`shl` by constants, and
Numba's negative-index wraparound `select (icmp slt j, 0), n, 0`, whose comparison the
counter's range decides: `last <= iv <= init` with `init - last <= MAX_INIT` (unsigned), a
fact the caller checks at run time (`ranged` says it was used; `decided` lists the selects).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .ir.types import I64, size_of
from .ir.values import Block, Instruction, Value, int_constant

__all__ = ["Address", "DownLoop", "MAX_INIT", "PointerStep"]

MAX_INIT = 1 << 62


@dataclass(frozen=True)
class PointerStep:
    """A pointer phi of the loop, `phi [start, pre], [phi + step, loop]`: at counter `iv` it
    is `start + step * init - step * iv`."""
    phi: Instruction
    start: Value
    step: int


@dataclass(frozen=True)
class Address:
    base: Value | PointerStep      # loop-invariant
    coef: int                      # bytes per unit of iv
    offset: int                    # bytes


@dataclass
class DownLoop:
    block: Block                   # the loop: its own only latch
    pre: Block                     # the other predecessor
    exit: Block
    iv: Instruction
    init: Value
    last: int                      # the counter's value on the last iteration: 0 or 1
    ranged: bool = field(default=False)   # an address relied on last <= iv <= init
    decided: dict[int, tuple[Instruction, Value]] = field(default_factory=dict)
    # id(select) -> (select, the operand it takes on every iteration)

    @classmethod
    def of(cls, block: Block, preds: list[Block]) -> DownLoop | None:
        """`block` as a loop counting down to 0, or None."""
        term = block.terminator
        if (term is None or term.opcode != "br" or len(term.operands) != 3
                or len(preds) != 2 or block not in preds):
            return None
        pre = preds[0] if preds[1] is block else preds[1]
        cond, yes, no = term.operands
        if not (isinstance(cond, Instruction) and cond.opcode == "icmp"
                and cond.predicate in ("eq", "ne") and int_constant(cond.operands[1]) == 0):
            return None
        exit_, stay = (yes, no) if cond.predicate == "eq" else (no, yes)
        if stay is not block or exit_ is block:
            return None
        tested = cond.operands[0]
        last = 0
        if (isinstance(tested, Instruction) and tested.opcode == "add"
                and int_constant(tested.operands[1]) == -1):
            tested, last = tested.operands[0], 1          # leaves when iv - 1 == 0
        iv = tested
        if not (isinstance(iv, Instruction) and iv.opcode == "phi" and iv.block is block
                and len(iv.operands) == 2):
            return None
        by = dict(zip(iv.incoming, iv.operands))
        step = by.get(block)
        if not (isinstance(step, Instruction) and step.opcode == "add"
                and step.operands[0] is iv and int_constant(step.operands[1]) == -1):
            return None
        return cls(block, pre, exit_, iv, by[pre], last)

    def inside(self, v: Value) -> bool:
        return isinstance(v, Instruction) and v.block is self.block

    def linear(self, v: Value) -> tuple[int, int] | None:
        """`v` as `coef * iv + const`, or None."""
        c = int_constant(v)
        if c is not None:
            return 0, c
        if v is self.iv:
            return 1, 0
        if not self.inside(v) or v.type != I64:
            return None
        op = v.opcode
        if op == "select":
            taken = self.decide(v.operands[0])
            if taken is None:
                return None
            chosen = v.operands[1 if taken else 2]
            self.decided[id(v)] = (v, chosen)
            return self.linear(chosen)
        if op not in ("add", "sub", "mul", "shl") or len(v.operands) != 2:
            return None
        a, b = (self.linear(x) for x in v.operands)
        if a is None or b is None:
            return None
        if op == "add":
            return a[0] + b[0], a[1] + b[1]
        if op == "sub":
            return a[0] - b[0], a[1] - b[1]
        if op == "mul" and (a[0] == 0 or b[0] == 0):
            return a[0] * b[1] + b[0] * a[1], a[1] * b[1]
        if op == "shl" and b[0] == 0 and 0 <= b[1] < 32:
            return a[0] << b[1], a[1] << b[1]
        return None

    def decide(self, cond: Value) -> bool | None:
        """The value of `icmp` `cond` on every iteration, when the counter's range decides."""
        if not (isinstance(cond, Instruction) and cond.opcode == "icmp"):
            return None
        a, b = (self.linear(x) for x in cond.operands)
        if a is None or b is None or b[0] != 0 or a[0] not in (0, 1):
            return None
        lo = a[1] + (self.last if a[0] else 0)
        hi = lo + (MAX_INIT if a[0] else 0)
        k, pred = b[1], cond.predicate
        if pred.startswith("u"):
            if lo < 0 or k < 0:
                return None
            pred = "s" + pred[1:]
        if pred not in ("slt", "sle", "sgt", "sge") or lo < -MAX_INIT:
            return None
        test = {"slt": lambda x: x < k, "sle": lambda x: x <= k,
                "sgt": lambda x: x > k, "sge": lambda x: x >= k}[pred]
        if test(lo) != test(hi):
            return None
        self.ranged |= a[0] != 0
        return test(lo)

    def address(self, p: Value) -> Address | None:
        """Pointer `p` as `Address`, or None."""
        if not self.inside(p):
            return Address(p, 0, 0)
        if p.opcode == "phi" and len(p.operands) == 2:
            by = dict(zip(p.incoming, p.operands))
            nxt = by.get(self.block)
            if (isinstance(nxt, Instruction) and nxt.opcode == "getelementptr"
                    and nxt.operands[0] is p and len(nxt.operands) == 2):
                step = int_constant(nxt.operands[1])
                if step is not None and self.pre in by:
                    step *= size_of(nxt.source_type)
                    return Address(PointerStep(p, by[self.pre], step), -step, 0)
            return None
        if p.opcode != "getelementptr" or len(p.operands) != 2 or p.source_type is None:
            return None
        inner = self.address(p.operands[0])
        index = self.linear(p.operands[1])
        if inner is None or index is None:
            return None
        size = size_of(p.source_type)
        return Address(inner.base, inner.coef + size * index[0],
                       inner.offset + size * index[1])
