"""The one entry point front ends call: synthesize, drop the primal, print, verify."""
from __future__ import annotations

from ..analysis.activity import analyze_activity
from ..canonicalize import verify
from ..errors import InvalidIRError
from ..ir.printer import print_module
from ..ir.values import Function, Module
from ..known.model import call_record
from .callees import not_inlined_callees
from .forward import synthesize_forward
from .reverse.driver import synthesize_reverse
from .seeds import activity_seeds
from .spec import DiffSpec


def differentiate(module: Module, spec: DiffSpec, what: str) -> tuple[Function, str]:
    """Synthesize the derivative `spec` describes into `module`, drop the primal, and return
    the derivative with the verified module text. `what` names it in a verifier failure."""
    synthesize = synthesize_forward if spec.mode == "forward" else synthesize_reverse
    prepare_calls(module, spec)
    fn = synthesize(module, spec)
    del module.functions[spec.primal]
    text = print_module(module)
    try:
        verify(text)
    except InvalidIRError as exc:
        raise InvalidIRError(f"enzyme_py produced invalid IR for {what}; this is a bug.\n"
                             f"{exc}") from None
    return fn, text


def prepare_calls(module: Module, spec: DiffSpec) -> None:
    """Let the records of known calls rewrite the primal's calls that touch derivatives
    (`KnownCall.prepare`); the others stay as they are."""
    primal = module.functions[spec.primal]
    calls = [inst for inst in primal.instructions() if inst.opcode == "call"
             and getattr(call_record(inst), "prepare", None) is not None]
    if not calls:
        return
    info = analyze_activity(primal, *activity_seeds(primal, spec), not_inlined_callees(module))
    for inst in calls:
        if any(op in info.varied or op in info.shadowed for op in inst.operands):
            call_record(inst).prepare(module, inst)  # type: ignore[union-attr]


__all__ = ["differentiate"]
