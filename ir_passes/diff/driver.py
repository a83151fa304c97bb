"""The one entry point front ends call: synthesize, drop the primal, print, verify."""
from __future__ import annotations

from ..canonicalize import verify
from ..ir.printer import print_module
from ..ir.values import Function, Module
from .forward import synthesize_forward
from .prepare import prepare_calls
from .reverse.driver import synthesize_reverse
from .spec import DiffSpec


def differentiate(module: Module, spec: DiffSpec, what: str) -> tuple[Function, str]:
    """Synthesize the derivative `spec` describes into `module`, drop the primal, and return
    the derivative with the verified module text. `what` names it in a verifier failure."""
    synthesize = synthesize_forward if spec.mode == "forward" else synthesize_reverse
    prepare_calls(module, spec)
    fn = synthesize(module, spec)
    del module.functions[spec.primal]
    text = print_module(module)
    verify(text, f"enzyme_py, differentiating {what},")
    return fn, text


__all__ = ["differentiate"]
