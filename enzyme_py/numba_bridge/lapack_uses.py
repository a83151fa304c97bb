"""Who uses the memory a LAPACK call leaves behind, for rules whose derivative depends on it.

A factorisation writes its factors over its input (Numba's copy of the matrix). Whether the
derivative must carry the factors' tangent depends on what reads them next: nothing (the
factors of `np.linalg.solve`), LAPACK's inverse (`np.linalg.inv`: getri), or the function's
own loads (`slogdet` walks the diagonal). `uses_after` lists those next users.
"""
from __future__ import annotations

from typing import Callable

from ir_passes.ir.values import Instruction, Value
from ir_passes.known.memory import pointer_base
from ir_passes.known.model import Role, call_record, role_of, written_arguments

_GEMM_C, _GEMM_FACTORS = 12, (7, 9)     # numba_xxgemm's C, and its A and B
_ADDRESS = ("getelementptr", "bitcast", "phi", "select", "addrspacecast", "freeze")


def _owner(ptr: Value) -> Value | None:
    """The owner (meminfo) whose data `ptr` points into, when known."""
    base = pointer_base(ptr)
    return base.operands[0] if role_of(base) is Role.HANDLE_DATA else None  # type: ignore


def _same_memory(v: Value, base: Value, owner: Value | None) -> bool:
    if not v.type.is_pointer:
        return False
    b = pointer_base(v)
    return b is base or owner is not None and role_of(b) is Role.HANDLE_DATA \
        and b.operands[0] is owner  # type: ignore[union-attr]


def _is_use(inst: Instruction, base: Value, owner: Value | None) -> bool:
    if inst.opcode in _ADDRESS:
        return False
    record = call_record(inst)
    if record is not None and (record.inert or record.role is not Role.NONE):
        return False        # reference counts and data pointers of the owner
    return any(_same_memory(op, base, owner) for op in inst.operands)


def uses_after(call: Instruction, ptr: Value,
               stop: Callable[[Instruction], bool] = lambda inst: False) -> list[Instruction]:
    """Instructions reachable after `call` that use the memory `ptr` points into (loads,
    stores, calls, escapes; address arithmetic aside), up to uses for which `stop` holds
    and up to a new allocation of the same owner."""
    base, owner = pointer_base(ptr), _owner(ptr)
    block = call.block
    assert block is not None
    found: list[Instruction] = []
    work, seen = [(block, block.instructions.index(call) + 1)], set()
    while work:
        blk, start = work.pop()
        for inst in blk.instructions[start:]:
            if inst is owner or inst is call:
                break
            if _is_use(inst, base, owner):
                found.append(inst)
                if stop(inst):
                    break
        else:
            for succ in blk.successors():
                if id(succ) not in seen:
                    seen.add(id(succ))
                    work.append((succ, 0))
    return found


def overwritten_after(call: Instruction, ptr: Value) -> bool:
    """Whether code after `call` writes the memory `ptr` points into (stores, calls)."""
    base, owner = pointer_base(ptr), _owner(ptr)
    return any(u.opcode == "store" and _same_memory(u.operands[1], base, owner)
               or u.opcode == "call" and any(_same_memory(w, base, owner)
                                             for w in written_arguments(u))
               for u in uses_after(call, ptr))


def overwrites_by_product(ptr: Value) -> Callable[[Instruction], bool]:
    """Whether an instruction is a matrix product (numba_xxgemm) overwriting the memory `ptr`
    points into (its output C, read by neither factor: np.linalg.pinv's last product)."""
    base, owner = pointer_base(ptr), _owner(ptr)
    return lambda u: (u.callee_name == "numba_xxgemm"
                      and _same_memory(u.operands[_GEMM_C], base, owner)
                      and not any(_same_memory(u.operands[i], base, owner)
                                  for i in _GEMM_FACTORS))
