"""Reverse loops rescheduled after LLVM's simplification: loop nests jammed (`jam_loops`),
constant-offset accumulations retimed (`retime_accumulations`).

Both passes match the shapes LLVM's simplification leaves the reverse pass's loops in, so the
derivative's module goes through it once, and only when a cheap test on the derivative as
synthesized says one of them may apply (`may_jam`, `has_accumulation_runs`). Both keep every
addition in its order: gradients are bit-identical to those of the module as synthesized,
which is what is linked when neither changed anything.
"""
from __future__ import annotations

from .canonicalize import canonicalize, verify
from .ir.parser import parse_module
from .ir.printer import print_module
from .ir.values import Function, Module
from .jam_loops import jam_loop_nests, may_jam
from .retime_accumulations import has_accumulation_runs, retime_accumulations

__all__ = ["rescheduled"]


def rescheduled(text: str, module: Module, fn: Function) -> str:
    """`text`, the module `module` holding the reverse derivative `fn`, simplified with its
    loops rescheduled; `text` itself when no loop was."""
    jam, retime = may_jam(fn), has_accumulation_runs(module)
    if not (jam or retime):
        return text
    simplified = parse_module(canonicalize(text))
    changed = jam and jam_loop_nests(simplified.functions[fn.name or ""])
    if retime:
        for f in simplified.functions.values():
            if not f.is_declaration:
                changed = retime_accumulations(f) or changed
    if not changed:
        return text
    out = print_module(simplified)
    verify(out, f"rescheduling the reverse loops of @{fn.name}")
    return out
