"""Integer counters a loop advances by an inner loop's trip count, rebuilt backwards.

ADBench's GMM reads its packed triangle through a counter that the inner, triangular loop
advances:

    idx = d
    for j in range(d):
        for l in range(j + 1, d):
            ... icf[k, idx] ...
            idx += 1

In the inner loop `idx` is an induction variable from the value `p` it had when the outer
iteration began. `p` is not one of the outer loop: each iteration adds the inner trip
count `d - j - 1`. Taping it costs a slot per outer iteration. The reverse pass goes
through the outer iterations backwards, so it keeps `p` in a stack slot instead: on entering
the outer loop's reverse the slot gets the value after the last iteration (taped once per
run of the outer loop), and iteration `j`'s `p` is the slot minus what iteration `j` added,
rebuilt from the inner loop's start and bound (or 0 when the inner loop was skipped, from
the branch that skipped it); leaving iteration `j` for `j - 1`, the slot gets that `p`.

A recurrence is recognised in loop-simplified, LCSSA form: `p = phi [start, preheader],
[after, latch]` in the outer header, `after = phi [p, guard], [exit value, exit]` where the
exit value is the inner counter's last increment (`p + 1` per inner iteration from `p`),
the inner loop is left only through its latch, and `guard` decides (`analysis.cfg.decides`)
whether the inner loop ran. The outer loop is left only through its latch.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...analysis.cfg import Loop, decides
from ...ir.builder import Builder
from ...ir.types import I64
from ...ir.values import Block, ConstInt, Instruction, Value, const_int
from .plan import Access, ReversePlan
from .trips import TripCount, emit_trip_count, entry_trip_count

_WITHOUT_TAPE = (Access.DIRECT, Access.IV, Access.RECOMPUTE, Access.HOIST)


@dataclass(frozen=True)
class Recurrence:
    loop: Loop                 # the outer loop
    phi: Instruction           # p, in its header
    after: Instruction         # p after one iteration (the latch's incoming value)
    skipped_if: bool           # the value of `guard`'s condition that skips the inner loop
    guard: Instruction         # that condition
    inner: Loop
    trips: TripCount           # the inner loop's trip count when entered

    def available(self, plan: ReversePlan, at: Block) -> bool:
        """Whether the reverse of `at` (in the outer loop) can rebuild what one iteration
        adds without the tape."""
        return all(plan.kind(v, at) in _WITHOUT_TAPE
                   for v in (self.guard, self.trips.start, self.trips.bound))

    def emit_added(self, b: Builder, value) -> Value:
        """What the current outer iteration added to `p` (`value(v)`: primal `v` as usable
        here)."""
        trips = emit_trip_count(b, self.trips, value(self.trips.start), value(self.trips.bound))
        skipped = value(self.guard)
        zero = const_int(I64, 0)
        return b.select(skipped, zero, trips) if self.skipped_if else \
            b.select(skipped, trips, zero)


def find_recurrences(plan: ReversePlan) -> dict[Instruction, Recurrence]:
    """The recurrences of `plan`'s function, by their header phi."""
    out: dict[Instruction, Recurrence] = {}
    for loop in plan.loops:
        if _exiting(loop) != [plan.latch(loop)]:
            continue
        latch = plan.latch(loop)
        for phi in loop.header.phis():
            if phi.type != I64 or phi in plan.ivs or latch not in phi.incoming:
                continue
            rec = _recurrence(plan, loop, phi, phi.operands[phi.incoming.index(latch)])
            if rec is not None:
                out[phi] = rec
    return out


def _recurrence(plan: ReversePlan, loop: Loop, phi: Instruction,
                after: Value) -> Recurrence | None:
    if not (isinstance(after, Instruction) and after.opcode == "phi"
            and after.block in loop.blocks and len(after.operands) == 2
            and sum(op is phi for op in after.operands) == 1):
        return None
    k = after.operands.index(phi)
    guard_block, exit_block = after.incoming[k], after.incoming[1 - k]
    last = after.operands[1 - k]
    if isinstance(last, Instruction) and last.opcode == "phi" and len(last.operands) == 1:
        last = last.operands[0]                       # its LCSSA phi
    counter = _stepped_counter(plan, last)
    if counter is None:
        return None
    inner = plan.ivs[counter].loop
    if plan.ivs[counter].start is not phi or inner.parent is not loop or \
            _exiting(inner) != [plan.latch(inner)] or \
            plan.preds[exit_block] != [plan.latch(inner)] or \
            not decides(plan.idom, guard_block, exit_block, after.block):
        return None
    term = guard_block.terminator
    trips = entry_trip_count(plan, inner)
    if term is None or trips is None or len(term.operands) != 3:
        return None
    cond, if_true, _ = term.operands
    if phi in (cond, trips.start, trips.bound):     # the inner loop counts with p itself
        return None
    return Recurrence(loop, phi, after, if_true is after.block, cond, inner, trips)


def _stepped_counter(plan: ReversePlan, last: Value) -> Instruction | None:
    """The inner counter whose latch increment by one `last` is."""
    if not (isinstance(last, Instruction) and last.opcode == "add"):
        return None
    for counter, one in (last.operands, last.operands[::-1]):
        iv = plan.ivs.get(counter)                    # type: ignore[arg-type]
        if iv is not None and isinstance(one, ConstInt) and one.value == 1 and \
                isinstance(iv.step, ConstInt) and iv.step.value == 1 and \
                counter.operands[counter.incoming.index(plan.latch(iv.loop))] is last:
            return counter                            # type: ignore[return-value]
    return None


def _exiting(loop: Loop) -> list[Block]:
    return [b for b in loop.blocks if any(s not in loop.blocks for s in b.successors())]
