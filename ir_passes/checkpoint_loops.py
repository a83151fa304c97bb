"""Checkpoint loops: each iteration's reverse recomputes it instead of reading a tape.

A loop qualifies when it is outermost, holds inner loops (where the tape grows), its body
reads only memory it wrote itself or never writes (`analysis.killed_reads`), and its body
can be outlined (`outline_loop_body`: one float handed on at most). The body becomes a
function whose calls' reverse recomputes it (`diff.reverse.callees.RECOMPUTED`): the
forward pass runs the primal body, the reverse runs its augmented forward then its reverse,
so the tape of one iteration lives only during that iteration's reverse. Memory the body
only reads must be left unchanged after the loop (it is re-read then): an argument or a
local array nothing writes after the loop's latch. Anything not shown keeps today's tape.
"""
from __future__ import annotations

from .analysis.cfg import find_loops
from .analysis.killed_reads import killed_reads
from .diff.reverse.callees import RECOMPUTED
from .diff.reverse.kept import written_after
from .ir.values import Argument, Function, GlobalRef, Module, Value
from .known.memory import pointer_bases
from .known.model import Role, call_record, role_of, written_arguments
from .outline_loop_body import outline_loop_body

__all__ = ["checkpoint_loops"]


def checkpoint_loops(module: Module, fn: Function) -> list[Function]:
    """Outline the bodies of `fn`'s loops worth checkpointing; the new functions."""
    made = []
    loops = find_loops(fn)
    chosen = [l for l in loops if l.parent is None and any(i.parent is l for i in loops)
              and killed_reads(fn, l).proven and _reads_kept(fn, l)]   # before any call exists
    for loop in chosen:
        result = outline_loop_body(module, fn, loop)
        if result.function is not None:
            result.function.fn_attrs = RECOMPUTED
            made.append(result.function)
    return made


def _reads_kept(fn: Function, loop) -> bool:
    """Whether memory the body reads is written neither by the body (then `killed_reads`
    speaks for it) nor by anything after the loop: each base an argument or a local array."""
    body = [i for b in fn.blocks if b in loop.blocks for i in b.instructions]
    written: set[int] = set()
    for inst in body:
        targets = [inst.operands[1]] if inst.opcode == "store" else \
            written_arguments(inst) if inst.opcode == "call" else []
        written |= {id(b) for t in targets for b in pointer_bases(t)}
    read: dict[int, Value] = {}
    for inst in body:
        record = call_record(inst) if inst.opcode == "call" else None
        pointers = [inst.operands[0]] if inst.opcode == "load" else \
            [op for op in inst.operands if op.type.is_pointer] \
            if inst.opcode == "call" and not (record is not None and record.inert) else []
        read |= {id(b): b for p in pointers for b in pointer_bases(p) if id(b) not in written}
    exit_at = loop.latches[0].terminator
    for base in read.values():
        if isinstance(base, GlobalRef):
            continue
        if role_of(base) is Role.HANDLE_DATA:
            leaf = base.operands[0]                   # type: ignore[union-attr]
        elif isinstance(base, Argument):
            leaf = base
        else:
            return False
        if written_after(exit_at, [leaf], targets=_data_written):
            return False
    return True


def _data_written(call) -> list:
    """The pointers a call may write array data through (reference counts are no data)."""
    return [] if role_of(call) in _REFERENCES else written_arguments(call)


_REFERENCES = (Role.INCREF, Role.DECREF, Role.HANDLE_DATA)
