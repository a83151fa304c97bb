"""Static facts the reverse pass decides with: loops, induction variables, what survives.

For every primal value the reverse pass needs, one of four answers (`ReversePlan.kind`, an
`Access`):
- "direct": a constant, argument, or value computed once on every path to the return,
  usable as is after the forward pass;
- "iv": an affine induction variable of an enclosing loop, rebuilt from the reverse loop's
  counter (`start + step * counter`; for a pointer stepping by a constant number of bytes,
  `start` advanced by `step * counter` bytes);
- "recompute": a cheap pure instruction (integer and address arithmetic, comparisons,
  casts, integer min/max/abs intrinsics, loads from memory the function never writes, or does not write after the load
  when the reverse runs in the same call) whose operands are themselves free (or hoisted);
  or, in its own block, a product of two active values (its adjoint reads them anyway);
- "recurrence": an integer counter advanced by an inner loop's trip count per iteration
  (a packed-triangle index), rebuilt backwards from a stack slot (`recurrences.py`);
- "hoist": invariant in the loops around the use that do not contain its definition (a
  shadow base pointer, a pointer phi of an outer loop, a row offset): taped once per run of
  the outermost such loop, at its exits, and read from a stack slot by that loop's reverse;
- "table": invariant in the outermost loop around it, varying with inner loops whose trip
  counts are known when it starts: stored per iteration into a table with a slot per inner
  iteration, read back at the same slot (`tables.py`);
- "tape": everything else (loop-carried floats, results of math calls, loads from memory
  that is written) is pushed on the tape by the forward pass.
"""
from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

from ...analysis.cfg import Loop, dominates, dominators, find_loops, reverse_post_order
from ...analysis.induction import InductionVariable, defined_outside, induction_variables
from ...errors import UnsupportedError
from ...ir.types import I64, size_of
from ...ir.values import (Argument, Block, ConstInt, Constant, Function, GlobalRef, Instruction,
                          Value, const_int)
from ...known.memory import PURE_INTEGER_INTRINSICS, pointer_base, pointer_bases
from ...known.model import Role, is_local_allocation, role_of, written_arguments
from ..returns import is_exceptional_return
from .kept import written_after

if TYPE_CHECKING:
    from .tables import TableNest

PURE_OPCODES = {"add", "sub", "mul", "shl", "lshr", "ashr", "and", "or", "xor", "icmp", "fcmp",
         "select", "trunc", "zext", "sext", "fptrunc", "fpext", "fptoui", "fptosi", "uitofp",
         "sitofp", "bitcast", "getelementptr", "freeze", "extractvalue", "insertvalue",
         "fadd", "fsub", "fmul", "fneg", "ptrtoint", "inttoptr"}

RECOMPUTE_COST = 18      # longest chain cloned to rebuild one value: an integer, pointer or
                         # comparison instruction costs 1, any other 2


class Access(Enum):
    """How the reverse pass obtains a primal value (see the module docstring)."""
    DIRECT = "direct"
    IV = "iv"
    RECOMPUTE = "recompute"
    HOIST = "hoist"
    RECURRENCE = "recurrence"
    TABLE = "table"
    TAPE = "tape"


