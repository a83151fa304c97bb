"""Control flow of the reverse pass: the reverse entry (reached from every normal return),
one reverse block per primal block, the edges back to the reverse of the predecessor the
primal came from, and the final block that packs the results."""
from __future__ import annotations

from ...analysis.cfg import Loop, decides
from ...ir.builder import Builder, add_incoming
from ...ir.types import I32, I64, FloatType, Type
from ...ir.values import Block, Instruction, Value, const_float, const_int, zero
from ..returns import pack_results, release_arrays
from ..spec import Activity
from .adjoints import Adjoints
from .availability import Availability, BlockContext
from .plan import Access
from .retained import Need, Retained, Retention
from .seed_return import seed_return_adjoints
from .state import ReverseState
from .trips import emit_trip_count, entry_trip_count

PhiAdjoints = list[tuple[Instruction, Value]]
_WITHOUT_TAPE = (Access.DIRECT, Access.IV, Access.RECOMPUTE)


class ReverseControl:
    def __init__(self, st: ReverseState, avail: Availability, adjoints: Adjoints) -> None:
        self.st = st
        self.avail = avail
        self.adjoints = adjoints
        self.primal_value: Value | None = None   # loaded from the return slot at reverse entry

    def entry(self) -> None:
        """Seed the return's adjoint, then go to the reverse of the block that returned."""
        st, b = self.st, self.st.b
        b.position_at_end(st.re)
        from_block = b.phi(I32, "returned.from")
        for i, (blk, _) in enumerate(st.returns):
            add_incoming(from_block, const_int(I32, i), st.fwd[blk])
        self.primal_value = b.load(st.slot.type, st.slot_ptr, "primal") \
            if st.slot.has_value else None
        if st.ret_active and st.spec.ret_leaves is None:
            b.store(_seed(st.slot.type), st.fshadow[st.retptr])
        elif st.ret_active:
            seed_return_adjoints(b, st.module, st.slot, st.slot_ptr, st.fshadow[st.retptr],
                                 st.sig, st.exit_unreversed)
        targets = [st.rev[blk] for blk, _ in st.returns]
        if not targets:                      # the primal never returns normally
            b.unreachable()
        elif len(targets) == 1:
            b.br(targets[0])
        else:
            b.switch(from_block, targets[0],
                     [(const_int(I32, i), t) for i, t in enumerate(targets)][1:])

    def finish(self) -> None:
        """Pack the results (primal value, gradients of active scalars), free the tape."""
        st, b = self.st, self.st.b
        b.position_at_end(st.done)
        grads: list = []
        for p in st.spec.params:
            if p.activity is Activity.ACTIVE:
                arg = st.primal.args[p.args[0]]
                grad = b.load(arg.type, self.adjoints.slot(arg))
                grads.append(b.fadd(grad, zero(arg.type)))   # -0.0 (no contribution) -> +0.0
        results = [self.primal_value, grads] if st.spec.return_primal else grads
        if not st.spec.return_primal and self.primal_value is not None:
            release_arrays(b, st.module, st.spec, self.primal_value)
        pack_results(b, st.sig.retptr, st.spec.ret_type, results, st.diag)
        st.release_tapes(b)
        ok = const_int(I32, 0)
        b.ret(st.deferred.returned(b, st.sig.excinfo, ok) if st.deferred is not None else ok)

    def block(self, block: Block) -> None:
        """The reverse of `block`: pop its tape frame, adjoints of its instructions
        backwards, then on to the reverse of the predecessor it was entered from."""
        st, b = self.st, self.st.b
        rblock = st.rev[block]
        b.position_at_end(rblock)
        ctx = BlockContext(block, st.frames.setdefault(block, []))
        for inst in reversed(block.instructions):
            if inst.opcode != "phi":
                self.adjoints.emit(ctx, inst)
        phi_adjoints = [(phi, self.adjoints.take(phi)) for phi in block.phis()
                        if st.info.is_active(phi)]
        self._leave(ctx, phi_adjoints)

    def pop_frames(self) -> None:
        """At the start of each reverse block, pop its tape frame (complete only once every
        block is done: loops add values they are invariant in to their exits' frames) and
        store the hoisted values into the slots their loop's reverse reads."""
        st = self.st
        for block in list(st.frames) + [b for b in st.slot_loads if b not in st.frames]:
            frame = st.frames.get(block)
            if block not in st.rev or not (frame or st.slot_loads.get(block)):
                continue
            head = Builder()
            head.position_after_phis(st.rev[block])   # a reverse block has none: its start
            if frame:
                st.tape.pop(head, [load for _, load in frame])
            for load, slot in st.hoist_stores.get(block, []):
                head.store(load, slot)
            for load in st.slot_loads.get(block, []):
                head.insert(load)

    def _leave(self, ctx: BlockContext, phi_adjoints: PhiAdjoints) -> None:
        """Continue with the reverse of the predecessor this block was entered from."""
        st, b, block = self.st, self.st.b, ctx.block
        preds = [p for p in st.preds(block) if p in st.rev]
        if block is st.primal.entry:
            b.br(st.done)
            return
        loop = st.loop_with_header(block)
        trip = {p: self._entry_trips(ctx, p) for p in preds}
        slots = {p: self._recurrence_slots(ctx, loop, p, trip[p]) for p in preds}
        edges = {p: self._edge(ctx, p, phi_adjoints, trip[p], slots[p]) for p in preds}
        if loop is not None:
            pre, latch = st.plan.preheader(loop), st.plan.latch(loop)
            first = b.icmp("eq", self.avail.counter(ctx, loop), const_int(I64, 0))
            b.cbr(first, edges[pre], edges[latch])
        elif len(preds) == 1:
            b.br(edges[preds[0]])
        else:
            which = self._recomputed_choice(ctx) or self.avail.value(ctx, st.which[block])
            all_preds = st.preds(block)
            cases = [(const_int(I32, all_preds.index(p)), edges[p]) for p in preds]
            b.switch(which, cases[0][1], cases[1:])

    def _recomputed_choice(self, ctx: BlockContext) -> Value | None:
        """Which predecessor ran, from deciding branches' conditions when the reverse pass
        can rebuild them (`_deciders`: if/else diamonds, and chains of if-then triangles whose
        `then` side may be a whole region such as a guarded loop); else None."""
        st, block = self.st, ctx.block
        preds = st.preds(block)
        decided = self._deciders(block, preds)
        if decided is None:
            return None
        steps, last = decided
        conds = []
        for decider, _ in steps:
            term = decider.terminator
            if term is None or term.opcode != "br" or len(term.operands) != 3 or \
                    st.plan.kind(term.operands[0], block) is Access.TAPE:
                return None
            conds.append(term.operands)
        which = const_int(I32, preds.index(last))
        for (decider, taken), (cond, if_true, if_false) in reversed(list(zip(steps, conds))):
            st.observe(Retained(Retention.RECOMPUTE, Need.CHOICE, block, cond))
            pick = [const_int(I32, preds.index(taken[t])) if t in taken else which
                    for t in (if_true, if_false)]
            which = st.b.select(self.avail.value(ctx, cond), pick[0], pick[1])
        return which

    def _deciders(self, block: Block, preds: list[Block]) \
            -> tuple[list[tuple[Block, dict[Block, Block]]], Block] | None:
        """Branches that tell which of `preds` entered `block`, in order: each (decider,
        {successor: the predecessor that successor means}), a successor not in the map
        deferring to the next decider, and the predecessor left when none took its edge.

        A chain: a predecessor that dominates the remaining ones, none of which is reached
        from `block` without passing it again, decides by its branch into `block` (`decides`:
        an if-then triangle is the two-predecessor case; a guard before a loop and one after
        it, GMM's, a chain of three). Else an if/else diamond: both sides' only predecessor."""
        idom, steps, rest = self.st.plan.idom, [], list(preds)
        while len(rest) > 1 and len(set(rest)) == len(rest):
            for d in rest:
                others = [p for p in rest if p is not d]
                if all(decides(idom, d, side, block) for side in others):
                    steps.append((d, {block: d}))
                    rest = others
                    break
            else:
                break
        if len(rest) == 1:
            return steps, rest[0]
        only = {p: self.st.plan.preds[p] for p in preds}
        if len(preds) == 2 and len(only[preds[0]]) == 1 and only[preds[0]] == only[preds[1]] \
                and all(p.successors() == [block] for p in preds):
            return [(only[preds[0]][0], {p: p for p in preds})], preds[0]   # diamond
        return None

    def _entry_trips(self, ctx: BlockContext, pred: Block) -> list[tuple[Loop, Value]]:
        """Trip counters of the loops the reverse enters on the edge block -> pred."""
        st = self.st
        inside = set(map(id, st.plan.loops_containing(ctx.block)))
        return [(loop, self._last_count(ctx, loop, pred))
                for loop in st.plan.loops_containing(pred) if id(loop) not in inside]

    def _last_count(self, ctx: BlockContext, loop: Loop, pred: Block) -> Value:
        """The counter of `loop` on its last iteration, left through `pred`: rebuilt from the
        loop's start and bound (`trips.py`) when it was left through its latch's compare and
        both are available without the tape (a triangular inner loop's bound depends on the
        outer loop's variable); else the counter itself (taped)."""
        st = self.st
        tc = entry_trip_count(st.plan, loop) if pred is st.plan.latch(loop) else None
        if tc is None or any(st.plan.kind(v, ctx.block) not in _WITHOUT_TAPE
                             for v in (tc.start, tc.bound)):
            return self.avail.value(ctx, st.counters[loop])
        st.observe(Retained(Retention.RECOMPUTE, Need.VALUE, ctx.block, st.counters[loop]))
        trips = emit_trip_count(st.b, tc, self.avail.value(ctx, tc.start),
                                self.avail.value(ctx, tc.bound))
        return st.b.sub(trips, const_int(I64, 1))

    def _recurrence_slots(self, ctx: BlockContext, loop: Loop | None, pred: Block,
                          trips: list[tuple[Loop, Value]]) -> list[tuple[Value, Value]]:
        """(value, slot) stores of the recurrences (`recurrences.py`) on the reverse edge to
        `pred`: entering a loop's reverse, p after its last iteration; on a back edge, p
        before the iteration just reversed (made here, in the block, not on the edge)."""
        st = self.st
        loops = [l for l, _ in trips]
        back = loop is not None and pred is st.plan.latch(loop)
        out = []
        for rec in st.plan.recurrences.values():
            if st.plan.kind(rec.phi, rec.loop.header) is not Access.RECURRENCE:
                continue
            if rec.loop in loops:
                out.append((self.avail.value(ctx, rec.after), st.recurrence_slots[rec.phi]))
            elif back and rec.loop is loop:
                out.append((self.avail.value(ctx, rec.phi), st.recurrence_slots[rec.phi]))
        return out

    def _edge(self, ctx: BlockContext, pred: Block, phi_adjoints: PhiAdjoints,
              trips: list[tuple[Loop, Value]], slots: list[tuple[Value, Value]]) -> Block:
        """The edge block -> pred of the reverse: phi adjoints move to the incoming values,
        the reverse loop counters are decremented on back edges and set on loop entries."""
        st, b, block = self.st, self.st.b, ctx.block
        edge = st.fn.add_block(f"{block.name}.rev.to.{pred.name}")
        with b.at_end(edge):
            for phi, adj in phi_adjoints:
                self.adjoints.add(phi.operands[phi.incoming.index(pred)], adj)
            loop = st.loop_with_header(block)
            for value, slot in slots:
                b.store(value, slot)
            if loop is not None and pred is st.plan.latch(loop):
                slot = st.rcounter[loop]
                b.store(b.sub(b.load(I64, slot), const_int(I64, 1)), slot)
            for entered, count in trips:
                b.store(count, st.rcounter[entered])
            b.br(st.rev[pred])
        return edge


def _seed(t: Type) -> Value:
    assert isinstance(t, FloatType), f"cannot seed a return of type {t}"
    return const_float(t, 1.0)
