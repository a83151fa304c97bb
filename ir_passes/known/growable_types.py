"""The float type held by growable memory (a list's storage: an owner of role HANDLE_VARSIZE),
for the adjoint of a byte copy inside it (`list.insert` and `list.pop` move the items with
`llvm.memmove`). Each call asking for the owner's data (HANDLE_DATA, or the pointer a resize
returns) is a base of its own, so the function's accesses through all of them are gathered.

The storage also holds integer fields (the list's size, its capacity): their adjoints are never
written (only float loads gather adjoints), so a copy covering them moves zeros.
"""
from __future__ import annotations

from ..ir.types import FloatType
from ..ir.values import Function, Instruction, Value
from .memory import pointer_base
from .model import Role, role_of

_DATA_ROLES = (Role.HANDLE_DATA, Role.VARSIZE_REALLOC)


def growable_float_type(fn: Function, ptr: Value) -> FloatType | None:
    """The one float type `fn` loads or stores through the data of the growable owner `ptr`
    points into; None when it is not such memory or when several float types are."""
    owner = _owner(pointer_base(ptr))
    if owner is None:
        return None
    found: set[FloatType] = set()
    for inst in fn.instructions():
        if inst.opcode == "load":
            ptr_, t = inst.operands[0], inst.type
        elif inst.opcode == "store":
            ptr_, t = inst.operands[1], inst.operands[0].type
        else:
            continue
        if isinstance(t, FloatType) and _owner(pointer_base(ptr_)) is owner:
            found.add(t)
    return next(iter(found)) if len(found) == 1 else None


def _owner(base: Value) -> Instruction | None:
    if not (isinstance(base, Instruction) and role_of(base) in _DATA_ROLES):
        return None
    owner = base.operands[0]
    return owner if isinstance(owner, Instruction) and role_of(owner) is Role.HANDLE_VARSIZE \
        else None
