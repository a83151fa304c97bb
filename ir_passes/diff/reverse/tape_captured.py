"""The tape and kept memory of a derivative that is itself differentiated (forward or reverse
over reverse, and over a forward derivative keeping its temporaries: API.md's second
derivatives every way round).

A reverse derivative keeps its tape in memory no outer pass can shadow: the buffer parked in a
module global by the previous call, grown by `realloc` (`tape.py`). When a front end captures
a derivative's module to differentiate it, `differentiable_tapes` rewrites the module:

- the tape starts empty, in a new buffer of one slot holding capacity 0 (as a parked buffer
  would), not null: every tape pointer then comes from an allocation the pass shadows;
- it grows into a new buffer with a (volatile) `memcpy` of the used part, the old one freed
  (role RAW_FREE), and is freed when the derivative returns instead of being parked;
- its buffers come from `TAPE_ALLOCATE` (a raw allocation, role RAW_ALLOC), which tells the
  analyses that the memory is a tape: the integers read back from it (loop counts, branches
  taken) are numbers without derivative (`analysis.activity.tape_numbers`);
- the tables of values invariant in an outer loop (`tables.py`) come from `TAPE_ALLOCATE`
  too and are freed with the runtime's;
- the temporaries and their shadows are allocated and released each call, not kept in slots
  (`parked_shadows.py`; a forward derivative's kept temporaries, `forward_kept.py`, too).

The rewritten grow, release, take and park functions lose `noinline`, so the front end
inlines them.
"""
from __future__ import annotations

from ...ir.builder import Builder, declare
from ...ir.parser import parse_module
from ...ir.printer import print_module
from ...ir.types import I1, I8, I64, PTR, VOID
from ...ir.values import TRUE, Constant, Function, GlobalRef, Module, Value, const_int
from ...known.memory import TAPE_ALLOCATE
from ...known.model import Role, runtime_call
from ..shadows import allocate_shadow, release
from .parked_shadows import PARK_FUNCTION, TAKE_FUNCTION
from .tables import TABLE_ALLOCATE, TABLE_BODIES, TABLE_FREE
from .tape import _STATE, GROW_FUNCTION, PARKED, RELEASE_FUNCTION, SLOT, _umax

def differentiable_tapes(text: str) -> str:
    """`text` (a module's LLVM IR) with its derivatives' tapes made differentiable; other
    modules are returned unchanged."""
    if PARKED not in text and GROW_FUNCTION not in text and TAKE_FUNCTION not in text:
        return text
    module = parse_module(text)
    for fn in list(module.functions.values()):
        _take_nothing_parked(module, fn)
    for name, build in ((GROW_FUNCTION, _grow_body), (RELEASE_FUNCTION, _release_body),
                        (TAKE_FUNCTION, _take_body), (PARK_FUNCTION, _park_body)):
        fn = module.functions.get(name)
        if fn is not None and not fn.is_declaration:
            fn.blocks = []
            fn.fn_attrs = ""
            build(module, fn)
    for name, free in ((TABLE_ALLOCATE, False), (TABLE_FREE, True)):   # tables.py
        fn = module.functions.get(name)
        if fn is not None and not fn.is_declaration:
            fn.blocks = []
            fn.fn_attrs = ""
            runtime = (declare(module, runtime_call(Role.RAW_FREE).name, VOID, [PTR]) if free
                       else declare(module, TAPE_ALLOCATE, PTR, [I64]))
            TABLE_BODIES[name](module, fn, runtime)
    return print_module(module)


def _take_nothing_parked(module: Module, fn: Function) -> None:
    """Each exchange with the parked buffer gives a new empty tape (capacity 0) instead."""
    for block in fn.blocks:
        for inst in list(block.instructions):
            if inst.opcode == "atomicrmw" and inst.operands[0] == GlobalRef(PARKED):
                b = Builder()
                b.position_before(inst)
                empty = _allocate(b, module, const_int(I64, SLOT))
                b.store(const_int(I64, 0), empty)
                block.instructions.remove(inst)
                for user in fn.instructions():
                    user.replace_uses(inst, empty)


def _allocate(b: Builder, module: Module, size: Value) -> Value:
    return b.call(declare(module, TAPE_ALLOCATE, PTR, [I64]), [size], PTR)


def _grow_body(module: Module, fn: Function) -> None:
    """{base, top, end} grow(base, top, end, need): a new buffer of max(2*cap, used+need,
    64 KiB) bytes holding the used part of the old one, which is freed."""
    base, top, end, need = fn.args
    b = Builder(fn.add_block("entry"))
    ibase = b.cast("ptrtoint", base, I64)
    used = b.sub(b.cast("ptrtoint", top, I64), ibase)
    cap = b.sub(b.cast("ptrtoint", end, I64), ibase)
    want = _umax(b, _umax(b, b.add(cap, cap), b.add(used, need)), const_int(I64, 65536))
    new = _allocate(b, module, want)
    memcpy = declare(module, "llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
    b.call(memcpy, [new, base, used, TRUE], VOID)   # volatile: kept a copy of slots, never
    #                                                 turned into integer loads and stores
    _free(b, module, base)
    state: Value = Constant(_STATE, "poison")
    state = b.insertvalue(state, new, (0,))
    state = b.insertvalue(state, b.gep(I8, new, [used]), (1,))
    state = b.insertvalue(state, b.gep(I8, new, [want]), (2,))
    b.ret(state)


def _release_body(module: Module, fn: Function) -> None:
    """void release(base, end): free the buffer."""
    b = Builder(fn.add_block("entry"))
    _free(b, module, fn.args[0])
    b.ret()


def _take_body(module: Module, fn: Function) -> None:
    """ptr take(slot, size, align, zeroed): a new zeroed owner (none is kept between calls)."""
    _, size, align, _ = fn.args
    b = Builder(fn.add_block("entry"))
    b.ret(allocate_shadow(b, module, size, align)[0])


def _park_body(module: Module, fn: Function) -> None:
    """void park(slot, owner, size): release the shadow."""
    b = Builder(fn.add_block("entry"))
    release(b, module, fn.args[1])
    b.ret()


def _free(b: Builder, module: Module, buffer: Value) -> None:
    b.call(declare(module, runtime_call(Role.RAW_FREE).name, VOID, [PTR]), [buffer], VOID)
