"""Stack saves and restores that restore nothing, dropped before differentiating.

When LLVM inlines a function (here: a derivative called from the function being
differentiated, as `enzyme_py.hessian` does), it may bracket the inlined body with
`llvm.stacksave`/`llvm.stackrestore`. Once every alloca of the function sits in the entry
block with a constant size, nothing is allocated between the two and the restore does
nothing; but as a call taking a pointer it looks to the analyses like a write to any memory
(a BLAS product's operands then seem overwritten after the call). The pair is removed only
in a function without dynamic allocas.
"""
from __future__ import annotations

from .ir.values import Constant, Function, Instruction

_SAVE, _RESTORE = "llvm.stacksave", "llvm.stackrestore"


def drop_idle_stack_restores(fn: Function) -> bool:
    """Remove the stack saves of `fn` and the restores of what they saved, when `fn` has no
    dynamic alloca; whether any were."""
    if any(_dynamic_alloca(fn, i) for i in fn.instructions()):
        return False
    saves = [i for i in fn.instructions() if _calls(i, _SAVE)]
    if not saves:
        return False
    users = [i for i in fn.instructions() if any(op in saves for op in i.operands)]
    if not all(_calls(u, _RESTORE) for u in users):
        return False
    for inst in saves + users:
        inst.block.instructions.remove(inst)  # type: ignore[union-attr]
    return True


def _calls(inst: Instruction, prefix: str) -> bool:
    return inst.opcode == "call" and (inst.callee_name or "").startswith(prefix)


def _dynamic_alloca(fn: Function, inst: Instruction) -> bool:
    return inst.opcode == "alloca" and (inst.block is not fn.entry or any(
        not isinstance(op, Constant) for op in inst.operands))
