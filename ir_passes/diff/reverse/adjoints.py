"""Adjoints: one zero-initialised slot per primal value, and the adjoint of each primal
instruction (linear and aggregate operations here, the rest from the rule registry, calls
to memory intrinsics, BLAS dot and NRT allocations from their models)."""
from __future__ import annotations

from ...analysis.activity import carries_float
from ...ir.builder import declare
from ...ir.types import I64, PTR, VOID, ArrayType, FloatType, IntType, StructType, Type
from ...ir.values import (FALSE, Argument, Constant, Instruction, Value, const_float, const_int,
                          zero)
from ..allocations import free_raw, refcount
from ...known.blas import axpy_function, dot_operands, dot_type, is_dot
from ..common import fast_math_of, rule_for, scale
from ...known.memory import NRT_RAW_ALLOC, is_memory_intrinsic, memory_intrinsic_kind
from ..rules.needs import rule_needs
from .availability import Availability, BlockContext
from .copies import copy_adjoint_function, copy_element_type
from .state import ReverseState


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
        if isinstance(a.type, FloatType):
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
        return a

    # ------------------------------------------------------------ instructions
    def emit(self, ctx: BlockContext, inst: Instruction) -> None:
        """The adjoint of primal instruction `inst`, in the reverse of `ctx.block`."""
        st, op = self.st, inst.opcode
        if op == "store":
            return self._store(ctx, inst)
        if is_dot(inst) and dot_operands(inst)[3] in st.info.shadowed:
            return self._dot(ctx, inst)
        if inst in st.allocs:   # the shadow array is not needed before this point
            return refcount(st.b, st.module, "NRT_decref", self.avail.shadow(ctx, inst))
        if inst.callee_name == NRT_RAW_ALLOC and inst in st.info.shadowed:
            return free_raw(st.b, st.module, self.avail.shadow(ctx, inst))
        if op == "call" and is_memory_intrinsic(inst.callee_name or "") \
                and inst.operands[0] in st.info.shadowed:
            return self._memory(ctx, inst)
        if st.info.is_active(inst):
            self._active(ctx, inst, self.take(inst))

    def _active(self, ctx: BlockContext, inst: Instruction, adj: Value) -> None:
        b, op = self.st.b, inst.opcode
        if op == "load":
            sp = self.avail.shadow(ctx, inst.operands[0])
            b.store(b.fadd(b.load(inst.type, sp), adj) if inst.type.is_float
                    else self._sum(b.load(inst.type, sp), adj), sp)
        elif op in ("fpext", "fptrunc"):
            back = "fptrunc" if op == "fpext" else "fpext"
            self.add(inst.operands[0], b.cast(back, adj, inst.operands[0].type))
        elif op == "select":
            c, x, y = inst.operands
            cond, z = self.avail.value(ctx, c), adjoint_zero(inst.type)
            self.add(x, b.select(cond, adj, z))
            self.add(y, b.select(cond, z, adj))
        elif op == "freeze":
            self.add(inst.operands[0], adj)
        elif op == "extractvalue":
            agg = inst.operands[0]
            self.add(agg, b.insertvalue(zero(agg.type), adj, inst.indices))
        elif op == "insertvalue":
            agg, v = inst.operands
            self.add(v, b.extractvalue(adj, inst.indices))
            self.add(agg, b.insertvalue(adj, zero(v.type), inst.indices))
        else:
            self._rule(ctx, inst, adj)

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
        partials = rule.partials(st.m, args, res)
        for i in wanted:
            p = partials[i]
            if p is not None:
                term = scale(b, p, adj)
                if inst in st.speculated and term is not adj:
                    term = self._strong_zero(term, adj)
                self.add(ops[i], term)
        b.fast_math = ()

    def _strong_zero(self, term: Value, adj: Value) -> Value:
        """`0` when the adjoint is zero, even if the partial is NaN or infinite: for values
        computed speculatively for a `select` that did not pick them (sqrt of a negative
        number under a guard hoisted into a select)."""
        b = self.st.b
        is_zero = b.fcmp("oeq", adj, zero(adj.type))
        return b.select(is_zero, adjoint_zero(adj.type), term)

    def _store(self, ctx: BlockContext, inst: Instruction) -> None:
        v, ptr = inst.operands
        if ptr not in self.st.info.shadowed:
            return
        b = self.st.b
        sp = self.avail.shadow(ctx, ptr)
        if v in self.st.info.varied and carries_float(v.type):
            self.add(v, b.load(v.type, sp))
        b.store(zero(v.type), sp)

    def _dot(self, ctx: BlockContext, inst: Instruction) -> None:
        """out = x . y:  x' += g y,  y' += g x,  with g the adjoint in out's shadow."""
        st, b = self.st, self.st.b
        t = dot_type(inst)
        assert t is not None
        n, x, y, out = dot_operands(inst)
        shadow_out = self.avail.shadow(ctx, out)
        g = b.load(t, shadow_out)
        b.store(zero(t), shadow_out)
        for v, other in ((x, y), (y, x)):
            if v in st.info.shadowed:
                b.call(axpy_function(st.module, t),
                       [self.avail.value(ctx, n), g, self.avail.value(ctx, other),
                        self.avail.shadow(ctx, v)], VOID)

    def _memory(self, ctx: BlockContext, inst: Instruction) -> None:
        """memset: the shadow is zeroed; memcpy/memmove: d_src += d_dst, then d_dst = 0."""
        st, b = self.st, self.st.b
        name = inst.callee_name or ""
        dst, src = inst.operands[0], inst.operands[1]
        length = self.avail.value(ctx, inst.operands[2])
        if memory_intrinsic_kind(name) == "copy" and src in st.info.shadowed:
            t = copy_element_type(st.memory_types, inst, st.diag)
            b.call(copy_adjoint_function(st.module, t),
                   [self.avail.shadow(ctx, src), self.avail.shadow(ctx, dst), length], VOID)
            return
        memset = declare(st.module, "llvm.memset.p0.i64", VOID,
                         [PTR, IntType(8), I64, IntType(1)])
        b.call(memset, [self.avail.shadow(ctx, dst), const_int(IntType(8), 0), length, FALSE],
               VOID)


def adjoint_zero(t: Type) -> Value:
    """The zero adjoints start from: -0.0, the identity of fadd (x + -0.0 == x for every x,
    so LLVM folds the first accumulation away; +0.0 is not an identity for x = -0.0)."""
    return const_float(t, -0.0) if isinstance(t, FloatType) else zero(t)