class ReversePlan:
    def __init__(self, fn: Function, returns: list[Block], reloads: bool = False,
                 products: frozenset[Instruction] = frozenset(),
                 vector_math: frozenset[str] = frozenset(),
                 changing: frozenset[Argument] = frozenset()) -> None:
        """`reloads`: the reverse runs in the same call as the forward pass (not in split
        halves, between which the caller may write the memory), so a load whose memory nothing
        writes after it can be repeated by the reverse. `products`: active `fmul`s of two
        active operands, which their own adjoint reads in the reverse of their block: there
        the product is recomputed from them rather than taped beside them. `vector_math`:
        math callees the linked derivative calls libmvec for where a loop vectorises (see
        `streamed_math`). `changing`: pointer arguments whose memory the caller may write
        between split halves (`split_inputs.py`): never read again by the reverse."""
        self.fn = fn
        self.products = products
        self.vector_math = vector_math
        self.idom = dominators(fn)
        self.loops = find_loops(fn)
        self.loop_of: dict[Block, Loop] = {}
        for loop in reversed(self.loops):          # outermost first, inner ones overwrite
            for block in loop.blocks:
                self.loop_of[block] = loop
        self.preds = fn.predecessors()
        self._check_reducible()
        self._check_loop_shape()
        self.once = {b for b in fn.blocks if b in self.idom and b not in self.loop_of
                     and all(dominates(self.idom, b, r) for r in returns)}
        self.returns = returns
        self.ivs = self._induction_variables()
        self.pointer_ivs = self._pointer_induction_variables()    # step: i64 bytes
        self.written = written_bases(fn)
        self.reloads = reloads
        self.changing = changing
        self.recurrences: dict[Instruction, Any] = {}   # set by the synthesizer (recurrences.py)
        self._reloadable: dict[int, bool] = {}
        # allocation calls whose arrays live until their own reverse (kept between calls in
        # slots, or held by a reference: `state.py`), set by the synthesizer before it asks
        # `reloadable`
        self.live_arrays: frozenset[Instruction] = frozenset()
        self._recomputable_memo: dict[tuple[int, int, int], bool] = {}
        self._leaving: dict[int, frozenset[Block]] = {}
        self._tables: dict[tuple[int, int], TableNest | None] = {}

    # ------------------------------------------------------------ loops
    def preheader(self, loop: Loop) -> Block:
        return next(p for p in self.preds[loop.header] if p not in loop.blocks)

    def latch(self, loop: Loop) -> Block:
        return loop.latches[0]

    def loops_containing(self, block: Block) -> list[Loop]:
        """Enclosing loops of `block`, outermost first."""
        out = []
        loop = self.loop_of.get(block)
        while loop is not None:
            out.append(loop)
            loop = loop.parent
        return out[::-1]

    def executes_once(self, block: Block) -> bool:
        """At most once per call: outside every loop (the CFG is reducible)."""
        return block not in self.loop_of

    def _check_reducible(self) -> None:
        order = {b: i for i, b in enumerate(reverse_post_order(self.fn))}
        for block, i in order.items():
            for succ in block.successors():
                if order[succ] <= i and not dominates(self.idom, succ, block):
                    raise UnsupportedError(
                        f"irreducible control flow (edge {block.name} -> {succ.name})",
                        function=self.fn.name, hint="restructure the loop")

    def _check_loop_shape(self) -> None:
        for loop in self.loops:
            outside = [p for p in self.preds[loop.header] if p not in loop.blocks]
            if len(outside) != 1 or len(loop.latches) != 1:
                raise UnsupportedError(
                    f"loop at block '{loop.header.name}' is not in loop-simplify form "
                    "(one preheader, one latch)", function=self.fn.name,
                    hint="canonicalize the IR first (ir_passes.canonicalize)")

    def _induction_variables(self) -> dict[Instruction, InductionVariable]:
        return {phi: iv for loop in self.loops for phi, iv in induction_variables(loop).items()}

    def _pointer_induction_variables(self) -> dict[Instruction, InductionVariable]:
        """Pointer phis advanced by a constant offset per iteration (Numba's array
        iterators): rebuilt, not taped, so that no address of theirs is kept on the tape."""
        ivs: dict[Instruction, InductionVariable] = {}
        for loop in self.loops:
            pre, latch = self.preheader(loop), self.latch(loop)
            for phi in loop.header.phis():
                if not phi.type.is_pointer:
                    continue
                start = phi.operands[phi.incoming.index(pre)]
                nxt = phi.operands[phi.incoming.index(latch)]
                if not (isinstance(nxt, Instruction) and nxt.opcode == "getelementptr"
                        and nxt.operands[0] is phi and len(nxt.operands) == 2
                        and isinstance(nxt.operands[1], ConstInt)):
                    continue
                step = nxt.operands[1].value * size_of(nxt.source_type)  # type: ignore
                if self.defined_outside(start, loop):
                    ivs[phi] = InductionVariable(loop, start, const_int(I64, step))
        return ivs

    def defined_outside(self, v: Value, loop: Loop) -> bool:
        """Defined outside `loop`: fixed while it runs (the reverse obtains it like any
        value defined there, see `kind`)."""
        return defined_outside(v, loop)

    # ------------------------------------------------------------ availability
    def kind(self, v: Value, at: Block) -> Access:
        """How the reverse of block `at` obtains primal value `v` (see module docstring)."""
        if isinstance(v, (Constant, Argument, GlobalRef)):
            return Access.DIRECT
        assert isinstance(v, Instruction)
        if v.block in self.once:
            return Access.DIRECT
        iv = self.ivs.get(v) or self.pointer_ivs.get(v)
        if iv is not None and at in iv.loop.blocks:
            return Access.IV
        if self._recomputable(v, at, depth=0) or (v in self.products and v.block is at) \
                or self._beside_math_result(v, at):
            return Access.RECOMPUTE
        rec = self.recurrences.get(v)
        if rec is not None and at in rec.loop.blocks and rec.available(self, at) \
                and rec.available(self, rec.loop.header):
            return Access.RECURRENCE
        if self.hoist_loop(v, at) is not None:
            return Access.HOIST
        if self.table_nest(v, at) is not None:
            return Access.TABLE
        return Access.TAPE

    def table_nest(self, v: Value, at: Block) -> TableNest | None:
        """The loop nest `v` can be kept in a table for (`tables.TableNest`), or None."""
        from .tables import table_nest
        key = (id(v), id(at))
        if key not in self._tables:
            self._tables[key] = table_nest(self, v, at)
        return self._tables[key]

    def _beside_math_result(self, v: Instruction, at: Block) -> bool:
        """A float add, subtract, multiply or negation of one math call's result, which the
        reverse keeps anyway for the call's own derivative, and operands it can rebuild:
        rebuilt from that result (a sigmoid's `1 + exp(-x)` beside `exp(-x)`). At worst the
        result's slot replaces `v`'s."""
        if v.opcode not in ("fadd", "fsub", "fmul", "fneg") or v.block is None \
                or not dominates(self.idom, v.block, at):
            return False
        kept = [op for op in v.operands if not self._recomputable(op, at, depth=2)]
        return len(kept) == 1 and isinstance(kept[0], Instruction) and kept[0].opcode == "call"

    def hoist_loop(self, v: Value, at: Block) -> Loop | None:
        """The outermost loop around `at` that does not contain `v`'s definition, when `v`
        can be taped once per run of it: pushed at each of its exits (all dominated by the
        definition) and read by its reverse, which is entered only through those exits (no
        return inside it). None otherwise."""
        if not isinstance(v, Instruction) or v.block is None or v.block not in self.idom:
            return None
        loop = next((l for l in self.loops_containing(at) if v.block not in l.blocks), None)
        if loop is None or any(r in loop.blocks for r in self.returns):
            return None
        if not all(dominates(self.idom, v.block, e) for e in self.exits(loop)):
            return None
        return loop

    def carrier(self, v: Value, at: Block) -> Block | None:
        """The latch of `at`'s loop when `v`, needed by the reverse of `at`, can be taped
        there instead, once per iteration for all blocks of the loop that need it: `v` is
        defined in the same loop, `at` runs in every iteration that reaches the latch, and
        the loop is left only from its latch or from its header when `at` is not the header
        (or by raising, after which no reverse runs). The latch's reverse, which comes first in
        each reverse iteration, keeps it in a stack slot for the others. None otherwise."""
        loop = self.loop_of.get(at)
        if loop is None or not isinstance(v, Instruction) or self.loop_of.get(v.block) \
                is not loop:                                   # type: ignore[arg-type]
            return None
        latch = self.latch(loop)
        leaving = self.leaving_blocks(loop)
        if not dominates(self.idom, at, latch) or not leaving <= {latch, loop.header} \
                or (at is loop.header and at is not latch and at in leaving):
            return None
        return latch

    def leaving_blocks(self, loop: Loop) -> frozenset[Block]:
        """The blocks of `loop` that leave it other than by raising: a normal return, or a
        branch out of it to a block that does not raise (after raising no reverse runs)."""
        known = self._leaving.get(id(loop))
        if known is None:
            known = self._leaving[id(loop)] = frozenset(
                b for b in loop.blocks if b in self.returns or any(
                    s not in loop.blocks and not _raises(s) for s in b.successors()))
        return known

    def exits(self, loop: Loop) -> list[Block]:
        """Blocks outside `loop` entered from it, in a fixed order."""
        out: dict[Block, None] = {}
        for block in self.fn.blocks:
            if block in loop.blocks:
                for succ in block.successors():
                    if succ not in loop.blocks and succ in self.idom:
                        out[succ] = None
        return list(out)

    def _recomputable(self, v: Value, at: Block, depth: int) -> bool:
        if isinstance(v, (Constant, Argument, GlobalRef)):
            return True
        assert isinstance(v, Instruction)
        if v.block in self.once:
            return True
        iv = self.ivs.get(v)
        if iv is not None:
            return at in iv.loop.blocks
        key = (id(v), id(at), depth)
        known = self._recomputable_memo.get(key)
        if known is None:
            known = self._recomputable_memo[key] = self._recomputable_instruction(v, at, depth)
        return known

    def _recomputable_instruction(self, v: Instruction, at: Block, depth: int) -> bool:
        """`depth`: the cost of the chain above `v` (`RECOMPUTE_COST`; integers are cheap
        and Numba's indexing alone, wraparound and strides from a loaded index to a row
        pointer, is ~10 deep)."""
        root = depth == 0
        depth += 1 if v.type.is_int or v.type.is_pointer else 2
        if depth > RECOMPUTE_COST or v.block is None \
                or not dominates(self.idom, v.block, at):
            return False
        # integer min/max/abs too: Numba clamps range() bounds with smax, so a loop's trip
        # count is recomputed from them instead of taped per run
        pure = (v.opcode == "load" and self.reloadable(v)) or v.opcode in PURE_OPCODES \
            or (v.callee_name or "").startswith(PURE_INTEGER_INTRINSICS) \
            or self.streamed_math(v, at)
        if pure and all(self._recomputable(op, at, depth) for op in v.operands):
            return True
        return not root and self.hoist_loop(v, at) is not None

    def streamed_math(self, call: Instruction, at: Block) -> bool:
        """A call to a math function libmvec vectorises, in a one-block loop (which LLVM
        vectorises, the reverse's copy too) and varying with every loop around it (not a
        value an outer loop repeats): one vector-math call per use in the reverse instead of
        8 bytes per element written to memory and read back. Its operands must be
        recomputable too."""
        if call.callee_name not in self.vector_math or call.block is None:
            return False
        loops = self.loops_containing(call.block)
        if not loops or len(loops[-1].blocks) != 1 or self.hoist_loop(call, at) is not None:
            return False
        return {id(l) for l in loops} <= self._counted_by(call, RECOMPUTE_COST)

    def _counted_by(self, v: Value, budget: int, seen: set[int] | None = None) -> set[int]:
        """ids of the loops whose induction variables `v`'s operand tree reads (within
        `budget` levels)."""
        seen = set() if seen is None else seen
        if not isinstance(v, Instruction) or budget < 0 or id(v) in seen:
            return set()
        seen.add(id(v))
        iv = self.ivs.get(v) or self.pointer_ivs.get(v)
        if iv is not None:
            return {id(iv.loop)}
        out: set[int] = set()
        for op in v.operands:
            out |= self._counted_by(op, budget - 1, seen)
        return out

    def read_only(self, ptr: Value) -> bool:
        """Memory the function never writes (distinct arrays are assumed not to overlap),
        nor its caller between split halves."""
        if self.written is None:
            return False
        base = pointer_base(ptr)
        return isinstance(base, Argument) and base not in self.written \
            and base not in self.changing

    def reloadable(self, load: Instruction) -> bool:
        """A load the reverse may repeat and read the same value: of memory the function
        never writes, or (with `reloads`) of argument arrays or `live_arrays` no write
        reachable from the load may touch. The reverse writes only shadows, and the call-time
        overlap check keeps distinct arguments apart."""
        if load.volatile:
            return False
        if self.read_only(load.operands[0]):
            return True
        if not self.reloads or self.written is None:
            return False
        known = self._reloadable.get(id(load))
        if known is None:
            leaves = [self._live_leaf(b) for b in pointer_bases(load.operands[0])]
            known = all(leaf is not None for leaf in leaves) \
                and not written_after(load, leaves)  # type: ignore[arg-type]
            self._reloadable[id(load)] = known
        return known

    def _live_leaf(self, base: Value) -> Value | None:
        """What `written_after` watches for writes to `base`: an argument, or the allocation
        of a live array whose data pointer `base` is."""
        if isinstance(base, Argument):
            return base
        if role_of(base) is Role.HANDLE_DATA and base.operands[0] in self.live_arrays:
            return base.operands[0]
        return None

    def is_iv(self, v: Value) -> bool:
        return v in self.ivs


