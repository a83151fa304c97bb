"""Primal values and shadow pointers as usable in the reverse of one block (Enzyme's
`lookupM`): used directly, rebuilt from a reverse loop counter, recomputed, reloaded from a
spill slot, or popped from the block's tape frame."""
from __future__ import annotations

from dataclasses import dataclass, field

from ...analysis.cfg import Loop
from ...ir.clone import clone_instruction
from ...ir.types import I8, I64, PTR, VOID
from ...ir.values import Argument, Block, Constant, Instruction, Value
from .last_update import LastUpdate, stand_in
from .plan import Access
from .retained import Need, Retained, Retention
from .state import ReverseState
from .tape import pop_placeholder


@dataclass
class BlockContext:
    """The reverse of primal block `block` being emitted: `memo` holds what was already made
    available in it, `frame` the (forward value, pop placeholder) pairs its tape frame holds."""
    block: Block
    frame: list[tuple[Value, Instruction]]
    memo: dict[tuple[object, int], Value] = field(default_factory=dict)


class Availability:
    def __init__(self, st: ReverseState) -> None:
        self.st = st

    def value(self, ctx: BlockContext, v: Value) -> Value:
        """Primal value `v` as usable in the reverse of `ctx.block`."""
        st, b = self.st, self.st.b
        update = st.last_updates.get(v)  # type: ignore[call-overload]
        if update is not None and ctx.block in update.loop.blocks:
            return self._since_last_update(ctx, update)
        access = st.plan.kind(v, ctx.block)
        if access is Access.DIRECT:
            return st.map(v)
        key = (access, id(v))
        if key in ctx.memo:
            return ctx.memo[key]
        kind = Retention.of(access)
        if kind in (Retention.TAPE, Retention.HOIST) and isinstance(v, Instruction) \
                and st.plan.executes_once(v.block):  # type: ignore[arg-type]
            kind = Retention.SPILL
        carrier = st.plan.carrier(v, ctx.block) if kind is Retention.TAPE else None
        if kind is not Retention.HOIST:
            st.observe(Retained(kind, Need.VALUE, ctx.block, v, carrier=carrier))
        if kind is Retention.IV and v in st.plan.pointer_ivs:
            out = self._pointer_iv(ctx, v, self.value(ctx, st.plan.pointer_ivs[v].start))
        elif kind is Retention.IV:
            iv = st.plan.ivs[v]  # type: ignore[index]
            count = self.counter(ctx, iv.loop)
            if count.type != v.type:
                count = b.cast("trunc", count, v.type)
            scaled = count if _is_const(iv.step, 1) else b.mul(count, self.value(ctx, iv.step))
            out = scaled if _is_const(iv.start, 0) else b.add(self.value(ctx, iv.start), scaled)
        elif kind is Retention.RECOMPUTE:
            assert isinstance(v, Instruction)
            out = b.insert(clone_instruction(v, lambda o: self.value(ctx, o), lambda blk: blk))
        elif kind is Retention.SPILL:
            slot = self._spill_slot(v, st.map(v))  # type: ignore[arg-type]
            out = b.load(v.type, slot, (v.name or "") + ".spill")
        elif kind is Retention.HOIST:
            out = self._hoisted(ctx, v, Need.VALUE)
        elif kind is Retention.TABLE:
            nest = st.plan.table_nest(v, ctx.block)
            out = st.tables.read(b, v, nest, lambda l: self.value(ctx, st.counters[l]))
        elif kind is Retention.RECURRENCE:
            rec = st.plan.recurrences[v]
            after = b.load(I64, st.recurrence_slots[v], (v.name or "") + ".after")
            out = b.sub(after, rec.emit_added(b, lambda o: self.value(ctx, o)))
        else:
            out = pop_placeholder(v.type, (v.name or "") + ".tape")
            ctx.frame.append((st.map(v), out))
            if carrier is not None:
                st.carriable.setdefault((v, carrier), []).append((ctx.block, out))
        ctx.memo[key] = out
        return out

    def share_carried(self) -> None:
        """A value several blocks of one loop iteration tape for their reverses is taped
        once, by the loop's latch (`ReversePlan.carrier`), whose reverse stores it into a
        stack slot the others read."""
        st = self.st
        for (v, carrier), readers in st.carriable.items():
            if len(readers) < 2:
                continue
            slot = st.alloca(v.type, (v.name or "") + ".carried")
            taped = pop_placeholder(v.type, (v.name or "") + ".tape")
            for block, load in readers:
                st.frames[block] = [e for e in st.frames[block] if e[1] is not load]
                load.operands = [slot]
                st.slot_loads.setdefault(block, []).append(load)
            st.frames.setdefault(carrier, []).append((st.map(v), taped))
            st.hoist_stores.setdefault(carrier, []).append((taped, slot))

    def _since_last_update(self, ctx: BlockContext, update: LastUpdate) -> Value:
        """The condition of a running max/min select, rebuilt from the iteration of the
        loop's last update (`last_update.py`): taped once per run of the loop, not per
        iteration."""
        st = self.st
        key = ("last update", id(update))
        if key not in ctx.memo:
            cond = stand_in(update, st.plan, st.counters[update.loop], st.vmap, st.fwd)
            st.observe(Retained(Retention.RECOMPUTE, Need.VALUE, ctx.block, cond))
            iteration, last = cond.operands
            ctx.memo[key] = st.b.icmp(cond.predicate or "", self.value(ctx, iteration),
                                      self.value(ctx, last), cond.name)
        return ctx.memo[key]

    def _spill_slot(self, v: Instruction, fwd: Value) -> Instruction:
        """A value computed at most once (not in a loop) but not on every path to the return
        (`fwd`: its forward copy, or its shadow) is kept in a stack slot, stored right after
        its forward definition."""
        st = self.st
        slot = st.spills.get(fwd)
        if slot is None:
            name = (v.name or "v") + ("'" if fwd is st.fshadow.get(v) else "") + ".spill"
            slot = st.spills[fwd] = st.alloca(fwd.type, name)
            assert isinstance(fwd, Instruction) and fwd.block is not None
            block = fwd.block
            at = block.instructions.index(fwd) + 1
            if fwd.opcode == "phi":
                at = sum(1 for _ in block.phis())
            block.insert(at, Instruction("store", VOID, [fwd, slot]))
        return slot

    def _hoisted(self, ctx: BlockContext, v: Value, what: Need) -> Value:
        """`v` (or its shadow) read from the stack slot the reverse of the loop it is
        invariant in keeps it in: taped at each exit of that loop, stored on popping."""
        st = self.st
        loop = st.plan.hoist_loop(v, ctx.block)
        assert loop is not None
        key = (what, v, loop)
        slot = st.hoisted.get(key)
        fwd = st.fshadow[v] if what is Need.SHADOW else st.map(v)
        name = (v.name or "") + ("'" if what is Need.SHADOW else "") + ".hoist"
        if slot is None:
            slot = st.hoisted[key] = st.alloca(fwd.type, name)
            for exit_ in st.plan.exits(loop):
                if exit_ not in st.rev:
                    continue
                st.observe(Retained(Retention.TAPE, what, exit_, v, invariant_in=loop))
                load = pop_placeholder(fwd.type, name)
                st.frames.setdefault(exit_, []).append((fwd, load))
                st.hoist_stores.setdefault(exit_, []).append((load, slot))
        return st.b.load(fwd.type, slot, name)

    def _pointer_iv(self, ctx: BlockContext, v: Value, start: Value) -> Value:
        """Pointer induction variable `v` (or its shadow, from `start`'s) in this iteration."""
        iv = self.st.plan.pointer_ivs[v]  # type: ignore[index]
        offset = self.st.b.mul(self.counter(ctx, iv.loop), iv.step)
        return self.st.b.gep(I8, start, [offset])

    def counter(self, ctx: BlockContext, loop: Loop) -> Value:
        """The reverse counter of `loop` (iterations left), loaded once per block."""
        key = ("rcounter", id(loop))
        if key not in ctx.memo:
            ctx.memo[key] = self.st.b.load(I64, self.st.rcounter[loop], f"{loop.header.name}.i")
        return ctx.memo[key]

    def shadow(self, ctx: BlockContext, ptr: Value) -> Value:
        """Shadow of primal pointer `ptr`, usable in the reverse of `ctx.block`."""
        st, b = self.st, self.st.b
        if ptr in st.fshadow and (isinstance(ptr, Argument) or ptr is st.slot_ptr or
                                  st.plan.kind(ptr, ctx.block) is Access.DIRECT):
            return st.fshadow[ptr]
        key = ("shadow", id(ptr))
        if key in ctx.memo:
            return ctx.memo[key]
        if isinstance(ptr, Instruction) and ptr.opcode == "getelementptr":
            base, *idx = ptr.operands
            out = b.gep(ptr.source_type, self.shadow(ctx, base),  # type: ignore[arg-type]
                        [self.value(ctx, i) for i in idx], flags=ptr.flags)
        elif isinstance(ptr, Instruction) and ptr.opcode == "select":
            c, x, y = ptr.operands
            out = b.select(self.value(ctx, c), self.shadow(ctx, x), self.shadow(ctx, y))
        elif isinstance(ptr, Instruction) and ptr.opcode in ("bitcast", "addrspacecast", "freeze"):
            out = self.shadow(ctx, ptr.operands[0])
        elif ptr in st.plan.pointer_ivs and st.plan.kind(ptr, ctx.block) is Access.IV:
            st.observe(Retained(Retention.IV, Need.SHADOW, ctx.block, ptr))
            start = st.plan.pointer_ivs[ptr].start  # type: ignore[index]
            out = self._pointer_iv(ctx, ptr, self.shadow(ctx, start))
        elif isinstance(ptr, Instruction) and ptr.block is not None \
                and st.plan.executes_once(ptr.block):
            # made once per call: a stack slot, not the tape, so that a pass differentiating
            # this derivative can follow it (mem2reg turns the slot into SSA values)
            st.observe(Retained(Retention.SPILL, Need.SHADOW, ctx.block, ptr))
            slot = self._spill_slot(ptr, st.fshadow[ptr])
            out = b.load(PTR, slot, (ptr.name or "") + "'.spill")
        elif st.plan.hoist_loop(ptr, ctx.block) is not None:
            out = self._hoisted(ctx, ptr, Need.SHADOW)
        else:
            st.observe(Retained(Retention.TAPE, Need.SHADOW, ctx.block, ptr))
            out = pop_placeholder(PTR, (ptr.name or "") + "'.tape")
            ctx.frame.append((st.fshadow[ptr], out))
        ctx.memo[key] = out
        return out


def _is_const(v: Value, value: int) -> bool:
    return isinstance(v, Constant) and v.text == str(value)
