"""What the parts of the reverse synthesizer share: the analyses of the primal, the layout of
the derivative's blocks, and the maps from primal values to their forward clones, shadows,
adjoint slots, loop counters and tape frames. Everything is set up in `ReverseState()`."""
from __future__ import annotations

from typing import Any, Callable

from ...analysis.activity import ActivityInfo, analyze_activity, carries_float
from ...analysis.cfg import Loop, blocks_reaching, reverse_post_order
from ...analysis.temporaries import data_accesses
from ...analysis.types import analyze_memory_types
from ...diagnostics import Diagnostics
from ...ir.builder import Builder
from ...ir.types import I32, I64, PTR, Type
from ...ir.values import Block, Function, GlobalRef, Instruction, Module, Value, const_int, zero
from ...known.array_layout import DATA
from ...known.model import Role, known_call
from ..allocations import growable_allocations, returns_memory, shadowed_allocations
from ..callees import hidden_shadows, not_inlined_callees
from ..common import refuse_known_problem_calls
from ..default_deny import refuse_unhandled
from ..raising import DeferredRaise
from ..returns import is_exceptional_return, return_slot
from ..rules import lookup
from ..rules.emitter import MathEmitter
from ..rules.math import math_rule_name
from ..rules.selection import droppable_operands
from ..seeds import activity_seeds, is_raw_pointer, known_element_types
from ..signature import build_signature
from ..spec import Activity, DiffSpec
from ..split_inputs import changing_arguments
from .plan import InductionVariable, ReversePlan
from .retained import Retained
from .last_update import find_last_updates
from .recurrences import find_recurrences
from .tables import Tables
from .tape import Tape


_OWNER_ROLES = (Role.HANDLE_ALLOC, Role.HANDLE_DTOR, Role.HANDLE_DATA, Role.INCREF, Role.DECREF)


def owned_states(module: Module) -> bool:
    """Whether callees' states can be owned (with a destructor): the module already uses
    the front end's reference-counted owners (Numba's NRT; not the C front end's, whose
    raw buffers are malloc's). Raw states leak with their tapes on a raise."""
    return any((r := known_call(name)) is not None and r.role in _OWNER_ROLES
               for name in module.functions)


