"""References a derivative holds on arrays from its forward sweep into its reverse (an array a
known call's reverse reads, a temporary kept in a slot between calls), behind two functions of
the derivative's own that the front end's reference-count optimizer cannot pair.

Numba's `refprune` pass recognises NRT_incref / NRT_decref by name and drops an increment and
a decrement that look balanced: its "diamond" subpass, for one in a block that dominates the
other's, which post-dominates it. A reference taken once per loop iteration and the array's
one release after the loop fit that shape and were dropped together, so the reverse sweep
released the array early. The pruning runs again in every library that links the derivative,
so the guarantee cannot rest on the shape of the code around the call. A held reference is a
call to `HOLD` / `DROP` (internal, `noinline`), whose bodies call the runtime's INCREF /
DECREF: nothing the pruning can see to pair. Registered with those roles, so the analyses (and
an outer derivative of this one) treat the calls as the runtime's.
"""
from __future__ import annotations

from ..ir.builder import Builder, declare
from ..ir.types import PTR, VOID, FunctionType
from ..ir.values import Function, Module, Value
from ..known.model import KnownCall, Role, register, runtime_call

HOLD = "enzyme_py.hold_reference"
DROP = "enzyme_py.drop_reference"
_ROLES = {Role.INCREF: HOLD, Role.DECREF: DROP}

# By prefix: linking two derivatives' modules renames one's internal copy (`.1`); and a
# prefix record never stands for the runtime's function (`runtime_call` takes exact names).
register(*(KnownCall(name, prefix=True, inert=True, pointer_neutral=True, role=role)
           for role, name in _ROLES.items()))


def held_reference(b: Builder, module: Module, owner: Value, role: Role) -> None:
    """Take (role INCREF) or drop (DECREF) a held reference to the owner `owner`."""
    b.call(_wrapper(module, _ROLES[role], role), [owner], VOID)


def _wrapper(module: Module, name: str, role: Role) -> Function:
    """The function `name`, given its body where it is only declared (or not yet)."""
    fn = module.get_or_declare(name, FunctionType(VOID, (PTR,)))
    if fn.is_declaration:
        fn.linkage, fn.fn_attrs, fn.args[0].name = "internal", "noinline", "owner"
        b = Builder(fn.add_block("entry"))
        b.call(declare(module, runtime_call(role).name, VOID, [PTR]), [fn.args[0]], VOID)
        b.ret()
    return fn
