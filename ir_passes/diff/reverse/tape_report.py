"""What reverse mode keeps for its reverse pass, per value: taped, spilled, recomputed or rebuilt.

`tape_report(module, spec)` runs the reverse synthesizer (`driver.synthesize_reverse`) on a
copy of the module and listens to its observer, so the report is the synthesizer's own
decisions, never a second opinion. Per (value, reverse block) the synthesizer reports:
- "tape": an 8-byte slot pushed at the end of the block's forward execution, once per
  execution of that block (so once per iteration of its enclosing loops);
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
(`n`, `x.shape[0]`), so the report can total the tape for given sizes. Trip counts it cannot
express (data-dependent exits, bounds depending on an outer loop's variable) print as `?`.
A block that runs conditionally is counted on every iteration: totals are upper bounds.

`taped_slots(derivative)` reads the tape pushes of a synthesized derivative back (from its
calls to the tape's grow function): a check that the observer hears every push. The report
is immutable; `print_tape` renders it for the IR inspection tool.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from ...analysis.activity import carries_float
from ...analysis.cfg import Loop, reverse_post_order
from ...diagnostics import Diagnostics
from ...ir.parser import parse_module
from ...ir.printer import Namer, print_module
from ...ir.values import (Argument, Block, ConstInt, Function, GlobalRef, Instruction, Module,
                          Value)
from ...known.memory import is_memory_intrinsic
from ..returns import is_exceptional_return
from ..rules import lookup
from ..rules.math import math_rule_name
from ..rules.needs import rule_needs
from ..spec import DiffSpec
from .plan import InductionVariable, ReversePlan
from .driver import synthesize_reverse
from .retained import Need, Retained, Retention
from .cost_model import cost_model_lines
from .tape import GROW_FUNCTION, RESERVED_PUSH, SLOT  # GROW_FUNCTION: to be renamed public in tape.py

__all__ = ["Expr", "LoopTrips", "TapeEntry", "TapeReport", "print_tape", "resolve_sizes",
           "tape_report", "taped_slots"]


# ---------------------------------------------------------------- symbolic sizes

@dataclass(frozen=True)
class Expr:
    """A small integer expression over named sizes: op in const, sym, +, -, *, ceildiv."""
    op: str
    args: tuple = ()

    @staticmethod
    def const(v: int) -> Expr:
        return Expr("const", (int(v),))

    @staticmethod
    def sym(name: str) -> Expr:
        return Expr("sym", (name,))

    @property
    def value(self) -> int | None:
        return self.args[0] if self.op == "const" else None

    def __add__(self, other: Expr) -> Expr:
        a, ca = self._split()
        b, cb = other._split()
        if a is None:
            return _join(b, ca + cb)
        return _join(a if b is None else Expr("+", (a, b)), ca + cb)

    def __sub__(self, other: Expr) -> Expr:
        a, ca = self._split()
        b, cb = other._split()
        if b is None or a == b:
            return _join(None if a == b else a, ca - cb)
        if a is None:
            return Expr("-", (Expr.const(ca), other))
        return _join(Expr("-", (a, b)), ca - cb)

    def _split(self) -> tuple[Expr | None, int]:
        """(symbolic part, constant part): `n - 1` -> (n, -1), `3` -> (None, 3)."""
        if self.op == "const":
            return None, self.args[0]
        if self.op in ("+", "-") and self.args[1].op == "const":
            return self.args[0], self.args[1].args[0] * (1 if self.op == "+" else -1)
        return self, 0

    def __mul__(self, other: Expr) -> Expr:
        if self.value == 1:
            return other
        if other.value == 1:
            return self
        if 0 in (self.value, other.value):
            return Expr.const(0)
        if self.value is not None and other.value is not None:
            return Expr.const(self.value * other.value)
        if other.value is not None:       # constants first: 8*n
            return Expr("*", (other, self))
        return Expr("*", (self, other))

    def ceildiv(self, d: int) -> Expr:
        if d == 1:
            return self
        if self.value is not None:
            return Expr.const(-(-self.value // d))
        return Expr("ceildiv", (self, Expr.const(d)))

    def evaluate(self, sizes: Mapping[str, int]) -> int | None:
        """The value for `sizes` (symbol -> int), None if a symbol is missing."""
        if self.op == "const":
            return self.args[0]
        if self.op == "sym":
            return sizes.get(self.args[0])
        a, b = (x.evaluate(sizes) for x in self.args)
        if a is None or b is None:
            return None
        if self.op == "+":
            return a + b
        if self.op == "-":
            return a - b
        if self.op == "*":
            return a * b
        return -(-a // b)

    def symbols(self) -> set[str]:
        if self.op == "sym":
            return {self.args[0]}
        if self.op == "const":
            return set()
        return set().union(*(a.symbols() for a in self.args))

    def __str__(self) -> str:
        return self._fmt(0)

    def _fmt(self, parent: int) -> str:
        if self.op == "const":
            return str(self.args[0])
        if self.op == "sym":
            return self.args[0]
        if self.op == "ceildiv":
            return f"ceil({self.args[0]._fmt(0)}/{self.args[1]._fmt(0)})"
        prec = {"+": 1, "-": 1, "*": 2}[self.op]
        a, b = self.args
        text = f"{a._fmt(prec)} {self.op} {b._fmt(prec + (self.op == '-'))}"
        return f"({text})" if prec < parent else text


def _join(base: Expr | None, c: int) -> Expr:
    if base is None:
        return Expr.const(c)
    if c == 0:
        return base
    return Expr("+", (base, Expr.const(c))) if c > 0 else Expr("-", (base, Expr.const(-c)))



# ---------------------------------------------------------------- report objects

@dataclass(frozen=True)
class LoopTrips:
    header: str
    depth: int
    parent: str | None
    trips: Expr | None            # iterations per entry into the loop; None: unknown
    source: str | None


@dataclass(frozen=True)
class TapeEntry:
    value: str                    # printed primal name ("%.178.le", "%e'" for a shadow)
    type: str
    kind: Retention               # tape | spill | recompute | iv (as `retained.Retained`)
    what: Need                    # value | shadow | choice
    block: str                    # primal block whose reverse needs it (spill: all, ", ")
    loops: tuple[str, ...]        # enclosing loop headers, outermost first
    reason: str                   # what the reverse pass needs it for (a description)
    source: str | None            # Python "file:line" of the value, when known

    @property
    def bytes_per_iteration(self) -> int:
        return SLOT if self.kind is Retention.TAPE else 0


@dataclass(frozen=True)
class TapeReport:
    function: str
    entries: tuple[TapeEntry, ...]
    loops: tuple[LoopTrips, ...]
    symbols: tuple[str, ...]      # size names a `sizes` mapping may give

    @property
    def taped(self) -> tuple[TapeEntry, ...]:
        return tuple(e for e in self.entries if e.kind is Retention.TAPE)

    @property
    def spilled(self) -> tuple[TapeEntry, ...]:
        return tuple(e for e in self.entries if e.kind is Retention.SPILL)

    @property
    def recomputed(self) -> tuple[TapeEntry, ...]:
        """Values recomputed or rebuilt as induction variables (not predecessor choices)."""
        return tuple(e for e in self.entries if e.kind in (Retention.RECOMPUTE, Retention.IV)
                     and e.what is not Need.CHOICE)

    @property
    def choices(self) -> tuple[TapeEntry, ...]:
        """Predecessor choices recomputed from a branch condition (`value`) instead of taped."""
        return tuple(e for e in self.entries if e.what is Need.CHOICE)

    def slots_by_block(self) -> dict[str, int]:
        """Tape slots pushed per execution of each block (compare `taped_slots`)."""
        out: dict[str, int] = {}
        for e in self.taped:
            out[e.block] = out.get(e.block, 0) + 1
        return out

    def trips(self, header: str) -> Expr | None:
        return next(l.trips for l in self.loops if l.header == header)

    def executions(self, entry: TapeEntry) -> Expr | None:
        """How many times the entry's block pushes per call (product of enclosing trips)."""
        return self._executions(entry.loops)

    def _executions(self, loops: tuple[str, ...]) -> Expr | None:
        total = Expr.const(1)
        for header in loops:
            t = self.trips(header)
            if t is None:
                return None
            total = total * t
        return total

    def entry_bytes(self, entry: TapeEntry) -> Expr | None:
        n = self.executions(entry)
        return None if n is None else Expr.const(entry.bytes_per_iteration) * n

    def total_bytes(self) -> Expr | None:
        """Tape bytes per call, summed by loop nest; None when some trip count is unknown."""
        per_nest: dict[tuple[str, ...], int] = {}
        for e in self.taped:
            per_nest[e.loops] = per_nest.get(e.loops, 0) + e.bytes_per_iteration
        total = Expr.const(0)
        for nest in sorted(per_nest, key=len, reverse=True):
            n = self._executions(nest)
            if n is None:
                return None
            total = total + Expr.const(per_nest[nest]) * n
        return total


