"""Memory a known call's reverse reads (`KnownCall.reverse_reads`) that the function writes
somewhere: an argument array (e.g. the `out` of `np.dot(A, x, out)` read by a later product)
or an array the function allocated. Either must not be written between the call and its
reverse: `written_after` looks for a write reachable from the call (once an allocation runs
again, writes through pointers computed from it since go to a new array). An allocated array
is kept alive with one more reference after the call (the primal may release it before the
reverse runs), which the call's reverse drops (both held references: `held_references.py`)."""
from __future__ import annotations

from typing import Callable

from ...analysis.cfg import dominates, dominators
from ...ir.values import Argument, Block, GlobalRef, Instruction, Value
from ...known.memory import pointer_sources
from ..common import addresses_nothing
from ..held_references import held_reference
from ...known.model import (Role, call_record, is_local_allocation, role_of,
                            written_arguments)


def local_owner(ptr: Value) -> tuple[Value, list[Instruction]] | None:
    """The owner (meminfo) of the array `ptr` points into, if the function allocated it: an
    allocation call (role HANDLE_ALLOC), or a phi of them merged as the data pointers are (the
    zeros or the product Numba returns for `A @ x`); with the allocation calls behind it."""
    return _owner(ptr, set())


def _owner(p: Value, seen: set[int]) -> tuple[Value, list[Instruction]] | None:
    while isinstance(p, Instruction) and p.opcode in ("getelementptr", "bitcast"):
        p = p.operands[0]
    if role_of(p) is Role.HANDLE_DATA:
        owner = p.operands[0]  # type: ignore[union-attr]
        return (owner, [owner]) if role_of(owner) is Role.HANDLE_ALLOC else None
    if not (isinstance(p, Instruction) and p.opcode == "phi") or id(p) in seen:
        return None
    seen.add(id(p))
    found = [_owner(op, seen) for op in p.operands]
    if any(f is None for f in found):
        return None
    owners = {blk: f[0] for blk, f in zip(p.incoming, found)}  # type: ignore[index]
    leaves = [leaf for f in found for leaf in f[1]]  # type: ignore[union-attr]
    for phi in p.block.phis():  # type: ignore[union-attr]
        if all(owners.get(blk) is v for v, blk in zip(phi.operands, phi.incoming)):
            return phi, leaves
    return None


def written_after(call: Instruction, leaves: list[Value],
                  allowed: Callable[[Instruction, Instruction], bool] | None = None,
                  targets: Callable[[Instruction], list[Value]] | None = None) -> bool:
    """Whether the memory of `leaves` (allocation calls, or an argument) may be written after
    `call` by other writes than those `allowed(call, write)` exempts. `targets`: the pointers
    a call writes through (default: what its record says).

    Once an allocation runs again on a path, a write through a pointer computed from it since
    is to a new array; a pointer carried across that allocation by a phi (`prev = a` in a
    loop) may still address the old one, so a write through a phi the allocation does not
    dominate counts (`_renewed`)."""
    block = call.block
    assert block is not None
    facts = _Facts(block)
    work = [(block, block.instructions.index(call) + 1, frozenset())]
    seen = set()
    while work:
        blk, start, renewed = work.pop()
        for inst in blk.instructions[start:]:
            if any(inst is leaf for leaf in leaves):
                renewed = renewed | {inst}
            elif (_may_write(inst, leaves, renewed, facts, targets or written_arguments)
                    and not (allowed is not None and allowed(call, inst))):
                return True
        for succ in blk.successors():
            if (succ, renewed) not in seen:
                seen.add((succ, renewed))
                work.append((succ, 0, renewed))
    return False


class _Facts:
    """The dominator tree of a function, computed when first needed."""

    def __init__(self, block: Block) -> None:
        self.function = block.function
        self._idom: dict | None = None

    def strictly_dominates(self, inst: Instruction, block: Block) -> bool:
        """Whether `inst` runs before the start of `block` on every path to it."""
        if self._idom is None:
            self._idom = dominators(self.function)
        return inst.block is not block and dominates(self._idom, inst.block, block)


