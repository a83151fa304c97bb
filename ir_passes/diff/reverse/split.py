"""Split mode: the reverse derivative cut in two at its reverse entry.

The combined derivative (see `driver.py`) runs `entry -> forward blocks -> reverse.entry ->
reverse blocks -> done`, and no reverse block jumps back into the forward part. So it is cut
there into two functions with Numba's ABI:

- `F(retptr, excinfo, params and shadows...)` holds the entry and the forward blocks; where
  they would enter the reverse, it packs the *state* and returns `{primal value, state}`;
- `R(retptr, excinfo, params and shadows..., d_ret..., state)` holds a copy of the entry
  (its slots start as in the combined function), restores the state, and continues with
  the reverse blocks exactly as the combined function would.

The state is everything the reverse part reads that the forward part made: SSA values
defined in forward blocks and the contents of the entry's stack slots both parts use (the
tape's base/top/end, the return slot and its shadow, spilled choices), then copies of the
argument arrays the reverse reads and the caller may change (`split_copies.py`). It is a
uint8 array owned by the front end's runtime (the HANDLE_DTOR, HANDLE_DATA, INCREF and DECREF
roles of `known.model`; Numba's NRT): a header (a used flag, the derivative's id, the bytes
kept), then the values. Its destructor frees what only the reverse part would have freed (the
tape, the shadow arrays on the owned list, the returned arrays' references) when the reverse
never ran.
Addresses of F's own stack frame cannot cross the cut: such a derivative is refused.
F takes the tape buffer the last R parked (`tape.take_parked`), so the tape is kept between
calls as in reverse mode; a state that dies unreversed frees it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import UnsupportedError
from ...ir.builder import Builder, declare
from ...ir.clone import clone_instruction
from ...ir.types import I1, I8, I32, I64, PTR, VOID, ArrayType, FunctionType, StructType, Type, \
    align_of, size_of
from ...ir.values import Block, Constant, Function, Instruction, Module, Value, const_int
from ...known.memory import pointer_base
from ...known.array_layout import MEMINFO
from ...known.model import Role, runtime_call
from ..split_inputs import copied_arrays
from .state import ReverseState
from .parked_shadows import state_slot, take_shadow
from .split_copies import ArrayCopy, emit_copies, fill_copies, read_copies, restore_copies
from .tape import take_parked
from .unreversed import release_listed

# Numba's struct for a 1-d C array: {meminfo, parent, nitems, itemsize, data, shape, strides}
STATE_ARRAY = StructType((PTR, PTR, I64, I64, PTR, ArrayType(1, I64), ArrayType(1, I64)))
STATE_ARGS = [PTR, PTR, I64, I64, PTR, I64, I64]       # the same, exploded as arguments
USED, IDENT, KEPT, HEADER = 0, 8, 16, 24               # header fields (byte offsets)
_STATE_ALIGN = 16                                      # a slot's state buffer (as malloc's)
_ENTRY_OPS = ("alloca", "store", "getelementptr", "bitcast")


@dataclass
class StateLayout:
    """Where each crossing value and slot lives in the state buffer."""
    values: list[tuple[Instruction, int]] = field(default_factory=list)
    slots: list[tuple[Instruction, int, int]] = field(default_factory=list)  # slot, offset, size
    copies: list[ArrayCopy] = field(default_factory=list)   # after the fixed part
    size: int = HEADER                                      # of the fixed part

    def place(self, t: Type) -> int:
        align = max(align_of(t), 8)
        self.size = (self.size + align - 1) // align * align
        at, self.size = self.size, self.size + size_of(t)
        return at

    def slot_offset(self, slot: Instruction) -> int | None:
        return next((at for s, at, _ in self.slots if s is slot), None)


def split_reverse(module: Module, st: ReverseState, names: tuple[str, str],
                  ident: int) -> tuple[Function, Function]:
    """Replace the combined derivative `st.fn` by F and R named `names` (forward, reverse)."""
    fwd_blocks, rev_blocks = _regions(st)
    layout = _layout(st, fwd_blocks, rev_blocks)
    copied = [tuple(st.map(a) for a in args) for args in copied_arrays(st.primal, st.spec)]
    for args in read_copies(copied, rev_blocks):  # type: ignore[arg-type]
        layout.copies.append(ArrayCopy(args, layout.place(I64), layout.place(I64)))
    raw = st.spec.split is not None and st.spec.split.raw_state
    release = None if raw else _release_function(module, st, layout, names[1])
    forward = _forward(module, st, fwd_blocks, layout, names[0], ident, release)
    reverse = _reverse(module, st, rev_blocks, layout, names[1])
    return forward, reverse


# ---------------------------------------------------------------- regions and layout
def _regions(st: ReverseState) -> tuple[list[Block], list[Block]]:
    """The forward blocks (from the entry, not through the reverse entry) and the reverse
    blocks (from the reverse entry), in function order."""
    def reach(start: Block, stop: Block | None) -> set[Block]:
        seen, work = {start}, [start]
        while work:
            for s in work.pop().successors():
                if s is not stop and s not in seen:
                    seen.add(s)
                    work.append(s)
        return seen
    fwd, rev = reach(st.entry, st.re), reach(st.re, None)
    assert not fwd & rev, "the reverse part of a derivative jumps back into its forward part"
    return [b for b in st.fn.blocks if b in fwd], [b for b in st.fn.blocks if b in rev]


def _layout(st: ReverseState, fwd_blocks: list[Block], rev_blocks: list[Block]) -> StateLayout:
    in_fwd = {id(b) for b in fwd_blocks if b is not st.entry}
    in_rev = {id(b) for b in rev_blocks}
    for inst in st.entry.instructions[:-1]:
        if inst.opcode not in _ENTRY_OPS:
            raise _refused(st, f"the derivative's entry computes '{inst.opcode}'")
    crossing: dict[int, Instruction] = {}
    used_in: dict[int, set[str]] = {}
    for block in fwd_blocks + rev_blocks:
        side = "rev" if id(block) in in_rev else "fwd" if id(block) in in_fwd else "entry"
        for inst in block.instructions:
            for op in _used_values(inst):
                if not isinstance(op, Instruction) or op.block is None:
                    continue
                used_in.setdefault(id(op), set()).add(side)
                if side == "rev" and id(op.block) in in_fwd:
                    crossing[id(op)] = op
    layout = StateLayout()
    for phi in st.re.phis():
        layout.values.append((phi, layout.place(phi.type)))
    for v in crossing.values():
        if v.type.is_pointer and _on_stack(v):
            raise _refused(st, f"the address of a stack slot (%{v.name}) is needed by the "
                           "reverse pass")
        layout.values.append((v, layout.place(v.type)))
    if st.owned is not None:                 # the destructor walks the owned list
        for slot in (st.owned.base, st.owned.top):
            used_in.setdefault(id(slot), set()).add("rev")
    for inst in st.entry.instructions:
        if inst.opcode == "alloca" and used_in.get(id(inst), set()) >= {"fwd", "rev"}:
            size = size_of(inst.source_type)  # type: ignore[arg-type]
            layout.slots.append((inst, layout.place(inst.source_type), size))  # type: ignore
    _refuse_stack_addresses(st, fwd_blocks, layout)
    return layout


def _refuse_stack_addresses(st: ReverseState, fwd_blocks: list[Block],
                            layout: StateLayout) -> None:
    """Addresses of F's stack frame must not reach R through the tape or a kept slot."""
    for frame in st.frames.values():
        for v, _ in frame:
            if v.type.is_pointer and _on_stack(v):
                raise _refused(st, f"the address of a stack slot (%{v.name}) is taped")
    kept = {id(slot) for slot, _, _ in layout.slots}
    for block in fwd_blocks:
        for inst in block.instructions:
            if inst.opcode != "store" or id(pointer_base(inst.operands[1])) not in kept:
                continue
            v = inst.operands[0]
            if v.type.is_pointer and _on_stack(v):
                raise _refused(st, f"the address of a stack slot (%{v.name}) is kept for the "
                               "reverse pass")


