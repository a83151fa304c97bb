"""Temporaries and their shadows kept between calls (API.md "Memory kept between calls"), as
the tape is (`tape.py`): after the first call, a reverse derivative reuses them instead of
allocating.

An allocation whose memory gets a shadow, run at most once per call, in a function that
returns no memory (so the array cannot outlive the call), has two slots: module globals
holding a parked owner (of the front end's HANDLE_ALLOC kind) for the primal array and for
its shadow. The augmented forward pass takes each slot's owner by an atomic exchange with null
and reuses it (the shadow zeroed) when it is big enough; else it releases it and allocates a
new one, as a call that finds the slot empty does: concurrent calls each get their own. The
slot keeps a reference to the primal array of its own, so the primal's release leaves it
alive. At the reverse of the allocation, where the shadow was released before, both are
parked again: the size goes into the first 8 bytes (the contents are dead), and an owner
displaced from the slot is released. Arrays under 8 bytes are released instead.
`emit_release_all` frees what the slots and the tape hold (`df.release()`).
"""
from __future__ import annotations

from ...ir.builder import Builder, declare
from ...ir.types import I1, I32, I64, PTR, VOID, FunctionType
from ...ir.values import FALSE, TRUE, Constant, Function, GlobalRef, Module, Value, const_int
from ...known.generic import zero_memory
from ...known.model import Role, runtime_call
from ..shadows import data_pointer, release
from .tape import PARKED, TAPE_PREFIX, exchange

SHADOW_PREFIX = "enzyme_py.shadow."
SLOT_PREFIX = TAPE_PREFIX + "shadow."      # a derivative's own globals, as the tape's are
TAKE_FUNCTION = SHADOW_PREFIX + "take"
PARK_FUNCTION = SHADOW_PREFIX + "park"
_NULL = Constant(PTR, "null")


def new_slot(module: Module) -> GlobalRef:
    """A new slot for one allocation site."""
    name = f"{SLOT_PREFIX}{sum(1 for g in module.globals if g.startswith(SLOT_PREFIX))}"
    module.globals[name] = f"@{name} = internal global ptr null, align 8"
    return GlobalRef(name)


def state_slot(module: Module, forward: str) -> GlobalRef:
    """The slot of the state buffer of split halves whose forward half is `forward` (made
    on first use; `SplitSpec.reused_state`)."""
    name = f"{SLOT_PREFIX}state.{forward}"
    module.globals.setdefault(name, f'@"{name}" = internal global ptr null, align 8')
    return GlobalRef(name)


def take_shadow(b: Builder, module: Module, slot: GlobalRef, size: Value, align: Value,
                zeroed: bool = True) -> Value:
    """The owner of an allocation of `size` bytes (zeroed unless `zeroed` is False: a primal
    temporary), taken from `slot`."""
    args = [slot, size, align, TRUE if zeroed else FALSE]
    return b.call(_function(module, TAKE_FUNCTION, _build_take), args, PTR)


def park_shadow(b: Builder, module: Module, slot: GlobalRef, owner: Value, size: Value) -> None:
    """Park the shadow `owner` of `size` bytes in `slot` (instead of releasing it)."""
    b.call(_function(module, PARK_FUNCTION, _build_park), [slot, owner, size], VOID)


def release_symbol(derivative: str) -> str:
    """The name of the function freeing what `derivative` keeps between calls."""
    return derivative + ".release"


def emit_release_all(module: Module, name: str) -> None:
    """`void @name()`: free the parked tape and release the parked shadows of `module`."""
    fn = module.add_function(Function(name, FunctionType(VOID, ())))
    b = Builder(fn.add_block("entry"))
    free = declare(module, "free", VOID, [PTR])
    for g in sorted(module.globals):
        if g == PARKED or g.startswith(SLOT_PREFIX):
            held = exchange(b, GlobalRef(g), _NULL, "held")
            if g == PARKED:
                b.call(free, [held], VOID)
            else:
                _release_unless_null(b, module, fn, held)
    b.ret()


def _function(module: Module, name: str, build) -> Function:
    fn = module.functions.get(name)
    if fn is None or fn.is_declaration:
        fn = build(module)
    return fn


def _build_take(module: Module) -> Function:
    """ptr take(slot, size, align, zeroed): the parked owner if it holds `size` bytes, else a
    new one (the parked one, too small, released); its first `size` bytes zeroed if asked."""
    fn = Function(TAKE_FUNCTION, FunctionType(PTR, (PTR, I64, I32, I1)),
                  ["slot", "size", "align", "zeroed"], linkage="internal")
    fn.fn_attrs = "noinline"
    slot, size, align, zeroed = fn.args
    b = Builder(fn.add_block("entry"))
    parked, small, fresh, done = (fn.add_block(n) for n in ("parked", "small", "fresh", "done"))
    held = exchange(b, slot, _NULL, "held")
    b.cbr(b.icmp("ne", held, _NULL), parked, fresh)
    b.position_at_end(parked)
    b.cbr(b.icmp("uge", b.load(I64, data_pointer(b, module, held)), size), done, small)
    b.position_at_end(small)
    release(b, module, held)
    b.br(fresh)
    b.position_at_end(fresh)
    allocate = declare(module, runtime_call(Role.HANDLE_ALLOC).name, PTR, [I64, I32])
    new = b.call(allocate, [size, align], PTR)
    b.br(done)
    b.position_at_end(done)
    owner = b.phi(PTR, "owner")
    owner.operands, owner.incoming = [held, new], [parked, fresh]
    length = b.select(zeroed, size, const_int(I64, 0))
    zero_memory(b, module, data_pointer(b, module, owner), length, FALSE)
    b.ret(owner)
    module.add_function(fn)
    return fn


def _build_park(module: Module) -> Function:
    """void park(slot, owner, size): see the module docstring."""
    fn = Function(PARK_FUNCTION, FunctionType(VOID, (PTR, PTR, I64)), ["slot", "owner", "size"],
                  linkage="internal")
    fn.fn_attrs = "noinline"
    slot, owner, size = fn.args
    b = Builder(fn.add_block("entry"))
    park, drop = fn.add_block("park"), fn.add_block("drop")
    b.cbr(b.icmp("uge", size, const_int(I64, 8)), park, drop)
    b.position_at_end(drop)
    release(b, module, owner)
    b.ret()
    b.position_at_end(park)
    b.store(size, data_pointer(b, module, owner))
    _release_unless_null(b, module, fn, exchange(b, slot, owner, "held"))
    b.ret()
    module.add_function(fn)
    return fn


def _release_unless_null(b: Builder, module: Module, fn: Function, owner: Value) -> None:
    """Release `owner` unless it is null; `b` continues in a new block."""
    go, done = fn.add_block("release"), fn.add_block("released")
    b.cbr(b.icmp("ne", owner, _NULL), go, done)
    b.position_at_end(go)
    release(b, module, owner)
    b.br(done)
    b.position_at_end(done)
