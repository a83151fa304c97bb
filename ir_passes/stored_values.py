"""Reads of a temporary array replaced by the value its filling loop stored there.

ADBench's GMM fills a temporary from `np.empty` and reads it back in later loops:

    for j in range(d): xc[j] = x[i, j] - means[k, j]
    for j in range(d): qxc[j] = math.exp(icf[k, j]) * xc[j]

Each read `xc[j]` is memory the function writes, so the reverse pass would tape it (8 bytes
per read per (i, k)). The read is `x[i, j] - means[k, j]` again: this pass rewrites it so,
from arguments the function never writes, which the reverse pass reloads. When no read of
the temporary is left, its stores go too: nothing observes them.

A read `T[I]` is forwarded from the store `T[J] = V(J)` when
- `T` is an array the function allocated, written by that one store only, and its pointers
  go nowhere but into loads and stores (no call may write or read it);
- the store runs on every iteration of its loop, whose counter `J` starts at 0, steps by 1
  and ends the loop when it reaches `N`: the loop writes T[0..N) and nothing else;
- the read's index `I` is the counter of a loop around the read counting the same range
  (same start 0, step 1, bound `N`), so `I` is in [0, N);
- every path to the read from the start of the innermost loop holding both (or from the
  function's entry) runs the store loop, which leaves only through its bound;
- `V` is a few cheap instructions of `J`, of values that dominate the read, and of loads of
  memory the function never writes.
A temporary left without reads loses its stores and then its allocation.
"""
from __future__ import annotations

from .analysis.cfg import Loop, dominates, dominators, find_loops, reaches_avoiding
from .analysis.temporaries import data_accesses
from .ir.clone import clone_instruction
from .ir.types import I1
from .ir.values import (Argument, Block, Constant, Function, GlobalRef, Instruction, Value,
                        const_int)
from .known.memory import pointer_bases
from .known.model import Role, role_of
from .diff.reverse.plan import written_bases

__all__ = ["forward_stored_values"]

_CHEAP = {"fadd", "fsub", "fmul", "fneg", "add", "sub", "mul", "shl", "getelementptr",
          "sext", "zext", "trunc", "sitofp", "uitofp", "fpext", "fptrunc", "select", "icmp",
          "fcmp"}
_MAX_CLONED = 8


def forward_stored_values(fn: Function) -> bool:
    """Forward the stored values of `fn`'s filled temporaries to their reads; whether any."""
    temporaries = _filled_temporaries(fn)
    if not temporaries:
        return False
    loops = find_loops(fn)
    idom = dominators(fn)
    loop_of: dict[Block, Loop] = {}
    for loop in reversed(loops):              # outermost first, inner ones overwrite
        for block in loop.blocks:
            loop_of[block] = loop
    counted = {c.loop: c for c in (_counted(l, fn) for l in loops) if c is not None}
    read_only = _read_only(fn)
    changed = False
    for owner, (store, loads) in temporaries.items():
        fill = _fill(store, loop_of, counted, idom)
        if fill is None:
            continue
        kept = []
        for load in loads:
            value = _forwarded(load, fill, loop_of, counted, idom, read_only)
            if value is None:
                kept.append(load)
                continue
            _replace(fn, load, value)
            _drop_unused(fn, load.operands)
            changed = True
        if not kept:                          # write-only now: the store is dead
            _remove_dead(store)
            _remove_allocation(owner)
            changed = True
    return changed


class _Counted:
    """A loop `for j in range(bound)`: counter phi from 0, +1 per iteration, left only from
    its latch when the incremented counter equals `bound`."""

    def __init__(self, loop: Loop, counter: Instruction, bound: Value) -> None:
        self.loop, self.counter, self.bound = loop, counter, bound


