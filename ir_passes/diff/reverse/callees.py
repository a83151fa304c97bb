"""Reverse mode of a call to a callee that was not inlined (see `../callees.py`).

The callee's derivative is split (`split.py`) into an augmented forward `F` and a reverse
`R`, made once per activities (so a recursive callee's halves call themselves):
- the caller's forward pass calls `F` (the call's arguments and the shadows of its shadowed
  pointer arguments) instead of the primal: `F` stores the result into the caller's return
  slot for the call and hands back its state (an owned buffer holding its tape pointers and
  what else its reverse needs), which the caller keeps like any value its reverse needs
  (taped in a loop or a recursion) and lists as owned (`unreversed.py`);
- the call's reverse calls `R` with the arguments, shadows, the adjoint of the result (read
  from the shadow of the return slot, then zeroed) and the state; `R` adds into the
  shadows, returns the gradients of the active float arguments and frees the tape; the
  caller, which marked the state used, then drops it. A caller that raises after the call
  never runs the reverse: it drops the listed states, whose destructor frees the tape and
  what else the callee's reverse would have released. The call of a callee whose reverse
  recomputes it (`RECOMPUTED`) runs `F` in its reverse, just before `R`: `F` takes the state
  buffer (raw) from the callee's slot and the caller parks it there again after `R`
  (`parked_shadows`), so the iterations of a checkpointed loop, and later calls, reuse one
  buffer.
`R` may recompute values from memory its callee only reads, so that memory must not change
between the call and its reverse, and memory the callee writes must not be handed to it
twice (checked at the call). Memory the caller of a split derivative may change between its
halves is handed to halves that keep what they read from it (`SplitSpec.unchanged`).
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Callable

from ...analysis.activity import ActivityInfo
from ...ir.builder import declare
from ...ir.types import I8, I32, I64, PTR, VOID, StructType
from ...ir.values import (Argument, Constant, Function, GlobalRef, Instruction, Value,
                          const_int, zero)
from ...known.array_layout import DATA, MEMINFO, NITEMS
from ...known.memory import pointer_base
from ...known.model import Role, runtime_call
from ..callees import callee_spec, memoised, written_parameters, written_targets
from ..prepare import prepare_calls
from ..spec import Activity, DiffSpec, ReturnLeaf, SplitSpec
from ..split_inputs import moving_parameter
from .availability import Availability, BlockContext
from .checks import refuse_moving_read
from .kept import local_owner, written_after
from .parked_shadows import park_shadow, state_slot
from .split import STATE_ARRAY
from .state import ReverseState, owned_states

_HINT = "not supported yet: pass the callee memory the caller does not change afterwards"
_ARRAY_HINT = ("allocate the array once per call (outside loops) in a function that returns "
               "no array, or let Numba inline the callee")
_idents = itertools.count(1 << 32)


def touches(info: ActivityInfo, inst: Instruction) -> bool:
    """Whether call `inst` is handed an active value or shadowed memory."""
    return any(op in info.varied or op in info.shadowed for op in inst.operands)


def check_call(st: ReverseState, inst: Instruction, callee: Function) -> None:
    """Refuse what the callee's reverse half cannot be trusted with at this call. A local
    array the callee only reads must be one kept between calls (`parked_shadows`): its slot
    holds a reference until the allocation's reverse, after the call's. Any other would need
    a reference per call (not supported yet: a checkpointed loop keeps its tape instead)."""
    written = written_parameters(st.module)
    writes = written.get(callee.name or "", frozenset())
    bases: dict[int, list[int]] = {}
    for i, op in enumerate(inst.operands[2:], start=2):
        if not op.type.is_pointer:
            continue
        bases.setdefault(id(pointer_base(op)), []).append(i)
        if RECOMPUTED in callee.fn_attrs:      # its augmented forward runs in the reverse
            refuse_moving_read(st, inst, op, f"call to @{callee.name}, which is recomputed")
        if i in writes or st.plan.read_only(op):
            continue
        targets = lambda call: written_targets(call, written)    # noqa: E731
        base, owned = pointer_base(op), local_owner(op)
        if isinstance(base, Argument) and not written_after(inst, [base], targets=targets):
            continue
        if owned is None or written_after(inst, owned[1], targets=targets):
            raise st.diag.unsupported(f"call to @{callee.name}, which is not inlined, reads "
                                      f"memory (%{op.name}) written after the call", inst, _HINT)
        if owned[0] not in st.kept_allocations:
            raise st.diag.unsupported(f"call to @{callee.name}, which is not inlined, reads "
                                      f"a local array (%{op.name}) allocated more than once per "
                                      "call or returned", inst, _ARRAY_HINT)
    for same in bases.values():
        if len(same) > 1 and writes.intersection(same):
            raise st.diag.unsupported(f"call to @{callee.name}, which is not inlined, handed "
                                      "memory it writes through two arguments", inst,
                                      "not supported yet: pass distinct arrays")


# The string attribute of a callee whose calls' reverse recomputes it (a checkpointed loop's
# body: `ir_passes.outline_loop_body`): the forward pass calls the callee itself, the call's
# reverse its augmented forward then its reverse, so its tape lives during that reverse only.
RECOMPUTED = '"enzyme-recomputed"'


@dataclasses.dataclass(frozen=True)
class _Halves:
    spec: DiffSpec                  # the callee's derivative (its `split` names F and R)
    state: Instruction | None       # a synthetic primal value: this call's state buffer
    #                                 (None: recomputed, made in the call's reverse)
    owner: Instruction | None = None    # another: the state's owner (meminfo)


def _halves_spec(st: ReverseState, inst: Instruction, callee: Function) -> DiffSpec:
    spec = callee_spec(st.diag, inst, callee, "reverse", st.info, st.spec.strong_zero)
    spec = dataclasses.replace(spec, split=SplitSpec("", "", 0, unchanged=_unchanged(st, inst,
                                                                                    spec)))
    prepare_calls(st.module, spec)
    grads = tuple(callee.args[p.args[0]].type for p in spec.params
                  if p.activity is Activity.ACTIVE)
    leaves = (ReturnLeaf((), spec.ret_slot),) if spec.ret is Activity.ACTIVE else None
    spec = dataclasses.replace(spec, ret_type=StructType(grads), ret_leaves=leaves)

    raw = RECOMPUTED in callee.fn_attrs or not owned_states(st.module)

    def make(named: DiffSpec):
        halves = dataclasses.replace(named, split=SplitSpec(
            f"augmented_{callee.name}.{named.name.rsplit('.', 1)[1]}", named.name,
            next(_idents), raw_state=raw, reused_state=RECOMPUTED in callee.fn_attrs,
            callee=True, unchanged=named.split.unchanged))  # type: ignore[union-attr]

        def run() -> None:
            assert st.synthesize is not None
            st.synthesize(halves)
            for name in (halves.split.forward, halves.split.reverse):  # type: ignore[union-attr]
                st.module.functions[name].linkage = "internal"
        return halves, run
    return memoised(st.module, spec, make)


def _unchanged(st: ReverseState, inst: Instruction, spec: DiffSpec) -> frozenset[int] | None:
    """The callee's parameters whose memory stays as the call saw it until the call's reverse
    (None: all): not those handed argument memory the caller of a split derivative may change
    between its halves, whose reads the callee's halves then keep (`split_inputs.py`)."""
    moving = frozenset(k for k, p in enumerate(spec.params) for i in p.args
                       if inst.operands[i].type.is_pointer
                       and moving_parameter(st.spec, st.plan.changing, inst.operands[i]))
    return frozenset(range(len(spec.params))) - moving if moving else None


