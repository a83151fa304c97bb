"""The tape: a growable stack of frames holding values the reverse pass needs.

Each primal block that needs taped values pushes them as one frame at the end of its forward
execution; the reverse of that block pops the frame at its start. Blocks run backwards in
the reverse pass, so frames come off in exactly the order they went on, whatever the control
flow (loops with unknown trip counts, breaks, early returns).

Slots are compact: an i1 takes one byte, an i32 or a float four, a SIMD vector its size in
whole 8-byte slots, everything else eight (`slot_bytes`). A frame lays its values out largest first, so each sits at a multiple of its
size from the frame's start, and takes exactly their total. Frames follow one another
unpadded, so an access is aligned to min(its size, the largest power of two dividing every
frame of the tape), which `fit` computes once the frames are known.

State lives in three allocas (base, top, end) that LLVM promotes to registers; the stack
grows by `realloc` in an out-of-line function. When the derivative returns (also on
exceptional returns) the buffer is not freed but parked in a module global, taken again by
the next call (an atomic exchange: concurrent calls each get a buffer of their own, the
loser starts empty); fresh pages for every call cost more than the derivative itself on
large tapes. Parked buffers keep their capacity in their first 8 bytes; buffers over
`PARK_LIMIT` bytes are freed.
"""
from __future__ import annotations

from ...ir.builder import Builder, declare
from ...ir.types import (I8, I64, PTR, VOID, FloatType, FunctionType, IntType, StructType, Type,
                        VectorType, size_of)
from ...ir.values import (Block, Constant, Function, GlobalRef, Instruction, Module, Value,
                          const_int)

SLOT = 8
TAPE_PREFIX = "enzyme_py.tape."
GROW_FUNCTION = TAPE_PREFIX + "grow"
RELEASE_FUNCTION = TAPE_PREFIX + "release"
PARKED = TAPE_PREFIX + "parked"
_NO_CAPACITY = TAPE_PREFIX + "no_capacity"
PARK_LIMIT = 1 << 28
RESERVED_PUSH = "tape.reserved.push"      # names the new top of an unchecked push
_STATE = StructType((PTR, PTR, PTR))


