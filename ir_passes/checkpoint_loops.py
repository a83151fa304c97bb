"""Checkpoint loops: each iteration's reverse recomputes it instead of reading a tape.

A loop qualifies when it is outermost, holds inner loops (where the tape grows), its body
reads only memory it wrote itself or never writes (`analysis.killed_reads`), and its body
can be outlined (`outline_loop_body`: one float handed on at most). The body becomes a
function whose calls' reverse recomputes it (`diff.reverse.callees.RECOMPUTED`): the
forward pass runs the primal body, the reverse runs its augmented forward then its reverse,
so the tape of one iteration lives only during that iteration's reverse. Whether memory
the body only reads is left unchanged until then is checked at the call (as for any
callee's reverse). Anything not shown keeps today's tape.
"""
from __future__ import annotations

from .analysis.cfg import find_loops
from .analysis.killed_reads import killed_reads
from .diff.reverse.callees import RECOMPUTED
from .ir.values import Function, Module
from .outline_loop_body import outline_loop_body

__all__ = ["checkpoint_loops"]


def checkpoint_loops(module: Module, fn: Function) -> list[Function]:
    """Outline the bodies of `fn`'s loops worth checkpointing; the new functions."""
    made = []
    loops = find_loops(fn)
    for loop in [l for l in loops if l.parent is None]:
        if not any(inner.parent is loop for inner in loops):
            continue
        if not killed_reads(fn, loop).proven:
            continue
        result = outline_loop_body(module, fn, loop)
        if result.function is not None:
            result.function.fn_attrs = RECOMPUTED
            made.append(result.function)
    return made
