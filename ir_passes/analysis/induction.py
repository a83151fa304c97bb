"""Induction variables: integer header phis stepping by a loop-invariant amount."""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.values import Argument, Constant, GlobalRef, Instruction, Value
from .cfg import Loop

__all__ = ["InductionVariable", "defined_outside", "induction_variables"]


@dataclass(frozen=True)
class InductionVariable:
    loop: Loop
    start: Value
    step: Value


def induction_variables(loop: Loop) -> dict[Instruction, InductionVariable]:
    """The integer phis of `loop`'s header taking `start` from outside the loop and
    `phi + step` from its single latch, `start` and `step` defined outside the loop."""
    if len(loop.latches) != 1:
        return {}
    latch = loop.latches[0]
    ivs: dict[Instruction, InductionVariable] = {}
    for phi in loop.header.phis():
        if not phi.type.is_int:
            continue
        pairs = list(zip(phi.operands, phi.incoming))
        start = next((v for v, b in pairs if b not in loop.blocks), None)
        nxt = next((v for v, b in pairs if b is latch), None)
        if start is None or not (isinstance(nxt, Instruction) and nxt.opcode == "add"
                                 and phi in nxt.operands):
            continue
        step = nxt.operands[1] if nxt.operands[0] is phi else nxt.operands[0]
        if defined_outside(start, loop) and defined_outside(step, loop):
            ivs[phi] = InductionVariable(loop, start, step)
    return ivs


def defined_outside(v: Value, loop: Loop) -> bool:
    """Defined outside `loop`: fixed while it runs."""
    return isinstance(v, (Constant, Argument, GlobalRef)) or (
        isinstance(v, Instruction) and v.block is not None and v.block not in loop.blocks)
