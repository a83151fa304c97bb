"""Adjoints: one zero-initialised slot per primal value, and the adjoint of each primal
instruction (linear, aggregate and SIMD lane operations here, the rest from the rule registry,
known calls from their records' reverse emitters, shadow memory released where it was made).
Float vectors (`<2 x double>`) have vector adjoints, accumulated lane-wise.

A product of a partial with a zero adjoint is zero, not NaN (`zero_guard`), for values that
feed a `select` (computed for an arm it may not take: a guard hoisted into a select) and
everywhere with `strong_zero`."""
from __future__ import annotations

from ...analysis.activity import carries_float
from ...known.memory import pointer_base
from ...ir.builder import Builder
from ...ir.types import ArrayType, FloatType, StructType, Type
from ...ir.values import Argument, Constant, Instruction, Value, const_float, zero
from ...known.model import Role, call_record, role_of
from ..common import fast_math_of, rule_for, scale, zero_guard
from ..held_pointers import is_held_copy, is_held_pointer_store, is_list_item_store
from ..rules.needs import rule_needs
from ..rules.selection import routed_adjoints
from ..shadows import free_raw, release
from .availability import Availability, BlockContext
from .callees import emit_reverse_call
from .growable import release_growable, undo_resize
from .calls import ReverseCallContext, emits_reverse
from ..held_references import held_reference
from .kept import drop_held
from .parked_shadows import park_shadow
from .state import ReverseState
from ..vectors import shuffle_transpose