class Tape:
    def __init__(self, module: Module, fn: Function, entry: Block, name: str = "tape",
                 parked: bool = True) -> None:
        """`parked=False`: start empty instead of taking the parked buffer (split mode, whose
        reverse half runs the entry again: its forward half takes it, `take_parked`)."""
        self.module = module
        self.fn = fn
        b = Builder(entry)
        self.base = b.alloca(PTR, f"{name}.base")
        self.top = b.alloca(PTR, f"{name}.top")
        self.end = b.alloca(PTR, f"{name}.end")
        _declare_globals(module)
        self.used = False
        self.align = SLOT             # of every frame's start; see `fit`
        if not parked:
            for slot in (self.base, self.top, self.end):
                b.store(Constant(PTR, "null"), slot)
            return
        take_parked(b, self.base, self.top, self.end)

    def fit(self, frames: list[list[Type]]) -> None:
        """Set the alignment frames start at from the types of every frame the tape holds
        (before the first push or pop)."""
        for types in frames:
            size = frame_layout(types)[1]
            if size:
                self.align = min(self.align, size & -size)

    def push(self, block: Block, values: list[Value], checked: bool = True) -> Block:
        """Append a push of `values` at the end of `block` (before its terminator).

        Splits `block` unless `checked` is False (the space was reserved before the loop
        `block` is in, see `reserve`): returns the block that now holds the terminator.
        """
        self.used = True
        need = const_int(I64, frame_layout([v.type for v in values])[1])
        if not checked:
            b = Builder(block)
            b.position_before(block.terminator)
            at = b.load(PTR, self.top, "tape.top")
            self._store_frame(b, at, values)
            b.store(b.gep(I8, at, [need], RESERVED_PUSH), self.top)
            return block
        cont, at = self._ensure(block, need)
        b = Builder(cont)
        b.position_before(term := cont.instructions[-1])
        assert term.is_terminator
        self._store_frame(b, at, values)
        b.store(b.gep(I8, at, [need]), self.top)
        return cont

    def reserve(self, block: Block, need: Value) -> Block:
        """Make room for `need` more bytes at the end of `block` (the forward preheader of a
        loop whose pushes are unchecked); returns the block now holding the terminator."""
        self.used = True
        return self._ensure(block, need)[0]

    def _ensure(self, block: Block, need: Value) -> tuple[Block, Instruction]:
        """Split `block` before its terminator: grow the tape if `need` bytes do not fit.
        Returns the continuation (holding the terminator) and the top there."""
        term = block.instructions.pop()
        b = Builder(block)
        top = b.load(PTR, self.top, "tape.top")
        new_top = b.gep(I8, top, [need])
        full = b.icmp("ugt", new_top, b.load(PTR, self.end))
        grow = self.fn.add_block((block.name or "") + ".tape.grow")
        cont = self.fn.add_block((block.name or "") + ".tape.push")
        b.cbr(full, grow, cont)
        b.position_at_end(grow)
        state = b.call(self._grow_fn(), [b.load(PTR, self.base), top, b.load(PTR, self.end), need],
                       _STATE)
        grown_top = b.extractvalue(state, (1,))
        b.store(b.extractvalue(state, (0,)), self.base)
        b.store(b.extractvalue(state, (2,)), self.end)
        b.store(grown_top, self.top)
        b.br(cont)
        b.position_at_end(cont)
        at = b.phi(PTR, "tape.at")
        at.operands = [top, grown_top]
        at.incoming = [block, grow]
        cont.append(term)
        return cont, at

    def _store_frame(self, b: Builder, at: Value, values: list[Value]) -> None:
        offsets = frame_layout([v.type for v in values])[0]
        for v, offset in zip(values, offsets):
            addr = b.gep(I8, at, [const_int(I64, offset)]) if offset else at
            b.store(v, addr, align=min(self.align, slot_bytes(v.type)))

    def pop(self, b: Builder, values: list[Instruction]) -> None:
        """Emit the pop of one frame at `b`: `values` are pre-made loads, inserted here."""
        offsets, size = frame_layout([v.type for v in values])
        top = b.load(PTR, self.top)
        frame = b.gep(I8, top, [const_int(I64, -size)])
        b.store(frame, self.top)
        for load, offset in zip(values, offsets):
            load.operands = [b.gep(I8, frame, [const_int(I64, offset)]) if offset else frame]
            load.align = min(self.align, slot_bytes(load.type))
            b.insert(load)

    def release(self, b: Builder) -> Instruction:
        """Park the buffer for the next call (see the module docstring); returns the call."""
        fn = self.module.functions.get(RELEASE_FUNCTION)
        if fn is None or fn.is_declaration:
            fn = _build_release(self.module)
        return b.call(fn, [b.load(PTR, self.base), b.load(PTR, self.end)], VOID)

    def _grow_fn(self) -> Function:
        fn = self.module.functions.get(GROW_FUNCTION)
        if fn is None or fn.is_declaration:
            fn = _build_grow(self.module)
        return fn