def _used_values(inst: Instruction) -> list[Value]:
    return list(inst.operands) + ([inst.callee] if inst.callee is not None else [])


def _on_stack(ptr: Value) -> bool:
    base = pointer_base(ptr)
    return isinstance(base, Instruction) and base.opcode == "alloca"


def _refused(st: ReverseState, why: str) -> UnsupportedError:
    return UnsupportedError(f"split mode cannot cut the derivative of {st.spec.primal} in two: "
                            f"{why}; use mode='reverse'")


# ---------------------------------------------------------------- the forward function
def _forward(module: Module, st: ReverseState, blocks: list[Block], layout: StateLayout,
             name: str, ident: int, release: Function | None) -> Function:
    combined = st.fn
    n_params = len(combined.args) - sum(len(g) for g in st.sig.ret_adjoints)
    fn = Function(name, FunctionType(I32, tuple(a.type for a in combined.args[:n_params])),
                  [a.name for a in combined.args[:n_params]])
    vmap: dict[Value, Value] = dict(zip(combined.args[:n_params], fn.args))
    d_ret = {id(a) for group in st.sig.ret_adjoints for a in group}
    if any(id(op) in d_ret for b in blocks for i in b.instructions for op in i.operands):
        raise _refused(st, "its forward part reads d_ret")
    entry = fn.add_block("entry")
    for inst in st.entry.instructions[:-1]:
        vmap[inst] = entry.append(clone_instruction(inst, lambda v: vmap.get(v, v),
                                                    lambda b: b))
    tape = (st.tape.base, st.tape.top, st.tape.end)
    if all(layout.slot_offset(slot) is not None for slot in (tape[0], tape[2])):
        take_parked(Builder(entry), *(vmap[slot] for slot in tape))  # R parks it again
    first = st.entry.terminator.operands[0]   # type: ignore[union-attr]
    Builder(entry).br(first)  # type: ignore[arg-type]
    moved = [b for b in blocks if b is not st.entry]
    pack = Block("split.pack", fn)
    for block in moved:
        block.function = fn
        fn.blocks.append(block)
        for inst in block.instructions:
            _remap(inst, vmap, {st.re: pack})
    fn.blocks.append(pack)
    _pack(module, st, fn, pack, layout, vmap, ident, release)
    return fn


