"""Kill before read: whether one iteration of a loop reads only memory it wrote itself.

Re-running an iteration of a loop `L` (checkpointing: its reverse recomputes it instead of
reading a tape) gives the same values only when every read in `L`'s body of memory the body
also writes reads bytes this same iteration wrote before. (Memory the body only reads must
not change until the re-run: the caller checks that, like `reverse/kept.written_after`.)

This analysis proves it for one shape, a *filled temporary*: an array the function allocated
(`HANDLE_ALLOC` owner, `HANDLE_DATA` pointer), whose data pointers go only into geps, loads
and stores, and which the body overwrites whole before each read:
- a *fill* is a store `data[j] = v` (`getelementptr T, data, j`) on every iteration (its
  block dominates the latch) of a loop inside `L` whose counter `j` starts at 0, steps by 1
  and leaves the loop only from its latch when `j + 1 == N`, with the allocation's size
  `N * sizeof(T)` (`shl N, log2 sizeof(T)`, `mul N, sizeof(T)` or constants): the loop
  stores the whole extent, [0, N);
- a read is *killed* when it lies outside the fill loop and every path from `L`'s header
  to it (without going round `L` again) enters the fill loop, which it leaves only once
  it has stored [0, N). Edges taken only when `N <= 0` (`icmp eq N, 0`, `icmp slt N, 1`,
  ...) are not walked: then the temporary is empty and any read of it is out of bounds,
  undefined in the primal already (Numba does not check bounds; reads are assumed in
  bounds throughout).
Any other memory the body both writes and reads (an argument array, a temporary with no
fill, a pointer going into a call) is *not proven*, and so is the whole loop: the caller
must then keep today's tape. The result lists each temporary with its verdict;
`print_killed_reads` prints it.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..ir.types import size_of
from ..ir.values import (Argument, Block, Constant, Function, GlobalRef, Instruction, Value,
                         int_constant)
from ..known.memory import pointer_bases
from ..known.model import (Role, call_record, is_local_allocation, role_of,
                           written_arguments)
from .cfg import Loop, dominates, dominators, find_loops
from .temporaries import OWNER_USES, data_accesses

__all__ = ["KilledReads", "Verdict", "confined", "killed_reads", "print_killed_reads"]

@dataclass(frozen=True)
class Verdict:
    """One piece of memory the body writes and reads: `base` (an allocation's data pointer,
    or the written value itself), proven or not, and why."""
    base: Value
    proven: bool
    reason: str


@dataclass(frozen=True)
class KilledReads:
    """The verdicts for the loop with header `header`; `proven` when every read in its body
    of memory the body writes is killed."""
    header: Block
    verdicts: tuple[Verdict, ...]

    @property
    def proven(self) -> bool:
        return all(v.proven for v in self.verdicts)


def killed_reads(fn: Function, loop: Loop) -> KilledReads:
    """Whether each iteration of `loop` reads only memory it wrote before (see module)."""
    body = [i for b in _ordered(fn, loop) for i in b.instructions]
    written: dict[int, Value] = {}
    for inst in body:
        targets = [inst.operands[1]] if inst.opcode == "store" else \
            written_arguments(inst) if inst.opcode == "call" and not _inert(inst) else []
        for base in (b for t in targets for b in pointer_bases(t)):
            written.setdefault(id(base), base)
    read: dict[int, list[Instruction]] = {}
    all_read: dict[int, Value] = {}
    for inst in body:
        pointers = [inst.operands[0]] if inst.opcode == "load" else \
            [op for op in inst.operands if op.type.is_pointer] \
            if inst.opcode == "call" and not _inert(inst) else []
        for base in (b for p in pointers for b in pointer_bases(p)):
            all_read.setdefault(id(base), base)
            if id(base) in written:
                read.setdefault(id(base), []).append(inst)
    idom = dominators(fn)
    loops = find_loops(fn)
    verdicts = [_verdict(written[key], readers, loop, loops, idom)
                for key, readers in read.items()]
    unknown = [b for b in written.values() if not _known_origin(b)]
    if not unknown and written:
        unknown = [b for key, b in all_read.items() if not _known_origin(b)]
    verdicts += [Verdict(b, False, "memory of unknown origin (may be any other)")
                 for b in unknown]
    return KilledReads(loop.header, tuple(verdicts))


def print_killed_reads(result: KilledReads) -> str:
    """One line per memory the loop writes and reads: `%base: proven|not proven (reason)`."""
    lines = [f"loop %{result.header.name}: {'proven' if result.proven else 'not proven'}"]
    for v in result.verdicts:
        name = getattr(v.base, "name", None) or "?"
        lines.append(f"  %{name}: {'proven' if v.proven else 'not proven'} ({v.reason})")
    return "\n".join(lines)


def _known_origin(base: Value) -> bool:
    """Memory that is itself and no other: an argument (the call checks keep a written
    array apart from the others), a constant global, a local allocation or stack slot."""
    record = call_record(base)
    return (isinstance(base, (Argument, GlobalRef))
            or isinstance(base, Constant) and base.text in ("null", "undef", "poison")
            or is_local_allocation(base) or record is not None and record.fresh
            or isinstance(base, Instruction) and base.opcode == "alloca")


def _inert(call: Instruction) -> bool:
    """A call that touches no memory through its pointers (data, reference counts)."""
    record = call_record(call)
    return record is not None and (record.inert or record.role in OWNER_USES)


def _ordered(fn: Function, loop: Loop) -> list[Block]:
    return [b for b in fn.blocks if b in loop.blocks]


def _verdict(base: Value, readers: list[Instruction], loop: Loop, loops: list[Loop],
             idom) -> Verdict:
    if role_of(base) is not Role.HANDLE_DATA:
        return Verdict(base, False, "not a temporary the function allocated")
    owner = base.operands[0]                  # type: ignore[union-attr]
    stores = _stores(base, loop)                # type: ignore[arg-type]
    if stores is None:
        return Verdict(base, False, "its pointer goes elsewhere than loads and stores")
    fills = [f for f in (_fill(s, owner, loop, loops, idom) for s in stores) if f is not None]
    if not fills:
        return Verdict(base, False, "no loop in the body stores its whole extent")
    for reader in readers:
        if not any(_killed(reader.block, fill, loop) for fill in fills):
            return Verdict(base, False, f"read at %{reader.name or reader.opcode} in "
                                        f"%{reader.block.name} before a whole fill")
    return Verdict(base, True, f"filled by %{fills[0][0].header.name}")


def confined(data: Value, body: Loop) -> bool:
    """Whether the function's allocation with data pointer `data` is seen only through
    geps, loads and stores (as `_stores`): no call, return or store hands it on."""
    return role_of(data) is Role.HANDLE_DATA and _stores(data, body) is not None


def _stores(data: Instruction, body: Loop) -> list[Instruction] | None:
    """The stores through the data of the allocation behind `data` (`data_accesses`), or
    None when it goes elsewhere; outside the body, calls keeping none of their pointers
    (the `memset` of `np.zeros`) are allowed."""
    found = data_accesses(data.operands[0], data.block.function.users(),  # type: ignore
                          lambda user: user.opcode == "call" and user.block not in body.blocks
                          and getattr(call_record(user), "pointer_neutral", False))
    return None if found is None else [a for a in found if a.opcode == "store"]


def _fill(store: Instruction, owner: Instruction, body: Loop, loops: list[Loop],
          idom) -> tuple[Loop, Value] | None:
    """(fill loop, bound N) when `store` is `data[j] = v` on every iteration of a loop
    inside `body` running exactly N times with `j` counting 0, 1, .., N - 1, and the
    allocation N elements long."""
    at = _element(store.operands[1], store.operands[0].type)
    if at is None:
        return None
    inner = [l for l in loops if store.block in l.blocks and l.header is not body.header
             and l.blocks <= body.blocks]
    for l in inner:                            # innermost first: find_loops sorts by size
        trips = _trips(l)
        if trips is None or not any(at[1] is j or _masked(at[1], j) for j in trips[0]):
            continue
        if dominates(idom, store.block, l.latches[0]) and _whole_extent(
                owner, trips[1], size_of(store.operands[0].type)):
            return l, trips[1]
    return None


def _element(ptr: Value, elem) -> tuple[Value, Value] | None:
    """(data, index) for `getelementptr elem, data, index` on an allocation's data."""
    if not (isinstance(ptr, Instruction) and ptr.opcode == "getelementptr"
            and len(ptr.operands) == 2 and ptr.source_type == elem):
        return None
    if role_of(ptr.operands[0]) is Role.HANDLE_DATA:
        return ptr.operands[0], ptr.operands[1]
    inner = _element(ptr.operands[0], elem)    # Numba's wraparound: `(data + j) + fix(j)`
    if inner is None:
        return None
    return inner[0], _Masked(inner[1], ptr.operands[1])   # type: ignore[return-value]


