"""Temporaries and their shadows kept between calls by a forward derivative (API.md "Memory
kept between calls"), in slots taken and parked as reverse mode's are (`parked_shadows.py`).

An allocation whose memory gets a shadow, in no cycle of the CFG (run at most once per call),
in a function that returns no memory: the primal array and its shadow (k of them back to back
in vector mode) are taken from two slots, each with one more reference, the slot's: the
primal's last release (mirrored on the shadow) leaves both alive. Every return of the
derivative parks them again. Stack slots in the entry block hold the owners (null until the
allocation runs) and the size, so a return parks what this call took, whatever path it took;
parking a null owner (size 0) releases nothing.
"""
from __future__ import annotations

from ..ir.builder import Builder
from ..ir.types import I64, PTR
from ..ir.values import NULL, Block, GlobalRef, Instruction, Value, const_int
from ..known.model import Role, role_of
from .allocations import returns_memory
from .held_references import held_reference
from .reverse.parked_shadows import new_slot, park_shadow, take_shadow


class KeptAllocations:
    def __init__(self, fwd) -> None:
        """For the `_Forward` synthesizer `fwd` (its primal, module, width, entry slots)."""
        self.fwd = fwd
        self.enabled = not returns_memory(fwd.primal, fwd.retptr)
        self.cyclic: dict[Block, bool] = {}
        # per kept allocation: its slots, the stack slots of its owners and of its size
        self.held: list[tuple[tuple[GlobalRef, GlobalRef], tuple[Value, Value], Value]] = []

    def keeps(self, inst: Instruction) -> bool:
        """Whether the allocation `inst` (whose memory gets a shadow) is kept between calls:
        an array's (not a list's, which grows), run at most once per call."""
        return self.enabled and role_of(inst) is Role.HANDLE_ALLOC and inst.block is not None \
            and not self._in_cycle(inst.block)

    def take(self, b: Builder, size: Value, align: Value) -> tuple[Value, Value]:
        """The owners of the primal array (`size` bytes) and of its shadow, taken from new
        slots, each with the slot's reference."""
        fwd = self.fwd
        slots = (new_slot(fwd.module), new_slot(fwd.module))
        owner = take_shadow(b, fwd.module, slots[0], size, align, False)
        shadow = take_shadow(b, fwd.module, slots[1], self._total(b, size), align)
        owners = tuple(fwd.entry_alloca(PTR, NULL, name) for name in ("kept", "kept'"))
        held_size = fwd.entry_alloca(I64, const_int(I64, 0), "kept.size")
        for o, at in zip((owner, shadow), owners):
            held_reference(b, fwd.module, o, Role.INCREF)
            b.store(o, at)
        b.store(size, held_size)
        self.held.append((slots, owners, held_size))
        return owner, shadow

    def park_all(self, b: Builder) -> None:
        """At a return: park what this call took (nothing, where an allocation did not run)."""
        module = self.fwd.module
        for slots, owners, held_size in self.held:
            size = b.load(I64, held_size)
            for i, total in ((1, self._total(b, size)), (0, size)):
                park_shadow(b, module, slots[i], b.load(PTR, owners[i]), total)

    def _total(self, b: Builder, size: Value) -> Value:
        width = self.fwd.width
        return size if width == 1 else b.mul(size, const_int(I64, width))

    def _in_cycle(self, block: Block) -> bool:
        """Whether `block` can run again in the same call (reachable from its successors)."""
        if block not in self.cyclic:
            seen: set[Block] = set()
            work = list(block.successors())
            while work and block not in seen:
                blk = work.pop()
                if blk not in seen:
                    seen.add(blk)
                    work.extend(blk.successors())
            self.cyclic[block] = block in seen
        return self.cyclic[block]
