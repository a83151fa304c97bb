"""Adjoints a loop only subtracts from, kept negated so that the loop adds instead.

The reverse of `y = a - b` subtracts `y`'s adjoint from `b`'s. When `b` is a scalar used in
every iteration of a loop (a max or mean shifted out of each element: `exp(x[i] - m)`,
`(x[i] - mu)**2`), `b`'s adjoint slot takes `r = r - t` in every iteration of the reverse
loop, which mem2reg makes a chain of subtractions around it. LLVM vectorises an in-order
(strict) reduction only when it is a chain of `fadd` (`ordered_reductions`), so that loop
stays scalar. Negation is exact and commutes with round-to-nearest, so `r - t` and
`-((-r) + t)` are the same number: the loop keeps `s = -r` in a slot of its own, adds `t` to
it, and hands `-s` back to the adjoint's slot where it may leave (and wherever it reads it).
Same roundings in the same order; only the sign of a zero may differ (`x - x` is +0,
`-((-x) + x)` is -0), so the additions carry `nsz`, as the reverse pass's other adjoint
accumulations do.

Runs on the derivative as synthesized (stack slots, before mem2reg), so it needs no LLVM
simplification of its own.
"""
from __future__ import annotations

from .analysis.cfg import Loop, find_loops
from .ir.builder import Builder
from .ir.types import FloatType
from .ir.values import Block, Function, Instruction, Value

__all__ = ["negate_subtracted_adjoints"]


def negate_subtracted_adjoints(fn: Function) -> bool:
    """Rewrite every slot some loop of `fn` only subtracts from; whether any was."""
    changed = False
    users = fn.users()
    for loop in find_loops(fn):
        slots = _subtracted_slots(loop, users)
        for slot, stores in slots.items():
            _negate(fn, loop, slot, stores, users)
            changed = True
        if slots:
            users = fn.users()                  # rewritten: the next loop needs fresh uses
    return changed


def _subtracted_slots(loop: Loop, users: dict[int, list[Instruction]]
                      ) -> dict[Instruction, list[Instruction]]:
    """Stack slots of a float whose every store in `loop` is a subtraction from the slot's
    own value, each such load used by its subtraction alone."""
    stores: dict[Instruction, list[Instruction]] = {}
    other: set[int] = set()
    for block in loop.blocks:
        for inst in block.instructions:
            if inst.opcode != "store":
                continue
            value, slot = inst.operands
            if _subtraction(value, slot, users) is not None:
                stores.setdefault(slot, []).append(inst)      # type: ignore[arg-type]
            else:
                other.add(id(slot))
    return {slot: s for slot, s in stores.items() if id(slot) not in other}


def _subtraction(value: Value, slot: Value, users: dict[int, list[Instruction]]
                 ) -> tuple[Instruction, Value] | None:
    """(load of `slot`, t) when `value` is `load - t` or `load + (fneg t)`."""
    if not (isinstance(value, Instruction) and isinstance(slot, Instruction)
            and slot.opcode == "alloca" and isinstance(value.type, FloatType)
            and value.opcode in ("fadd", "fsub")):
        return None
    first, second = value.operands
    if value.opcode == "fadd":
        if _is_fneg(first):
            first, second = second, first
        if not _is_fneg(second):
            return None
        second = second.operands[0]                           # type: ignore[union-attr]
    if isinstance(first, Instruction) and first.opcode == "load" and first.operands[0] is slot \
            and users.get(id(first)) == [value] and users.get(id(value)) is not None \
            and len(users[id(value)]) == 1:
        return first, second
    return None


def _is_fneg(v: Value) -> bool:
    return isinstance(v, Instruction) and v.opcode == "fneg"


def _negate(fn: Function, loop: Loop, slot: Instruction, stores: list[Instruction],
            users: dict[int, list[Instruction]]) -> None:
    """`slot`'s value kept negated in a new slot while `loop` runs (module docstring)."""
    t = slot.source_type
    assert t is not None
    b = Builder(fn.blocks[0])
    b.position_before(slot)
    negated = b.alloca(t, f"{slot.name}.neg")
    for store in stores:
        value = store.operands[0]
        load, term = _subtraction(value, slot, users)          # type: ignore[misc]
        b.position_before(store)
        s = b.load(t, negated)
        flags = value.flags if "nsz" in value.flags or "fast" in value.flags \
            else value.flags + ("nsz",)
        store.operands = [b.binop("fadd", s, term, f"{value.name or 'adj'}.neg", flags=flags),
                          negated]
        for dead in (value, load):                              # type: ignore[union-attr]
            dead.block.instructions.remove(dead)                # type: ignore[union-attr]
            dead.block = None
    for inst in [u for u in users.get(id(slot), []) if u.block in loop.blocks
                 and u.opcode == "load"]:
        if inst.block is None:                                  # removed above
            continue
        b.position_before(inst)
        inst.operands = [negated]
        _after(b, inst)
        flip = b.fneg(inst)
        for user in [u for u in users.get(id(inst), []) if u is not flip]:
            user.replace_uses(inst, flip)
    for block in _entering(fn, loop):
        b.position_before(block.terminator)                     # type: ignore[arg-type]
        b.store(b.fneg(b.load(t, slot)), negated)
    for block in loop.blocks:
        if any(s not in loop.blocks for s in block.successors()):
            b.position_before(block.terminator)                 # type: ignore[arg-type]
            b.store(b.fneg(b.load(t, negated)), slot)


def _entering(fn: Function, loop: Loop) -> list[Block]:
    return [p for p in fn.predecessors()[loop.header] if p not in loop.blocks]


def _after(b: Builder, inst: Instruction) -> None:
    assert inst.block is not None
    b.block, b.index = inst.block, inst.block.instructions.index(inst) + 1
