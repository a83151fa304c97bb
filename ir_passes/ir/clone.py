"""Copying instructions between functions with operand remapping."""
from __future__ import annotations

from typing import Callable

from .values import Block, Instruction, Value

_COPIED = ("flags", "predicate", "align", "volatile", "source_type", "indices", "callee",
           "fn_type", "arg_attrs", "ret_attrs", "fn_attrs", "tail", "ordering", "metadata", "extra")


def clone_instruction(inst: Instruction, value: Callable[[Value], Value],
                      block: Callable[[Block], Block]) -> Instruction:
    """A copy of `inst` whose operands are `value(op)` (blocks: `block(b)`).

    Phi operands are left empty for the caller to fill once all values exist.
    """
    ops = [] if inst.opcode == "phi" else [
        block(op) if isinstance(op, Block) else value(op) for op in inst.operands]
    new = Instruction(inst.opcode, inst.type, ops, inst.name)
    for attr in _COPIED:
        val = getattr(inst, attr)
        setattr(new, attr, list(val) if isinstance(val, list) else
                dict(val) if isinstance(val, dict) else val)
    new.cases = [(c, block(b)) for c, b in inst.cases]
    return new
