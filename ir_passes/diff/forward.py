"""Forward mode: a copy of the primal that carries a tangent beside every active value.

Blocks are visited in reverse post-order; each primal instruction is cloned and, when active,
followed by its tangent computation (rules from the shared registry; a quotient of two varying
values has its own cheaper form), so tangents live in the same blocks as their primal values.
Tangent arithmetic carries `contract`, so its products and sums fuse into multiply-adds.
Pointers into shadowed memory get shadow pointers formed by the same address arithmetic;
loads and stores through them read and write tangents.

SIMD vector values of the primal (`<2 x double>`, width 1) have vector tangents: rules apply
lane-wise, lane operations are applied to the tangents (`vectors.py`, `default_deny.py`).
Vector forward mode (width k > 1) uses LLVM vectors: a float's tangent is `<k x T>`, a
shadow pointer is `<k x ptr>` (one pointer per lane of the shadow array's leading axis).
The primal's return slot becomes a local alloca with a shadow alloca; every `ret` of the
primal stores (value, tangent) into the derivative's return slot. Stores into the return
slot are mirrored into the shadow slot (tangents of floats, shadows of pointers, the same
integers), so the tangent of a returned array is its shadow array (a returned view of a dup
array is the same view of its tangent).
"""
from __future__ import annotations

from ..analysis.activity import ActivityInfo, analyze_activity, carries_float
from ..analysis.array_lists import holds_pointers
from ..analysis.cfg import reverse_post_order
from ..diagnostics import Diagnostics
from ..errors import ActivityError
from ..ir.builder import Builder, add_incoming
from ..ir.clone import clone_instruction
from ..ir.types import (DOUBLE, I32, I64, PTR, ArrayType, FloatType, IntType, StructType,
                        Type, VectorType)
from ..ir.values import (NULL, Argument, Block, Constant, Function, Instruction, Module,
                         Value, const_int, zero)
from ..known.array_layout import DATA, MEMINFO, PARENT
from ..known.memory import pointer_base
from ..known.model import Role, call_record, role_of
from .allocations import meminfo_merges, shadowed_allocations
from .common import (addresses_nothing, check_pointer_to_int, check_reinterpretation,
                     check_store, describe_memory, fast_math_of, is_poison, mixed_memory_error,
                     refuse_known_problem_calls, rule_for, scale, unknown_shadow_pointer,
                     zero_guard)
from .callees import called_definition, hidden_shadows, not_inlined_callees
from .forward_calls import forward_call, touches_derivatives
from .forward_kept import KeptAllocations
from .forward_returns import complete_tangent
from .lanes import gather, lane_pointers, vector_of
from .held_pointers import (check_aggregate_load, check_held_copy, held_load_shadow,
                            held_shadow, is_held_copy, is_held_pointer_load,
                            is_held_pointer_store, is_list_item_store, list_item_shadow)
from .lanes import lane as lane_of
from .raising import DeferredRaise
from .reverse.parked_shadows import emit_release_all, release_symbol
from .returns import pack_results, release_arrays, return_slot
from .default_deny import refuse_unhandled
from .vectors import sum_lanes
from .taped_pointers import (is_taped_pointer_load, is_taped_pointer_store, reads_taped_shadows,
                             taped_shadow, vector_mode_error)
from .rules.emitter import MathEmitter
from .rules.selection import selected_tangent
from .seeds import activity_seeds, is_raw_pointer, known_element_types
from .shadows import (allocate_growable_shadow, allocate_shadow, call_shadow, derived_shadow,
                      free_raw, mirror_refcount, resize_shadow)
from .signature import build_signature, lane_stride
from .spec import Activity, DiffSpec


def synthesize_forward(module: Module, spec: DiffSpec) -> Function:
    """Add the forward-mode derivative described by `spec` to `module` and return it."""
    fn = _Forward(module, spec).run()
    module.add_function(fn)
    emit_release_all(module, release_symbol(fn.name))
    return fn