class _Masked:
    """An index `j` plus `select (icmp slt j, 0), n, 0`: j itself when j >= 0."""

    def __init__(self, index: Value, fix: Value) -> None:
        self.index, self.fix = index, fix


def _masked(at, counter: Instruction) -> bool:
    if not isinstance(at, _Masked) or at.index is not counter:
        return False
    fix = at.fix
    if not (isinstance(fix, Instruction) and fix.opcode == "select" and int_constant(fix.operands[2]) == 0):
        return False
    cond = fix.operands[0]
    return (isinstance(cond, Instruction) and cond.opcode == "icmp" and cond.predicate == "slt"
            and cond.operands[0] is counter and int_constant(cond.operands[1]) == 0)


def _trips(loop: Loop) -> tuple[list[Instruction], Value] | None:
    """(counters, N) when the loop, left only from its single latch, runs exactly N times
    (once entered; N defined outside it), each counter phi `j` taking 0, 1, .., N - 1:
    `j` counts up from 0 by 1, and the latch leaves when `j + 1 == N`, or when a counter
    counting down by 1 from N is at 1 (`c > 1` continues) or reaches 0 after its step."""
    if len(loop.latches) != 1:
        return None
    latch = loop.latches[0]
    exits = {b for b in loop.blocks for s in b.successors() if s not in loop.blocks}
    term = latch.terminator
    if exits != {latch} or term is None or term.opcode != "br" or len(term.operands) != 3:
        return None
    cond = term.operands[0]
    if not (isinstance(cond, Instruction) and cond.opcode == "icmp"):
        return None
    stays = term.operands[1] in loop.blocks
    steps = {}
    for phi in loop.header.phis():
        if len(phi.operands) != 2 or set(phi.incoming) == {latch}:
            continue
        nxt = next(op for op, blk in zip(phi.operands, phi.incoming) if blk is latch)
        start = next(op for op, blk in zip(phi.operands, phi.incoming) if blk is not latch)
        if isinstance(nxt, Instruction) and nxt.opcode == "add" and phi in nxt.operands:
            step = int_constant(nxt.operands[1] if nxt.operands[0] is phi else nxt.operands[0])
            if step in (1, -1) and (nxt.operands[0] is not nxt.operands[1]):
                steps[phi] = (start, step, nxt)
    counters = [phi for phi, (start, step, _) in steps.items() if step == 1 and int_constant(start) == 0]
    if not counters:
        return None
    a, b = cond.operands
    pred = cond.predicate
    bound = None
    for phi, (start, step, nxt) in steps.items():
        if step == 1 and int_constant(start) == 0 and nxt in (a, b) and (
                pred == "eq" and not stays or pred == "ne" and stays):
            bound = b if a is nxt else a       # leaves when j + 1 == N
        elif step == -1 and a is phi and int_constant(b) == 1 and stays and pred in ("sgt", "ugt") \
                or step == -1 and a is nxt and int_constant(b) == 0 and stays and pred in ("sgt", "ne"):
            bound = start                      # c = N, N - 1, .., 1
        if bound is not None:
            break
    if bound is None or isinstance(bound, Instruction) and bound.block in loop.blocks:
        return None
    return counters, bound


