"""The loads and stores of a temporary: an array the function allocated.

Numba allocates an array as an owner (`HANDLE_ALLOC`) whose data pointers (`HANDLE_DATA`
calls on it) address its elements; the owner otherwise goes to reference counting calls and
its null check. `data_accesses` lists the loads and stores through those data pointers when
nothing else sees them, so that no call, return or store of the pointer reads or writes the
temporary behind the analysis's back (`stored_values`, `analysis.killed_reads`).
"""
from __future__ import annotations

from typing import Callable

from ..ir.values import Instruction, Value
from ..known.model import Role, role_of

__all__ = ["OWNER_USES", "data_accesses"]

OWNER_USES = (Role.HANDLE_DATA, Role.INCREF, Role.DECREF)   # calls that leave the data be


def data_accesses(owner: Value, users: dict[int, list[Instruction]],
                  allowed: Callable[[Instruction], bool] = lambda user: False
                  ) -> list[Instruction] | None:
    """The loads and stores through the data pointers of the allocation `owner` (via geps;
    `users` is `Function.users()`), or None when the owner goes anywhere but its data,
    reference count and null check, or a data pointer anywhere but geps, loads, stores of a
    value and the users `allowed` accepts (which are not listed)."""
    uses = users.get(id(owner), [])
    if not all(role_of(u) in OWNER_USES and u.operands == [owner] or u.opcode == "icmp"
               for u in uses):
        return None
    out: list[Instruction] = []
    for data in (u for u in uses if role_of(u) is Role.HANDLE_DATA):
        work = [data]
        while work:
            ptr = work.pop()
            for user in users.get(id(ptr), []):
                if user.opcode == "getelementptr" and user.operands[0] is ptr:
                    work.append(user)
                elif user.opcode == "load" and not user.volatile or user.opcode == "store" \
                        and user.operands[1] is ptr and user.operands[0] is not ptr \
                        and not user.volatile:
                    out.append(user)
                elif not allowed(user):
                    return None
    return out
