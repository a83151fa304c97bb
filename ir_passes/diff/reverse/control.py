"""Control flow of the reverse pass: the reverse entry (reached from every normal return),
one reverse block per primal block, the edges back to the reverse of the predecessor the
primal came from, and the final block that packs the results."""
from __future__ import annotations

from ...analysis.cfg import Loop, dominates
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
                                 st.sig, st.release_tapes)
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
        b.ret(const_int(I32, 0))

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
        for block, frame in st.frames.items():
            if not frame or block not in st.rev:
                continue
            head = Builder()
            head.position_after_phis(st.rev[block])   # a reverse block has none: its start
            st.tape.pop(head, [load for _, load in frame])
            for load, slot in st.hoist_stores.get(block, []):
                head.store(load, slot)

    def _leave(self, ctx: BlockContext, phi_adjoints: PhiAdjoints) -> None:
        """Continue with the reverse of the predecessor this block was entered from."""
        st, b, block = self.st, self.st.b, ctx.block
        preds = [p for p in st.preds(block) if p in st.rev]
        if block is st.primal.entry:
            b.br(st.done)
            return
        loop = st.loop_with_header(block)
        trip = {p: self._entry_trips(ctx, p) for p in preds}
        edges = {p: self._edge(ctx, p, phi_adjoints, trip[p]) for p in preds}
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
        """Which of two predecessors ran, from the deciding branch's condition when the
        reverse pass can rebuild it (if/else diamonds, and if-then triangles, whose `then`
        side may be a whole region such as a guarded loop); else None."""
        st, block = self.st, ctx.block
        preds = st.preds(block)
        if len(preds) != 2:
            return None
        only = {p: st.plan.preds[p] for p in preds}
        decider = None
        for d, side in ((preds[0], preds[1]), (preds[1], preds[0])):
            if _decides(st.plan.idom, d, side, block):
                start = _other_successor(d, block)
                decider, taken_if = d, {start: side, block: d}  # triangle d -> ... -> side
        if decider is None and len(only[preds[0]]) == 1 and only[preds[0]] == only[preds[1]] \
                and all(p.successors() == [block] for p in preds):
            decider, taken_if = only[preds[0]][0], {p: p for p in preds}   # diamond
        term = decider.terminator if decider is not None else None
        if term is None or term.opcode != "br" or len(term.operands) != 3:
            return None
        cond, if_true, if_false = term.operands
        if if_true not in taken_if or if_false not in taken_if or \
                st.plan.kind(cond, block) is Access.TAPE:
            return None
        pick = [const_int(I32, preds.index(taken_if[t]))  # type: ignore[index]
                for t in (if_true, if_false)]
        st.observe(Retained(Retention.RECOMPUTE, Need.CHOICE, block, cond))
        return st.b.select(self.avail.value(ctx, cond), pick[0], pick[1])

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

    def _edge(self, ctx: BlockContext, pred: Block, phi_adjoints: PhiAdjoints,
              trips: list[tuple[Loop, Value]]) -> Block:
        """The edge block -> pred of the reverse: phi adjoints move to the incoming values,
        the reverse loop counters are decremented on back edges and set on loop entries."""
        st, b, block = self.st, self.st.b, ctx.block
        edge = st.fn.add_block(f"{block.name}.rev.to.{pred.name}")
        with b.at_end(edge):
            for phi, adj in phi_adjoints:
                self.adjoints.add(phi.operands[phi.incoming.index(pred)], adj)
            loop = st.loop_with_header(block)
            if loop is not None and pred is st.plan.latch(loop):
                slot = st.rcounter[loop]
                b.store(b.sub(b.load(I64, slot), const_int(I64, 1)), slot)
            for entered, count in trips:
                b.store(count, st.rcounter[entered])
            b.br(st.rev[pred])
        return edge


def _other_successor(branch: Block, target: Block) -> Block | None:
    """The other successor of a two-way branch to `target`."""
    succs = branch.successors()
    if len(succs) != 2 or target not in succs or succs[0] is succs[1]:
        return None
    return succs[1] if succs[0] is target else succs[0]


def _decides(idom, d: Block, side: Block, block: Block) -> bool:
    """Whether the last run of `d` before `block` is entered from `side` took `d`'s other
    branch (not the one to `block`): every path to `side` runs `d` (it dominates `side`),
    none runs from `block` to `side` without running `d` again, and the other branch
    reaches `side`. (A triangle d -> side -> block is the smallest case.)"""
    start = _other_successor(d, block)
    return (start is not None and dominates(idom, d, side)
            and not _reaches_avoiding(block, side, (d,))
            and _reaches_avoiding(start, side, (d, block)))


def _reaches_avoiding(start: Block, goal: Block, avoid: tuple[Block, ...]) -> bool:
    """Whether `goal` is reached from `start` on paths through none of `avoid`: then
    entering it means the branch into `start` was taken since any block of `avoid` ran."""
    if start in avoid:
        return False
    seen, work = {start}, [start]
    while work:
        blk = work.pop()
        if blk is goal:
            return True
        for succ in blk.successors():
            if succ not in seen and succ not in avoid:
                seen.add(succ)
                work.append(succ)
    return False


def _seed(t: Type) -> Value:
    assert isinstance(t, FloatType), f"cannot seed a return of type {t}"
    return const_float(t, 1.0)