def _whole_extent(owner: Instruction, bound: Value, elem: int) -> bool:
    """Whether the allocation `owner` is `bound * elem` bytes."""
    size = owner.operands[0]
    if int_constant(size) is not None:
        return int_constant(bound) is not None and int_constant(size) == int_constant(bound) * elem
    if not isinstance(size, Instruction) or size.opcode not in ("shl", "mul"):
        return False
    n, k = size.operands
    if size.opcode == "mul" and int_constant(n) is not None:
        n, k = k, n
    factor = int_constant(k)
    if factor is None:
        return False
    factor = 1 << factor if size.opcode == "shl" else factor
    return factor == elem and (n is bound or int_constant(n) is not None and int_constant(n) == int_constant(bound))


def _killed(block: Block, fill: tuple[Loop, Value], body: Loop) -> bool:
    """Whether every path from the body's header to `block` within one iteration enters
    the fill loop (edges taken only when the bound is <= 0 excluded), `block` outside it."""
    fill_loop, bound = fill
    if block in fill_loop.blocks or block is body.header:
        return False
    seen, work = {body.header}, [body.header]
    while work:
        blk = work.pop()
        for succ in blk.successors():
            if _empty_edge(blk, succ, bound):
                continue
            if succ is block:
                return False
            if succ in seen or succ not in body.blocks or succ is fill_loop.header:
                continue
            seen.add(succ)
            work.append(succ)
    return True


_EMPTY_WHEN_TRUE = {("eq", 0), ("slt", 1), ("sle", 0), ("ult", 1), ("ule", 0)}
_EMPTY_WHEN_FALSE = {("ne", 0), ("sgt", 0), ("sge", 1), ("ugt", 0), ("uge", 1)}


def _empty_edge(src: Block, dst: Block, bound: Value) -> bool:
    """Whether the edge src -> dst is taken only when `bound <= 0`."""
    term = src.terminator
    if term is None or term.opcode != "br" or len(term.operands) != 3 \
            or term.operands[1] is term.operands[2]:
        return False
    cond = term.operands[0]
    if not (isinstance(cond, Instruction) and cond.opcode == "icmp"):
        return False
    a, b = cond.operands
    pred = cond.predicate
    if b is bound and pred in ("eq", "ne"):
        a, b = b, a
    if a is not bound or int_constant(b) is None:
        return False
    taken_true = dst is term.operands[1]
    key = (pred, int_constant(b))
    return key in (_EMPTY_WHEN_TRUE if taken_true else _EMPTY_WHEN_FALSE)