def augment_call(st: ReverseState, inst: Instruction, callee: Function) -> None:
    """The forward pass's call of the callee's augmented forward in place of `inst` (of
    the callee itself when its reverse recomputes it: `RECOMPUTED`)."""
    check_call(st, inst, callee)
    spec = _halves_spec(st, inst, callee)
    if RECOMPUTED in callee.fn_attrs:
        st.vmap[inst] = st.b.call(GlobalRef(callee.name or ""),
                                  [st.map(op) for op in inst.operands], I32)
        st.call_halves[inst] = _Halves(spec, None)
        return
    slot = inst.operands[0]
    st.vmap[inst], value, state = _augmented(st, spec, inst, st.map(inst.operands[1]),
                                             lambda op: st.map(op), lambda op: st.fshadow[op])
    if value is not None:
        st.b.store(value, st.map(slot))
    data = _synthetic(st, inst, st.b.extractvalue(state, (DATA,)))
    if spec.split.raw_state:        # type: ignore[union-attr]
        st.call_halves[inst] = _Halves(spec, data)
        return
    owner = st.b.extractvalue(state, (MEMINFO,))
    if st.owned is not None:        # dropped (its destructor frees the tape) on a raise
        st.owned_pushes.setdefault(inst.block, []).append(owner)  # type: ignore[arg-type]
    st.call_halves[inst] = _Halves(spec, data, _synthetic(st, inst, owner, "owner"))