class Adjoints:
    def __init__(self, st: ReverseState, avail: Availability) -> None:
        self.st = st
        self.avail = avail

    # ------------------------------------------------------------ slots
    def slot(self, v: Value) -> Instruction:
        slot = self.st.adjoints.get(v)
        if slot is None:
            slot = self.st.zeroed_alloca(v.type, (v.name or "v") + ".adj", adjoint_zero(v.type))
            self.st.adjoints[v] = slot
        return slot

    def take(self, v: Value) -> Value:
        """The adjoint accumulated for `v`, resetting its slot."""
        slot = self.slot(v)
        adj = self.st.b.load(v.type, slot)
        self.st.b.store(adjoint_zero(v.type), slot)
        return adj

    def add(self, v: Value, delta: Value) -> None:
        if not (isinstance(v, (Instruction, Argument)) and v in self.st.info.varied):
            return
        slot = self.slot(v)
        self.st.b.store(self._sum(self.st.b.load(v.type, slot), delta), slot)

    def _sum(self, a: Value, d: Value) -> Value:
        b = self.st.b
        if a.type.scalar.is_float:      # a float or a vector of floats
            return b.fadd(a, d)
        if isinstance(a.type, (StructType, ArrayType)):
            out = a
            elems = a.type.elements if isinstance(a.type, StructType) \
                else [a.type.element] * a.type.count
            for i, t in enumerate(elems):
                if carries_float(t):
                    s = self._sum(b.extractvalue(a, (i,)), b.extractvalue(d, (i,)))
                    out = b.insertvalue(out, s, (i,))
            return out
        if not carries_float(a.type):   # integers and pointers hold no adjoint
            return a
        raise self.st.diag.unsupported(f"adjoint of a value of type {a.type}")

    # ------------------------------------------------------------ instructions
    def emit(self, ctx: BlockContext, inst: Instruction) -> None:
        """The adjoint of primal instruction `inst`, in the reverse of `ctx.block`."""
        st, op = self.st, inst.opcode
        if op == "store":
            return self._store(ctx, inst)
        if inst in st.call_halves:
            return emit_reverse_call(st, self.avail, ctx, inst, self.add)
        if emits_reverse(st, inst) and not is_held_copy(inst, st.info):  # (no adjoints)
            record = call_record(inst)
            assert record is not None and record.reverse is not None
            record.reverse(ReverseCallContext(st, self.avail, ctx, self.add), inst)
            return drop_held(st, self.avail, ctx, inst)
        if inst in st.growable:
            return release_growable(st.b, st.module, self.avail.shadow(ctx, inst))
        if role_of(inst) is Role.VARSIZE_REALLOC and inst.operands[0] in st.growable:
            return undo_resize(st.b, st.module, self.avail.shadow(ctx, inst.operands[0]))
        if inst in st.allocs:   # the shadow array is not needed before this point
            shadow, slots = self.avail.shadow(ctx, inst), st.kept_allocations.get(inst)
            if slots is None:
                if inst in st.plan.live_arrays:     # held until here (`augmented`)
                    held_reference(st.b, st.module, self.avail.value(ctx, inst), Role.DECREF)
                return release(st.b, st.module, shadow)
            size = self.avail.value(ctx, inst.operands[0])
            park_shadow(st.b, st.module, slots[1], shadow, size)
            return park_shadow(st.b, st.module, slots[0], self.avail.value(ctx, inst), size)
        if role_of(inst) is Role.RAW_ALLOC and inst in st.info.shadowed:
            return free_raw(st.b, st.module, self.avail.shadow(ctx, inst))
        if st.info.is_active(inst):
            self._active(ctx, inst, self.take(inst))

    def _active(self, ctx: BlockContext, inst: Instruction, adj: Value) -> None:
        b, op = self.st.b, inst.opcode
        if op == "load":
            sp, align = self.avail.shadow(ctx, inst.operands[0]), inst.align  # as the primal's
            old = b.load(inst.type, sp, align=align)
            b.store(_accumulate(b, old, adj) if inst.type.scalar.is_float
                    else self._sum(old, adj), sp, align=align)
        elif op in ("fpext", "fptrunc", "bitcast"):   # bitcast: of float lanes (`default_deny`)
            back = {"fpext": "fptrunc", "fptrunc": "fpext"}.get(op, op)
            self.add(inst.operands[0], b.cast(back, adj, inst.operands[0].type))
        elif op == "freeze":
            self.add(inst.operands[0], adj)
        elif op == "extractvalue":
            agg = inst.operands[0]
            self.add(agg, b.insertvalue(zero(agg.type), adj, inst.indices))
        elif op == "insertvalue":
            agg, v = inst.operands
            self.add(v, b.extractvalue(adj, inst.indices))
            self.add(agg, b.insertvalue(adj, zero(v.type), inst.indices))
        elif op in ("extractelement", "insertelement", "shufflevector"):
            self._lanes(ctx, inst, adj)
        else:
            self._rule(ctx, inst, adj)

    def _lanes(self, ctx: BlockContext, inst: Instruction, adj: Value) -> None:
        """Transposes of the linear lane operations: an extracted lane's adjoint goes back to
        its lane, an inserted one's comes out of it, a shuffle's lanes go back to where they
        were picked from (summed where picked more than once)."""
        b, op = self.st.b, inst.opcode
        if op == "extractelement":
            vec, idx = inst.operands
            self.add(vec, b.insert(Instruction("insertelement", vec.type, [
                zero(vec.type), adj, self.avail.value(ctx, idx)])))
        elif op == "insertelement":
            vec, v, idx = inst.operands
            at = self.avail.value(ctx, idx)
            self.add(v, b.insert(Instruction("extractelement", v.type, [adj, at])))
            self.add(vec, b.insert(Instruction("insertelement", vec.type, [adj, zero(v.type),
                                                                           at])))
        else:
            first, second = shuffle_transpose(b, inst, adj)
            self.add(inst.operands[0], first)
            self.add(inst.operands[1], second)

    def _rule(self, ctx: BlockContext, inst: Instruction, adj: Value) -> None:
        st, b = self.st, self.st.b
        rule = rule_for(st.diag, inst)
        ops = inst.operands
        wanted = [i for i, o in enumerate(ops) if o in st.info.varied]
        needs, needs_res = rule_needs(rule, tuple(o.type for o in ops), inst.type,
                                      frozenset(wanted))
        args = [self.avail.value(ctx, o) if i in needs else Constant(o.type, "poison")
                for i, o in enumerate(ops)]
        res = self.avail.value(ctx, inst) if needs_res else Constant(inst.type, "poison")
        b.fast_math = fast_math_of(inst)
        if rule.choose is not None:
            routed = routed_adjoints(b, rule.choose(st.m, args, res), adj,
                                     adjoint_zero(inst.type), wanted)
            for i, delta in routed.items():
                self.add(ops[i], delta)
        else:
            assert rule.partials is not None
            partials = rule.partials(st.m, args, res)
            guarded = st.spec.strong_zero or inst in st.speculated
            for i in wanted:
                p = partials[i]
                if p is not None:     # a reduced vector operand: the adjoint of every lane
                    lanes = adj if i not in rule.reduces else \
                        b.splat(adj, ops[i].type.count)  # type: ignore[attr-defined]
                    term = scale(b, p, lanes)
                    self.add(ops[i], zero_guard(b, term, lanes, adjoint_zero(lanes.type))
                             if guarded else term)
        b.fast_math = ()

    def _store(self, ctx: BlockContext, inst: Instruction) -> None:
        v, ptr = inst.operands
        if ptr not in self.st.info.shadowed or is_list_item_store(self.st.primal, inst) \
                or is_held_pointer_store(inst, self.st.info) \
                and pointer_base(ptr) is not self.st.retptr:
            return                      # shadow pointers and a shadow list's integers stay
        b = self.st.b
        sp = self.avail.shadow(ctx, ptr)
        if v in self.st.info.varied and carries_float(v.type):
            self.add(v, b.load(v.type, sp, align=inst.align))
        b.store(zero(v.type), sp, align=inst.align)


def _accumulate(b: Builder, shadow_value: Value, adj: Value) -> Value:
    """`shadow_value + adj` for a load's adjoint, with `nsz`: the store adjoint resets the shadow
    to +0.0, which is an identity only up to the sign of zero, so LLVM can then fold the reset
    and the re-accumulation of `x[i] += ...` into nothing (a store of the value it loaded)."""
    return b.binop("fadd", shadow_value, adj, flags=tuple(dict.fromkeys(("nsz",) + b.fast_math)))


def adjoint_zero(t: Type) -> Value:
    """The zero adjoints start from: -0.0, the identity of fadd (x + -0.0 == x for every x,
    so LLVM folds the first accumulation away; +0.0 is not an identity for x = -0.0)."""
    return const_float(t, -0.0) if isinstance(t, FloatType) or t.is_float_vector else zero(t)
