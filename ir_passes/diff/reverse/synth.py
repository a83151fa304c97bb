"""Reverse mode: augmented forward pass, then the reverse pass, in one function.

Layout of the derivative:
  entry        allocas (return slot and its shadow, adjoints, tape, loop counters)
  forward      a clone of the primal; loops get a counter; blocks with several predecessors
               record which one was taken; blocks push the values their reverse needs
  RE           reached from every normal return: seeds the return adjoint (1.0 for a float
               return, `d_ret` for returned tuples and arrays), then jumps to the reverse of
               the block that returned
  B.rev        one per primal block: pops its tape frame, runs the adjoints of its
               instructions backwards, then continues with the reverse of the predecessor
               it was entered from (recorded, or `counter == 0` for loop headers); phi
               adjoints move to their incoming values on those edges
  done         packs results (primal value, gradients of active scalars), frees the tape

A reverse loop runs its primal loop's iterations backwards: entering it from an exit stores
the trip counter, each back edge decrements it, and induction variables are rebuilt from it.
Adjoints live in allocas that LLVM promotes to registers. Values the reverse needs are
classified by `ReversePlan` (direct / iv / recompute / tape).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...analysis.activity import ActivityInfo, analyze_activity, carries_float
from ...analysis.cfg import Loop, blocks_reaching, reverse_post_order
from ...analysis.types import analyze_memory_types
from ...diagnostics import Diagnostics
from ...errors import ActivityError
from ...ir.builder import Builder, add_incoming, declare
from ...ir.clone import clone_instruction
from ...ir.types import I32, I64, PTR, VOID, ArrayType, FloatType, IntType, StructType, Type
from ...ir.values import (FALSE, Argument, Block, Constant, Function, Instruction,
                          Module, Value, const_float, const_int, zero)
from ..allocations import (allocate_raw_shadow, allocate_shadow, data_pointer, free_raw, refcount,
                           shadowed_allocations)
from ..blas import axpy_function, dot_operands, dot_type, is_dot
from ..common import (check_pointer_to_int, check_reinterpretation, check_store,
                      describe_memory, fast_math_of, scale, unknown_shadow_pointer)
from ..memory import (INERT_CALLS, MEMORY_INTRINSICS, NRT_DATA, NRT_RAW_ALLOC, NRT_RAW_FREE,
                      is_memory_intrinsic, pointer_base)
from ..returns import is_exceptional_return, pack_results, release_arrays, return_slot
from ..rules import lookup
from ..rules.emitter import MathEmitter
from ..rules.math import math_rule_name
from ..rules.needs import rule_needs
from ..seeds import activity_seeds, known_element_types
from ..signature import build_signature
from ..spec import Activity, DiffSpec
from .copies import copy_adjoint_function, copy_element_type
from .plan import InductionVariable, ReversePlan
from .seed_return import seed_return_adjoints
from .tape import Tape, pop_placeholder


@dataclass(frozen=True)
class Retained:
    """How the reverse of `block` obtains a primal value it needs (reported to observers).

    kind: "tape" (pushed per execution of `block`), "spill" (one stack slot: computed at most
    once), "recompute" (cloned from available operands), "iv" (rebuilt from a reverse loop
    counter); what: "value", "shadow" (the value is a shadow pointer of `value`), or
    "choice" (which predecessor ran, recomputed from `value`, the branch condition).
    """
    kind: str
    what: str
    block: Block
    value: Value


def synthesize_reverse(module: Module, spec: DiffSpec,
                       observe: Callable[[Retained], None] | None = None) -> Function:
    """Add the reverse-mode derivative described by `spec` to `module` and return it.

    `observe`, when given, hears every decision about a value the reverse pass needs.
    """
    fn = _Reverse(module, spec, observe or (lambda event: None)).run()
    module.add_function(fn)
    return fn


class _Reverse:
    def __init__(self, module: Module, spec: DiffSpec,
                 observe: Callable[[Retained], None]) -> None:
        self.observe = observe
        self.module = module
        self.spec = spec
        self.primal = module.functions[spec.primal]
        self.diag = Diagnostics(module, self.primal)
        self.sig = build_signature(self.primal, spec)
        self.fn = self.sig.fn
        self.b = Builder()
        self.m = MathEmitter(self.b, module)
        self.vmap: dict[Value, Value] = dict(self.sig.primal_args)
        self.fshadow: dict[Value, Value] = {}         # forward-pass shadow pointers
        self.fwd: dict[Block, Block] = {}              # primal block -> forward clone
        self.rev: dict[Block, Block] = {}              # primal block -> reverse block
        self.adjoints: dict[Value, Instruction] = {}   # primal value -> adjoint alloca
        self.counters: dict[Loop, Instruction] = {}    # loop -> synthetic primal counter
        self.rcounter: dict[Loop, Instruction] = {}    # loop -> reverse counter alloca
        self.which: dict[Block, Instruction] = {}      # block -> synthetic "which pred" value
        self.frames: dict[Block, list[tuple[Value, Instruction]]] = {}
        self.spills: dict[Instruction, Instruction] = {}
        self.phis: list[tuple[Instruction, Instruction]] = []
        self.returns: list[tuple[Block, Value]] = []

    # ------------------------------------------------------------ driver
    def run(self) -> Function:
        self.info: ActivityInfo = analyze_activity(self.primal, *self._seeds())
        self.allocs = shadowed_allocations(self.primal, self.info, self.diag,
                                           self.primal.args[self.spec.retptr])
        self.speculated = _feeding_selects(self.primal)
        self.memory_types = analyze_memory_types(self.primal, known_element_types(self.primal,
                                                                                  self.spec))
        normal_returns = [blk for blk in self.primal.blocks
                          if (t := blk.terminator) is not None and t.opcode == "ret"
                          and not is_exceptional_return(t)]
        self.plan = ReversePlan(self.primal, normal_returns)
        self.reaches_return = blocks_reaching(self.primal, normal_returns)
        self.entry = self.fn.add_block("entry")
        self.tape = Tape(self.module, self.fn, self.entry)
        self._setup_entry()
        order = reverse_post_order(self.primal)
        for block in order:
            self.fwd[block] = self.fn.add_block(block.name)
        self.re = self.fn.add_block("reverse.entry")
        for block in order:
            if block in self.reaches_return:
                self.rev[block] = self.fn.add_block((block.name or "") + ".rev")
        self.done = self.fn.add_block("reverse.done")
        for block in order:
            self._forward_block(block)
        self._fill_phis()
        self._reverse_entry()
        for block in order:
            if block in self.rev:
                self._reverse_block(block)
        self._finish()
        for block in order:
            if self.frames.get(block):
                self._push_frame(block)
        Builder(self.entry).br(self.fwd[self.primal.entry])
        return self.fn

    def _seeds(self) -> tuple[set[Argument], set[Argument]]:
        for p in self.spec.params:
            if p.activity.has_shadow and not p.is_array:
                raise ActivityError(f"parameter '{p.name}' is a float passed by value: "
                                    "mark it 'active' to get its gradient")
        self.slot = return_slot(self.primal, self.spec)
        self.ret_active = self.spec.ret is Activity.ACTIVE and self.slot.differentiable
        return activity_seeds(self.primal, self.spec)

    def _setup_entry(self) -> None:
        b = Builder(self.entry)
        retptr = self.primal.args[self.spec.retptr]
        self.slot_ptr = b.alloca(self.slot.type, "ret.slot")
        self.vmap[retptr] = self.slot_ptr
        if self.ret_active:
            self.fshadow[retptr] = self._zeroed_alloca(self.slot.type, "ret.slot'")
        for p in self.spec.params:
            if p.activity.has_shadow and p.is_array:
                self.fshadow[self.primal.args[p.data_arg]] = self.sig.shadow_args[p.name][4]
        for loop in self.plan.loops:
            counter = Instruction("phi", I64, [], f"{loop.header.name}.iter")
            counter.block = loop.header
            self.counters[loop] = counter
            self.plan.ivs[counter] = InductionVariable(loop, const_int(I64, 0), const_int(I64, 1))
            self.rcounter[loop] = self._alloca(I64, f"{loop.header.name}.riter")

    def _alloca(self, t: Type, name: str) -> Instruction:
        """An alloca in the entry block (kept before the entry's eventual terminator)."""
        return Builder(self.entry).alloca(t, name)

    def _zeroed_alloca(self, t: Type, name: str, value: Value | None = None) -> Instruction:
        slot = self._alloca(t, name)
        Builder(self.entry).store(value if value is not None else zero(t), slot)
        return slot

    # ------------------------------------------------------------ augmented forward pass
    def _forward_block(self, block: Block) -> None:
        b = self.b
        b.position_at_end(self.fwd[block])
        loop = self._loop_with_header(block)
        for inst in block.instructions:
            if inst.opcode == "phi":
                clone = b.insert(clone_instruction(inst, self._map, self.fwd.__getitem__))
                self.vmap[inst] = clone
                self.phis.append((inst, clone))
                if inst in self.info.shadowed:
                    sphi = b.phi(PTR, (inst.name or "") + "'")
                    self.fshadow[inst] = sphi
                    self.phis.append((inst, sphi))
                continue
            if inst is block.instructions[len(list(block.phis()))]:
                self._block_bookkeeping(block, loop)
            if inst.opcode == "ret":
                self._forward_return(inst)
                continue
            clone = b.insert(clone_instruction(inst, self._map, self.fwd.__getitem__))
            self.vmap[inst] = clone
            self._check_forward(inst)
            self._mirror_returned_pointer(inst)
            if inst in self.allocs:
                size, align = (self._map(op) for op in inst.operands)
                self.fshadow[inst] = allocate_shadow(b, self.module, size, align)[0]
            elif inst in self.info.shadowed:
                self.fshadow[inst] = self._forward_shadow(inst)

    def _block_bookkeeping(self, block: Block, loop: Loop | None) -> None:
        """Loop counters in headers; "which predecessor" records in merge blocks."""
        b = self.b
        if loop is not None:
            counter = b.phi(I64, f"{block.name}.iter")
            self.vmap[self.counters[loop]] = counter
            self._pending_counter = getattr(self, "_pending_counter", [])
            self._pending_counter.append((loop, counter))
        elif len(self._preds(block)) > 1:
            which = Instruction("phi", I32, [], f"{block.name}.from")
            which.block = block
            self.which[block] = which
            fwd_which = b.phi(I32, f"{block.name}.from")
            for i, p in enumerate(self._preds(block)):
                for _ in range(p.successors().count(block)):   # one entry per CFG edge
                    add_incoming(fwd_which, const_int(I32, i), self.fwd[p])
            self.vmap[which] = fwd_which

    def _loop_with_header(self, block: Block) -> Loop | None:
        return next((l for l in self.plan.loops if l.header is block), None)

    def _preds(self, block: Block) -> list[Block]:
        return [p for p in self.plan.preds[block] if p in self.fwd]

    def _map(self, v: Value) -> Value:
        return self.vmap.get(v, v)

    def _forward_shadow(self, inst: Instruction) -> Value:
        b, op = self.b, inst.opcode
        if op == "getelementptr":
            base, *idx = inst.operands
            return b.gep(inst.source_type, self._fshadow_of(base, inst),  # type: ignore[arg-type]
                         [self._map(i) for i in idx], flags=inst.flags)
        if op == "select":
            c, x, y = inst.operands
            return b.select(self._map(c), self._fshadow_of(x, inst), self._fshadow_of(y, inst))
        if op in ("bitcast", "addrspacecast", "freeze"):
            return self._fshadow_of(inst.operands[0], inst)
        if inst.callee_name == NRT_DATA:
            return data_pointer(b, self.module, self.fshadow[inst.operands[0]])
        if inst.callee_name == NRT_RAW_ALLOC:    # released in the reverse of this call
            return allocate_raw_shadow(b, self.module, self._map(inst.operands[0]))
        if op == "alloca":
            if inst.operands:
                raise self.diag.unsupported("dynamic alloca holding active values", inst)
            return self._zeroed_alloca(inst.source_type, (inst.name or "") + "'")  # type: ignore[arg-type]
        raise unknown_shadow_pointer(self.diag, inst)

    def _fshadow_of(self, ptr: Value, user: Instruction) -> Value:
        s = self.fshadow.get(ptr)
        if s is None:
            raise self.diag.unsupported(
                "a pointer that may address either shadowed or unshadowed memory", user,
                f"mark every array reaching this instruction dup ({describe_memory(self.spec, ptr)})")
        return s

    def _mirror_returned_pointer(self, inst: Instruction) -> None:
        """A pointer stored into the return slot: its shadow goes into the shadow slot (null
        if it has none), where the reverse entry finds a returned array's shadow."""
        if inst.opcode != "store" or not inst.operands[0].type.is_pointer:
            return
        v, ptr = inst.operands
        if ptr in self.info.shadowed and pointer_base(ptr) is self.primal.args[self.spec.retptr]:
            shadow = self.fshadow.get(v, Constant(PTR, "null"))
            self.b.store(shadow, self.fshadow[ptr])

    def _check_forward(self, inst: Instruction) -> None:
        """Reject what the reverse pass cannot handle, before emitting anything for it."""
        op = inst.opcode
        if op == "store":
            check_store(self.diag, self.spec, self.primal, self.info, inst)
        elif op == "load" and inst.operands[0] in self.info.shadowed and inst.type.is_int:
            raise self.diag.unsupported("integer load from shadowed (float) memory", inst,
                                        "avoid reinterpreting float arrays as integers")
        elif op == "call":
            name = inst.callee_name or ""
            touches = any(o in self.info.shadowed or o in self.info.varied for o in inst.operands)
            if not touches or name.startswith(INERT_CALLS) or name == NRT_RAW_FREE:
                return
            if is_dot(inst):
                self._check_dot(inst)
            elif is_memory_intrinsic(name):
                if inst.operands[0] not in self.info.shadowed:
                    raise self.diag.unsupported(
                        f"'{name}' copies active values into memory without a shadow "
                        f"({describe_memory(self.spec, inst.operands[0])})", inst)
            elif lookup(math_rule_name(name, inst.type)) is None:
                raise self.diag.unsupported(f"call to '{name}' with active arguments", inst,
                                            f"register a derivative rule: enzyme_py.register_rule({name!r}, ...)")
        elif op == "ptrtoint":
            check_pointer_to_int(self.diag, self.primal, self.info, inst)
        elif op == "bitcast":
            check_reinterpretation(self.diag, self.info, inst)
        elif op in ("extractelement", "insertelement", "shufflevector") \
                and inst in self.info.varied:
            raise self.diag.unsupported(f"'{op}' on active values in reverse mode", inst)

    def _check_dot(self, inst: Instruction) -> None:
        _, x, y, out = dot_operands(inst)
        if dot_type(inst) is None or out not in self.info.shadowed:
            raise self.diag.unsupported("complex or untracked BLAS dot product", inst)
        for v in (x, y):
            if not self.plan.read_only(v):
                raise self.diag.unsupported(
                    f"np.dot of an array the function also writes ({describe_memory(self.spec, v)})",
                    inst, "take the dot product of a copy, or write it as a loop")

    def _forward_return(self, inst: Instruction) -> None:
        b = self.b
        status = self._map(inst.operands[0])
        if is_exceptional_return(inst):
            self.tape.release(b)
            b.ret(status)
            return
        if isinstance(status, Constant):
            self.returns.append((inst.block, status))  # type: ignore[arg-type]
            b.br(self.re)
            return
        raised = self.fn.add_block((inst.block.name or "") + ".raise")  # type: ignore[union-attr]
        ok = b.icmp("eq", status, const_int(status.type, 0))  # type: ignore[arg-type]
        self.returns.append((inst.block, status))  # type: ignore[arg-type]
        b.cbr(ok, self.re, raised)
        with b.at_end(raised):
            self.tape.release(b)
            b.ret(status)

    def _fill_phis(self) -> None:
        for inst, phi in self.phis:
            shadow = phi.type == PTR and phi is self.fshadow.get(inst)
            for v, blk in zip(inst.operands, inst.incoming):
                if blk not in self.fwd:
                    continue
                value = self._fshadow_of(v, inst) if shadow else self._map(v)
                add_incoming(phi, value, self.fwd[blk])
        for loop, counter in getattr(self, "_pending_counter", []):
            pre, latch = self.plan.preheader(loop), self.plan.latch(loop)
            add_incoming(counter, const_int(I64, 0), self.fwd[pre])
            nxt = Instruction("add", I64, [counter, const_int(I64, 1)], f"{loop.header.name}.next",
                              flags=("nuw", "nsw"))
            fblock = self.fwd[loop.header]
            fblock.insert(len(list(fblock.phis())), nxt)
            add_incoming(counter, nxt, self.fwd[latch])

    # ------------------------------------------------------------ reverse entry / exit
    def _reverse_entry(self) -> None:
        b = self.b
        b.position_at_end(self.re)
        from_block = b.phi(I32, "returned.from")
        for i, (blk, _) in enumerate(self.returns):
            add_incoming(from_block, const_int(I32, i), self.fwd[blk])
        self.primal_value = b.load(self.slot.type, self.slot_ptr, "primal") \
            if self.slot.has_value else None
        if self.ret_active and self.spec.ret_leaves is None:
            shadow = self.fshadow[self.primal.args[self.spec.retptr]]
            b.store(_seed(self.slot.type), shadow)
        elif self.ret_active:
            seed_return_adjoints(b, self.module, self.slot, self.slot_ptr,
                                 self.fshadow[self.primal.args[self.spec.retptr]],
                                 self.sig, self.tape.release)
        targets = [self.rev[blk] for blk, _ in self.returns]
        if not targets:                      # the primal never returns normally
            b.unreachable()
        elif len(targets) == 1:
            b.br(targets[0])
        else:
            b.switch(from_block, targets[0],
                     [(const_int(I32, i), t) for i, t in enumerate(targets)][1:])

    def _finish(self) -> None:
        b = self.b
        b.position_at_end(self.done)
        grads: list = []
        for p in self.spec.params:
            if p.activity is Activity.ACTIVE:
                arg = self.primal.args[p.args[0]]
                grad = b.load(arg.type, self._adjoint_slot(arg))
                grads.append(b.fadd(grad, zero(arg.type)))   # -0.0 (no contribution) -> +0.0
        results = [self.primal_value, grads] if self.spec.return_primal else grads
        if not self.spec.return_primal and self.primal_value is not None:
            release_arrays(b, self.module, self.spec, self.primal_value)
        pack_results(b, self.sig.retptr, self.spec.ret_type, results, self.diag)
        self.tape.release(b)
        b.ret(const_int(I32, 0))

    # ------------------------------------------------------------ reverse blocks
    def _reverse_block(self, block: Block) -> None:
        b = self.b
        rblock = self.rev[block]
        b.position_at_end(rblock)
        self.cur = block
        self.memo: dict[tuple[str, int], Value] = {}
        self.frames.setdefault(block, [])
        for inst in reversed(block.instructions):
            if inst.opcode != "phi":
                self._adjoint(inst)
        phi_adjoints = [(phi, self._take_adjoint(phi)) for phi in block.phis()
                        if self.info.is_active(phi)]
        self._leave(block, phi_adjoints)
        pops = [load for _, load in self.frames[block]]
        if pops:
            head = Builder(rblock)
            head.index = 0
            self.tape.pop(head, pops)

    def _leave(self, block: Block, phi_adjoints: list[tuple[Instruction, Value]]) -> None:
        """Continue with the reverse of the predecessor this block was entered from."""
        b = self.b
        preds = [p for p in self._preds(block) if p in self.rev]
        if block is self.primal.entry:
            b.br(self.done)
            return
        loop = self._loop_with_header(block)
        trip = {p: self._entry_trips(block, p) for p in preds}
        edges = {p: self._edge(block, p, phi_adjoints, trip[p]) for p in preds}
        if loop is not None:
            pre, latch = self.plan.preheader(loop), self.plan.latch(loop)
            first = b.icmp("eq", self._rcounter(loop), const_int(I64, 0))
            b.cbr(first, edges[pre], edges[latch])
        elif len(preds) == 1:
            b.br(edges[preds[0]])
        else:
            which = self._recomputed_choice(block) or self._avail(self.which[block])
            all_preds = self._preds(block)
            cases = [(const_int(I32, all_preds.index(p)), edges[p]) for p in preds]
            b.switch(which, cases[0][1], cases[1:])

    def _recomputed_choice(self, block: Block) -> Value | None:
        """Which of two predecessors ran, from the deciding branch's condition when the
        reverse pass can rebuild it (if/else diamonds and if-then triangles); else None."""
        preds = self._preds(block)
        if len(preds) != 2:
            return None
        only = {p: self.plan.preds[p] for p in preds}
        decider = None
        for d, side in ((preds[0], preds[1]), (preds[1], preds[0])):
            if only[side] == [d] and side.successors() == [block]:
                decider, taken_if = d, {side: side, block: d}       # triangle d -> side -> block
        if decider is None and len(only[preds[0]]) == 1 and only[preds[0]] == only[preds[1]] \
                and all(p.successors() == [block] for p in preds):
            decider, taken_if = only[preds[0]][0], {p: p for p in preds}   # diamond
        term = decider.terminator if decider is not None else None
        if term is None or term.opcode != "br" or len(term.operands) != 3:
            return None
        cond, if_true, if_false = term.operands
        if if_true not in taken_if or if_false not in taken_if or \
                self.plan.kind(cond, block) == "tape":
            return None
        pick = [const_int(I32, preds.index(taken_if[t])) for t in (if_true, if_false)]  # type: ignore[index]
        self.observe(Retained("recompute", "choice", block, cond))
        return self.b.select(self._avail(cond), pick[0], pick[1])

    def _entry_trips(self, block: Block, pred: Block) -> list[tuple[Loop, Value]]:
        """Trip counters of the loops the reverse enters on the edge block -> pred."""
        inside = set(map(id, self.plan.loops_containing(block)))
        return [(loop, self._avail(self.counters[loop]))
                for loop in self.plan.loops_containing(pred) if id(loop) not in inside]

    def _edge(self, block: Block, pred: Block, phi_adjoints: list[tuple[Instruction, Value]],
              trips: list[tuple[Loop, Value]]) -> Block:
        edge = self.fn.add_block(f"{block.name}.rev.to.{pred.name}")
        saved = (self.b.block, self.b.index)
        self.b.position_at_end(edge)
        for phi, adj in phi_adjoints:
            v = phi.operands[phi.incoming.index(pred)]
            self._add_adjoint(v, adj)
        loop = self._loop_with_header(block)
        if loop is not None and pred is self.plan.latch(loop):
            slot = self.rcounter[loop]
            self.b.store(self.b.sub(self.b.load(I64, slot), const_int(I64, 1)), slot)
        for entered, count in trips:
            self.b.store(count, self.rcounter[entered])
        self.b.br(self.rev[pred])
        self.b.block, self.b.index = saved
        return edge

    # ------------------------------------------------------------ availability
    def _avail(self, v: Value) -> Value:
        """Primal value `v` as usable in the reverse of the current block."""
        kind = self.plan.kind(v, self.cur)
        if kind == "direct":
            return self._map(v)
        key = (kind, id(v))
        if key in self.memo:
            return self.memo[key]
        if kind == "tape" and isinstance(v, Instruction) and self.plan.executes_once(v.block):  # type: ignore[arg-type]
            kind = "spill"
        self.observe(Retained(kind, "value", self.cur, v))
        if kind == "iv":
            iv = self.plan.ivs[v]  # type: ignore[index]
            count = self._rcounter(iv.loop)
            if count.type != v.type:
                count = self.b.cast("trunc", count, v.type)
            scaled = count if _is_const(iv.step, 1) else self.b.mul(count, self._avail(iv.step))
            out = scaled if _is_const(iv.start, 0) else self.b.add(self._avail(iv.start), scaled)
        elif kind == "recompute":
            assert isinstance(v, Instruction)
            out = self.b.insert(clone_instruction(v, self._avail, lambda blk: blk))
        elif kind == "spill":
            out = self.b.load(v.type, self._spill_slot(v), (v.name or "") + ".spill")  # type: ignore[arg-type]
        else:
            load = pop_placeholder(v.type, (v.name or "") + ".tape")
            self.frames[self.cur].append((self._map(v), load))
            out = load
        self.memo[key] = out
        return out

    def _spill_slot(self, v: Instruction) -> Instruction:
        """A value computed at most once (not in a loop) but not on every path to the return
        is kept in a stack slot, stored right after its forward definition."""
        slot = self.spills.get(v)
        if slot is None:
            slot = self.spills[v] = self._alloca(v.type, (v.name or "v") + ".spill")
            fwd = self._map(v)
            assert isinstance(fwd, Instruction) and fwd.block is not None
            block = fwd.block
            at = block.instructions.index(fwd) + 1
            if fwd.opcode == "phi":
                at = sum(1 for _ in block.phis())
            block.insert(at, Instruction("store", VOID, [fwd, slot]))
        return slot

    def _rcounter(self, loop: Loop) -> Value:
        key = ("rcounter", id(loop))
        if key not in self.memo:
            self.memo[key] = self.b.load(I64, self.rcounter[loop], f"{loop.header.name}.i")
        return self.memo[key]

    def _shadow(self, ptr: Value) -> Value:
        """Shadow of primal pointer `ptr`, usable in the reverse of the current block."""
        if ptr in self.fshadow and (isinstance(ptr, Argument) or ptr is self.slot_ptr or
                                    self.plan.kind(ptr, self.cur) == "direct"):
            return self.fshadow[ptr]
        key = ("shadow", id(ptr))
        if key in self.memo:
            return self.memo[key]
        b = self.b
        if isinstance(ptr, Instruction) and ptr.opcode == "getelementptr":
            base, *idx = ptr.operands
            out = b.gep(ptr.source_type, self._shadow(base), [self._avail(i) for i in idx],  # type: ignore[arg-type]
                        flags=ptr.flags)
        elif isinstance(ptr, Instruction) and ptr.opcode == "select":
            c, x, y = ptr.operands
            out = b.select(self._avail(c), self._shadow(x), self._shadow(y))
        elif isinstance(ptr, Instruction) and ptr.opcode in ("bitcast", "addrspacecast", "freeze"):
            out = self._shadow(ptr.operands[0])
        else:
            self.observe(Retained("tape", "shadow", self.cur, ptr))
            load = pop_placeholder(PTR, (ptr.name or "") + "'.tape")
            self.frames[self.cur].append((self.fshadow[ptr], load))
            out = load
        self.memo[key] = out
        return out

    # ------------------------------------------------------------ adjoints
    def _adjoint_slot(self, v: Value) -> Instruction:
        slot = self.adjoints.get(v)
        if slot is None:
            slot = self._zeroed_alloca(v.type, (v.name or "v") + ".adj", adjoint_zero(v.type))
            self.adjoints[v] = slot
        return slot

    def _take_adjoint(self, v: Value) -> Value:
        slot = self._adjoint_slot(v)
        adj = self.b.load(v.type, slot)
        self.b.store(adjoint_zero(v.type), slot)
        return adj

    def _add_adjoint(self, v: Value, delta: Value) -> None:
        if not (isinstance(v, (Instruction, Argument)) and v in self.info.varied):
            return
        slot = self._adjoint_slot(v)
        self.b.store(self._sum(self.b.load(v.type, slot), delta), slot)

    def _sum(self, a: Value, d: Value) -> Value:
        if isinstance(a.type, FloatType):
            return self.b.fadd(a, d)
        if isinstance(a.type, (StructType, ArrayType)):
            out = a
            elems = a.type.elements if isinstance(a.type, StructType) else [a.type.element] * a.type.count
            for i, t in enumerate(elems):
                if carries_float(t):
                    s = self._sum(self.b.extractvalue(a, (i,)), self.b.extractvalue(d, (i,)))
                    out = self.b.insertvalue(out, s, (i,))
            return out
        return a

    def _adjoint(self, inst: Instruction) -> None:
        op = inst.opcode
        if op == "store":
            return self._adjoint_store(inst)
        if is_dot(inst) and dot_operands(inst)[3] in self.info.shadowed:
            return self._adjoint_dot(inst)
        if inst in self.allocs:   # the shadow array is not needed before this point
            return refcount(self.b, self.module, "NRT_decref", self._shadow(inst))
        if inst.callee_name == NRT_RAW_ALLOC and inst in self.info.shadowed:
            return free_raw(self.b, self.module, self._shadow(inst))
        if op == "call" and is_memory_intrinsic(inst.callee_name or "") \
                and inst.operands[0] in self.info.shadowed:
            return self._adjoint_memory(inst)
        if not self.info.is_active(inst):
            return
        b = self.b
        adj = self._take_adjoint(inst)
        if op == "load":
            sp = self._shadow(inst.operands[0])
            b.store(b.fadd(b.load(inst.type, sp), adj) if inst.type.is_float
                    else self._sum(b.load(inst.type, sp), adj), sp)
        elif op in ("fpext", "fptrunc"):
            back = "fptrunc" if op == "fpext" else "fpext"
            self._add_adjoint(inst.operands[0], b.cast(back, adj, inst.operands[0].type))
        elif op == "select":
            c, x, y = inst.operands
            cond, z = self._avail(c), adjoint_zero(inst.type)
            self._add_adjoint(x, b.select(cond, adj, z))
            self._add_adjoint(y, b.select(cond, z, adj))
        elif op == "freeze":
            self._add_adjoint(inst.operands[0], adj)
        elif op == "extractvalue":
            agg = inst.operands[0]
            self._add_adjoint(agg, b.insertvalue(zero(agg.type), adj, inst.indices))
        elif op == "insertvalue":
            agg, v = inst.operands
            self._add_adjoint(v, b.extractvalue(adj, inst.indices))
            self._add_adjoint(agg, b.insertvalue(adj, zero(v.type), inst.indices))
        else:
            self._adjoint_rule(inst, adj)

    def _adjoint_rule(self, inst: Instruction, adj: Value) -> None:
        name = inst.opcode if inst.opcode != "call" else math_rule_name(
            inst.callee_name or "", inst.type)
        rule = lookup(name)
        if rule is None:
            raise self.diag.unsupported(f"no derivative rule for '{name}'", inst,
                                        f"register a derivative rule: enzyme_py.register_rule({name!r}, ...)")
        ops = inst.operands
        wanted = [i for i, o in enumerate(ops) if o in self.info.varied]
        needs, needs_res = rule_needs(rule, tuple(o.type for o in ops), inst.type,
                                      frozenset(wanted))
        args = [self._avail(o) if i in needs else Constant(o.type, "poison")
                for i, o in enumerate(ops)]
        res = self._avail(inst) if needs_res else Constant(inst.type, "poison")
        self.b.fast_math = fast_math_of(inst)
        partials = rule.partials(self.m, args, res)
        for i in wanted:
            p = partials[i]
            if p is not None:
                term = scale(self.b, p, adj)
                if inst in self.speculated and term is not adj:
                    term = self._strong_zero(term, adj)
                self._add_adjoint(ops[i], term)
        self.b.fast_math = ()

    def _strong_zero(self, term: Value, adj: Value) -> Value:
        """`0` when the adjoint is zero, even if the partial is NaN or infinite: for values
        computed speculatively for a `select` that did not pick them (sqrt of a negative
        number under a guard hoisted into a select)."""
        b = self.b
        is_zero = b.fcmp("oeq", adj, zero(adj.type))
        return b.select(is_zero, adjoint_zero(adj.type), term)

    def _adjoint_store(self, inst: Instruction) -> None:
        v, ptr = inst.operands
        if ptr not in self.info.shadowed:
            return
        b = self.b
        sp = self._shadow(ptr)
        if v in self.info.varied and carries_float(v.type):
            self._add_adjoint(v, b.load(v.type, sp))
        b.store(zero(v.type), sp)

    def _adjoint_dot(self, inst: Instruction) -> None:
        """out = x . y:  x' += g y,  y' += g x,  with g the adjoint in out's shadow."""
        b = self.b
        t = dot_type(inst)
        assert t is not None
        n, x, y, out = dot_operands(inst)
        shadow_out = self._shadow(out)
        g = b.load(t, shadow_out)
        b.store(zero(t), shadow_out)
        for v, other in ((x, y), (y, x)):
            if v in self.info.shadowed:
                b.call(axpy_function(self.module, t),
                       [self._avail(n), g, self._avail(other), self._shadow(v)], VOID)

    def _adjoint_memory(self, inst: Instruction) -> None:
        """memset: the shadow is zeroed; memcpy/memmove: d_src += d_dst, then d_dst = 0."""
        b = self.b
        name = inst.callee_name or ""
        dst, src = inst.operands[0], inst.operands[1]
        length = self._avail(inst.operands[2])
        if MEMORY_INTRINSICS[name.split(".")[1]] == "copy" and src in self.info.shadowed:
            t = copy_element_type(self.memory_types, inst, self.diag)
            b.call(copy_adjoint_function(self.module, t), [self._shadow(src), self._shadow(dst),
                                                           length], VOID)
            return
        memset = declare(self.module, "llvm.memset.p0.i64", VOID, [PTR, IntType(8), I64, IntType(1)])
        b.call(memset, [self._shadow(dst), const_int(IntType(8), 0), length, FALSE], VOID)

    # ------------------------------------------------------------ tape pushes
    def _push_frame(self, block: Block) -> None:
        fblock = self.fwd_end(block)
        values = [v for v, _ in self.frames[block]]
        cont = self.tape.push(fblock, values)
        for succ in cont.successors():
            for phi in succ.phis():
                phi.incoming = [cont if blk is fblock else blk for blk in phi.incoming]
        self.fwd[block] = cont

    def fwd_end(self, block: Block) -> Block:
        return self.fwd[block]


def _is_const(v: Value, value: int) -> bool:
    return isinstance(v, Constant) and v.text == str(value)


def _feeding_selects(fn: Function) -> set[Instruction]:
    """Instructions whose results flow into a value operand of a `select`: they may have
    been computed for the arm the select did not take."""
    out: set[Instruction] = set()
    work: list[Value] = [op for inst in fn.instructions() if inst.opcode == "select"
                         for op in inst.operands[1:]]
    while work:
        v = work.pop()
        if isinstance(v, Instruction) and v not in out and carries_float(v.type) \
                and v.opcode not in ("phi", "load"):
            out.add(v)
            work.extend(v.operands)
    return out


def adjoint_zero(t: Type) -> Value:
    """The zero adjoints start from: -0.0, the identity of fadd (x + -0.0 == x for every x,
    so LLVM folds the first accumulation away; +0.0 is not an identity for x = -0.0)."""
    return const_float(t, -0.0) if isinstance(t, FloatType) else zero(t)


def _seed(t: Type) -> Value:
    assert isinstance(t, FloatType), f"cannot seed a return of type {t}"
    return const_float(t, 1.0)
