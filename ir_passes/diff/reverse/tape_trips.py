"""Symbolic trip counts of the reverse plan's loops, for the tape report.

A loop's trip count is derived from its latch's exit compare (`icmp pred iv[.next], bound`
with a loop-invariant bound, a `max(e, 0)` clamp of `range(e)` read as `e`) in terms of
parameter size names and the iteration counters of enclosing loops (`range(j + 1, d)`:
`d - 1 - k[outer]`); None when it cannot be expressed (data-dependent exits).
"""
from __future__ import annotations

from typing import Callable

from ...analysis.cfg import Loop
from ...ir.values import Argument, ConstInt, Function, Instruction, Value
from ...known.array_layout import shape_arg
from ..spec import DiffSpec
from .plan import InductionVariable, ReversePlan
from .tape_sizes import Expr, counter_symbol

__all__ = ["TripCounts", "size_symbols"]


class TripCounts:
    """Trip counts per loop entry, as expressions over the size names of `symbols` and the
    counters of enclosing loops (`loop_name` names a loop as its counter's symbol does)."""

    def __init__(self, plan: ReversePlan, symbols: dict[Argument, str],
                 loop_name: Callable[[Loop], str]) -> None:
        self.plan = plan
        self.symbols = symbols
        self.loop_name = loop_name
        self._merging: set[int] = set()      # the phis `_phi` is inside of

    def trips(self, loop: Loop, term: Instruction | None) -> Expr | None:
        """Iterations of `loop` per entry, from its latch terminator `term` (None: unknown)."""
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
        clamped = _clamped_at_zero(v)
        if clamped is not None:
            return self._expr(clamped, loop)
        if v.opcode == "phi":
            return self._phi(v, loop)
        scale = _constant_scale(v)
        if scale is not None:
            e = self._expr(v.operands[0], loop)
            factor, divisor = scale
            return None if e is None else (e * Expr.const(factor)).floordiv(divisor)
        if v.opcode in ("add", "sub", "mul"):
            x, y = (self._expr(o, loop) for o in v.operands)
            if x is None or y is None:
                return None
            return x + y if v.opcode == "add" else x - y if v.opcode == "sub" else x * y
        return None

    def _phi(self, v: Instruction, loop: Loop) -> Expr | None:
        """An enclosing loop's induction variable in terms of its counter, or the one
        expression every incoming value of a merge has."""
        iv = self.plan.ivs.get(v)  # type: ignore[arg-type]
        if iv is not None:
            if not _encloses(iv.loop, loop) or not isinstance(iv.step, ConstInt):
                return None
            start = self._expr(iv.start, loop)
            counter = Expr.sym(counter_symbol(self.loop_name(iv.loop)))
            return None if start is None else start + Expr.const(iv.step.value) * counter
        if id(v) in self._merging:            # a cycle of phis: no one expression
            return None
        self._merging.add(id(v))
        incoming = {self._expr(op, loop) for op in v.operands}
        self._merging.discard(id(v))
        return incoming.pop() if len(incoming) == 1 else None


def _encloses(outer: Loop, loop: Loop) -> bool:
    parent = loop.parent
    while parent is not None and parent is not outer:
        parent = parent.parent
    return parent is outer


def _constant_scale(v: Instruction) -> tuple[int, int] | None:
    """(factor, divisor) of `floor(x * factor / divisor)` for a shift or division of a size
    `x` by a constant (`state.shape[0] // 2`); None for other instructions."""
    if len(v.operands) != 2 or not isinstance(v.operands[1], ConstInt):
        return None
    c = v.operands[1].value
    if v.opcode in ("sdiv", "udiv") and c > 0:
        return 1, c
    if v.opcode in ("ashr", "lshr", "shl") and 0 <= c < 63:
        return (1 << c, 1) if v.opcode == "shl" else (1, 1 << c)
    return None


def _clamped_at_zero(v: Instruction) -> Value | None:
    """`e` of `max(e, 0)` as Numba bounds `range(e)` (`select c, 0, e` or `smax(e, 0)`): a
    loop entered at all runs `e` times (the clamp only keeps it from being entered)."""
    if v.opcode == "select":
        arms = v.operands[1:]
    elif v.opcode == "call" and (v.callee_name or "").startswith("llvm.smax."):
        arms = v.operands[:2]
    else:
        return None
    zero = [isinstance(a, ConstInt) and a.value == 0 for a in arms]
    return arms[zero.index(False)] if sorted(zero) == [False, True] else None


_INVERSE = {"eq": "ne", "ne": "eq", "slt": "sge", "sge": "slt", "sgt": "sle", "sle": "sgt",
            "ult": "uge", "uge": "ult", "ugt": "ule", "ule": "ugt"}
_SWAPPED = {"eq": "eq", "ne": "ne", "slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle",
            "ult": "ugt", "ugt": "ult", "ule": "uge", "uge": "ule"}


def size_symbols(fn: Function, spec: DiffSpec) -> dict[Argument, str]:
    """Size names of the arguments: scalar parameters by name, array extents as x.shape[k]."""
    out: dict[Argument, str] = {}
    for p in spec.params:
        if p.is_array:
            for k in range(p.ndim or 0):
                out[fn.args[p.args[shape_arg(k)]]] = f"{p.name}.shape[{k}]"
        elif len(p.args) == 1:
            out[fn.args[p.args[0]]] = p.name
    return out
