"""Unroll-and-jam of count-down loop nests in a derivative: independent in-order reductions.

The reverse of `C[m, n] += A[m, k] * B[k, n]` accumulates `dA[m, k] = sum_n dC[m, n] B[k, n]`
in an inner loop over `n`. LLVM vectorises it with an in-order reduction (bit-identical to the
scalar loop, `ordered_reductions`), whose serial chain of dependent adds then bounds the loop.
Jamming `FACTOR` iterations of the outer `k` loop into one inner loop gives `FACTOR`
independent chains, each adding its terms in its own original order: the result is
bit-identical. Iterations left over (trip count not a multiple of `FACTOR`) run in the original
loop, which follows the jammed one.

A nest is jammed only in the canonical shape LLVM's simplification leaves a reverse nest in
(`reverse_loops` runs it first), and only when reordering its iterations is provably exact:

- both loops count down by one to zero (`phi [s, pre], [i, latch]; i = phi - 1; exit when
  i == 0`); the inner loop is one block, its trip count `N` defined outside the outer loop;
  the outer loop's blocks are header, inner preheader, inner loop, inner exit and latch, its
  only phi is its counter, its exit has no phi, the header's branch (if any) is invariant;
- every memory access is a load or store through a `noalias` array argument (distinct
  arguments never overlap: the front end's call checks guarantee it, `DiffSpec.noalias_arrays`);
  the only calls are to pure math intrinsics;
- an argument the nest stores to is accessed in one way only, with one element type:
  `base[n]` in the inner loop with `base` outer-invariant (same element for different `k` only
  at the same `n`: jammed copy `k` still comes first), `row[n]` with `row = base + k*N` (rows of
  different `k` are disjoint for `0 <= n < N`), or `base[k]` outside the inner loop (different
  elements for different `k`). Arguments only loaded from may be read any way.

Anything else is left unchanged. Consumes and produces module text (the derivative's), or
one `Function`.
"""
from __future__ import annotations

from dataclasses import dataclass

from .analysis.cfg import Loop, find_loops
from .ir.builder import Builder
from .ir.clone import clone_instruction
from .ir.types import I64
from .ir.values import Argument, Block, Function, Instruction, Value, const_int
from .known.memory import PURE_FLOAT_INTRINSICS, noalias_argument, pointer_bases

__all__ = ["FACTOR", "jam_loop_nests", "may_jam"]

FACTOR = 4


def may_jam(fn: Function) -> bool:
    """A necessary condition for a nest of `fn` to be jammed, checked on the derivative as
    synthesized, before the LLVM simplification `reverse_loops` pays first: a loop around an
    innermost loop, calling pure intrinsics only, whose memory accesses other than stack
    slots all lead back to `noalias` arguments (through geps, phis, selects and what stack slots hold). A
    reverse nest reading the tape or a temporary's shadow fails it (GMM's, LSTM's)."""
    held: dict[int, list[Value]] = {}          # stack slot -> the values stored into it
    for block in fn.blocks:
        for inst in block.instructions:
            if inst.opcode == "store" and _is_slot(inst.operands[1]):
                held.setdefault(id(inst.operands[1]), []).append(inst.operands[0])
    loops = find_loops(fn)
    parents = {id(loop.parent) for loop in loops}
    return any(loop.parent is not None and id(loop) not in parents
               and _plain_nest(loop.parent, held) for loop in loops)


def _plain_nest(outer: Loop, held: dict[int, list[Value]]) -> bool:
    for block in outer.blocks:
        for inst in block.instructions:
            if inst.opcode == "call" and \
                    not (inst.callee_name or "").startswith(PURE_FLOAT_INTRINSICS):
                return False
            if inst.opcode in ("load", "store"):
                ptr = inst.operands[0 if inst.opcode == "load" else 1]
                if not _is_slot(ptr) and not _from_arguments(ptr, held):
                    return False
    return True


