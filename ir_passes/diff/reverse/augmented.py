"""The augmented forward pass: a clone of the primal whose loops count their iterations,
whose merge blocks record which predecessor ran, which keeps the shadow pointers of active
memory, and whose normal returns jump to the reverse pass."""
from __future__ import annotations

from ...analysis.cfg import Loop
from ...ir.builder import add_incoming
from ...ir.clone import clone_instruction
from ...ir.split import retarget_phis
from ...ir.types import I32, I64, PTR
from ...ir.values import NULL, Argument, Block, Constant, Instruction, Value, const_int
from ...known.array_layout import MEMINFO, PARENT
from ...known.memory import pointer_base
from ..common import addresses_nothing, is_poison, mixed_memory_error, unknown_shadow_pointer
from ..returns import is_exceptional_return
from ..shadows import allocate_shadow, call_shadow, derived_shadow
from ...known.model import Role, role_of
from .callees import augment_call, touches
from ..held_references import held_reference
from .parked_shadows import new_slot, take_shadow
from .checks import check_forward
from ..held_pointers import (held_load_shadow, held_shadow, is_held_copy,
                             is_held_pointer_load, is_held_pointer_store, is_list_item_store,
                             list_item_shadow)
from ..taped_pointers import (is_tape_copy, is_taped_pointer_store, reads_taped_shadows,
                              taped_shadow)
from .growable import allocate_growable, growable_data, resize_growable
from .state import ReverseState
from .tape import Tape


