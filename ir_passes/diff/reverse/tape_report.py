"""What reverse mode keeps for its reverse pass, per value: taped, spilled, recomputed or rebuilt.

`tape_report(module, spec)` runs the reverse synthesizer (`driver.synthesize_reverse`) on a
copy of the module and listens to its observer, so the report is the synthesizer's own
decisions, never a second opinion. Per (value, reverse block) the synthesizer reports:
- "tape": a slot (8 bytes; an i1 one, an i32 or float four) pushed at the end of the block's
  forward execution, once per execution of that block (so once per iteration of its
  enclosing loops);
- "spill": a value computed at most once (outside every loop) but not on every path to the
  return: one stack slot per call, stored after its forward definition;
- "recompute": the instruction is cloned into the reverse block from available operands;
- "iv": an induction variable rebuilt from the reverse loop counter (`start + step * i`);
- a predecessor choice (which side of an if/else ran) recomputed from the branch condition
  instead of taped.
Values used directly (arguments, constants, values computed once before every return) are
not reported. The "needed for" column is a description only: the instructions of the block
whose reverse can read the value (per the rule registry), or the recomputed value, loop or
branch it serves.

Sizes: a loop's trip count is derived symbolically from its latch's exit compare
(`icmp pred iv[.next], bound` with a loop-invariant bound) in terms of parameter names
(`n`, `x.shape[0]`) and the counters `k[header]` of enclosing loops (a triangular
`range(j + 1, d)`), so the report can total the tape for given sizes. Trip counts it cannot
express (data-dependent exits) print as `?`.
A block that runs conditionally is counted on every iteration: totals are upper bounds.

`taped_bytes(derivative)` reads the tape pushes of a synthesized derivative back (from its
calls to the tape's grow function): a check that the observer hears every push. The report
is immutable; `print_tape` renders it for the IR inspection tool.
"""
from __future__ import annotations

from dataclasses import replace

from ...analysis.activity import carries_float
from ...analysis.cfg import Loop, reverse_post_order
from ...diagnostics import Diagnostics
from ...ir.parser import parse_module
from ...ir.printer import Namer, print_module
from ...ir.values import Block, ConstInt, Function, GlobalRef, Instruction, Module, Value
from ...known.memory import is_memory_intrinsic
from ..returns import is_exceptional_return
from ..rules import lookup
from ..rules.math import math_rule_name
from ..rules.needs import rule_needs
from ..spec import DiffSpec
from ..split_inputs import changing_arguments
from .last_update import CONDITION_SUFFIX
from .plan import ReversePlan
from .driver import synthesize_reverse
from .retained import Need, Retained, Retention
from .tape import GROW_FUNCTION, RESERVED_PUSH, SLOT  # GROW_FUNCTION: to be renamed public in tape.py
from .tape import slot_bytes
from .recurrences import find_recurrences
from .tape_entries import REBUILT, LoopTrips, TapeEntry, TapeReport, resolve_sizes
from .tape_print import print_tape
from .tape_sizes import Expr
from .tape_trips import TripCounts, size_symbols

__all__ = ["Expr", "LoopTrips", "TapeEntry", "TapeReport", "print_tape", "resolve_sizes",
           "shared_carriers", "tape_report", "taped_bytes"]


# ---------------------------------------------------------------- the report

def shared_carriers(events: list[Retained]) -> set[tuple]:
    """(id(value), carrier) of the values the synthesizer tapes once by their loop's latch:
    those that several blocks would tape (`Availability.share_carried`)."""
    readers: dict[tuple, set[int]] = {}
    for ev in events:
        if ev.carrier is not None and ev.kind is Retention.TAPE:
            readers.setdefault((id(ev.value), ev.carrier), set()).add(id(ev.block))
    return {key for key, blocks in readers.items() if len(blocks) > 1}


def tape_report(module: Module, spec: DiffSpec) -> TapeReport:
    """The tape report of reverse-mode differentiating `spec.primal` (module unchanged)."""
    copy = parse_module(print_module(module))
    events: list[Retained] = []
    synthesize_reverse(copy, spec, observe=events.append)
    return _Report(copy, spec).build(events)


_ADDRESS = ("getelementptr", "select", "bitcast", "addrspacecast", "freeze")