def _from_arguments(ptr: Value, held: dict[int, list[Value]]) -> bool:
    """Whether every pointer `ptr` may be is an offset of a `noalias` argument (looking
    through `pointer_bases` and what the stack slots they are loaded from hold)."""
    seen, work = set(), [ptr]
    while work:
        v = work.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        for base in pointer_bases(v):
            if isinstance(base, Instruction) and base.opcode == "load" \
                    and _is_slot(base.operands[0]):
                work.extend(held.get(id(base.operands[0]), []))
            elif not (isinstance(base, Argument) and "noalias" in base.attrs.split()):
                return False
    return True


def _is_slot(ptr: Value) -> bool:
    return isinstance(ptr, Instruction) and ptr.opcode == "alloca"


def jam_loop_nests(fn: Function, factor: int = FACTOR) -> bool:
    """Jam every qualifying nest of `fn` by `factor`; whether any was jammed."""
    changed = False
    while True:   # re-analyse after each change; a jammed loop's `ugt` exit test never matches
        nest = next(filter(None, (_nest(fn, loop) for loop in find_loops(fn))), None)
        if nest is None:
            return changed
        _jam(fn, nest, factor)
        changed = True


@dataclass
class _Nest:
    pre: Block              # outer preheader
    head: Block
    inner_pre: Block
    inner: Block
    inner_exit: Block
    latch: Block
    exit: Block
    counter: Instruction    # the outer phi (remaining iterations)
    k: Instruction          # counter - 1: this iteration's index
    n: Instruction          # the inner index


def _countdown(header: Block, latch: Block, preheader: Block
               ) -> tuple[Instruction, Instruction, Block] | None:
    """(phi, phi - 1, exit) of a loop counting down to zero, or None."""
    term = latch.terminator
    if term is None or term.opcode != "br" or len(term.operands) != 3:
        return None
    test, out, back = term.operands
    if back is not header or not isinstance(test, Instruction) or test.opcode != "icmp" \
            or test.predicate != "eq" or test.operands[1] != const_int(I64, 0):
        return None
    dec = test.operands[0]
    if not (isinstance(dec, Instruction) and dec.opcode == "add" and dec.block is header
            and dec.operands[1] == const_int(I64, -1)):
        return None
    phi = dec.operands[0]
    if not (isinstance(phi, Instruction) and phi.opcode == "phi" and phi.block is header
            and phi.type == I64
            and sorted(map(id, phi.incoming)) == sorted((id(preheader), id(latch)))
            and phi.operands[phi.incoming.index(latch)] is dec):
        return None
    return phi, dec, out  # type: ignore[return-value]


def _single(blocks: list[Block]) -> Block | None:
    return blocks[0] if len(blocks) == 1 else None


def _nest(fn: Function, loop: Loop) -> _Nest | None:
    """The nest `loop` heads, when it has the jammable shape (module docstring)."""
    preds = fn.predecessors()
    inner_blocks = [b for b in loop.blocks if b in preds[b]]   # the one-block inner loop
    if len(loop.latches) != 1 or len(loop.blocks) != 5 or len(inner_blocks) != 1:
        return None
    head, latch, inner = loop.header, loop.latches[0], inner_blocks[0]
    pre = _single([p for p in preds[head] if p not in loop.blocks])
    inner_pre = _single([p for p in preds[inner] if p is not inner])
    inner_exit = _single([s for s in inner.successors() if s is not inner])
    if pre is None or inner_pre is None or inner_exit is None or pre.terminator is None \
            or pre.terminator.operands != [head] or preds[inner_exit] != [inner] \
            or inner_exit.successors() != [latch] or inner_pre.successors() != [inner] \
            or any(inner_pre.phis()) \
            or len({head, latch, inner, inner_pre, inner_exit}) != 5:
        return None
    outer = _countdown(head, latch, pre)
    counted = _countdown(inner, inner, inner_pre)
    if outer is None or counted is None or list(head.phis()) != [outer[0]]:
        return None
    counter, k, exit_ = outer
    if exit_ in loop.blocks or any(exit_.phis()):
        return None
    head_term = head.terminator
    if head_term is None or sorted(map(id, head.successors())) not in (
            [id(inner_pre)], sorted((id(inner_pre), id(latch)))):
        return None
    if len(head_term.operands) == 3 and _inside(head_term.operands[0], loop):
        return None
    trip = counted[0].operands[counted[0].incoming.index(inner_pre)]
    if _inside(trip, loop) or _used_outside(fn, loop):
        return None
    nest = _Nest(pre, head, inner_pre, inner, inner_exit, latch, exit_, counter, k, counted[1])
    return nest if _exact(nest, loop, trip) else None


