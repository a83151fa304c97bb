"""What reverse mode keeps for its reverse pass, per value: taped, recomputed or rebuilt.

`tape_report(module, spec)` replays the questions the reverse synthesizer asks (`synth.py`:
which primal values the adjoint of each instruction reads, which shadow addresses, which
predecessor a merge block was entered from, the trip count of each loop the reverse pass
enters) and answers them with the same `ReversePlan`, without synthesizing anything:
- "tape": an 8-byte slot pushed at the end of the block's forward execution, once per
  execution of that block (so once per iteration of its enclosing loops);
- "recompute": the instruction is cloned into the reverse block from available operands;
- "iv": an induction variable rebuilt from the reverse loop counter (`start + step * i`).
Values used directly (arguments, constants, values computed once before every return) are
not listed.

Sizes: a loop's trip count is derived symbolically from its latch's exit compare
(`icmp pred iv[.next], bound` with a loop-invariant bound) in terms of parameter names
(`n`, `x.shape[0]`), so the report can total the tape for given sizes. Trip counts it cannot
express (data-dependent exits, bounds depending on an outer loop's variable) print as `?`.

`taped_slots(derivative)` reads the tape pushes of a synthesized derivative back (from its
calls to the tape's grow function), so a front end can check this report against the real
synthesizer. The report is immutable; `print_tape` renders it for the IR inspection tool.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ...analysis.activity import ActivityInfo, analyze_activity
from ...analysis.cfg import Loop, reverse_post_order
from ...diagnostics import Diagnostics
from ...ir.printer import Namer
from ...ir.types import I32, I64, FloatType
from ...ir.values import (Argument, Block, ConstInt, Constant, Function, GlobalRef, Instruction,
                          Module, Value, const_int)
from ..allocations import shadowed_allocations
from ..memory import MEMORY_INTRINSICS, is_memory_intrinsic
from ..returns import ReturnSlot, find_return_type
from ..rules import lookup
from ..rules.math import math_rule_name
from ..rules.needs import rule_needs
from ..spec import DiffSpec
from .plan import InductionVariable, ReversePlan
from .tape import _GROW, SLOT

__all__ = ["Expr", "LoopTrips", "TapeEntry", "TapeReport", "activity_seeds", "print_tape",
           "resolve_sizes", "tape_report", "taped_slots"]


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
    value: str                    # printed primal name ("%.178.le") or a description
    type: str
    kind: str                     # "tape" | "recompute" | "iv"
    block: str                    # primal block whose reverse needs it (and pushes it)
    loops: tuple[str, ...]        # enclosing loop headers, outermost first
    reason: str                   # what the reverse pass needs it for
    source: str | None            # Python "file:line" of the value, when known

    @property
    def bytes_per_iteration(self) -> int:
        return SLOT if self.kind == "tape" else 0


@dataclass(frozen=True)
class TapeReport:
    function: str
    entries: tuple[TapeEntry, ...]
    loops: tuple[LoopTrips, ...]
    symbols: tuple[str, ...]      # size names a `sizes` mapping may give

    @property
    def taped(self) -> tuple[TapeEntry, ...]:
        return tuple(e for e in self.entries if e.kind == "tape")

    @property
    def recomputed(self) -> tuple[TapeEntry, ...]:
        return tuple(e for e in self.entries if e.kind != "tape")

    def trips(self, header: str) -> Expr | None:
        return next(l.trips for l in self.loops if l.header == header)

    def executions(self, entry: TapeEntry) -> Expr | None:
        """How many times the entry's block pushes per call (product of enclosing trips)."""
        total = Expr.const(1)
        for header in entry.loops:
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
            n = self.executions(TapeEntry("", "", "tape", "", nest, "", None))
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


# ---------------------------------------------------------------- analysis

def activity_seeds(fn: Function, spec: DiffSpec) -> tuple[set[Argument], set[Argument]]:
    """(varied, shadowed) arguments of the primal for `spec`, as the synthesizers seed them:
    float scalars that are differentiated are varied; the data pointers of shadowed arrays,
    and the return slot when a float return is differentiated, are shadowed."""
    varied: set[Argument] = set()
    shadowed: set[Argument] = set()
    for p in spec.params:
        if p.is_array:
            if p.activity.has_shadow:
                shadowed.add(fn.args[p.data_arg])
        elif p.activity.is_differentiated and isinstance(fn.args[p.args[0]].type, FloatType):
            varied.add(fn.args[p.args[0]])
    slot = ReturnSlot(find_return_type(fn, spec.retptr))
    if spec.ret.is_differentiated and slot.differentiable:
        shadowed.add(fn.args[spec.retptr])
    return varied, shadowed