class _Report:
    """The synthesizer's events as rows: names, enclosing loops, reasons, trip counts."""

    def __init__(self, module: Module, spec: DiffSpec) -> None:
        fn = self.fn = module.functions[spec.primal]
        self.diag = Diagnostics(module, fn)
        self.namer = Namer(fn)
        self.symbols = size_symbols(fn, spec)
        returns = [b for b in fn.blocks if (t := b.terminator) is not None
                   and t.opcode == "ret" and not is_exceptional_return(t)]
        self.plan = ReversePlan(fn, returns, reloads=spec.split is None,
                                changing=changing_arguments(fn, spec))
        self.recurrence_of = {id(r.after): r for r in find_recurrences(self.plan).values()}
        self.trip_counts = TripCounts(self.plan, self.symbols,
                                      lambda l: self._block_name(l.header))
        self.primal_ids = {id(i) for i in fn.instructions()}
        self.users = fn.users()

    def build(self, events: list[Retained]) -> TapeReport:
        rows: list[TapeEntry] = []
        spills: dict[tuple, int] = {}     # (what, id(value)) -> its row
        seen: set[Retained] = set()
        block: Block | None = None
        served: list[Retained] = []       # this block's recompute / iv / choice events so far
        shared = shared_carriers(events)
        carried: dict[tuple, int] = {}    # (id(value), carrier) -> its row
        for ev in events:
            if ev in seen:                # memoized per reverse block: one slot per execution
                continue
            seen.add(ev)
            if ev.block is not block:
                block, served = ev.block, []
            reason = self._reason(ev, served)
            if ev.kind in REBUILT:
                served.append(ev)
            once = ev.kind in (Retention.SPILL, Retention.TABLE)
            at = spills.get((ev.what, id(ev.value))) if once else None
            if at is not None:            # one slot (table) per call, read by several blocks
                readers = f"{rows[at].block}, {self._block_name(ev.block)}"
                rows[at] = replace(rows[at], block=readers)
                continue
            if once:
                spills[(ev.what, id(ev.value))] = len(rows)
            key = (id(ev.value), ev.carrier)
            if key in shared:             # taped once by the latch for several blocks
                at = carried.get(key)
                if at is not None:
                    reasons = dict.fromkeys(rows[at].reason.split(" / ") + reason.split(" / "))
                    rows[at] = replace(rows[at], reason=" / ".join(reasons))
                    continue
                carried[key] = len(rows)
                ev = replace(ev, block=ev.carrier)
            rows.append(self._entry(ev, reason))
        order = {id(b): i for i, b in enumerate(reverse_post_order(self.fn))}
        loops = tuple(self._loop_trips(l)       # a loop before the loops nested in it
                      for l in sorted(self.plan.loops, key=lambda l: order[id(l.header)]))
        return TapeReport(self.fn.name or "", tuple(rows), loops,
                          tuple(sorted(set(self.symbols.values()))))

    def _entry(self, ev: Retained, reason: str) -> TapeEntry:
        v = ev.value
        if ev.what is Need.SHADOW:
            name, type_ = self._ref(v) + "'", "ptr"
        elif self._synthetic(v):          # named by the synthesizer ("B12.iter", "B7.from")
            name, type_ = v.name or "", str(v.type)
        else:
            name, type_ = self._ref(v), str(v.type)
        home = v.block if ev.kind is Retention.TABLE else ev.block   # type: ignore[union-attr]
        loops = () if ev.kind is Retention.SPILL else tuple(
            self._block_name(l.header) for l in self.plan.loops_containing(home))
        source = self.diag.source(v) if isinstance(v, Instruction) and not self._synthetic(v) \
            else None
        size = SLOT if ev.what is Need.SHADOW else slot_bytes(v.type)
        return TapeEntry(name, type_, ev.kind, ev.what, self._block_name(ev.block), loops,
                         reason, source, size)

    # ---- why the reverse of ev.block needs ev.value (a description, not a decision)
    def _reason(self, ev: Retained, served: list[Retained]) -> str:
        v, block = ev.value, ev.block
        if ev.what is Need.CHOICE:
            return f"which predecessor entered {self._block_name(block)}"
        for parent in reversed(served):   # the synthesizer asks for operands depth first
            if ev.what is Need.VALUE and any(x is v for x in self._inputs(parent)):
                if parent.what is Need.CHOICE:
                    return f"condition choosing the predecessor of {self._block_name(block)}"
                return ("start or step of iv " if parent.kind is Retention.IV else
                        "operand of recomputed ") + self._ref(parent.value)
        rec = self.recurrence_of.get(id(v))
        if rec is not None:
            return f"{self._ref(rec.phi)} after loop {self._block_name(rec.loop.header)}, " \
                "rebuilt backwards by its reverse"
        if ev.invariant_in is not None:
            return f"invariant in loop {self._block_name(ev.invariant_in.header)} " \
                "(taped at its exit, read by its reverse)"
        if self._synthetic(v) and (v.name or "").endswith(CONDITION_SUFFIX):
            return f"condition %{(v.name or '')[:-len(CONDITION_SUFFIX)]} of a running " \
                "max/min select, from the iteration of its last update"
        if self._synthetic(v):
            assert isinstance(v, Instruction) and v.block is not None
            what = "trip count of loop" if any(l.header is v.block for l in self.plan.loops) \
                else "which predecessor entered"
            return f"{what} {self._block_name(v.block)}"
        reads = self._shadow_reads(v, block) if ev.what is Need.SHADOW \
            else self._value_reads(v, block)
        return " / ".join(dict.fromkeys(reads))

    def _inputs(self, ev: Retained) -> tuple[Value, ...]:
        if ev.what is Need.CHOICE:
            return (ev.value,)
        if ev.kind is Retention.IV:
            iv = self.plan.ivs.get(ev.value)  # type: ignore[arg-type]
            return (iv.start, iv.step) if iv is not None else ()
        return tuple(ev.value.operands)  # type: ignore[union-attr]

    def _value_reads(self, v: Value, block: Block) -> list[str]:
        """How the reverse of `block`'s instructions can read `v` (rule registry: upper bound)."""
        here = [u for u in self.users.get(id(v), []) if u.block is block and u.opcode != "phi"]
        if isinstance(v, Instruction) and v.block is block:
            here.insert(0, v)
        out = [r for u in here for r in self._reads(u, v)]
        return out or [f"index of {self._ref(u)}" for u in self.users.get(id(v), [])
                       if u.opcode == "getelementptr" and u.operands[0] is not v]

    def _reads(self, u: Instruction, v: Value) -> list[str]:
        at = [i for i, o in enumerate(u.operands) if o is v]
        op, callee = u.opcode, u.callee_name or ""
        if op == "select":
            return [f"condition of select {self._ref(u)}"] if 0 in at else []
        if op == "getelementptr":
            return [f"index of {self._ref(u)}"] if any(at) else []
        if op == "call" and is_memory_intrinsic(callee):
            return [f"length of {callee}"] if 2 in at else []
        name = math_rule_name(callee, u.type) if op == "call" else op
        rule = lookup(name)
        if rule is None:
            return []
        floats = frozenset(i for i, o in enumerate(u.operands) if carries_float(o.type))
        needs, needs_res = rule_needs(rule, tuple(o.type for o in u.operands), u.type, floats)
        read = [str(i) for i in at if i in needs]
        out = []
        if read:
            out.append(f"operand{'s' if len(read) > 1 else ''} {', '.join(read)} of {name} "
                       f"{self._ref(u)}")
        if u is v and needs_res:
            out.append(f"result of {name}, for its derivative")
        return out

    def _shadow_reads(self, ptr: Value, block: Block) -> list[str]:
        """The memory accesses of `block` addressed through `ptr`."""
        out = []
        if isinstance(ptr, Instruction) and ptr.block is block and ptr.opcode == "call":
            out.append("shadow array, released by the reverse of its allocation")
        work, seen = [ptr], {id(ptr)}
        while work:
            x = work.pop()
            for u in self.users.get(id(x), []):
                callee = u.callee_name or ""
                if u.opcode in _ADDRESS:
                    if id(u) not in seen:
                        seen.add(id(u))
                        work.append(u)
                elif u.block is not block:
                    continue
                elif u.opcode == "load":
                    out.append(f"shadow address of load {self._ref(u)}")
                elif u.opcode == "store" and u.operands[1] is x:
                    out.append("shadow address of a store")
                elif u.opcode == "call" and is_memory_intrinsic(callee):
                    out.append(f"shadow {'destination' if u.operands[0] is x else 'source'} "
                               f"of {callee}")
        return out

    # ---- names
    def _synthetic(self, v: Value) -> bool:
        """The synthesizer's own values: loop trip counters and "which predecessor" records."""
        return isinstance(v, Instruction) and id(v) not in self.primal_ids

    def _block_name(self, block: Block) -> str:
        return self.namer.ref(block)[1:]

    def _ref(self, v: Value) -> str:
        try:
            return self.namer.ref(v)
        except ValueError:
            return f"%{v.name}"

    # ---- trip counts
    def _loop_trips(self, loop: Loop) -> LoopTrips:
        latch = self.plan.latch(loop)
        term = latch.terminator
        return LoopTrips(self._block_name(loop.header), loop.depth,
                         self._block_name(loop.parent.header) if loop.parent else None,
                         self.trip_counts.trips(loop, term), self.diag.source(term) if term else None)


# ---------------------------------------------------------------- cross-check

def taped_bytes(derivative: Function) -> dict[str, int]:
    """Tape bytes pushed per primal block by a synthesized derivative (from its grow calls
    and its unchecked pushes), keyed by block name ("" for unnamed blocks)."""
    out: dict[str, int] = {}
    suffix = ".tape.grow"
    for block in derivative.blocks:
        for inst in block.instructions:
            if inst.opcode == "call" and isinstance(inst.callee, (GlobalRef, Function)) \
                    and inst.callee.name == GROW_FUNCTION and (block.name or "").endswith(suffix):
                need = inst.operands[-1]
                if isinstance(need, ConstInt):
                    name = (block.name or "")[:-len(suffix)]
                    out[name] = out.get(name, 0) + need.value
            elif inst.opcode == "getelementptr" and inst.name == RESERVED_PUSH:   # unchecked
                need = inst.operands[-1]
                assert isinstance(need, ConstInt)
                out[block.name or ""] = out.get(block.name or "", 0) + need.value
    return out