def _used_outside(fn: Function, loop: Loop) -> bool:
    """Whether a value of `loop` is used outside it (LCSSA form has none: exit phis)."""
    return any(_inside(op, loop) for block in fn.blocks if block not in loop.blocks
               for inst in block.instructions for op in inst.operands)


def _inside(v: Value, loop: Loop) -> bool:
    return isinstance(v, Instruction) and v.block in loop.blocks


def _element(ptr: Value, index: Value) -> Value | None:
    """`base` when `ptr` is `getelementptr T, base, index` (one index), else None."""
    if isinstance(ptr, Instruction) and ptr.opcode == "getelementptr" \
            and len(ptr.operands) == 2 and ptr.operands[1] is index:
        return ptr.operands[0]
    return None


def _access_kind(nest: _Nest, loop: Loop, trip: Value, inst: Instruction, ptr: Value) -> tuple:
    """How `inst` addresses its argument: ("C", base) `base[n]`, ("R", row) `row[n]` with
    `row = base + k*N`, ("K", base) `base[k]` (bases outer-invariant), or ("?",)."""
    if inst.block is nest.inner:
        base = _element(ptr, nest.n)
        if base is None:
            return ("?",)
        if not _inside(base, loop):
            return ("C", base)
        offset = base.operands[1] if isinstance(base, Instruction) \
            and base.opcode == "getelementptr" and len(base.operands) == 2 else None
        if isinstance(offset, Instruction) and offset.opcode == "mul" \
                and sorted(map(id, offset.operands)) == sorted((id(nest.k), id(trip))) \
                and not _inside(base.operands[0], loop) \
                and base.source_type == ptr.source_type:  # type: ignore[union-attr]
            return ("R", base)
        return ("?",)
    base = _element(ptr, nest.k)
    return ("K", base) if base is not None and not _inside(base, loop) else ("?",)


def _exact(nest: _Nest, loop: Loop, trip: Value) -> bool:
    """Whether running the nest's iterations jammed gives every memory cell the same
    sequence of accesses (module docstring)."""
    by_root: dict[Argument, list[tuple[Instruction, Value]]] = {}
    for block in loop.blocks:
        for inst in block.instructions:
            if inst.opcode == "call":
                if not (inst.callee_name or "").startswith(PURE_FLOAT_INTRINSICS):
                    return False
            elif inst.opcode in ("load", "store"):
                ptr = inst.operands[0 if inst.opcode == "load" else 1]
                root = noalias_argument(ptr)
                if root is None or inst.volatile or inst.ordering:
                    return False
                by_root.setdefault(root, []).append((inst, ptr))
            elif inst.opcode in ("atomicrmw", "cmpxchg", "fence", "va_arg", "invoke", "alloca"):
                return False
    for accesses in by_root.values():
        if all(i.opcode == "load" for i, _ in accesses):
            continue
        kinds = {_access_kind(nest, loop, trip, i, p) for i, p in accesses}
        elements = {str(i.type if i.opcode == "load" else i.operands[0].type)
                    for i, _ in accesses}
        sources = {str(p.source_type) for _, p in accesses if isinstance(p, Instruction)}
        if len(kinds) != 1 or next(iter(kinds))[0] == "?" or len(elements) != 1 \
                or sources != elements:
            return False
    return True


