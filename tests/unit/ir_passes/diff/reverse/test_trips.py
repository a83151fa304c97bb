"""`ir_passes.diff.reverse.trips`: trip counts known at loop entry (they size the tape
reservation, so they must never be below the iterations the loop really runs)."""
from __future__ import annotations

import itertools
import operator

import pytest

from ir_passes.diff.reverse.plan import ReversePlan
from ir_passes.diff.reverse.trips import entry_trip_count
from ir_passes.ir.parser import parse_module

_PRED = {"slt": operator.lt, "sle": operator.le, "sgt": operator.gt, "sge": operator.ge,
         "ne": operator.ne, "eq": operator.eq}


def _loop(pred: str, step: int, after: bool, continue_on_true: bool, flags: str = "nsw",
          swapped: bool = False) -> str:
    lhs, rhs = ("%i.next" if after else "%i"), "%b"
    if swapped:
        lhs, rhs = rhs, lhs
    targets = "label %loop, label %exit" if continue_on_true else "label %exit, label %loop"
    return f"""
define void @f(i64 %s, i64 %b) {{
entry:
  br label %loop
loop:
  %i = phi i64 [ %s, %entry ], [ %i.next, %loop ]
  %i.next = add {flags} i64 %i, {step}
  %c = icmp {pred} i64 {lhs}, {rhs}
  br i1 %c, {targets}
exit:
  ret void
}}
"""


def _plan(text: str):
    fn = parse_module(text).functions["f"]
    plan = ReversePlan(fn, [blk for blk in fn.blocks if blk.terminator.opcode == "ret"])
    return plan, plan.loops[0]


def _run(pred: str, step: int, after: bool, on_true: bool, swapped: bool, s: int, b: int):
    """Iterations the loop runs (None if more than 100: treated as not terminating)."""
    compare = _PRED[pred]
    i = s
    for k in range(1, 101):
        x = i + step if after else i
        c = compare(b, x) if swapped else compare(x, b)
        if c != on_true:
            return k
        i += step
    return None


CASES = [(p, st, a, t, sw) for p in ("slt", "sle", "sgt", "sge", "ne", "eq")
         for st in (1, -1) for a in (False, True) for t in (True, False) for sw in (False, True)]


@pytest.mark.parametrize("pred, step, after, on_true, swapped", CASES)
def test_trip_count_is_exact_or_refused(pred, step, after, on_true, swapped):
    plan, loop = _plan(_loop(pred, step, after, on_true, swapped=swapped))
    tc = entry_trip_count(plan, loop)
    runs = {(s, b): _run(pred, step, after, on_true, swapped, s, b)
            for s, b in itertools.product(range(-4, 5), repeat=2)}
    if tc is None:
        return
    assert tc.start.name == "s" and tc.bound.name == "b"
    for (s, b), n in runs.items():
        if n is None:                     # never ends (or overflows: UB with nsw)
            continue
        assert max(tc.sign * (b - s) + tc.offset, 1) == n, (s, b)


def test_common_shapes_are_recognised():
    """Numba's `range` loops: `i.next == n` exits, and down-counters `c > 1`."""
    assert entry_trip_count(*_plan(_loop("eq", 1, True, False)))
    assert entry_trip_count(*_plan(_loop("sgt", -1, False, True)))
    assert entry_trip_count(*_plan(_loop("slt", 1, True, True)))


def test_steps_that_may_wrap_are_refused():
    assert entry_trip_count(*_plan(_loop("ne", 1, True, True, flags=""))) is None
    assert entry_trip_count(*_plan(_loop("ult", 1, True, True))) is None