def _may_write(inst: Instruction, leaves: list[Value], renewed: frozenset, facts: _Facts,
               call_targets: Callable[[Instruction], list[Value]]) -> bool:
    if inst.opcode == "store":
        targets = [inst.operands[1]]
    elif inst.opcode == "call" and role_of(inst) is not Role.RAW_FREE:   # frees no kept array
        targets = call_targets(inst)
    else:
        return False
    # Every memory a target may address (through phis and selects of pointers too).
    return any(_may_be_leaf(base, leaves, renewed, phis, facts) for target in targets
               for base, phis in _bases_with_phis(target))


def _bases_with_phis(ptr: Value) -> list[tuple[Value, frozenset]]:
    """`pointer_bases(ptr)`, each with the blocks of the phis passed on the ways to it (their
    union over all ways: one walk per value and growth of its set)."""
    reached: dict[int, tuple[Value, frozenset]] = {}
    work: list[tuple[Value, frozenset]] = [(ptr, frozenset())]
    while work:
        p, phis = work.pop()
        known = reached.get(id(p))
        if known is not None:
            if phis <= known[1]:
                continue
            phis = phis | known[1]
        reached[id(p)] = (p, phis)
        if isinstance(p, Instruction) and p.opcode == "phi":
            phis = phis | {p.block}
        work.extend((source, phis) for source in pointer_sources(p) or ())
    return [(v, phis) for v, phis in reached.values() if pointer_sources(v) is None]


def _may_be_leaf(base: Value, leaves: list[Value], renewed: frozenset, phis: frozenset,
                 facts: _Facts) -> bool:
    if addresses_nothing(base):     # null or poison on a path that writes nothing
        return False
    leaf = next((leaf for leaf in leaves if base is leaf or role_of(base) is Role.HANDLE_DATA
                 and base.operands[0] is leaf), None)  # type: ignore[union-attr]
    if leaf is not None:
        return not _renewed(leaf, renewed, phis, facts)
    # Memory of unknown origin may be anything (Numba's globals are constants).
    return not (isinstance(base, (Argument, GlobalRef)) or is_local_allocation(base)
                or _is_fresh(base) or isinstance(base, Instruction) and base.opcode == "alloca")


def _renewed(leaf: Value, renewed: frozenset, phis: frozenset, facts: _Facts) -> bool:
    """Whether a pointer into `leaf` reached through phis in blocks `phis` addresses the array
    of its latest run, which is a new one (`leaf` ran again after the call): values computed
    since it ran are recomputed from it, and so are phis of blocks it strictly dominates."""
    return leaf in renewed and all(facts.strictly_dominates(leaf, b) for b in phis)


def _is_fresh(v: Value) -> bool:
    """Memory a call made (an owner of a list, say): not one of the kept arrays."""
    record = call_record(v)
    return record is not None and record.fresh


def hold_until_reverse(st, call: Instruction, owner: Value) -> None:
    """Keep the array of `owner` (a primal value of reverse state `st`) alive until the
    reverse of `call`, which drops the reference (`drop_held`), unless a slot keeps it for
    the whole call anyway (`parked_shadows.py`)."""
    if owner in st.kept_allocations or owner in st.kept.get(call, ()):
        return
    held_reference(st.b, st.module, st.map(owner), Role.INCREF)
    if st.owned is not None:        # split mode: released if the state dies unreversed
        st.owned_pushes.setdefault(call.block, []).append(st.map(owner))
    st.kept.setdefault(call, []).append(owner)


def drop_held(st, avail, ctx, call: Instruction) -> None:
    """At the reverse of `call`: drop what `hold_until_reverse` kept for it."""
    for owner in st.kept.get(call, ()):
        held_reference(st.b, st.module, avail.value(ctx, owner), Role.DECREF)
