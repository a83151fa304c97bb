"""The running max/min idiom: `if x[i] > m: m = x[i]` (or `m = max(m, x[i])`) tapes the index
of the last update once per run of the loop instead of its comparison per iteration.

The idiom, as the canonical IR has it: a loop-header phi `m` whose latch value is
`sel = select c, a, m` (or `select c, m, a`) of floats, with `m` used only by `sel` and by
comparisons, `sel` only by `m` inside the loop, `c` only by `sel`, and the loop left only
from its latch, to one exit.
The adjoint reaching the final value then passes back along the chain of selects unchanged
until the last iteration whose select took `a`, goes to `a` there and is exactly zero before
it. So the reverse of the select can use `iteration == last` in place of `c`, where the
forward pass counts `last = c ? iteration : last` from -1 (no update: the adjoint goes to the
phi's start value). `last` is a value of the loop's exit, read once per run of the loop (the
plan hoists it to the exit's tape frame, or spills it). Applied only where the plan would tape
`c` per iteration; anything else keeps the general path.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...analysis.cfg import Loop
from ...ir.builder import Builder, add_incoming
from ...ir.types import I1, I64, FloatType
from ...ir.values import Block, Function, Instruction, Value, const_int
from .plan import Access, ReversePlan

LAST_SUFFIX = ".last"                  # names the iteration of the last update (per loop)
CONDITION_SUFFIX = ".at.last"          # names the rebuilt condition


@dataclass
class LastUpdate:
    loop: Loop
    select: Instruction
    takes_new_if: bool                 # the select takes the new value when c is this
    condition: Instruction | None = None   # the primal stand-in for c, once built


def find_last_updates(plan: ReversePlan, fn: Function) -> dict[Instruction, LastUpdate]:
    """The conditions of running-max/min selects the reverse pass can replace, with their
    idiom (see the module docstring)."""
    users = fn.users()
    out: dict[Instruction, LastUpdate] = {}
    for loop in plan.loops:
        if not _left_from_latch(plan, loop):
            continue
        for m in loop.header.phis():
            found = _idiom(plan, loop, m, users)
            if found is not None:
                out[found.select.operands[0]] = found  # type: ignore[index]
    return out


def _idiom(plan: ReversePlan, loop: Loop, m: Instruction,
           users: dict[int, list[Instruction]]) -> LastUpdate | None:
    if not isinstance(m.type, FloatType) or len(m.operands) != 2:
        return None                   # a pointer select's shadow needs c on every iteration
    sel = m.operands[m.incoming.index(plan.latch(loop))]
    if not (isinstance(sel, Instruction) and sel.opcode == "select"
            and plan.loop_of.get(sel.block) is loop):  # type: ignore[arg-type]
        return None
    c, if_true, if_false = sel.operands
    if not isinstance(c, Instruction) or c.type != I1 or (if_true is m) == (if_false is m):
        return None
    if any(u is not sel and u.opcode not in ("fcmp", "icmp") for u in users.get(id(m), [])) \
            or any(u is not m and u.block in loop.blocks for u in users.get(id(sel), [])) \
            or users.get(id(c)) != [sel]:
        return None
    if plan.kind(c, sel.block) is not Access.TAPE:  # type: ignore[arg-type]
        return None
    return LastUpdate(loop, sel, if_false is m)


def _left_from_latch(plan: ReversePlan, loop: Loop) -> bool:
    """Left only from the latch, to one exit, no return inside."""
    latch = plan.latch(loop)
    inner = all(s in loop.blocks for b in loop.blocks if b is not latch for s in b.successors())
    return inner and len(plan.exits(loop)) == 1 and \
        not any(r in loop.blocks for r in plan.returns)


def stand_in(update: LastUpdate, plan: ReversePlan, counter: Instruction,
             vmap: dict[Value, Value], fwd: dict[Block, Block]) -> Instruction:
    """The primal stand-in for the select's condition, `counter ==/!= last`, built once
    together with the forward pass's count of `last` (`counter`: the loop's synthetic primal
    iteration counter; `vmap`, `fwd`: primal value, block -> forward one, all cloned)."""
    if update.condition is not None:
        return update.condition
    loop, c = update.loop, update.select.operands[0]
    last = Instruction("phi", I64, [], f"{loop.header.name}{LAST_SUFFIX}")
    last.block = plan.exits(loop)[0]                  # a value of the loop's exit
    vmap[last] = _count_last(update, plan, vmap[counter], vmap[c], fwd)
    update.condition = Instruction("icmp", I1, [counter, last], f"{c.name}{CONDITION_SUFFIX}",
                                   predicate="eq" if update.takes_new_if else "ne")
    update.condition.block = update.select.block
    return update.condition


def _count_last(update: LastUpdate, plan: ReversePlan, iteration: Value, c: Value,
                fwd: dict[Block, Block]) -> Value:
    """In the forward pass: `last = c ? iteration : last` from -1, right after the clone of
    `c`; returns the value after an iteration, which the latch passes on and the exit reads."""
    loop = update.loop
    last = Instruction("phi", I64, [], f"{loop.header.name}{LAST_SUFFIX}")
    assert isinstance(iteration, Instruction) and iteration.block is not None
    iteration.block.insert(0, last)                   # the forward header
    assert isinstance(c, Instruction) and c.block is not None
    b = Builder()
    b.position_before(c)
    b.index = b.index + 1 if c.opcode != "phi" else sum(1 for _ in c.block.phis())
    taken, kept = (iteration, last) if update.takes_new_if else (last, iteration)
    nxt = b.select(c, taken, kept, f"{loop.header.name}{LAST_SUFFIX}.next")
    add_incoming(last, const_int(I64, -1), fwd[plan.preheader(loop)])
    add_incoming(last, nxt, fwd[plan.latch(loop)])
    return nxt