def _counted(loop: Loop, fn: Function) -> _Counted | None:
    if len(loop.latches) != 1:
        return None
    latch = loop.latches[0]
    exits = [b for b in loop.blocks for s in b.successors() if s not in loop.blocks]
    term = latch.terminator
    if exits != [latch] or term is None or term.opcode != "br" or len(term.operands) != 3:
        return None
    cond = term.operands[0]
    if not (isinstance(cond, Instruction) and cond.opcode == "icmp"
            and cond.predicate in ("eq", "ne")):
        return None
    leaves_on_true = term.operands[1] not in loop.blocks
    if leaves_on_true != (cond.predicate == "eq"):
        return None
    for phi in loop.header.phis():
        inc = [op for op, blk in zip(phi.operands, phi.incoming) if blk is latch]
        start = [op for op, blk in zip(phi.operands, phi.incoming) if blk is not latch]
        nxt = inc[0] if inc else None
        if not (isinstance(nxt, Instruction) and nxt.opcode == "add" and phi in nxt.operands
                and _is_int(nxt.operands[1] if nxt.operands[0] is phi else nxt.operands[0], 1)
                and len(start) == 1 and _is_int(start[0], 0) and nxt in cond.operands):
            continue
        bound = cond.operands[1] if cond.operands[0] is nxt else cond.operands[0]
        if isinstance(bound, Instruction) and bound.block in loop.blocks:
            return None
        return _Counted(loop, phi, bound)
    return None


def _filled_temporaries(fn: Function) -> dict[Instruction, tuple[Instruction, list[Instruction]]]:
    """Allocations (by owner) written by exactly one store, whose owner goes only to data,
    incref and decref calls (and its null check) and whose data pointers only address loads and that store:
    owner -> (store, loads)."""
    users = fn.users()
    out: dict[Instruction, tuple[Instruction, list[Instruction]]] = {}
    for owner in fn.instructions():
        access = data_accesses(owner, users) if role_of(owner) is Role.HANDLE_ALLOC else None
        if access is None:
            continue
        stores = [a for a in access if a.opcode == "store"]
        loads = [a for a in access if a.opcode == "load"]
        if len(stores) == 1 and loads and all(l.type == stores[0].operands[0].type
                                               for l in loads):
            out[owner] = (stores[0], loads)
    return out


class _Fill:
    def __init__(self, store: Instruction, counted: _Counted, data: Value) -> None:
        self.store, self.counted, self.data = store, counted, data


def _fill(store: Instruction, loop_of, counted, idom) -> _Fill | None:
    """The store as `data[counter] = V` on every iteration of a counted loop."""
    loop = loop_of.get(store.block)
    c = counted.get(loop) if loop is not None else None
    index = _element(store.operands[1])
    if c is None or index is None or index[1] is not c.counter:
        return None
    if not dominates(idom, store.block, c.loop.latches[0]):
        return None
    return _Fill(store, c, index[0])


def _element(ptr: Value) -> tuple[Value, Value] | None:
    """`ptr` as (data, index) for `getelementptr T, data, index` with T the stored type."""
    if not (isinstance(ptr, Instruction) and ptr.opcode == "getelementptr"
            and len(ptr.operands) == 2):
        return None
    return ptr.operands[0], ptr.operands[1]


def _forwarded(load: Instruction, fill: _Fill, loop_of, counted, idom,
               read_only) -> Value | None:
    """The value `load` reads, rebuilt before it from the fill's stored value; None when
    that cannot be shown."""
    index = _element(load.operands[0])
    if index is None or index[0] is not fill.data or \
            fill.store.operands[1].source_type != load.operands[0].source_type:
        return None
    reader = _counter_loop(index[1], load.block, loop_of, counted)
    if reader is None or reader.bound is not fill.counted.bound and not (
            isinstance(reader.bound, Constant) and reader.bound == fill.counted.bound):
        return None
    if not _fill_runs_before(fill.counted.loop, load.block):
        return None
    return _rebuild(fill.store.operands[0], fill.counted, index[1], load, idom, loop_of,
                    read_only)


def _counter_loop(index: Value, block: Block, loop_of, counted) -> _Counted | None:
    loop = loop_of.get(block)
    while loop is not None:
        c = counted.get(loop)
        if c is not None and c.counter is index:
            return c
        loop = loop.parent
    return None


def _fill_runs_before(fill_loop: Loop, block: Block) -> bool:
    """Every path to `block` from the start of the innermost loop holding both (or from the
    entry) enters the fill loop, and `block` is not in it. (A path that leaves that loop
    comes back only through its header, where the walk started: a new iteration.)"""
    if block in fill_loop.blocks:
        return False
    common = fill_loop.parent
    while common is not None and block not in common.blocks:
        common = common.parent
    fn = block.function
    start = common.header if common is not None else fn.entry  # type: ignore[union-attr]
    return start is not fill_loop.header and not reaches_avoiding(start, block,
                                                                   (fill_loop.header,))


