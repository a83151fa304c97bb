"""Trip counts known when a loop is entered, as IR (for pre-sizing the tape).

A loop qualifies when its latch ends it with a compare of an induction variable of step +1 or
-1 (before or after its step, the step flagged `nsw` or `nuw`) against a value defined
outside the loop: then the latch exit alone allows exactly `T = max(sign * (bound - start) +
k, 1)` iterations (the loop is bottom-tested). Other exits (breaks) only make it run fewer,
so `T` is an upper bound of the iterations in every case, which is all a reservation needs.
Unsigned compares are accepted only with `samesign` (then they agree with signed ones).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...analysis.cfg import Loop
from ...ir.builder import Builder
from ...ir.types import I64
from ...ir.values import ConstInt, Instruction, Value, const_int
from .plan import InductionVariable, ReversePlan

_INVERSE = {"eq": "ne", "ne": "eq", "slt": "sge", "sge": "slt", "sgt": "sle", "sle": "sgt",
            "ult": "uge", "uge": "ult", "ugt": "ule", "ule": "ugt"}
_SWAPPED = {"eq": "eq", "ne": "ne", "slt": "sgt", "sgt": "slt", "sle": "sge", "sge": "sle",
            "ult": "ugt", "ugt": "ult", "ule": "uge", "uge": "ule"}
# (continue-predicate, step) -> (sign, k) with T = max(sign * (bound - start) + k - after, 1)
_RULES = {("slt", 1): (1, 1), ("sle", 1): (1, 2), ("ne", 1): (1, 1),
          ("sgt", -1): (-1, 1), ("sge", -1): (-1, 2), ("ne", -1): (-1, 1)}


@dataclass(frozen=True)
class TripCount:
    """T = max(sign * (bound - start) + offset, 1) iterations per entry (an upper bound)."""
    start: Value
    bound: Value
    sign: int
    offset: int


def entry_trip_count(plan: ReversePlan, loop: Loop) -> TripCount | None:
    """The trip count of `loop` as a function of values available at its preheader."""
    term = plan.latch(loop).terminator
    if term is None or term.opcode != "br" or len(term.operands) != 3:
        return None
    cond, if_true, if_false = term.operands
    if not (isinstance(cond, Instruction) and cond.opcode == "icmp") or \
            (if_true is loop.header) == (if_false is loop.header):
        return None
    pred = cond.predicate or ""
    if pred.startswith("u") and "samesign" not in cond.flags:
        return None
    pred = pred.replace("u", "s", 1) if pred.startswith("u") else pred
    if if_true is not loop.header:
        pred = _INVERSE[pred]
    lhs, rhs = cond.operands
    side = _iv_side(plan, loop, lhs)
    if side is None:
        side, rhs, pred = _iv_side(plan, loop, rhs), lhs, _SWAPPED[pred]
    if side is None or not plan.defined_outside(rhs, loop):
        return None
    iv, after = side
    rule = _RULES.get((pred, _const(iv.step)))
    if rule is None:
        return None
    return TripCount(iv.start, rhs, rule[0], rule[1] - after)


def emit_trip_count(b: Builder, tc: TripCount, start: Value, bound: Value) -> Value:
    """`tc` as an i64 at `b` (`start`, `bound`: the forward pass's copies)."""
    start, bound = _i64(b, start), _i64(b, bound)
    span = b.sub(bound, start) if tc.sign > 0 else b.sub(start, bound)
    trips = b.add(span, const_int(I64, tc.offset))
    one = const_int(I64, 1)
    return b.select(b.icmp("slt", trips, one), one, trips)


def _iv_side(plan: ReversePlan, loop: Loop, v: Value) -> tuple[InductionVariable, int] | None:
    """(iv, 1 if compared after its step else 0) when `v` is an iv of `loop` (or its step),
    the step being a no-wrap add of +1 or -1."""
    for phi, iv in plan.ivs.items():
        if iv.loop is not loop or _const(iv.step) not in (1, -1) \
                or plan.latch(loop) not in phi.incoming:
            continue
        nxt = phi.operands[phi.incoming.index(plan.latch(loop))]
        if not (isinstance(nxt, Instruction) and ("nsw" in nxt.flags or "nuw" in nxt.flags)):
            continue
        if v is phi:
            return iv, 0
        if v is nxt:
            return iv, 1
    return None


def _const(v: Value) -> int | None:
    return v.value if isinstance(v, ConstInt) else None


def _i64(b: Builder, v: Value) -> Value:
    if v.type == I64:
        return v
    return b.cast("sext", v, I64)