class ReverseState:
    """The primal's analyses and the derivative under construction (see `driver.py`)."""

    def __init__(self, module: Module, spec: DiffSpec,
                 observe: Callable[[Retained], None]) -> None:
        self.observe = observe
        self.module = module
        self.spec = spec
        self.primal = module.functions[spec.primal]
        self.diag = Diagnostics(module, self.primal)
        self.sig = build_signature(self.primal, spec)
        self.fn: Function = self.sig.fn
        self.b = Builder()
        self.m = MathEmitter(self.b, module)
        self.vmap: dict[Value, Value] = dict(self.sig.primal_args)
        self.fshadow: dict[Value, Value] = {}         # forward-pass shadow pointers
        self.adjoints: dict[Value, Instruction] = {}   # primal value -> adjoint alloca
        self.counters: dict[Loop, Instruction] = {}    # loop -> synthetic primal counter
        self.rcounter: dict[Loop, Instruction] = {}    # loop -> reverse counter alloca
        self.which: dict[Block, Instruction] = {}      # block -> synthetic "which pred" value
        self.frames: dict[Block, list[tuple[Value, Instruction]]] = {}   # tape pushes per block
        self.spills: dict[Value, Instruction] = {}     # forward value or shadow -> slot
        self.hoisted: dict[tuple[object, Value, Loop], Instruction] = {}   # -> stack slot
        self.hoist_stores: dict[Block, list[tuple[Instruction, Instruction]]] = {}
        # values a loop's latch may tape for several of its blocks, and their reads
        self.carriable: dict[tuple[Value, Block], list[tuple[Block, Instruction]]] = {}
        self.slot_loads: dict[Block, list[Instruction]] = {}
        self.phis: list[tuple[Instruction, Instruction]] = []   # primal phi -> forward phi
        self.deferred: DeferredRaise | None = None      # exceptions raised at the end
        self.pending_counters: list[tuple[Loop, Instruction]] = []   # forward counter phis
        self.returns: list[tuple[Block, Value]] = []   # normal returns and their status
        self.slot = return_slot(self.primal, spec)
        self.ret_active = spec.ret is Activity.ACTIVE and self.slot.differentiable
        self.callees = not_inlined_callees(module)       # called, not inlined (callees.py)
        self.call_halves: dict[Instruction, Any] = {}     # such a call -> its callee's halves
        self.synthesize: Callable[[DiffSpec], Function] | None = None   # set by the driver
        self.info = analyze_activity(self.primal, *activity_seeds(self.primal, spec),
                                     self.callees, known_element_types(self.primal, spec),
                                     module.named_types)
        refuse_known_problem_calls(self.diag, self.primal, self.info)
        refuse_unhandled(self.diag, self.primal, self.info)
        hidden_shadows(self.diag, self.primal, self.info, [
            i for i in self.primal.instructions() if i.callee_name in self.callees and any(
                o in self.info.varied or o in self.info.shadowed for o in i.operands)],
            self.callees)
        self.retptr = self.primal.args[spec.retptr]
        self.allocs = shadowed_allocations(self.primal, self.info, self.diag, self.retptr)
        self.growable = growable_allocations(self.primal, self.diag, self.allocs,
                                             spec.split is not None)
        self.allocs -= self.growable      # lists' storage: versioned shadows (growable.py)
        self.speculated = _feeding_selects(self.primal)
        self.memory_types = analyze_memory_types(self.primal,
                                                 known_element_types(self.primal, spec))
        normal_returns = [blk for blk in self.primal.blocks
                          if (t := blk.terminator) is not None and t.opcode == "ret"
                          and not is_exceptional_return(t)]
        self.plan = ReversePlan(self.primal, normal_returns, reloads=spec.split is None,
                                products=_active_products(self.primal, self.info),
                                vector_math=spec.vector_math,
                                changing=changing_arguments(self.primal, spec))
        self.last_updates = find_last_updates(self.plan, self.primal)   # running max/min
        self.entry = self.fn.add_block("entry")
        self.tape = Tape(module, self.fn, self.entry, parked=spec.split is None)
        # the shadow arrays (and held arrays) allocated so far, for an exit that skips the
        # reverse: split mode's state dying unreversed, or a raise after loop allocations
        self.owned = (Tape(module, self.fn, self.entry, "owned", parked=False)
                      if spec.split or self._leaves_owners() else None)
        self.owned_pushes: dict[Block, list[Value]] = {}
        # owners of temporaries kept or held, taken so far (entry slots), and the exits that
        # skip the reverse (the first release call of each): what they drop (`unreversed.py`)
        self.kept_owners: list[Instruction] = []
        self.unreversed_exits: list[Instruction] = []
        self.tables = Tables(self)                      # values kept in tables (tables.py)
        # temporaries run at most once per call: kept between calls in slots (unless the
        # function returns memory), else (outside split mode) held until their reverse, as
        # are those made in a loop and read in a loop inside it (`_read_in_inner_loops`)
        once = frozenset(a for a in self.allocs if self.plan.executes_once(a.block))
        self.kept_between_calls = once if not returns_memory(self.primal, self.retptr) \
            else frozenset()
        if spec.split is None:
            in_loops = self.allocs - once
            users = self.primal.users() if in_loops else {}
            self.plan.live_arrays = once | frozenset(
                a for a in in_loops if _read_in_inner_loops(self.plan, a, users))
        else:
            self.plan.live_arrays = self.kept_between_calls
        # allocations kept between calls -> slots of the primal array and of its shadow
        self.kept_allocations: dict[Instruction, tuple[GlobalRef, GlobalRef]] = {}
        self.kept: dict[Instruction, list[Value]] = {}   # call -> arrays kept alive
        self.slot_ptr = self._setup_entry()
        self.plan.recurrences = find_recurrences(self.plan)
        self.recurrence_slots = {phi: self.alloca(I64, f"{phi.name}.rslot")
                                 for phi in self.plan.recurrences}
        self.order = reverse_post_order(self.primal)
        self.fwd = {block: self.fn.add_block(block.name) for block in self.order}
        self.re = self.fn.add_block("reverse.entry")
        reaches_return = blocks_reaching(self.primal, normal_returns)
        self.rev = {block: self.fn.add_block((block.name or "") + ".rev")
                    for block in self.order if block in reaches_return}
        self.done = self.fn.add_block("reverse.done")

    def _setup_entry(self) -> Instruction:
        """The return slot and its shadow, array shadows, and the loop counters."""
        slot_ptr = Builder(self.entry).alloca(self.slot.type, "ret.slot")
        self.vmap[self.retptr] = slot_ptr
        if self.ret_active:
            self.fshadow[self.retptr] = self.zeroed_alloca(self.slot.type, "ret.slot'")
        for p in self.spec.params:
            if p.activity.has_shadow and p.is_array:
                self.fshadow[self.primal.args[p.data_arg]] = self.sig.shadow_args[p.name][DATA]
            elif p.activity.has_shadow and is_raw_pointer(self.primal, p):
                self.fshadow[self.primal.args[p.args[0]]] = self.sig.shadow_args[p.name][0]
        for loop in self.plan.loops:
            counter = Instruction("phi", I64, [], f"{loop.header.name}.iter")
            counter.block = loop.header
            self.counters[loop] = counter
            self.plan.ivs[counter] = InductionVariable(loop, const_int(I64, 0), const_int(I64, 1))
            self.rcounter[loop] = self.alloca(I64, f"{loop.header.name}.riter")
        return slot_ptr

    def release_tapes(self, b: Builder) -> Instruction:
        """Park the tape (after the list of shadow arrays, if any: the tape's buffer stays
        parked for the next call) at `b`; the first call emitted."""
        listed = self.owned.release(b) if self.owned is not None else None
        self.tables.releases.append(self.tape.release(b))
        return listed or self.tables.releases[-1]

    def exit_unreversed(self, b: Builder) -> None:
        """Release the tapes at `b`, an exit that skips the reverse (a raise); what the
        reverse would have released is dropped there too, once known (`unreversed.py`)."""
        self.unreversed_exits.append(self.release_tapes(b))

    def _leaves_owners(self) -> bool:
        """Whether the primal calls callees that are not inlined (their states): what a raise
        skips the release of cannot sit in entry slots (`unreversed.py`). Arrays allocated in
        loops are not listed: the owned list of a reverse derivative that is differentiated
        again is refused there (its stores of owners into the list escape), so a raise still
        leaks their shadows."""
        return owned_states(self.module) and any(
            i.opcode == "call" and i.callee_name in self.callees
            for i in self.primal.instructions())

    def alloca(self, t: Type, name: str, align: int | None = None) -> Instruction:
        """An alloca in the entry block (kept before the entry's eventual terminator)."""
        return Builder(self.entry).alloca(t, name, align=align)

    def zeroed_alloca(self, t: Type, name: str, value: Value | None = None,
                      align: int | None = None) -> Instruction:
        slot = self.alloca(t, name, align)
        Builder(self.entry).store(value if value is not None else zero(t), slot)
        return slot

    def deferred_raise(self) -> DeferredRaise:
        """Where reverse calls report exceptions the derivative raises when it returns
        (`control.finish`)."""
        if self.deferred is None:
            self.deferred = DeferredRaise(self.zeroed_alloca(I32, "deferred.status"),
                                          self.zeroed_alloca(PTR, "deferred.excinfo"))
        return self.deferred

    def map(self, v: Value) -> Value:
        """The forward pass's copy of primal value `v`."""
        return self.vmap.get(v, v)

    def loop_with_header(self, block: Block) -> Loop | None:
        return next((l for l in self.plan.loops if l.header is block), None)

    def preds(self, block: Block) -> list[Block]:
        """Predecessors of `block` that the forward pass clones (the reachable ones)."""
        return [p for p in self.plan.preds[block] if p in self.fwd]