def _tangent_flags(inst: Instruction) -> tuple[str, ...]:
    """The primal's fast-math flags plus `contract`: a tangent's sums of products may fuse into
    multiply-adds (one rounding instead of two; primal values keep the primal's flags)."""
    flags = fast_math_of(inst)
    return flags if "fast" in flags or "contract" in flags else flags + ("contract",)


class _Forward:
    def __init__(self, module: Module, spec: DiffSpec) -> None:
        self.module = module
        self.spec = spec
        self.primal = module.functions[spec.primal]
        self.diag = Diagnostics(module, self.primal)
        self.sig = build_signature(self.primal, spec)
        self.fn = self.sig.fn
        self.width = spec.width
        self.b = Builder()
        self.m = MathEmitter(self.b, module)
        self.vmap: dict[Value, Value] = dict(self.sig.primal_args)
        self.tangents: dict[Value, Value] = {}
        self.shadows: dict[Value, Value] = {}
        self.blocks: dict[Block, Block] = {}
        self.phis: list[tuple[Instruction, Instruction,
                              Instruction | None, Instruction | None]] = []
        self.rets: list[Instruction] = []
        self.deferred: DeferredRaise | None = None

    # ------------------------------------------------------------ driver
    def run(self) -> Function:
        varied, shadowed = self._seeds()
        callees = not_inlined_callees(self.module)
        self.info: ActivityInfo = analyze_activity(self.primal, varied, shadowed, callees,
                                                   known_element_types(self.primal, self.spec),
                                                   self.module.named_types)
        self.retptr = self.primal.args[self.spec.retptr]
        self.untracked_arrays = False
        refuse_known_problem_calls(self.diag, self.primal, self.info)
        refuse_unhandled(self.diag, self.primal, self.info, self.width)
        hidden_shadows(self.diag, self.primal, self.info, [
            i for i in self.primal.instructions() if i.opcode == "call"
            and i.callee_name in callees and touches_derivatives(self, i)], callees)
        self.allocs = shadowed_allocations(self.primal, self.info, self.diag, self.retptr)
        self.merged_meminfos = set(meminfo_merges(self.primal,
                                                  self.allocs | self._argument_meminfos()))
        self.meminfo_shadows: dict[Value, Value] = {}
        self.meminfo_phis: list[tuple[Instruction, Instruction]] = []
        self.alloc_sizes: dict[Value, Value] = {}
        self.kept = KeptAllocations(self)
        entry = self.fn.add_block("entry")
        order = reverse_post_order(self.primal)
        for block in order:
            self.blocks[block] = self.fn.add_block(block.name)
        self.b.position_at_end(entry)
        self._bind_arguments()
        self.b.br(self.blocks[self.primal.entry])
        for block in order:
            self.b.position_at_end(self.blocks[block])
            for inst in block.instructions:
                self._visit(inst)
        self._fill_phis()
        self._report_deferred()
        return self.fn

    def _seeds(self) -> tuple[set[Argument], set[Argument]]:
        for p in self.spec.params:
            if p.activity is Activity.ACTIVE:
                raise ActivityError(f"parameter '{p.name}': 'active' is reverse mode only; "
                                    "use 'dup' to pass a tangent in forward mode")
        self.slot = return_slot(self.primal, self.spec)
        if self.width > 1 and self.spec.ret_leaves is not None and self.slot.differentiable:
            raise ActivityError("vector forward mode (width > 1) does not support functions "
                                "returning arrays or tuples; use width=1, or ret='const'")
        return activity_seeds(self.primal, self.spec)

    def _argument_meminfos(self) -> set[Value]:
        """The meminfos of array arguments whose shadows mirror their reference counts (width
        1): a phi of one with null (a loop's view of a row) mirrors them too."""
        if self.width != 1:
            return set()
        return {self.primal.args[p.args[MEMINFO]] for p in self.spec.params
                if p.activity.has_shadow and p.is_array}

    def _bind_arguments(self) -> None:
        b, k = self.b, self.width
        for p in self.spec.params:
            if not p.activity.has_shadow:
                continue
            sargs = self.sig.shadow_args[p.name]
            if p.is_array and k == 1:     # meminfo and parent: a returned view's tangent
                for i in (MEMINFO, PARENT):
                    self.meminfo_shadows[self.primal.args[p.args[i]]] = sargs[i]
            if k == 1:
                target = self.shadows if p.is_array or is_raw_pointer(self.primal, p) \
                    else self.tangents
                key = self.primal.args[p.data_arg if p.is_array else p.args[0]]
                target[key] = sargs[DATA] if p.is_array else sargs[0]
            elif p.is_array:
                self.shadows[self.primal.args[p.data_arg]] = self._lane_pointers(sargs)
            else:
                arg = self.primal.args[p.args[0]]
                self.tangents[arg] = gather(self.b, arg.type, self._lane_pointers(sargs), k)
        retptr = self.primal.args[self.spec.retptr]
        self.slot_ptr = b.alloca(self.slot.type, "ret.slot")
        self.vmap[retptr] = self.slot_ptr
        if retptr in self.info.shadowed:
            lanes = b.alloca(ArrayType(k, self.slot.type), "ret.slot'")
            b.store(zero(ArrayType(k, self.slot.type)), lanes)
            if k == 1:
                self.shadows[retptr] = lanes
            else:
                ptrs = [b.gep(ArrayType(k, self.slot.type), lanes, [const_int(I64, 0),
                              const_int(I64, j)]) for j in range(k)]
                self.shadows[retptr] = vector_of(self.b, ptrs)

    def _lane_pointers(self, array_args: list[Argument]) -> Value:
        """`<k x ptr>`: lane j points at data + j * stride0 of a shadow array."""
        return lane_pointers(self.b, array_args[DATA], lane_stride(array_args), self.width)

    # ------------------------------------------------------------ per instruction
    def _visit(self, inst: Instruction) -> None:
        if inst.opcode == "phi":
            return self._phi(inst)
        if inst.opcode == "ret":
            return self._return(inst)
        if inst.opcode == "call" and (callee := called_definition(self.module, inst)):
            return forward_call(self, inst, callee, _Forward)
        if inst in self.allocs and self.kept.keeps(inst):
            return self._kept_allocation(inst)
        check_aggregate_load(self.diag, self.info, inst)
        clone = self.b.insert(clone_instruction(inst, self._map, self.blocks.__getitem__))
        self.vmap[inst] = clone
        if inst in self.allocs:
            self._shadow_allocation(inst)
        elif inst in self.merged_meminfos:      # a select of meminfos: select their shadows
            c, x, y = inst.operands
            self.meminfo_shadows[inst] = self.b.select(self._map(c), self._meminfo_shadow(x),
                                                       self._meminfo_shadow(y))
        elif inst in self.info.shadowed:
            self._shadow_pointer(inst)
        elif inst in self.info.varied:
            self.b.fast_math = _tangent_flags(inst)
            self.tangents[inst] = self._tangent(inst, clone)
            self.b.fast_math = ()
        elif inst.opcode == "store":
            self._store(inst)
        elif inst.opcode == "bitcast":
            check_reinterpretation(self.diag, self.info, inst)
        elif inst.opcode == "call":
            self._inactive_call(inst)
        elif inst.opcode == "ptrtoint":
            check_pointer_to_int(self.diag, self.primal, self.info, inst)

    def _map(self, v: Value) -> Value:
        return self.vmap.get(v, v)

    def _tangent_type(self, t: Type) -> Type:
        if self.width == 1:
            return t
        if isinstance(t, FloatType):
            return VectorType(self.width, t)
        if isinstance(t, StructType):
            return StructType(tuple(self._tangent_type(e) for e in t.elements), t.packed)
        if isinstance(t, ArrayType):
            return ArrayType(t.count, self._tangent_type(t.element))
        raise self.diag.unsupported(f"vector forward mode over values of type {t}")

    def tangent(self, v: Value) -> Value:
        t = self.tangents.get(v)
        return t if t is not None else zero(self._tangent_type(v.type))

    def _tangent(self, inst: Instruction, clone: Instruction) -> Value:
        b, op = self.b, inst.opcode
        if op == "load":
            return self._load_shadow(inst)
        if op in ("fpext", "fptrunc", "bitcast"):   # bitcast: of float lanes (`default_deny`)
            return b.cast(op, self.tangent(inst.operands[0]), self._tangent_type(inst.type))
        if op == "freeze":
            return self.tangent(inst.operands[0])
        if op == "extractvalue":
            return b.extractvalue(self.tangent(inst.operands[0]), inst.indices)
        if op == "insertvalue":
            agg, v = inst.operands
            return b.insertvalue(self.tangent(agg), self.tangent(v), inst.indices)
        if op in ("extractelement", "insertelement", "shufflevector"):
            # linear; lane indices and masks stay (width 1: `default_deny`)
            t = clone_instruction(inst, self.tangent_or_same, self.blocks.__getitem__)
            return b.insert(t)
        return self._apply_rule(inst, clone)

    def tangent_or_same(self, v: Value) -> Value:
        """For lane-shuffling ops: tangents for float vectors, primal values for indices/masks."""
        return self.tangent(v) if carries_float(v.type) else self._map(v)

    def _apply_rule(self, inst: Instruction, clone: Instruction) -> Value:
        if inst.opcode == "fdiv" and all(a in self.tangents for a in inst.operands):
            return self._quotient_tangent(inst, clone)
        rule = rule_for(self.diag, inst)
        args = [self._map(a) for a in inst.operands]
        zero_t = zero(self._tangent_type(inst.type))
        if rule.choose is not None:
            return selected_tangent(self.b, rule.choose(self.m, args, clone),
                                    lambda i: self.tangents.get(inst.operands[i]), zero_t)
        assert rule.partials is not None
        partials = rule.partials(self.m, args, clone)
        total: Value | None = None
        for i, (a, p) in enumerate(zip(inst.operands, partials)):
            if p is None or a not in self.tangents:
                continue
            term = self._scale(p, self.tangents[a])
            if i in rule.reduces:       # a vector reduction: the lanes' contributions summed
                term = sum_lanes(self.b, self.module, term)
            total = term if total is None else self.b.fadd(total, term)
        return total if total is not None else zero_t

    def _scale(self, partial: Value, t: Value) -> Value:
        """`partial * t`; with `strong_zero`, 0 where `t` is 0 (even for an infinite or NaN
        partial)."""
        term = scale(self.b, partial, t, self.width)
        return zero_guard(self.b, term, t, zero(t.type)) if self.spec.strong_zero else term

    def _quotient_tangent(self, inst: Instruction, clone: Instruction) -> Value:
        """`(da - q db) / b` as `(da - q db) * (1 / b)` for `q = a / b`: one multiply fewer
        than the rule's `da / b - (q / b) db`, and `1 / b` is shared by every quotient by `b`."""
        a, b = inst.operands
        inv = self.m.recip(self._map(b))
        num = self.b.fsub(self.tangents[a], self._scale(clone, self.tangents[b]))
        return self._scale(inv, num)

    def _shadow_pointer(self, inst: Instruction) -> None:
        b = self.b
        if is_held_pointer_load(inst, self.info):   # its shadow is held beside it
            if is_taped_pointer_load(inst) and self.width > 1:
                raise vector_mode_error(self.diag, inst, self.width)
            shadow = held_load_shadow(b, self.diag, self.info, inst,
                                      self.shadows[inst.operands[0]], self.width)
            self.shadows[inst] = self.meminfo_shadows[inst] = shadow
            return
        shadow = derived_shadow(b, inst, self._map, self._shadow_of)
        if shadow is None and inst.opcode == "alloca":
            shadow = self._shadow_alloca(inst)
        elif shadow is None:
            role = role_of(inst)
            if role is Role.RAW_ALLOC:
                self.alloc_sizes[inst] = self._map(inst.operands[0])
            base = call_shadow(b, self.module, inst, self._map, self.meminfo_shadows.__getitem__,
                               self.width)
            if base is None:
                raise unknown_shadow_pointer(self.diag, inst)
            shadow = self._lanes_of(base, inst.operands[0] if role is Role.HANDLE_DATA else inst)
        self.shadows[inst] = shadow

    def _shadow_allocation(self, inst: Instruction) -> None:
        """A zeroed shadow array (k of them, back to back, in vector mode)."""
        b = self.b
        if role_of(inst) is Role.HANDLE_VARSIZE:
            return self._shadow_growable(inst)
        size, align = (self._map(op) for op in inst.operands)
        total = size if self.width == 1 else b.mul(size, const_int(I64, self.width))
        self.meminfo_shadows[inst] = allocate_shadow(b, self.module, total, align)[0]
        self.alloc_sizes[inst] = size

    def _kept_allocation(self, inst: Instruction) -> None:
        """An allocation and its shadow kept between calls (`forward_kept.py`)."""
        size, align = (self._map(op) for op in inst.operands)
        self.vmap[inst], self.meminfo_shadows[inst] = self.kept.take(self.b, size, align)
        self.alloc_sizes[inst] = size

    def _shadow_growable(self, inst: Instruction) -> None:
        """A list's storage: a shadow resized with it (`_inactive_call`)."""
        if self.width != 1:
            raise self.diag.unsupported(
                "a Python list holding active values in vector forward mode", inst,
                "not supported yet: use width=1, or keep the values in a NumPy array")
        size = self._map(inst.operands[0])
        dtor = self._map(inst.operands[1]) if holds_pointers(self.primal, inst) else NULL
        self.meminfo_shadows[inst] = allocate_growable_shadow(self.b, self.module, size, dtor)

    def _meminfo_shadow(self, meminfo: Value) -> Value:
        """The shadow meminfo mirroring `meminfo`'s reference counts (null when it has none:
        NRT_incref/NRT_decref ignore null)."""
        return self.meminfo_shadows.get(meminfo, zero(PTR))

    def _lanes_of(self, data: Value, meminfo: Value) -> Value:
        if self.width == 1:
            return data
        return lane_pointers(self.b, data, self.alloc_sizes[meminfo], self.width)

    def shadow_of(self, ptr: Value, user: Instruction) -> Value:
        """The shadow of pointer `ptr`, which `user` needs."""
        return self._shadow_of(ptr, user)

    def _shadow_of(self, ptr: Value, user: Instruction) -> Value:
        if is_poison(ptr):      # an incoming value of a phi on a path that never uses it
            return Constant(self.shadows_type(), "poison")
        s = self.shadows.get(ptr)
        if s is None and addresses_nothing(ptr):
            return NULL
        if s is None:
            raise mixed_memory_error(self.diag, self.spec, ptr, user)
        return s

    def _shadow_alloca(self, inst: Instruction) -> Value:
        """A zeroed stack slot like the primal's, with its alignment (the primal's accesses
        claim it: an aligned vector store to a less aligned slot faults); k of them in
        vector mode."""
        if inst.operands:
            raise self.diag.unsupported("dynamically sized alloca holding active values", inst)
        t, name = inst.source_type, (inst.name or "") + "'"
        lanes = [self.entry_alloca(t, zero(t), name, inst.align)  # type: ignore[arg-type]
                 for _ in range(self.width)]
        if self.width == 1:
            return lanes[0]
        with self.b.at_end(self.fn.entry) as b:
            term = self.fn.entry.instructions.pop()
            vec = vector_of(b, lanes)
            self.fn.entry.append(term)
        return vec

    def _load_shadow(self, inst: Instruction) -> Value:
        ptr = self.shadows[inst.operands[0]]
        if not carries_float(inst.type) and not self._only_stored(inst):
            raise self.diag.unsupported(
                "integer load from shadowed (float) memory used as a number", inst,
                "avoid reinterpreting float arrays as integers")
        if self.width == 1:
            return self.b.load(inst.type, ptr, align=inst.align)
        return gather(self.b, inst.type, ptr, self.width)

    def _only_stored(self, inst: Instruction) -> bool:
        return all(u.opcode == "store" and u.operands[0] is inst
                   for u in self.primal.instructions() if inst in u.operands)

    def _store(self, inst: Instruction) -> None:
        v, ptr = inst.operands
        if is_taped_pointer_store(inst) and ptr in self.info.shadowed and self.width == 1 \
                and reads_taped_shadows(self.primal, self.info):
            shadow = taped_shadow(self.diag, inst, lambda p: self.meminfo_shadows.get(p)
                                  or self.shadows.get(p))
            self.b.store(shadow, self.shadows[ptr], align=inst.align)
        elif ptr in self.info.shadowed and pointer_base(ptr) is self.retptr \
                and not carries_float(v.type):
            self.b.store(self._returned_shadow(v, inst), self.shadows[ptr], align=inst.align)
        elif ptr in self.info.shadowed and is_list_item_store(self.primal, inst):
            shadow = list_item_shadow(self.diag, self.primal, inst, self._map,
                                      lambda p: self.meminfo_shadows.get(p) or self.shadows.get(p),
                                      self.tangents.get)
            self.b.store(shadow, self.shadows[ptr], align=inst.align)
        elif ptr in self.info.shadowed:
            t = held_shadow(self.diag, inst, self.shadows.get) \
                if is_held_pointer_store(inst, self.info) else self.tangents.get(v)
            if t is NULL and self.width > 1:
                t = vector_of(self.b, [NULL] * self.width)
            if t is None:
                t = zero(self._tangent_type(v.type)) if carries_float(v.type) or self.width == 1 \
                    else None
            if t is None:
                return
            sp = self.shadows[ptr]
            if self.width == 1:
                self.b.store(t, sp, align=inst.align)
            else:
                for j in range(self.width):
                    self.b.store(self.b.extractelement(t, j), self.b.extractelement(sp, j))
        else:
            check_store(self.diag, self.spec, self.primal, self.info, inst)

    def _returned_shadow(self, v: Value, inst: Instruction) -> Value:
        """What the tangent of the return value holds where the primal stores non-float `v`:
        the shadow of a pointer (meminfo, parent, data), the same integer."""
        if not v.type.is_pointer:
            return self._map(v)
        if isinstance(v, Constant):
            return v
        shadow = self.meminfo_shadows.get(v) or self.shadows.get(v)
        if shadow is None:       # an array without a shadow: its tangent is zeros
            self.untracked_arrays = True
            return Constant(PTR, "null")
        return shadow

    def _inactive_call(self, inst: Instruction) -> None:
        """Shadow bookkeeping of runtime calls; the derivative of known library calls."""
        record = call_record(inst)
        role = record.role if record is not None else Role.NONE
        owner = inst.operands[0] if inst.operands else None
        if role in (Role.INCREF, Role.DECREF) and owner in self.meminfo_shadows:
            mirror_refcount(self.b, self.module, inst, self.meminfo_shadows[owner])
        if role is Role.VARSIZE_REALLOC and owner in self.meminfo_shadows:
            resize_shadow(self.b, self.module, self.meminfo_shadows[owner],
                          self._map(inst.operands[1]))
        if role is Role.RAW_FREE and owner in self.shadows:
            return free_raw(self.b, self.module, self.shadow(owner, 0))
        touches = any(op in self.info.shadowed or op in self.info.varied for op in inst.operands)
        if not touches or record is not None and record.inert:
            return
        if record is None or record.forward is None:
            raise self.diag.unsupported_call(inst)
        if is_held_copy(inst, self.info):
            check_held_copy(self.diag, self.info, inst, reverse=False)
        if record.check is not None:
            record.check(self, inst)
        record.forward(self, inst)

    # ------------------------------------------------------------ known-call context
    def has_shadow(self, v: Value) -> bool:
        return v in self.info.shadowed

    def describe(self, ptr: Value) -> str:
        return describe_memory(self.spec, ptr)

    def value(self, v: Value) -> Value:
        return self._map(v)

    def shadow(self, ptr: Value, lane: int) -> Value:
        return lane_of(self.b, self.shadows[ptr], lane, self.width)

    def entry_alloca(self, t: Type, init: Value | None = None, name: str | None = None,
                     align: int | None = None) -> Value:
        """A stack slot made in the entry block (before its terminator), optionally set."""
        with self.b.at_end(self.fn.entry) as b:
            term = self.fn.entry.instructions.pop()
            slot = b.alloca(t, name, align=align)
            if init is not None:
                b.store(init, slot)
            self.fn.entry.append(term)
        return slot

    # ------------------------------------------------------------ control flow
    def _phi(self, inst: Instruction) -> None:
        clone = self.b.insert(clone_instruction(inst, self._map, self.blocks.__getitem__))
        self.vmap[inst] = clone
        tphi = sphi = None
        if inst in self.info.shadowed:
            sphi = self.b.phi(self.shadows_type(), (inst.name or "") + "'")
            self.shadows[inst] = sphi
        elif inst in self.info.varied:
            tphi = self.b.phi(self._tangent_type(inst.type), (inst.name or "") + "'")
            self.tangents[inst] = tphi
        elif inst in self.merged_meminfos:
            mphi = self.b.phi(PTR, (inst.name or "") + "'")
            self.meminfo_shadows[inst] = mphi
            self.meminfo_phis.append((inst, mphi))
        self.phis.append((inst, clone, tphi, sphi))

    def shadows_type(self) -> Type:
        return PTR if self.width == 1 else VectorType(self.width, PTR)

    def _fill_phis(self) -> None:
        for inst, clone, tphi, sphi in self.phis:
            for v, blk in zip(inst.operands, inst.incoming):
                if blk not in self.blocks:
                    continue  # unreachable predecessor
                nb = self.blocks[blk]
                add_incoming(clone, self._map(v), nb)
                if tphi is not None:
                    add_incoming(tphi, self.tangent(v), nb)
                if sphi is not None:
                    add_incoming(sphi, self._shadow_of(v, inst), nb)
        for inst, mphi in self.meminfo_phis:
            for v, blk in zip(inst.operands, inst.incoming):
                if blk in self.blocks:
                    add_incoming(mphi, self._meminfo_shadow(v), self.blocks[blk])

    def _return(self, inst: Instruction) -> None:
        b, spec = self.b, self.spec
        results = None
        if self.slot.has_value:
            results = value = b.load(self.slot.type, self.slot_ptr)
            if spec.ret.is_differentiated and self.slot.differentiable:
                shadow = self.shadows[self.primal.args[spec.retptr]]
                keep = spec.ret is not Activity.DUPNONEED
                if self.width == 1:
                    tangent = complete_tangent(b, self.fn, self.module, spec, self.slot, value,
                                               b.load(self.slot.type, shadow),
                                               self.untracked_arrays)
                    if not keep:
                        release_arrays(b, self.module, spec, value)
                    results = [value, tangent] if keep else tangent
                else:
                    self._write_tangent_lanes(shadow)
                    results = value if keep else None
        pack_results(b, self.sig.retptr, spec.ret_type, results, self.diag)
        self.kept.park_all(b)
        self.rets.append(b.ret(self._map(inst.operands[0])))

    def deferred_raise(self) -> DeferredRaise:
        """Where calls report exceptions the derivative raises when it returns."""
        if self.deferred is None:
            self.deferred = DeferredRaise(self.entry_alloca(I32, const_int(I32, 0)),
                                          self.entry_alloca(PTR))
        return self.deferred

    def _report_deferred(self) -> None:
        """Each return reports the first exception a call deferred (all returns are emitted
        by then: a block visited early may return after a call emitted later)."""
        if self.deferred is None:
            return
        for ret in self.rets:
            self.b.position_before(ret)
            ret.operands[0] = self.deferred.returned(self.b, self.sig.excinfo, ret.operands[0])

    def _write_tangent_lanes(self, lanes: Value) -> None:
        b = self.b
        out = self.sig.tangent_out
        data, stride = out[DATA], lane_stride(out)
        for j in range(self.width):
            v = b.load(self.slot.type, b.extractelement(lanes, j))
            if v.type != DOUBLE:  # the tangent array is always float64
                v = b.cast("fpext", v, DOUBLE)
            b.store(v, b.gep(IntType(8), data, [b.mul(stride, const_int(I64, j))]))