def _rebuild(v: Value, fill: _Counted, index: Value, at: Instruction, idom, loop_of,
             read_only) -> Value | None:
    """Instructions computing `v` with the fill's counter replaced by `index`, inserted
    before `at` (None when `v` is not cheap or reads written memory)."""
    made: list[Instruction] = []
    mapped: dict[int, Value] = {id(fill.counter): index}

    def build(x: Value) -> Value | None:
        if id(x) in mapped:
            return mapped[id(x)]
        if isinstance(x, (Constant, Argument, GlobalRef)):
            return x
        assert isinstance(x, Instruction)
        if x.block not in fill.loop.blocks:   # the same value at the read (see docstring)
            fixed = dominates(idom, x.block, at.block) and x.block is not at.block and all(
                at.block in l.blocks for l in _loops_around(x.block, loop_of))
            return x if fixed else None
        ok = x.opcode in _CHEAP or (x.opcode == "load" and not x.volatile
                                    and read_only(x.operands[0]))
        if not ok or len(made) >= _MAX_CLONED:
            return None
        ops = [build(op) for op in x.operands]
        if any(op is None for op in ops):
            return None
        it = iter(ops)
        copy = clone_instruction(x, lambda _: next(it), lambda b: b)   # type: ignore[arg-type]
        copy.name = (x.name or "v") + ".fwd"
        made.append(copy)
        mapped[id(x)] = copy
        return copy

    out = build(v)
    if out is None or not made:
        return None
    block = at.block
    assert block is not None
    pos = block.instructions.index(at)
    for inst in made:
        inst.block = block
        block.instructions.insert(pos, inst)
        pos += 1
    return out


def _loops_around(block: Block, loop_of) -> list[Loop]:
    out, loop = [], loop_of.get(block)
    while loop is not None:
        out.append(loop)
        loop = loop.parent
    return out


def _remove_dead(store: Instruction) -> None:
    """Remove `store` and the instructions only it used (pure ones and loads)."""
    fn = store.block.function                 # type: ignore[union-attr]
    store.block.instructions.remove(store)    # type: ignore[union-attr]
    _drop_unused(fn, store.operands)


def _drop_unused(fn: Function, values: list[Value]) -> None:
    """Remove those of `values` (pure instructions and loads) nothing uses any more, and
    then their operands likewise."""
    work = [op for op in values if isinstance(op, Instruction)]
    while work:
        inst = work.pop()
        if inst.block is None or not (inst.opcode in _CHEAP or inst.opcode == "load"):
            continue
        if any(any(op is inst for op in user.operands) for user in fn.instructions()):
            continue
        inst.block.instructions.remove(inst)
        inst.block = None
        work.extend(op for op in inst.operands if isinstance(op, Instruction))


def _remove_allocation(owner: Instruction) -> None:
    """Remove a temporary nothing reads or writes any more (so that a derivative kept
    between calls allocates nothing for it): its data and reference-count calls, its null
    check (the allocation cannot fail when it is not made), then the allocation."""
    fn = owner.block.function                 # type: ignore[union-attr]
    insts = list(fn.instructions())
    users = [i for i in insts if any(op is owner for op in i.operands)]
    for user in users:
        used = any(any(op is user for op in i.operands) for i in insts)
        if role_of(user) is Role.HANDLE_DATA and used:
            return                            # its data pointer still goes somewhere
        if user.opcode == "icmp" and not (user.predicate in ("eq", "ne") and any(
                isinstance(op, Constant) for op in user.operands)):
            return
    for user in users:
        if user.opcode == "icmp":
            _replace(fn, user, const_int(I1, int(user.predicate == "ne")))
        else:
            user.block.instructions.remove(user)   # type: ignore[union-attr]
    owner.block.instructions.remove(owner)    # type: ignore[union-attr]


def _replace(fn: Function, old: Instruction, new: Value) -> None:
    for inst in fn.instructions():
        if any(op is old for op in inst.operands):
            inst.replace_uses(old, new)
    old.block.instructions.remove(old)       # type: ignore[union-attr]


def _read_only(fn: Function):
    written = written_bases(fn)

    def read_only(ptr: Value) -> bool:
        if written is None:
            return False
        bases = pointer_bases(ptr)
        return all(isinstance(b, Argument) and b not in written for b in bases)
    return read_only


def _is_int(v: Value, n: int) -> bool:
    return isinstance(v, Constant) and getattr(v, "value", None) == n and v.type.is_int