def _jam(fn: Function, nest: _Nest, factor: int) -> None:
    """Put a loop running `factor` outer iterations per trip before the nest; the nest then
    runs the 0 .. factor-1 iterations left."""
    def new(name: str) -> Block:
        block = Block(f"{nest.head.name}.jam.{name}", fn)
        fn.blocks.insert(fn.blocks.index(nest.head), block)
        return block
    entry, head, inner_pre, inner, inner_exit, latch, done = (
        new(s) for s in ("entry", "head", "pre", "inner", "exit", "latch", "done"))
    blocks = {nest.head: head, nest.inner_pre: inner_pre, nest.inner: inner,
              nest.inner_exit: inner_exit, nest.latch: latch}
    start = nest.counter.operands[nest.counter.incoming.index(nest.pre)]
    b = Builder(entry)
    b.cbr(b.icmp("ugt", start, const_int(I64, factor - 1)), head, done)

    b.position_at_end(head)
    counter = b.phi(I64, f"{nest.counter.name}.jam")
    maps: list[dict[int, Value]] = []
    for c in range(factor):
        left = counter if c == 0 else b.binop("sub", counter, const_int(I64, c))
        maps.append({id(nest.counter): left})
    phis: list[tuple[Instruction, Instruction, dict[int, Value]]] = []

    def copy(block: Block, target: Block, parts: str) -> None:
        for m in maps:
            for inst in block.instructions:
                is_phi = inst.opcode == "phi"
                if inst.is_terminator or is_phi != (parts == "phis") or inst is nest.counter:
                    continue
                new_inst = clone_instruction(inst, lambda v, m=m: m.get(id(v), v),
                                             lambda x: blocks.get(x, x))
                target.append(new_inst)
                m[id(inst)] = new_inst
                if is_phi:
                    phis.append((inst, new_inst, m))

    copy(nest.head, head, "body")
    head_term = nest.head.terminator
    assert head_term is not None
    if len(head_term.operands) == 3:
        b.position_at_end(head)
        b.cbr(head_term.operands[0], *(blocks[x] for x in head_term.operands[1:]))  # type: ignore
    else:
        Builder(head).br(inner_pre)
    copy(nest.inner_pre, inner_pre, "body")
    Builder(inner_pre).br(inner)
    copy(nest.inner, inner, "phis")
    copy(nest.inner, inner, "body")
    inner_term = nest.inner.terminator
    assert inner_term is not None
    Builder(inner).cbr(maps[0][id(inner_term.operands[0])],
                       *(blocks.get(x, x) for x in inner_term.operands[1:]))  # type: ignore
    copy(nest.inner_exit, inner_exit, "phis")
    copy(nest.inner_exit, inner_exit, "body")
    Builder(inner_exit).br(latch)
    copy(nest.latch, latch, "phis")
    copy(nest.latch, latch, "body")
    b.position_at_end(latch)
    rest = b.binop("sub", counter, const_int(I64, factor), f"{nest.counter.name}.jam.next")
    b.cbr(b.icmp("ugt", rest, const_int(I64, factor - 1)), head, done)
    counter.operands, counter.incoming = [start, rest], [entry, latch]
    for old, new_phi, m in phis:
        new_phi.operands = [m.get(id(v), v) for v in old.operands]
        new_phi.incoming = [blocks[x] for x in old.incoming]

    b.position_at_end(done)
    left = b.phi(I64, f"{nest.counter.name}.jam.left")
    left.operands, left.incoming = [start, rest], [entry, latch]
    b.cbr(b.icmp("eq", left, const_int(I64, 0)), nest.exit, nest.head)
    nest.pre.terminator.operands = [entry]  # type: ignore[union-attr]
    nest.counter.operands[nest.counter.incoming.index(nest.pre)] = left
    nest.counter.incoming[nest.counter.incoming.index(nest.pre)] = done