def slot_bytes(t: Type) -> int:
    """Bytes a value of type `t` takes on the tape: an integer or float narrower than a slot
    its allocation size (i1: one byte), a vector wider than a slot whole slots, anything else
    a full slot."""
    if isinstance(t, (IntType, FloatType)) and size_of(t) < SLOT:
        return size_of(t)
    if isinstance(t, VectorType) and size_of(t) > SLOT:
        return -(-size_of(t) // SLOT) * SLOT
    return SLOT


def frame_layout(types: list[Type]) -> tuple[list[int], int]:
    """The offset of each value in a frame of values of `types` (largest first, so each is
    at a multiple of its size) and the frame's bytes."""
    offsets, at = [0] * len(types), 0
    for i in sorted(range(len(types)), key=lambda k: -slot_bytes(types[k])):
        offsets[i] = at
        at += slot_bytes(types[i])
    return offsets, at


def take_parked(b: Builder, base: Value, top: Value, end: Value) -> None:
    """Start a tape in the stack slots `base`, `top`, `end` with the parked buffer, taken by
    an atomic exchange (empty, of capacity 0, when none is parked)."""
    held = exchange(b, GlobalRef(PARKED), Constant(PTR, "null"), "tape.parked", "acquire")
    empty = b.icmp("eq", held, Constant(PTR, "null"))
    capacity = b.load(I64, b.select(empty, GlobalRef(_NO_CAPACITY), held))
    b.store(held, base)
    b.store(held, top)
    b.store(b.gep(I8, held, [capacity]), end)


def pop_placeholder(t: Type, name: str | None) -> Instruction:
    """A load whose address is filled in by `Tape.pop`."""
    return Instruction("load", t, [], name)


def _build_grow(module: Module) -> Function:
    """{base, top, end} grow(base, top, end, need): realloc to max(2*cap, cap+need, 64 KiB)."""
    fn = Function(GROW_FUNCTION, FunctionType(_STATE, (PTR, PTR, PTR, I64)),
                  ["base", "top", "end", "need"], linkage="internal")
    fn.fn_attrs = "noinline"
    base, top, end, need = fn.args
    b = Builder(fn.add_block("entry"))
    ibase = b.cast("ptrtoint", base, I64)
    used = b.sub(b.cast("ptrtoint", top, I64), ibase)
    cap = b.sub(b.cast("ptrtoint", end, I64), ibase)
    want = _umax(b, _umax(b, b.add(cap, cap), b.add(used, need)), const_int(I64, 65536))
    realloc = declare(module, "realloc", PTR, [PTR, I64])
    new = b.call(realloc, [base, want], PTR)
    state: Value = Constant(_STATE, "poison")
    state = b.insertvalue(state, new, (0,))
    state = b.insertvalue(state, b.gep(I8, new, [used]), (1,))
    state = b.insertvalue(state, b.gep(I8, new, [want]), (2,))
    b.ret(state)
    module.add_function(fn)
    return fn


def _declare_globals(module: Module) -> None:
    module.globals.setdefault(PARKED, f"@{PARKED} = internal global ptr null, align 8")
    module.globals.setdefault(_NO_CAPACITY,
                              f"@{_NO_CAPACITY} = internal constant i64 0, align 8")


def _build_release(module: Module) -> Function:
    """void release(base, end): park the buffer (capacity in its first slot), freeing the
    one parked before; free it instead when over PARK_LIMIT bytes."""
    fn = Function(RELEASE_FUNCTION, FunctionType(VOID, (PTR, PTR)), ["base", "end"],
                  linkage="internal")
    fn.fn_attrs = "noinline"
    base, end = fn.args
    b = Builder(fn.add_block("entry"))
    park, drop = fn.add_block("park"), fn.add_block("drop")
    capacity = b.sub(b.cast("ptrtoint", end, I64), b.cast("ptrtoint", base, I64))
    small = b.icmp("ule", capacity, const_int(I64, PARK_LIMIT))
    b.cbr(b.binop("and", small, b.icmp("ne", base, Constant(PTR, "null"))), park, drop)
    free = declare(module, "free", VOID, [PTR])
    b.position_at_end(drop)
    b.call(free, [base], VOID)
    b.ret()
    b.position_at_end(park)
    b.store(capacity, base)
    before = exchange(b, GlobalRef(PARKED), base, "before")
    b.call(free, [before], VOID)
    b.ret()
    module.add_function(fn)
    return fn


def _umax(b: Builder, x: Value, y: Value) -> Value:
    return b.select(b.icmp("ugt", x, y), x, y)


def exchange(b: Builder, slot: Value, new: Value, name: str,
             ordering: str = "acq_rel") -> Instruction:
    """Atomically store `new` into the pointer global `slot`; the pointer it held."""
    return b.insert(Instruction("atomicrmw", PTR, [slot, new], name, flags=("xchg",),
                                ordering=ordering))
