"""Forward mode of a call to a callee that was not inlined (see `callees.py`).

The callee's tangent function takes, after the return slot and excinfo, each argument
followed by its tangent (an active float) or its shadow pointer (shadowed memory); it stores
(value, tangent) of an active float result, or the value alone, into its return slot. The
call site stores them into the caller's return slot for the call and its shadow.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..ir.clone import clone_instruction
from ..ir.types import I32
from ..ir.values import Function, Instruction, Value
from .callees import callee_spec, memoised
from .prepare import prepare_calls
from .spec import Activity, DiffSpec

if TYPE_CHECKING:
    from .forward import _Forward


def touches_derivatives(fw: _Forward, inst: Instruction) -> bool:
    return any(op in fw.info.varied or op in fw.info.shadowed for op in inst.operands)


def forward_call(fw: _Forward, inst: Instruction, callee: Function,
                 derivative: "type[_Forward]") -> None:
    """Emit `inst` (a call to `callee`): the primal call when it touches no derivative, else a
    call to the callee's tangent function (`derivative` synthesizes it)."""
    b = fw.b
    if not touches_derivatives(fw, inst):
        fw.vmap[inst] = b.insert(clone_instruction(inst, fw.value, fw.blocks.__getitem__))
        return
    if fw.width > 1:
        raise fw.diag.unsupported(f"call to @{callee.name}, which is not inlined, in vector "
                                  "forward mode", inst, "use width=1")
    spec = callee_spec(fw.diag, inst, callee, "forward", fw.info, fw.spec.strong_zero)
    prepare_calls(fw.module, spec)
    tangent_fn = memoised(fw.module, spec, lambda named: _make(fw, derivative, named))
    slot = inst.operands[0]
    out = fw.entry_alloca(spec.ret_type) if spec.ret_type is not None else fw.value(slot)
    args: list[Value] = [out, fw.value(inst.operands[1])]
    for p in spec.params:
        op = inst.operands[p.args[0]]
        args.append(fw.value(op))
        if p.activity.has_shadow:
            args.append(fw.shadow_of(op, inst) if op.type.is_pointer else fw.tangent(op))
    fw.vmap[inst] = status = b.call(tangent_fn, args, I32)
    # the primal's own check of this status may have been folded away (the callee never
    # fails), but a rule inside its derivative may
    fw.deferred_raise().note(b, status, args[1])
    if spec.ret_type is None:
        return
    result = b.load(spec.ret_type, out)
    if spec.ret is Activity.DUP:
        b.store(b.extractvalue(result, (0,)), fw.value(slot))
        b.store(b.extractvalue(result, (1,)), fw.shadow_of(slot, inst))
    else:
        b.store(result, fw.value(slot))


def _make(fw: _Forward, derivative: "type[_Forward]", spec: DiffSpec):
    callee_fw = derivative(fw.module, spec)
    callee_fw.fn.linkage = "internal"
    return callee_fw.fn, lambda: fw.module.add_function(callee_fw.run())