def resolve_sizes(report: TapeReport, sizes: Mapping[str, int]) -> dict[str, int]:
    """`sizes` with array names expanded: `x=1000` sets every `x.shape[k]`."""
    out = dict(sizes)
    for sym in report.symbols:
        base = sym.split(".shape[")[0]
        if sym not in out and base != sym and base in sizes:
            out[sym] = sizes[base]
    return out


# ---------------------------------------------------------------- the report

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
        self.symbols = _symbols(fn, spec)
        returns = [b for b in fn.blocks if (t := b.terminator) is not None
                   and t.opcode == "ret" and not is_exceptional_return(t)]
        self.plan = ReversePlan(fn, returns)
        self.primal_ids = {id(i) for i in fn.instructions()}
        self.users: dict[int, list[Instruction]] = {}
        for inst in fn.instructions():
            for op in inst.operands:
                self.users.setdefault(id(op), []).append(inst)

    def build(self, events: list[Retained]) -> TapeReport:
        rows: list[TapeEntry] = []
        spills: dict[int, int] = {}       # id(value) -> its row
        seen: set[Retained] = set()
        block: Block | None = None
        served: list[Retained] = []       # this block's recompute / iv / choice events so far
        for ev in events:
            if ev in seen:                # memoized per reverse block: one slot per execution
                continue
            seen.add(ev)
            if ev.block is not block:
                block, served = ev.block, []
            reason = self._reason(ev, served)
            if ev.kind in (Retention.RECOMPUTE, Retention.IV):
                served.append(ev)
            at = spills.get(id(ev.value)) if ev.kind is Retention.SPILL else None
            if at is not None:            # one slot per call, read by several blocks
                readers = f"{rows[at].block}, {self._block_name(ev.block)}"
                rows[at] = replace(rows[at], block=readers)
                continue
            if ev.kind is Retention.SPILL:
                spills[id(ev.value)] = len(rows)
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
        loops = () if ev.kind is Retention.SPILL else tuple(
            self._block_name(l.header) for l in self.plan.loops_containing(ev.block))
        source = self.diag.source(v) if isinstance(v, Instruction) and not self._synthetic(v) \
            else None
        return TapeEntry(name, type_, ev.kind, ev.what, self._block_name(ev.block), loops,
                         reason, source)

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
        if ev.invariant_in is not None:
            return f"invariant in loop {self._block_name(ev.invariant_in.header)} " \
                "(taped at its exit, read by its reverse)"
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
                         self._trips(loop, term), self.diag.source(term) if term else None)

    def _trips(self, loop: Loop, term: Instruction | None) -> Expr | None:
        if term is None or term.opcode != "br" or len(term.operands) != 3:
            return None
        cond, if_true, _ = term.operands
        if not (isinstance(cond, Instruction) and cond.opcode == "icmp"):
            return None
        pred = cond.predicate or ""
        if if_true is not loop.header:          # exits when true: continue on the inverse
            pred = _INVERSE[pred]
        a, b = cond.operands
        side = self._iv_side(a, loop)
        if side is None:
            side, bound = self._iv_side(b, loop), self._expr(a, loop)
            pred = _SWAPPED[pred]
        else:
            bound = self._expr(b, loop)
        if side is None or bound is None:
            return None
        (iv, after_step) = side
        start, step = self._expr(iv.start, loop), iv.step
        if start is None or not isinstance(step, ConstInt) or step.value == 0:
            return None
        s = step.value
        # Iteration k (1-based) compares start + s*k (after the step) or start + s*(k-1).
        if pred == "ne":
            span = bound - start
        elif pred in ("slt", "ult") and s > 0:
            span = bound - start
        elif pred in ("sle", "ule") and s > 0:
            span = bound - start + Expr.const(1)
        elif pred in ("sgt", "ugt") and s < 0:
            span = start - bound
        elif pred in ("sge", "uge") and s < 0:
            span = start - bound + Expr.const(1)
        else:
            return None
        trips = span.ceildiv(abs(s))
        return trips if after_step else trips + Expr.const(1)

    def _iv_side(self, v: Value, loop: Loop) -> tuple[InductionVariable, bool] | None:
        """(induction variable, compared after its step) if `v` is `iv` or `iv + step`."""
        iv = self.plan.ivs.get(v)  # type: ignore[arg-type]
        if iv is not None and iv.loop is loop:
            return iv, False
        if isinstance(v, Instruction) and v.opcode == "add":
            for op in v.operands:
                iv = self.plan.ivs.get(op)  # type: ignore[arg-type]
                if iv is not None and iv.loop is loop and iv.step in v.operands:
                    return iv, True
        return None

    def _expr(self, v: Value, loop: Loop) -> Expr | None:
        if isinstance(v, ConstInt):
            return Expr.const(v.value)
        if isinstance(v, Argument):
            return Expr.sym(self.symbols.get(v) or v.name or f"arg{v.index}")
        if not isinstance(v, Instruction) or v.block in loop.blocks or v.block is None:
            return None
        if v.opcode in ("sext", "zext", "trunc", "freeze"):
            return self._expr(v.operands[0], loop)
        if v.opcode in ("add", "sub", "mul"):
            x, y = (self._expr(o, loop) for o in v.operands)
            if x is None or y is None:
                return None
            return x + y if v.opcode == "add" else x - y if v.opcode == "sub" else x * y
        return None


