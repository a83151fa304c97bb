"""Values kept in a table indexed by the inner loops' counters instead of taped per iteration
of the outer loop they do not vary with.

A value whose block lies in loops L1 > L2 > ... > Lm and that does not vary with the
outermost one, L1 (its operand tree: pure instructions and float intrinsics, loads of memory
the function never writes, values defined outside L1, constants, and the induction variables
of L2..Lm with start and step of the same kind), is the same in every iteration of L1. When
L2..Lm have trip counts known at entry (`trips.py`) from values defined outside L1, the
forward pass stores it into slot `k2 * T3 * ... * Tm + ... + km` of a table of T2 * ... * Tm
slots (`ki`: Li's iteration counter, below its trip count Ti), allocated before L1 starts and
freed when the derivative returns; the reverse reads the same slot. Every iteration of L1
overwrites a slot with the same value, so the reverse of any iteration reads the right one:
T2 * ... * Tm slots instead of the L1 trip count times as many on the tape.

Only a top-level L1 qualifies (a table filled by each run of a nested L1 would hold the last
run's values only), only in one call (`ReversePlan.reloads`: the split halves do not share
the table), and only where the inner loops leave by their latch alone (otherwise Ti is only
an upper bound of what the loop runs, not of what the table would need).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ...analysis.cfg import Loop, dominates
from ...ir.builder import Builder, declare
from ...ir.types import I64, PTR, VOID, FunctionType, size_of
from ...ir.values import (Argument, Block, Constant, Function, GlobalRef, Instruction, Module,
                          Value, const_int)
from ...known.memory import PURE_FLOAT_INTRINSICS, PURE_INTEGER_INTRINSICS
from .plan import PURE_OPCODES, ReversePlan
from .tape import TAPE_PREFIX
from .trips import TripCount, emit_trip_count, entry_trip_count

if TYPE_CHECKING:
    from .state import ReverseState

_PURE_MATH = PURE_FLOAT_INTRINSICS + tuple(
    f"llvm.{f}." for f in ("exp", "exp2", "log", "log2", "log10", "sin", "cos", "pow"))
_PURE = PURE_OPCODES | {"fdiv"}
_DEPTH = 64
TABLE_ALLOCATE = TAPE_PREFIX + "table.allocate"
TABLE_FREE = TAPE_PREFIX + "table.free"


@dataclass(frozen=True)
class TableNest:
    """`outer`: L1, the loop the value does not vary with; `inner`: L2..Lm with their trip
    counts (start and bound defined outside L1)."""
    outer: Loop
    inner: tuple[Loop, ...]
    trips: tuple[TripCount, ...]


def table_nest(plan: ReversePlan, v: Value, at: Block) -> TableNest | None:
    """Where `v`, needed by the reverse of block `at`, can be kept in a table (see the module
    docstring); None otherwise."""
    if not plan.reloads or plan.written is None or not isinstance(v, Instruction) \
            or v.block is None or v.opcode == "phi":
        return None
    loops = plan.loops_containing(v.block)
    if len(loops) < 2 or loops[0].parent is not None or at not in loops[-1].blocks \
            or not dominates(plan.idom, v.block, at) \
            or any(r in loops[0].blocks for r in plan.returns):
        return None
    outer, inner = loops[0], tuple(loops[1:])
    trips = []
    for loop in inner:
        tc = entry_trip_count(plan, loop)
        if tc is None or not plan.leaving_blocks(loop) <= {plan.latch(loop)} \
                or not all(plan.defined_outside(x, outer) for x in (tc.start, tc.bound)):
            return None
        trips.append(tc)
    if not _invariant(plan, v, outer, {id(l) for l in inner}, {}, 0):
        return None
    return TableNest(outer, inner, tuple(trips))


def _invariant(plan: ReversePlan, v: Value, outer: Loop, inner: set[int], memo: dict[int, bool],
               depth: int) -> bool:
    """`v` is the same in every iteration of `outer` at the same counters of `inner`."""
    if isinstance(v, (Constant, Argument, GlobalRef)) or plan.defined_outside(v, outer):
        return True
    if not isinstance(v, Instruction) or depth > _DEPTH:
        return False
    known = memo.get(id(v))
    if known is not None:
        return known
    memo[id(v)] = False                              # a cycle through a phi varies
    iv = plan.ivs.get(v) or plan.pointer_ivs.get(v)
    if iv is not None:
        ok = id(iv.loop) in inner and all(
            _invariant(plan, x, outer, inner, memo, depth + 1) for x in (iv.start, iv.step))
    else:
        callee = v.callee_name or ""
        ok = (v.opcode in _PURE or (v.opcode == "load" and not v.volatile
                                    and plan.read_only(v.operands[0]))
              or (v.opcode == "call" and callee.startswith(_PURE_MATH + PURE_INTEGER_INTRINSICS))) \
            and all(_invariant(plan, o, outer, inner, memo, depth + 1)
                    for o in v.operands)
    memo[id(v)] = ok
    return ok




class Tables:
    """The tables of one derivative: allocated in the forward preheader of their outer loop,
    filled after each forward definition, read by the reverse, freed at every return."""

    def __init__(self, st: ReverseState) -> None:
        self.st = st
        self.slots: dict[int, tuple[Instruction, list[Instruction]]] = {}  # id(v) -> table, strides
        self.releases: list[Instruction] = []   # the tape's releases: free the tables there

    def read(self, b: Builder, v: Instruction, nest: TableNest,
             counter: Callable[[Loop], Value]) -> Value:
        """`v` in the reverse at builder `b` (`counter(loop)`: the reverse counter there)."""
        table, strides = self._table(v, nest)
        ptr = b.gep(v.type, b.load(PTR, table), [self._index(
            b, [counter(l) for l in nest.inner], [b.load(I64, s) for s in strides])])
        return b.load(v.type, ptr, (v.name or "") + ".table")

    def finish(self) -> None:
        """Free every table before each release of the tape, at the returns (a null table:
        its loop never started)."""
        free = table_function(self.st.module, TABLE_FREE)
        for mark in self.releases:
            b = Builder()
            b.position_before(mark)
            for table, _ in self.slots.values():
                b.call(free, [b.load(PTR, table)], VOID)

    def _table(self, v: Instruction, nest: TableNest) -> tuple[Instruction, list[Instruction]]:
        st = self.st
        known = self.slots.get(id(v))
        if known is not None:
            return known
        name = v.name or "v"
        table = st.zeroed_alloca(PTR, name + ".table")
        strides = [st.alloca(I64, f"{name}.stride{i}") for i in range(len(nest.inner))]
        pre = st.fwd[st.plan.preheader(nest.outer)]
        b = Builder()
        b.position_before(pre.terminator)
        stride: Value = const_int(I64, 1)
        for tc, slot in reversed(list(zip(nest.trips, strides))):
            b.store(stride, slot)
            stride = b.mul(stride, emit_trip_count(b, tc, st.map(tc.start), st.map(tc.bound)))
        size = b.mul(stride, const_int(I64, size_of(v.type)))
        b.store(b.call(table_function(st.module, TABLE_ALLOCATE), [size], PTR), table)
        fwd = st.map(v)
        assert isinstance(fwd, Instruction) and fwd.block is not None
        b.block, b.index = fwd.block, fwd.block.instructions.index(fwd) + 1
        index = self._index(b, [st.map(st.counters[l]) for l in nest.inner],
                            [b.load(I64, s) for s in strides])
        b.store(fwd, b.gep(v.type, b.load(PTR, table), [index]))
        self.slots[id(v)] = (table, strides)
        return table, strides

    @staticmethod
    def _index(b: Builder, counters: list[Value], strides: list[Value]) -> Value:
        index: Value = const_int(I64, 0)
        for c, s in zip(counters, strides):
            index = b.add(index, b.mul(c, s))
        return index


def table_function(module: Module, name: str) -> Function:
    """`TABLE_ALLOCATE` (ptr (i64 bytes): `malloc`) or `TABLE_FREE` (void (ptr): `free`
    unless null), built once per module; `tape_captured.py` rebuilds them on the front end's
    allocator when the derivative is differentiated."""
    fn = module.functions.get(name)
    if fn is not None and not fn.is_declaration:
        return fn
    alloc = name == TABLE_ALLOCATE
    fn = Function(name, FunctionType(PTR if alloc else VOID, (I64 if alloc else PTR,)),
                  ["size" if alloc else "table"], linkage="internal")
    fn.fn_attrs = "noinline"
    (TABLE_BODIES[name])(module, fn, declare(module, "malloc", PTR, [I64]) if alloc
                         else declare(module, "free", VOID, [PTR]))
    module.add_function(fn)
    return fn


def allocate_body(module: Module, fn: Function, allocate: Function | GlobalRef) -> None:
    b = Builder(fn.add_block("entry"))
    b.ret(b.call(allocate, [fn.args[0]], PTR))


def free_body(module: Module, fn: Function, free: Function | GlobalRef) -> None:
    entry, freeing, done = fn.add_block("entry"), fn.add_block("free"), fn.add_block("done")
    b = Builder(entry)
    b.cbr(b.icmp("eq", fn.args[0], Constant(PTR, "null")), done, freeing)
    b.position_at_end(freeing)
    b.call(free, [fn.args[0]], VOID)
    b.br(done)
    b.position_at_end(done)
    b.ret()


TABLE_BODIES = {TABLE_ALLOCATE: allocate_body, TABLE_FREE: free_body}

__all__ = ["TABLE_ALLOCATE", "TABLE_FREE", "TableNest", "Tables", "table_function",
           "table_nest"]