def tape_report(module: Module, spec: DiffSpec) -> TapeReport:
    """The tape report of reverse-mode differentiating `spec.primal` (module unchanged)."""
    return _Replay(module, spec).run()


class _Replay:
    def __init__(self, module: Module, spec: DiffSpec) -> None:
        self.fn = module.functions[spec.primal]
        self.spec = spec
        self.diag = Diagnostics(module, self.fn)
        self.namer = Namer(self.fn)
        self.symbols = _symbols(self.fn, spec)

    def run(self) -> TapeReport:
        fn = self.fn
        self.info: ActivityInfo = analyze_activity(fn, *activity_seeds(fn, self.spec))
        self.allocs = shadowed_allocations(fn, self.info, self.diag)
        returns = [b for b in fn.blocks if (t := b.terminator) is not None
                   and t.opcode == "ret" and not _nonzero_status(t)]
        self.plan = ReversePlan(fn, returns)
        self.counters: dict[Loop, Instruction] = {}
        for loop in self.plan.loops:        # the synthesizer's per-loop iteration counter
            counter = Instruction("phi", I64, [], f"{self._block_name(loop.header)}.iter")
            counter.block = loop.header
            self.counters[loop] = counter
            self.plan.ivs[counter] = InductionVariable(loop, const_int(I64, 0), const_int(I64, 1))
        reaching = _reaching(fn, returns)
        self.entries: list[TapeEntry] = []
        for block in reverse_post_order(fn):
            if block in reaching:
                self._block(block)
        order = {id(b): i for i, b in enumerate(reverse_post_order(fn))}
        loops = tuple(self._loop_trips(l)       # a loop before the loops nested in it
                      for l in sorted(self.plan.loops, key=lambda l: order[id(l.header)]))
        return TapeReport(fn.name or "", tuple(self.entries), loops,
                          tuple(sorted(set(self.symbols.values()))))

    # ---- the reverse of one block, as synth._reverse_block walks it
    def _block(self, block: Block) -> None:
        self.cur = block
        self.seen: set[int] = set()
        for inst in reversed(block.instructions):
            if inst.opcode != "phi":
                self._adjoint(inst)
        if block is self.fn.entry:
            return
        preds = [p for p in self.plan.preds[block] if p in self.plan.idom]
        header_of = next((l for l in self.plan.loops if l.header is block), None)
        for pred in preds:                  # trip counters of loops entered backwards
            inside = set(map(id, self.plan.loops_containing(block)))
            for loop in self.plan.loops_containing(pred):
                if id(loop) not in inside:
                    self._avail(self.counters[loop],
                                f"trip count of loop {self._block_name(loop.header)}")
        if header_of is None and len(preds) > 1:
            which = Instruction("phi", I32, [], f"{self._block_name(block)}.from")
            which.block = block
            self._avail(which, "which predecessor entered the block")

    def _adjoint(self, inst: Instruction) -> None:
        op = inst.opcode
        info = self.info
        if op == "store":
            if inst.operands[1] in info.shadowed:
                self._shadow(inst.operands[1], "shadow address of a store")
            return
        if inst in self.allocs:
            self._shadow(inst, "shadow array, released by the reverse of its allocation")
            return
        name = inst.callee_name or ""
        if op == "call" and is_memory_intrinsic(name) and inst.operands[0] in info.shadowed:
            self._avail(inst.operands[2], f"length of {name}")
            if MEMORY_INTRINSICS[name.split(".")[1]] == "copy" and \
                    inst.operands[1] in info.shadowed:
                self._shadow(inst.operands[1], f"shadow source of {name}")
            self._shadow(inst.operands[0], f"shadow destination of {name}")
            return
        if not info.is_active(inst):
            return
        if op == "load":
            self._shadow(inst.operands[0], f"shadow address of load {self._ref(inst)}")
        elif op == "select":
            self._avail(inst.operands[0], f"condition of select {self._ref(inst)}")
        elif op not in ("fpext", "fptrunc", "freeze", "extractvalue", "insertvalue"):
            name = op if op != "call" else math_rule_name(inst.callee_name or "", inst.type)
            rule = lookup(name)
            if rule is None:        # the synthesizer reports it
                return
            wanted = frozenset(i for i, o in enumerate(inst.operands) if o in info.varied)
            needs, needs_res = rule_needs(rule, tuple(o.type for o in inst.operands), inst.type,
                                          wanted)
            for i in sorted(needs):
                self._avail(inst.operands[i], f"operand {i} of {name} {self._ref(inst)}")
            if needs_res:
                self._avail(inst, f"result of {name}, for its derivative")

    # ---- availability, as synth._avail / synth._shadow decide it
    def _avail(self, v: Value, reason: str) -> None:
        kind = self.plan.kind(v, self.cur)
        if kind == "direct" or id(v) in self.seen:
            return
        self.seen.add(id(v))
        self._record(v, kind, reason)
        if kind == "iv":
            iv = self.plan.ivs[v]  # type: ignore[index]
            self._avail(iv.step, reason)
            self._avail(iv.start, reason)
        elif kind == "recompute":
            assert isinstance(v, Instruction)
            for op in v.operands:
                self._avail(op, f"operand of recomputed {self._ref(v)}")

    def _shadow(self, ptr: Value, reason: str) -> None:
        if (ptr in self.info.shadowed or ptr in self.allocs) and (
                isinstance(ptr, Argument) or self.plan.kind(ptr, self.cur) == "direct"):
            return
        key = ~id(ptr)
        if key in self.seen:
            return
        self.seen.add(key)
        op = ptr.opcode if isinstance(ptr, Instruction) else None
        if op == "getelementptr":
            self._shadow(ptr.operands[0], reason)  # type: ignore[union-attr]
            for idx in ptr.operands[1:]:  # type: ignore[union-attr]
                self._avail(idx, f"index of {self._ref(ptr)}")
        elif op == "select":
            c, x, y = ptr.operands  # type: ignore[union-attr]
            self._avail(c, f"condition of select {self._ref(ptr)}")
            self._shadow(x, reason)
            self._shadow(y, reason)
        elif op in ("bitcast", "addrspacecast", "freeze"):
            self._shadow(ptr.operands[0], reason)  # type: ignore[union-attr]
        else:
            self._record(ptr, "tape", reason, shadow=True)

    def _record(self, v: Value, kind: str, reason: str, shadow: bool = False) -> None:
        synthetic = isinstance(v, Instruction) and v.block is not None \
            and v not in v.block.instructions
        if synthetic:               # the synthesizer's own loop counter / predecessor record
            name = v.name or ""
        else:
            name = self._ref(v) + ("'" if shadow else "")
        loops = tuple(self._block_name(l.header) for l in self.plan.loops_containing(self.cur))
        source = self.diag.source(v) if isinstance(v, Instruction) and not synthetic else None
        self.entries.append(TapeEntry(name, "ptr" if shadow else str(v.type), kind,
                                      self._block_name(self.cur), loops, reason, source))

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