_INVERSE = {"eq": "ne", "ne": "eq", "slt": "sge", "sge": "slt", "sgt": "sle", "sle": "sgt",
            "ult": "uge", "uge": "ult", "ugt": "ule", "ule": "ugt"}
_SWAPPED = {"eq": "eq", "ne": "ne", "slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle",
            "ult": "ugt", "ugt": "ult", "ule": "uge", "uge": "ule"}


def _symbols(fn: Function, spec: DiffSpec) -> dict[Argument, str]:
    """Size names of the arguments: scalar parameters by name, array extents as x.shape[k]."""
    out: dict[Argument, str] = {}
    for p in spec.params:
        if p.is_array:
            for k in range(p.ndim or 0):
                out[fn.args[p.args[5 + k]]] = f"{p.name}.shape[{k}]"
        elif len(p.args) == 1:
            out[fn.args[p.args[0]]] = p.name
    return out


# ---------------------------------------------------------------- cross-check

def taped_slots(derivative: Function) -> dict[str, int]:
    """Tape slots pushed per primal block by a synthesized derivative (from its grow calls
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
                    out[name] = out.get(name, 0) + need.value // SLOT
            elif inst.opcode == "getelementptr" and inst.name == RESERVED_PUSH:   # unchecked
                need = inst.operands[-1]
                assert isinstance(need, ConstInt)
                out[block.name or ""] = out.get(block.name or "", 0) + need.value // SLOT
    return out


# ---------------------------------------------------------------- printer

def print_tape(report: TapeReport, sizes: Mapping[str, int] | None = None) -> str:
    """The report as `;`-comment text (like print-activity): loops, taped, spilled,
    recomputed, predecessor choices, total."""
    sizes = resolve_sizes(report, sizes or {})
    out = [f"; tape of @{report.function} (reverse mode)"] + cost_model_lines()
    if report.loops:
        out.append("; loops (trip count per entry):")
        rows = [(l.header, f"depth {l.depth}", f"in {l.parent}" if l.parent else "",
                 f"trips = {l.trips}" if l.trips is not None else "trips = ? (data-dependent)",
                 _loc(l.source)) for l in report.loops]
        out += _table(rows)
    taped = report.taped
    out.append(f"; taped ({len(taped)} value(s), {SLOT}-byte slots pushed at the end of the "
               "block's forward execution):")
    if taped:
        rows = [("value", "type", "block", "loop", "bytes/iter", "total bytes", "needed for",
                 "source")]
        for e in taped:
            total = report.entry_bytes(e)
            rows.append((e.value, e.type, e.block, e.loops[-1] if e.loops else "-",
                         str(e.bytes_per_iteration), _amount(total, sizes), e.reason,
                         _loc(e.source)))
        out += _table(rows)
    else:
        out.append(";   (nothing)")
    spilled = report.spilled
    out.append(f"; spilled ({len(spilled)} value(s) computed at most once: one stack slot per "
               "call, stored after the definition):")
    if spilled:
        rows = [("value", "type", "read by the reverse of", "needed for", "source")]
        rows += [(e.value, e.type, e.block, e.reason, _loc(e.source)) for e in spilled]
        out += _table(rows)
    else:
        out.append(";   (nothing)")
    again = report.recomputed
    out.append(f"; recomputed in the reverse pass instead of taped ({len(again)}):")
    if again:
        rows = [("value", "type", "how", "block", "needed for", "source")]
        for e in again:
            how = "recompute" if e.kind is Retention.RECOMPUTE else \
                f"iv of loop {e.loops[-1] if e.loops else '?'}"
            rows.append((e.value, e.type, how, e.block, e.reason, _loc(e.source)))
        out += _table(rows)
    else:
        out.append(";   (nothing)")
    if report.choices:
        out.append(f"; predecessor choices recomputed from the branch condition instead of "
                   f"taped ({len(report.choices)}): "
                   + ", ".join(f"{e.block} from {e.value}" for e in report.choices))
    total = report.total_bytes()
    line = f"; total tape per call: {_amount(total, sizes)} bytes"
    if total is None:
        line += " (some trip counts are data-dependent)"
    elif total.symbols() and total.evaluate(sizes) is None:
        missing = sorted(s for s in total.symbols() if s not in sizes)
        line += f" (give --sizes {', '.join(f'{s}=N' for s in missing)} for a number)"
    out.append(line)
    return "\n".join(out) + "\n"


def _amount(e: Expr | None, sizes: Mapping[str, int]) -> str:
    if e is None:
        return "?"
    v = e.evaluate(sizes)
    if v is None or e.value is not None:
        return str(e)
    return f"{e} = {v}"


def _loc(source: str | None) -> str:
    if not source:
        return ""
    path, _, line = source.rpartition(":")
    return f"{path.rsplit('/', 1)[-1]}:{line}" if path else source


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [(";   " + "  ".join(c.ljust(w) for c, w in zip(r, widths))).rstrip() for r in rows]