def _augmented(st: ReverseState, spec: DiffSpec, inst: Instruction, excinfo: Value,
               value: Callable[[Value], Value], shadow: Callable[[Value], Value]
               ) -> tuple[Instruction, Value | None, Value]:
    """Call the augmented forward: (the call, its result or None, its state array)."""
    b = st.b
    value_type = spec.ret_slot if spec.ret_slot != PTR else None
    out_type = StructType((value_type, STATE_ARRAY)) if value_type else STATE_ARRAY
    out = st.alloca(out_type, "call.augmented")
    args: list[Value] = [out, excinfo]
    for p in spec.params:
        op = inst.operands[p.args[0]]
        args.append(value(op))
        if p.activity.has_shadow:
            args.append(shadow(op))
    call = b.call(GlobalRef(spec.split.forward), args, I32)  # type: ignore[union-attr]
    result = b.load(out_type, out)
    state = b.extractvalue(result, (1,)) if value_type else result
    return call, b.extractvalue(result, (0,)) if value_type else None, state


def _synthetic(st: ReverseState, inst: Instruction, fwd: Value,
               what: str = "state") -> Instruction:
    """A primal value standing for `fwd` (made by the forward pass at `inst`), so the reverse
    obtains it as it obtains any primal value (taped where needed)."""
    v = Instruction("call", PTR, [], f"{inst.name or 'call'}.{what}")
    v.block = inst.block
    st.vmap[v] = fwd
    return v


def emit_reverse_call(st: ReverseState, avail: Availability, ctx: BlockContext,
                      inst: Instruction, add: Callable[[Value, Value], None]) -> None:
    """The reverse of call `inst`, in the reverse of `ctx.block`."""
    b = st.b
    halves = st.call_halves[inst]
    spec = halves.spec
    out = st.alloca(spec.ret_type, "call.grads")     # type: ignore[arg-type]
    excinfo = st.zeroed_alloca(PTR, "call.excinfo")
    args: list[Value] = [out, excinfo]
    for p in spec.params:
        op = inst.operands[p.args[0]]
        args.append(avail.value(ctx, op))
        if p.activity.has_shadow:
            args.append(avail.shadow(ctx, op))
    if spec.ret is Activity.ACTIVE:
        shadow = avail.shadow(ctx, inst.operands[0])
        args.append(b.load(spec.ret_slot, shadow))  # type: ignore[arg-type]
        b.store(zero(spec.ret_slot), shadow)          # type: ignore[arg-type]
    if halves.state is None:          # recomputed: its augmented forward runs here
        _, _, array = _augmented(st, spec, inst, st.zeroed_alloca(PTR, "call.excinfo"),
                                 lambda op: avail.value(ctx, op),
                                 lambda op: avail.shadow(ctx, op))
        state = b.extractvalue(array, (DATA,))
    else:
        state = avail.value(ctx, halves.state)
        if halves.owner is not None:    # used: its destructor releases nothing
            b.store(const_int(I8, 1), state)
    null, one, zero64 = Constant(PTR, "null"), const_int(I64, 1), const_int(I64, 0)
    args += [null, null, zero64, one, state, zero64, one]
    status = b.call(GlobalRef(spec.split.reverse), args, I32)   # type: ignore[union-attr]
    st.deferred_raise().note(b, status, excinfo)       # a rule in the callee's reverse raised
    if halves.state is None:          # its buffer parked for the next iteration's
        park_shadow(b, st.module, state_slot(st.module, spec.split.forward),  # type: ignore
                    b.extractvalue(array, (MEMINFO,)), b.extractvalue(array, (NITEMS,)))
    elif halves.owner is not None:
        b.call(declare(st.module, runtime_call(Role.DECREF).name, VOID, [PTR]),
               [avail.value(ctx, halves.owner)], VOID)
    else:
        b.call(declare(st.module, runtime_call(Role.RAW_FREE).name, VOID, [PTR]), [state],
               VOID)
    grads = b.load(spec.ret_type, out)               # type: ignore[arg-type]
    active = [p for p in spec.params if p.activity is Activity.ACTIVE]
    for k, p in enumerate(active):
        add(inst.operands[p.args[0]], b.extractvalue(grads, (k,)))