def _feeding_selects(fn: Function) -> set[Instruction]:
    """Instructions whose results flow into an operand a selection may not pick (a value
    operand of a `select`, either operand of fmax, the sign of copysign): they may have been
    computed for the arm the selection did not take, and their adjoint be an exact zero."""
    out: set[Instruction] = set()
    work: list[Value] = [op for inst in fn.instructions() for op in _droppable(inst)]
    while work:
        v = work.pop()
        if isinstance(v, Instruction) and v not in out and carries_float(v.type) \
                and v.opcode not in ("phi", "load"):
            out.add(v)
            work.extend(v.operands)
    return out


def _droppable(inst: Instruction) -> list[Value]:
    """The operands of selection `inst` some arm does not pick (`droppable_operands`)."""
    if inst.opcode not in ("select", "call"):
        return []
    rule = lookup(inst.opcode if inst.opcode == "select"
                  else math_rule_name(inst.callee_name or "", inst.type))
    if rule is None or rule.choose is None:
        return []
    drop = droppable_operands(rule, tuple(o.type for o in inst.operands), inst.type)
    return [inst.operands[i] for i in sorted(drop)]


def _active_products(fn: Function, info: ActivityInfo) -> frozenset[Instruction]:
    """`fmul`s of two active values, themselves active (see `ReversePlan.products`)."""
    return frozenset(i for i in fn.instructions() if i.opcode == "fmul" and info.is_active(i)
                     and all(info.is_active(o) for o in i.operands))


def _read_in_inner_loops(plan: ReversePlan, alloc: Instruction,
                         users: dict[int, list[Instruction]]) -> bool:
    """Whether the array `alloc` makes (reached only through its data pointers) is read in a
    loop its allocation is not in: then its reads outnumber its elements, as a rule, and
    keeping each array until its reverse (a reference each) costs less than taping what
    the reverse needs of the reads."""
    outer = {id(l) for l in plan.loops_containing(alloc.block)}   # type: ignore[arg-type]
    accesses = data_accesses(alloc, users, lambda user: True) or []
    return any(a.opcode == "load" and any(id(l) not in outer for l in
                                          plan.loops_containing(a.block))  # type: ignore
               for a in accesses)
