"""Reverse mode of a call to a callee that was not inlined (see `../callees.py`).

The forward pass keeps the primal call. The reverse of the call runs the callee's own reverse
derivative (memoised per activities, so a recursive callee's derivative calls itself): it
takes the call's arguments again (as the reverse pass has them), the shadows of its shadowed
pointer arguments, and the adjoint of its float result (read from the shadow of the caller's
return slot for the call, then zeroed); it returns the gradients of the active float
arguments and adds the rest into the shadows. The callee is run again by its derivative, so
it must see the same memory: it may write only its return slot (and excinfo), and what it
reads through pointer arguments must not be written after the call; both are checked.
"""
from __future__ import annotations

from typing import Callable

from ...analysis.activity import ActivityInfo
from ...ir.types import I32, PTR, StructType
from ...ir.values import Argument, Function, Instruction, Value, zero
from ...known.memory import pointer_base
from ..callees import callee_spec, memoised, written_parameters, written_targets
from ..signature import build_signature
from ..spec import Activity, DiffSpec, ReturnLeaf
from .availability import Availability, BlockContext
from .kept import written_after
from .state import ReverseState

_HINT = "not supported yet: let the callee only read its array arguments and return a value"


def reverse_spec(st: ReverseState, inst: Instruction, callee: Function) -> DiffSpec:
    """The callee's reverse derivative the call needs; refuses what recomputing it breaks."""
    if st.spec.split is not None:
        raise st.diag.unsupported(f"call to @{callee.name}, which is not inlined, in split "
                                  "mode", inst, "not supported yet: use mode='reverse'")
    written = written_parameters(st.module)
    through = sorted(written.get(callee.name or "", frozenset()) - {0, 1})   # not retptr
    if through:
        raise st.diag.unsupported(f"call to @{callee.name}, which is not inlined, writes "
                                  f"memory through its argument %{callee.args[through[0]].name}"
                                  " (reverse mode runs the callee again)", inst, _HINT)
    for op in inst.operands[2:]:
        if op.type.is_pointer and not _unchanged_after(st, inst, op, written):
            raise st.diag.unsupported(f"call to @{callee.name}, which is not inlined, reads "
                                      f"memory (%{op.name}) written after the call", inst, _HINT)
    spec = callee_spec(st.diag, inst, callee, "reverse", st.info)
    grads = tuple(callee.args[p.args[0]].type for p in spec.params
                  if p.activity is Activity.ACTIVE)
    leaves = (ReturnLeaf((), spec.ret_slot),) if spec.ret is Activity.ACTIVE else None
    return DiffSpec(primal=spec.primal, name="", mode="reverse", params=spec.params,
                    ret=spec.ret, ret_type=StructType(grads), ret_slot=spec.ret_slot,
                    ret_leaves=leaves)


def _unchanged_after(st: ReverseState, inst: Instruction, ptr: Value, written: dict) -> bool:
    if st.plan.read_only(ptr):
        return True
    base = pointer_base(ptr)
    return isinstance(base, Argument) and not written_after(
        inst, [base], lambda call: written_targets(call, written))


def touches(info: ActivityInfo, inst: Instruction) -> bool:
    """Whether call `inst` is handed an active value or shadowed memory."""
    return any(op in info.varied or op in info.shadowed for op in inst.operands)


def emit_reverse_call(st: ReverseState, avail: Availability, ctx: BlockContext,
                      inst: Instruction, callee: Function,
                      add: Callable[[Value, Value], None],
                      synthesize: Callable[[DiffSpec], Function]) -> None:
    """The reverse of call `inst` to `callee`, in the reverse of `ctx.block`."""
    b = st.b
    spec = reverse_spec(st, inst, callee)
    fn = memoised(st.module, spec, lambda named: (
        build_signature(callee, named).fn, lambda: synthesize(named)))
    out = st.alloca(spec.ret_type, "call.grads")     # type: ignore[arg-type]
    args: list[Value] = [out, st.zeroed_alloca(PTR, "call.excinfo")]
    for p in spec.params:
        op = inst.operands[p.args[0]]
        args.append(avail.value(ctx, op))
        if p.activity.has_shadow:
            args.append(avail.shadow(ctx, op))
    if spec.ret is Activity.ACTIVE:
        shadow = avail.shadow(ctx, inst.operands[0])
        args.append(b.load(spec.ret_slot, shadow))  # type: ignore[arg-type]
        b.store(zero(spec.ret_slot), shadow)          # type: ignore[arg-type]
    b.call(fn, args, I32)
    grads = b.load(spec.ret_type, out)               # type: ignore[arg-type]
    active = [p for p in spec.params if p.activity is Activity.ACTIVE]
    for k, p in enumerate(active):
        add(inst.operands[p.args[0]], b.extractvalue(grads, (k,)))