def _remap(inst: Instruction, vmap: dict[Value, Value], blocks: dict[Block, Block]) -> None:
    inst.operands = [blocks.get(op, op) if isinstance(op, Block) else vmap.get(op, op)
                     for op in inst.operands]
    inst.incoming = [blocks.get(b, b) for b in inst.incoming]
    inst.cases = [(c, blocks.get(b, b)) for c, b in inst.cases]


def _pack(module: Module, st: ReverseState, fn: Function, pack: Block, layout: StateLayout,
          vmap: dict[Value, Value], ident: int, release: Function | None) -> None:
    """At the cut: allocate the state (owned, with the destructor `release`; raw without
    one, or taken from its slot: `SplitSpec.reused_state`), fill it, return `{primal value,
    state array}`."""
    b = Builder(pack)
    phis = {}
    for phi in st.re.phis():
        new = b.phi(phi.type, phi.name)
        new.operands, new.incoming = list(phi.operands), list(phi.incoming)
        phis[phi] = new
    mapped = lambda v: vmap.get(v, v)      # noqa: E731
    size, placed = emit_copies(b, module, layout.copies, mapped, layout.size)
    split = st.spec.split
    if release is None and split is not None and split.reused_state:
        meminfo = take_shadow(b, module, state_slot(module, split.forward),
                              size, const_int(I32, _STATE_ALIGN), False)
        data = b.call(_runtime(module, Role.HANDLE_DATA, PTR, [PTR]), [meminfo], PTR)
    elif release is None:
        meminfo = data = b.call(_runtime(module, Role.RAW_ALLOC, PTR, [I64]),
                                [size], PTR)
    else:
        alloc = _runtime(module, Role.HANDLE_DTOR, PTR, [I64, PTR])
        meminfo = b.call(alloc, [size, release], PTR)
        data = b.call(_runtime(module, Role.HANDLE_DATA, PTR, [PTR]), [meminfo], PTR)
    b.store(const_int(I64, 0), data)
    b.store(const_int(I64, ident), _at(b, data, IDENT))
    fill_copies(b, module, data, placed, mapped)
    kept = size
    tape_end = layout.slot_offset(st.tape.top)
    if tape_end is not None:
        top = b.cast("ptrtoint", b.load(PTR, vmap[st.tape.top]), I64)
        base = b.cast("ptrtoint", b.load(PTR, vmap[st.tape.base]), I64)
        kept = b.add(kept, b.sub(top, base))
    b.store(kept, _at(b, data, KEPT))
    for v, at in layout.values:
        b.store(phis[v] if v in phis else vmap.get(v, v), _at(b, data, at))
    memcpy = declare(module, "llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
    for slot, at, nbytes in layout.slots:
        b.call(memcpy, [_at(b, data, at), vmap[slot], const_int(I64, nbytes),
                        const_int(I1, 0)], VOID)
    state = _state_array(b, meminfo, data, size)
    if st.slot.has_value:
        value = b.load(st.slot.type, vmap[st.slot_ptr])
        incref = _runtime(module, Role.INCREF, VOID, [PTR])
        for path in st.spec.ret_arrays:      # the caller's reference; the state keeps one
            b.call(incref, [b.extractvalue(value, path + (MEMINFO,))], VOID)
        out_type = StructType((st.slot.type, STATE_ARRAY))
        out = b.insertvalue(b.insertvalue(_poison(out_type), value, (0,)), state, (1,))
    else:
        out = state
    b.store(out, fn.args[0])
    b.ret(const_int(I32, 0))


def _runtime(module: Module, role: Role, ret: Type, params: list[Type]) -> Function:
    return declare(module, runtime_call(role).name, ret, params)


def _at(b: Builder, base: Value, offset: int) -> Value:
    return b.gep(I8, base, [const_int(I64, offset)]) if offset else base


def _poison(t: Type) -> Value:
    return Constant(t, "poison")


def _state_array(b: Builder, meminfo: Value, data: Value, size: Value) -> Value:
    fields = [meminfo, _null(), size, const_int(I64, 1), data]
    out = _poison(STATE_ARRAY)
    for i, v in enumerate(fields):
        out = b.insertvalue(out, v, (i,))
    out = b.insertvalue(out, size, (5, 0))
    return b.insertvalue(out, const_int(I64, 1), (6, 0))


def _null() -> Value:
    return Constant(PTR, "null")


# ---------------------------------------------------------------- the reverse function
def _reverse(module: Module, st: ReverseState, blocks: list[Block], layout: StateLayout,
             name: str) -> Function:
    combined = st.fn
    params = tuple(a.type for a in combined.args) + tuple(STATE_ARGS)
    names = [a.name for a in combined.args] + [f"tape.{i}" for i in range(len(STATE_ARGS))]
    fn = Function(name, FunctionType(I32, params), names)
    vmap: dict[Value, Value] = dict(zip(combined.args, fn.args))
    data = fn.args[len(combined.args) + 4]
    entry = st.entry
    entry.instructions.pop()                 # br to the forward part
    entry.function = fn
    fn.blocks.append(entry)
    restore = Block("split.restore", fn)
    fn.blocks.append(restore)
    b = Builder(restore)
    for v, at in layout.values:
        vmap[v] = b.load(v.type, _at(b, data, at), v.name)
    memcpy = declare(module, "llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
    for slot, at, size in layout.slots:
        b.call(memcpy, [slot, _at(b, data, at), const_int(I64, size), const_int(I1, 0)], VOID)
    copies = restore_copies(b, data, layout.copies)
    b.br(st.re)
    Builder(entry).br(restore)
    st.re.instructions = [i for i in st.re.instructions if i.opcode != "phi"]
    for inst in entry.instructions:
        _remap(inst, vmap, {})
    vmap.update(copies)                      # the reverse reads the copies
    for block in blocks:
        block.function = fn
        fn.blocks.append(block)
        for inst in block.instructions:
            _remap(inst, vmap, {})
    return fn


# ---------------------------------------------------------------- the state's destructor
def _release_function(module: Module, st: ReverseState, layout: StateLayout,
                      rev_name: str) -> Function:
    """`void release(ptr data, i64 size, ptr info)`: when the state dies before the reverse
    ran, free the tape, release the shadow arrays the reverse would have released (the owned
    list), and drop the state's references to the returned arrays."""
    fn = Function(f"{rev_name}.release", FunctionType(VOID, (PTR, I64, PTR)),
                  ["state", "size", "info"], linkage="internal")
    data = fn.args[0]
    b = Builder(fn.add_block("entry"))
    unused = fn.add_block("unused")
    done = fn.add_block("released")
    b.cbr(b.icmp("eq", b.load(I8, data), const_int(I8, 0)), unused, done)
    b.position_at_end(unused)
    free = declare(module, "free", VOID, [PTR])
    base_at = layout.slot_offset(st.tape.base)
    if base_at is not None:
        b.call(free, [b.load(PTR, _at(b, data, base_at))], VOID)
    _release_owned(b, module, st, layout, data, free)
    slot_at = layout.slot_offset(st.slot_ptr)
    if slot_at is not None and st.spec.ret_arrays:
        value = b.load(st.slot.type, _at(b, data, slot_at))
        decref = _runtime(module, Role.DECREF, VOID, [PTR])
        for path in st.spec.ret_arrays:
            b.call(decref, [b.extractvalue(value, path + (MEMINFO,))], VOID)
    b.br(done)
    b.position_at_end(done)
    b.ret()
    module.add_function(fn)
    return fn


def _release_owned(b: Builder, module: Module, st: ReverseState, layout: StateLayout,
                   data: Value, free: Function) -> None:
    """Drop the shadow arrays on the owned list (the reverse would have released them)."""
    base_at, top_at = layout.slot_offset(st.owned.base), layout.slot_offset(st.owned.top)
    if base_at is None or top_at is None:
        return
    base = b.load(PTR, _at(b, data, base_at))
    release_listed(b, module, base, b.load(PTR, _at(b, data, top_at)))
    b.call(free, [base], VOID)


__all__ = ["HEADER", "IDENT", "KEPT", "STATE_ARRAY", "USED", "split_reverse"]