def written_bases(fn: Function) -> set[Value] | None:
    """Bases of all memory the function writes; None when some write has an unknown base."""
    bases: set[Value] = set()
    for inst in fn.instructions():
        if inst.opcode == "store":
            targets = [inst.operands[1]]
        elif inst.opcode == "call":
            targets = written_arguments(inst)
        else:
            continue
        for base in (b for t in targets for b in pointer_bases(t)):
            if isinstance(base, GlobalRef):   # Numba's globals are constants (messages)
                continue
            if not _known_base(base):
                return None
            bases.add(base)
    return bases


def _raises(block: Block) -> bool:
    """`block` returns an exception status: a `ret` of a nonzero constant, or Numba's
    `store excinfo; br common.ret` whose status phi takes a nonzero constant from it."""
    term = block.terminator
    if term is None:
        return False
    if term.opcode == "ret":
        return is_exceptional_return(term)
    succs = block.successors()
    if term.opcode != "br" or len(succs) != 1:
        return False
    ret = succs[0].terminator
    status = ret.operands[0] if ret is not None and ret.opcode == "ret" and ret.operands \
        else None
    if not (isinstance(status, Instruction) and status.opcode == "phi"
            and status.block is succs[0] and block in status.incoming):
        return False
    code = status.operands[status.incoming.index(block)]
    return isinstance(code, Constant) and code.text != "0"


def _known_base(base: Value) -> bool:
    """Memory we can tell apart from the arguments': their own, stack slots, fresh arrays."""
    return isinstance(base, Argument) or (isinstance(base, Instruction) and (
        base.opcode == "alloca" or is_local_allocation(base)))


__all__ = ["Access", "InductionVariable", "PURE_OPCODES", "RECOMPUTE_COST", "ReversePlan",
           "written_bases"]
