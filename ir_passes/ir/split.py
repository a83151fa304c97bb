"""Splitting a block in two before an instruction."""
from __future__ import annotations

from .values import Block, Instruction


def split_before(inst: Instruction, name: str) -> Block:
    """Move `inst` and what follows it into a new block `name`, placed right after its own;
    the successors' phis now come from the new block. The old block is left without a
    terminator: the caller ends it (a branch to the new block, or a condition)."""
    block = inst.block
    assert block is not None and block.function is not None
    fn = block.function
    at = block.instructions.index(inst)
    tail = Block(name, fn)
    fn.blocks.insert(fn.blocks.index(block) + 1, tail)
    for moved in block.instructions[at:]:
        tail.append(moved)
    del block.instructions[at:]
    retarget_phis(block, tail)
    return tail


def retarget_phis(old: Block, new: Block) -> None:
    """`old` was split and `new` now holds its terminator: successors' phis come from `new`."""
    for succ in new.successors():
        for phi in succ.phis():
            phi.incoming = [new if blk is old else blk for blk in phi.incoming]