def _nonzero_status(ret: Instruction) -> bool:
    status = ret.operands[0] if ret.operands else None
    return isinstance(status, Constant) and status.text != "0"


def _reaching(fn: Function, targets: list[Block]) -> set[Block]:
    preds = fn.predecessors()
    seen = set(targets)
    work = list(targets)
    while work:
        for p in preds[work.pop()]:
            if p not in seen:
                seen.add(p)
                work.append(p)
    return seen


# ---------------------------------------------------------------- cross-check

def taped_slots(derivative: Function) -> dict[str, int]:
    """Tape slots pushed per primal block by a synthesized derivative (from its grow calls),
    keyed by block name ("" for unnamed blocks)."""
    out: dict[str, int] = {}
    suffix = ".tape.grow"
    for block in derivative.blocks:
        for inst in block.instructions:
            if inst.opcode == "call" and isinstance(inst.callee, (GlobalRef, Function)) \
                    and inst.callee.name == _GROW and (block.name or "").endswith(suffix):
                need = inst.operands[-1]
                if isinstance(need, ConstInt):
                    name = (block.name or "")[:-len(suffix)]
                    out[name] = out.get(name, 0) + need.value // SLOT
    return out


# ---------------------------------------------------------------- printer

def print_tape(report: TapeReport, sizes: Mapping[str, int] | None = None) -> str:
    """The report as `;`-comment text (like print-activity): loops, taped, recomputed, total."""
    sizes = resolve_sizes(report, sizes or {})
    out = [f"; tape of @{report.function} (reverse mode)"]
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
    again = report.recomputed
    out.append(f"; recomputed in the reverse pass instead of taped ({len(again)}):")
    if again:
        rows = [("value", "type", "how", "block", "needed for", "source")]
        for e in again:
            how = "recompute" if e.kind == "recompute" else \
                f"iv of loop {e.loops[-1] if e.loops else '?'}"
            rows.append((e.value, e.type, how, e.block, e.reason, _loc(e.source)))
        out += _table(rows)
    else:
        out.append(";   (nothing)")
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