class AugmentedForward:
    def __init__(self, st: ReverseState) -> None:
        self.st = st

    def block(self, block: Block) -> None:
        """The forward clone of primal block `block`."""
        st, b = self.st, self.st.b
        b.position_at_end(st.fwd[block])
        loop = st.loop_with_header(block)
        for inst in block.instructions:
            if inst.opcode == "phi":
                self._phi(inst)
                continue
            if inst is block.instructions[len(list(block.phis()))]:
                self._bookkeeping(block, loop)
            if inst.opcode == "ret":
                self._return(inst)
                continue
            if inst.opcode == "call" and inst.callee_name in st.callees \
                    and touches(st.info, inst):
                augment_call(st, inst, st.module.functions[inst.callee_name])
                continue
            if inst in st.kept_between_calls:
                self._kept_allocation(inst, block)
                check_forward(st, inst)
                continue
            clone = b.insert(clone_instruction(inst, st.map, st.fwd.__getitem__))
            st.vmap[inst] = clone
            check_forward(st, inst)
            self._mirror_returned_pointer(inst)
            self._mirror_taped_pointer(inst)
            self._mirror_listed_pointer(inst)
            self._mirror_held_pointer(inst)
            if inst in st.growable or inst.operands and inst.operands[0] in st.growable:
                self._growable(inst)
            elif inst in st.allocs:
                size, align = (st.map(op) for op in inst.operands)
                st.fshadow[inst] = allocate_shadow(b, st.module, size, align)[0]
                if st.owned is not None:
                    st.owned_pushes.setdefault(block, []).append(st.fshadow[inst])
                if inst in st.plan.live_arrays:     # held until its reverse, for reloads
                    self._held_allocation(inst, clone)
            elif inst in st.info.shadowed:
                st.fshadow[inst] = self._shadow(inst)

    def _growable(self, inst: Instruction) -> None:
        """A list's storage, its data pointer and its resizes: on the versioned shadow."""
        st, b = self.st, self.st.b
        role = role_of(inst)
        if inst in st.growable:
            st.fshadow[inst] = allocate_growable(b, st.module, st.map(inst.operands[0]))
        elif role is Role.HANDLE_DATA and inst in st.info.shadowed:
            st.fshadow[inst] = growable_data(b, st.fshadow[inst.operands[0]])
        elif role is Role.VARSIZE_REALLOC:
            resize_growable(b, st.module, st.fshadow[inst.operands[0]], st.map(inst.operands[1]))

    def _kept_allocation(self, inst: Instruction, block: Block) -> None:
        """An allocation run once per call and its shadow, both kept between calls in slots
        (`parked_shadows.py`); the slot holds a reference to the primal array of its own.
        Both listed for an exit that skips the reverse (`unreversed.py`): on the owned list
        in split mode, else in entry slots (no list to grow per call)."""
        st, b = self.st, self.st.b
        size, align = (st.map(op) for op in inst.operands)
        slots = (new_slot(st.module), new_slot(st.module))
        st.vmap[inst] = owner = take_shadow(b, st.module, slots[0], size, align, False)
        held_reference(b, st.module, owner, Role.INCREF)
        st.fshadow[inst] = take_shadow(b, st.module, slots[1], size, align)
        st.kept_allocations[inst] = slots
        taken = [owner, st.fshadow[inst]]
        if st.owned is not None:
            st.owned_pushes.setdefault(block, []).extend(taken)
            return
        for value in taken:
            slot = st.zeroed_alloca(PTR, "kept.taken", NULL)
            b.store(value, slot)
            st.kept_owners.append(slot)

    def _held_allocation(self, inst: Instruction, owner: Instruction) -> None:
        """A temporary not kept between calls (the function returns memory, or it is made in
        a loop: `state.py`): a held reference keeps it until its reverse, which reloads what
        it reads (`ReversePlan.reloadable`). A raise drops it (`unreversed.py`): from an entry
        slot, or from the owned list for one made in a loop (as its shadow)."""
        st, b = self.st, self.st.b
        held_reference(b, st.module, owner, Role.INCREF)
        if st.plan.executes_once(inst.block):   # type: ignore[arg-type]
            slot = st.zeroed_alloca(PTR, "held.taken", NULL)
            b.store(owner, slot)
            st.kept_owners.append(slot)
        elif st.owned is not None:              # made in a loop: listed, as its shadow
            st.owned_pushes.setdefault(inst.block, []).append(owner)  # type: ignore[arg-type]

    def _phi(self, inst: Instruction) -> None:
        st, b = self.st, self.st.b
        clone = b.insert(clone_instruction(inst, st.map, st.fwd.__getitem__))
        st.vmap[inst] = clone
        st.phis.append((inst, clone))
        if inst in st.info.shadowed:
            sphi = b.phi(PTR, (inst.name or "") + "'")
            st.fshadow[inst] = sphi
            st.phis.append((inst, sphi))

    def _bookkeeping(self, block: Block, loop: Loop | None) -> None:
        """Loop counters in headers; "which predecessor" records in merge blocks."""
        st, b = self.st, self.st.b
        if loop is not None:
            counter = b.phi(I64, f"{block.name}.iter")
            st.vmap[st.counters[loop]] = counter
            st.pending_counters.append((loop, counter))
        elif len(st.preds(block)) > 1:
            which = Instruction("phi", I32, [], f"{block.name}.from")
            which.block = block
            st.which[block] = which
            fwd_which = b.phi(I32, f"{block.name}.from")
            for i, p in enumerate(st.preds(block)):
                for _ in range(p.successors().count(block)):   # one entry per CFG edge
                    add_incoming(fwd_which, const_int(I32, i), st.fwd[p])
            st.vmap[which] = fwd_which

    def _shadow(self, inst: Instruction) -> Value:
        st, b = self.st, self.st.b
        shadow = derived_shadow(b, inst, st.map, self._shadow_of)
        if shadow is None:      # a raw buffer's shadow is freed in the reverse of this call
            shadow = call_shadow(b, st.module, inst, st.map, st.fshadow.__getitem__)
        if shadow is not None:
            return shadow
        if is_held_pointer_load(inst, st.info):                 # kept beside it
            return held_load_shadow(b, st.diag, st.info, inst, st.fshadow[inst.operands[0]])
        if inst.opcode == "alloca":
            if inst.operands:
                raise st.diag.unsupported("dynamic alloca holding active values", inst)
            name = (inst.name or "") + "'"
            return st.zeroed_alloca(inst.source_type, name,  # type: ignore[arg-type]
                                    align=inst.align)          # the primal's accesses claim it
        raise unknown_shadow_pointer(st.diag, inst)

    def _shadow_of(self, ptr: Value, user: Instruction) -> Value:
        if is_poison(ptr):      # an incoming value of a phi on a path that never uses it
            return Constant(PTR, "poison")
        s = self.st.fshadow.get(ptr)
        if s is None and addresses_nothing(ptr):
            return NULL
        if s is None:
            raise mixed_memory_error(self.st.diag, self.st.spec, ptr, user)
        return s

    def _mirror_taped_pointer(self, inst: Instruction) -> None:
        """Differentiating a reverse derivative: the shadow of a pointer it tapes goes into
        the tape's shadow, which grows with the tape (`taped_pointers.py`)."""
        st = self.st
        if not (is_taped_pointer_store(inst) or is_tape_copy(inst)) \
                or not reads_taped_shadows(st.primal, st.info):
            return
        if inst.opcode == "store":
            shadow = taped_shadow(st.diag, inst, st.fshadow.get)
            st.b.store(shadow, st.fshadow[inst.operands[1]])
            return
        dst, src, *rest = inst.operands
        st.b.call(st.module.functions[inst.callee_name or ""],
                  [st.fshadow[dst], st.fshadow[src], *(st.map(o) for o in rest)], inst.type)

    def _mirror_held_pointer(self, inst: Instruction) -> None:
        """A pointer stored into shadowed memory: its shadow goes to the same place in the
        shadow memory (`held_pointers.py`), where the reverse of a store leaves it."""
        st = self.st
        if is_held_pointer_store(inst, st.info) and pointer_base(inst.operands[1]) is not st.retptr:
            st.b.store(held_shadow(st.diag, inst, st.fshadow.get), st.fshadow[inst.operands[1]])
        elif is_held_copy(inst, st.info):
            dst, src, *rest = inst.operands
            st.b.call(st.module.functions[inst.callee_name or ""],
                      [st.fshadow[dst], st.fshadow[src], *(st.map(o) for o in rest)], inst.type)

    def _mirror_listed_pointer(self, inst: Instruction) -> None:
        """A pointer or integer stored into a list of arrays: the shadow list mirrors it
        (`held_pointers.py`)."""
        st = self.st
        if inst.operands and inst.operands[-1] in st.info.shadowed \
                and is_list_item_store(st.primal, inst):
            if inst.operands[0] in st.info.varied:      # reverse mode keeps no tangents
                raise st.diag.unsupported("integer bits of an active value stored into a list",
                                          inst, "not supported yet: keep floats as floats")
            shadow = list_item_shadow(st.diag, st.primal, inst, st.map, self._listed_shadow,
                                      lambda v: None)
            st.b.store(shadow, st.fshadow[inst.operands[1]])

    def _listed_shadow(self, v: Value) -> Value | None:
        """The shadow of a pointer put in a list: an argument's meminfo and parent have their
        shadow argument's (the shadow list then holds the shadow array's whole struct)."""
        st = self.st
        shadow = st.fshadow.get(v)
        if shadow is not None or not isinstance(v, Argument):
            return shadow
        return next((st.sig.shadow_args[p.name][i] for p in st.spec.params for i in
                     (MEMINFO, PARENT) if p.activity.has_shadow and p.is_array
                     and st.primal.args[p.args[i]] is v), None)

    def _mirror_returned_pointer(self, inst: Instruction) -> None:
        """A pointer stored into the return slot: its shadow goes into the shadow slot (null
        if it has none), where the reverse entry finds a returned array's shadow."""
        if inst.opcode != "store" or not inst.operands[0].type.is_pointer:
            return
        st = self.st
        v, ptr = inst.operands
        if ptr in st.info.shadowed and pointer_base(ptr) is st.retptr:
            shadow = st.fshadow.get(v, Constant(PTR, "null"))
            st.b.store(shadow, st.fshadow[ptr])

    def _return(self, inst: Instruction) -> None:
        st, b = self.st, self.st.b
        status = st.map(inst.operands[0])
        if is_exceptional_return(inst):
            st.exit_unreversed(b)
            b.ret(status)
            return
        if isinstance(status, Constant):
            st.returns.append((inst.block, status))  # type: ignore[arg-type]
            b.br(st.re)
            return
        raised = st.fn.add_block((inst.block.name or "") + ".raise")  # type: ignore[union-attr]
        ok = b.icmp("eq", status, const_int(status.type, 0))  # type: ignore[arg-type]
        st.returns.append((inst.block, status))  # type: ignore[arg-type]
        b.cbr(ok, st.re, raised)
        with b.at_end(raised):
            st.exit_unreversed(b)
            b.ret(status)

    def fill_phis(self) -> None:
        """Incoming values of the forward phis, once every block is cloned."""
        st = self.st
        for inst, phi in st.phis:
            shadow = phi.type == PTR and phi is st.fshadow.get(inst)
            for v, blk in zip(inst.operands, inst.incoming):
                if blk not in st.fwd:
                    continue
                value = self._shadow_of(v, inst) if shadow else st.map(v)
                add_incoming(phi, value, st.fwd[blk])
        for loop, counter in st.pending_counters:
            pre, latch = st.plan.preheader(loop), st.plan.latch(loop)
            add_incoming(counter, const_int(I64, 0), st.fwd[pre])
            nxt = Instruction("add", I64, [counter, const_int(I64, 1)], f"{loop.header.name}.next",
                              flags=("nuw", "nsw"))
            fblock = st.fwd[loop.header]
            fblock.insert(len(list(fblock.phis())), nxt)
            add_incoming(counter, nxt, st.fwd[latch])

    def push_frame(self, block: Block, checked: bool = True) -> None:
        """Push the values the reverse of `block` pops, at the end of its forward clone
        (`checked=False`: into space reserved before its loop, see `presize.py`)."""
        self._push(self.st.tape, block, [v for v, _ in self.st.frames[block]], checked)

    def push_owned(self, block: Block) -> None:
        """Split mode: list what `block` takes that only the reverse releases
        (`unreversed.py`)."""
        self._push(self.st.owned, block, self.st.owned_pushes[block])  # type: ignore[arg-type]

    def _push(self, tape: Tape, block: Block, values: list[Value], checked: bool = True) -> None:
        st = self.st
        fblock = st.fwd[block]
        cont = tape.push(fblock, values, checked)
        retarget_phis(fblock, cont)
        st.fwd[block] = cont
