"""Loads that read the same memory on every iteration of a loop, moved to its preheader.

LLVM's LICM, in the canonicalisation pipeline, cannot hoist `xc[j]` out of ADBench's
triangular loop `for l in range(j + 1, d): qxc[l] += Q[idx] * xc[j]`: `xc` and `qxc` are
two arrays from `np.empty`, whose data pointers come from calls LLVM knows nothing about, so
the store to `qxc[l]` may write `xc[j]`. This pass knows that distinct allocations never
share memory. Left in the loop, the load is a value of every inner iteration and the reverse
pass tapes it per iteration; hoisted, it is taped once per run of the loop.

A load moves when its address is defined outside the loop, the loop has a dedicated
preheader, the load's block dominates every block leaving the loop (so it runs whenever the
loop is entered: nothing is read that the loop would not read), and no instruction of the
loop may write memory the load reads. Memory is told apart by its origin: each allocation of
the function and each stack slot is its own; all arguments count as one (C pointers may
alias); anything else (a pointer loaded from memory, a call we have no record of) may be
any memory.
"""
from __future__ import annotations

from .analysis.cfg import Loop, dominates, dominators, find_loops
from .ir.values import Argument, Block, Function, GlobalRef, Instruction, Value
from .known.memory import pointer_bases
from .known.model import Role, call_record, role_of, written_arguments

__all__ = ["hoist_invariant_loads"]

_ANY = "any"          # memory of unknown origin
_ARGUMENTS = "args"   # all argument memory, as one


def hoist_invariant_loads(fn: Function) -> bool:
    """Move the loop-invariant loads of `fn` to their loops' preheaders; whether any moved."""
    loops = find_loops(fn)                   # innermost first: a load moves outward stepwise
    if not loops:
        return False
    idom = dominators(fn)
    preds = fn.predecessors()
    moved = False
    for loop in loops:
        preheader = _dedicated_preheader(loop, preds)
        if preheader is None:
            continue
        written = _written_memory(loop)
        if _ANY in written:
            continue
        exiting = [b for b in loop.blocks if any(s not in loop.blocks for s in b.successors())]
        for block in [b for b in fn.blocks if b in loop.blocks]:
            if not all(dominates(idom, block, e) for e in exiting):
                continue
            for load in [i for i in block.instructions if _hoistable(i, loop, written)]:
                block.instructions.remove(load)
                preheader.insert(len(preheader.instructions) - 1, load)
                load.block = preheader
                moved = True
    return moved


def _dedicated_preheader(loop: Loop, preds: dict[Block, list[Block]]) -> Block | None:
    outside = [p for p in preds[loop.header] if p not in loop.blocks]
    if len(outside) != 1 or outside[0].successors() != [loop.header]:
        return None
    return outside[0]


def _hoistable(inst: Instruction, loop: Loop, written: set) -> bool:
    if inst.opcode != "load" or inst.volatile:
        return False
    ptr = inst.operands[0]
    if isinstance(ptr, Instruction) and ptr.block in loop.blocks:
        return False
    read = _memories(ptr)
    return not (read & written or _ANY in read and written)


def _written_memory(loop: Loop) -> set:
    out: set = set()
    for block in loop.blocks:
        for inst in block.instructions:
            if inst.opcode == "store":
                out |= _memories(inst.operands[1])
            elif inst.opcode == "call" and role_of(inst) is not Role.RAW_FREE:
                if call_record(inst) is None and not _pure_intrinsic(inst):
                    return {_ANY}
                for target in written_arguments(inst):
                    out |= _memories(target)
            elif inst.opcode in ("atomicrmw", "cmpxchg", "fence"):
                return {_ANY}
    return out


def _pure_intrinsic(call: Instruction) -> bool:
    name = call.callee_name or ""
    return name.startswith("llvm.") and "mem" not in name


def _memories(ptr: Value) -> set:
    """The origins of the memory `ptr` may address; `_ANY` makes it overlap everything."""
    out: set = set()
    for base in pointer_bases(ptr):
        if isinstance(base, Argument):
            out.add(_ARGUMENTS)
        elif isinstance(base, GlobalRef):
            out.add(base.name)
        elif role_of(base) is Role.HANDLE_DATA and role_of(
                base.operands[0]) is Role.HANDLE_ALLOC:            # type: ignore[union-attr]
            out.add(id(base.operands[0]))                         # type: ignore[union-attr]
        elif role_of(base) is Role.RAW_ALLOC or (
                isinstance(base, Instruction) and base.opcode == "alloca"):
            out.add(id(base))
        else:
            return {_ANY}
    return out
