"""Rewrites before synthesis, in the primal and in a callee that is not inlined before its own
derivative is synthesized: undefined vector lanes get a value (`vectors.define_lanes`), and
known calls are rewritten by their records (`KnownCall.prepare`). Each call is rewritten
once per module (a callee's derivatives in several activities share its rewritten body; a
rewrite keeps the call's results, so the callee's primal uses stay right)."""
from __future__ import annotations

import weakref

from ..analysis.activity import analyze_activity
from ..ir.values import Instruction, Module, Value
from ..known.model import call_record
from .callees import not_inlined_callees
from .seeds import activity_seeds, known_element_types
from .spec import DiffSpec
from .vectors import define_lanes
from .split_inputs import changing_arguments, moving_parameter

_prepared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def prepare_calls(module: Module, spec: DiffSpec) -> None:
    """Let the records of known calls rewrite the calls of `spec.primal` that touch
    derivatives under `spec`'s activities; the others stay as they are."""
    done: list[Instruction] = _prepared.setdefault(module, [])
    primal = module.functions[spec.primal]
    define_lanes(primal)
    calls = [inst for inst in primal.instructions() if inst.opcode == "call"
             and getattr(call_record(inst), "prepare", None) is not None
             and not any(inst is d for d in done)]
    if not calls:
        return
    info = analyze_activity(primal, *activity_seeds(primal, spec), not_inlined_callees(module),
                            known_element_types(primal, spec), module.named_types)
    changing = changing_arguments(primal, spec)

    def moving(ptr: Value) -> bool:
        return moving_parameter(spec, changing, ptr) is not None
    for inst in calls:
        if any(op in info.varied or op in info.shadowed for op in inst.operands):
            done.append(inst)
            call_record(inst).prepare(module, inst, moving)  # type: ignore[union-attr]
