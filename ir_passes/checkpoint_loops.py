"""Checkpoint loops: each iteration's reverse recomputes it instead of reading a tape.

A loop qualifies when it is outermost, holds inner loops, its body reads only memory it
wrote itself or never writes (`analysis.killed_reads`), its reverse would otherwise tape
values per iteration (`checkpointed_loops` asks the reverse synthesizer: a loop whose
reverse keeps nothing per iteration gains nothing and would pay for the recompute), and
its body can be outlined (`outline_loop_body`: one float handed on at most). Only the
outermost loop of a nest is checkpointed: its body's own loops are not (each of their
iterations would be recomputed once per enclosing recompute). The body becomes a function
whose calls' reverse recomputes it (`diff.reverse.callees.RECOMPUTED`): the forward pass
runs the primal body, the reverse runs its augmented forward then its reverse, so the
tape of one iteration lives only during that iteration's reverse. Memory the body only
reads must be left unchanged after the loop (it is re-read then): an argument or a local
array nothing writes after the loop's latch. Memory the body writes is written again by the
re-runs, last iteration first, so it must end as the primal left it: a local array nothing
outside the function sees, or one element per iteration of an argument array
(`out[i]`, i the loop's counter) that nothing writes after the loop. Anything not shown
keeps today's tape; `checkpointed_loops` gives the reason for each outermost loop holding
loops that tapes per iteration but does not qualify (the pipeline warns with them).
"""
from __future__ import annotations

from dataclasses import dataclass

from .analysis.cfg import Loop, find_loops
from .analysis.induction import induction_variables
from .analysis.killed_reads import confined, killed_reads
from .diff.reverse.callees import RECOMPUTED
from .diff.reverse.driver import synthesize_reverse
from .diff.reverse.kept import written_after
from .diff.reverse.retained import Retained, Retention
from .diff.spec import DiffSpec
from .errors import EnzymePyError
from .ir.values import (Argument, Function, GlobalRef, Instruction, Module, Value,
                        int_constant)
from .known.memory import pointer_bases
from .known.model import Role, call_record, role_of, written_arguments
from .outline_loop_body import outline_loop_body, outline_refusal

__all__ = ["Choice", "checkpoint_loops", "checkpointed_loops"]

# What the reverse keeps per execution of a block (a stack slot per call is no growth).
_PER_ITERATION = (Retention.TAPE, Retention.TABLE, Retention.HOIST)


@dataclass(frozen=True)
class Choice:
    """The loops to checkpoint and those whose reverse tapes values per iteration but cannot
    be checkpointed (with the reason), each as the index of its header among the primal's
    blocks."""
    chosen: tuple[int, ...]
    refused: tuple[tuple[int, str], ...]


def checkpointed_loops(module: Module, spec: DiffSpec) -> Choice:
    """The loops of `spec.primal` worth checkpointing (see module), and the outermost loops
    holding loops, taping per iteration, that do not qualify. `module` is a scratch copy:
    the reverse (without checkpointing) is synthesized into it, the primal left as it was."""
    fn = module.functions[spec.primal]
    loops = find_loops(fn)
    nests = [l for l in loops if l.parent is None and any(i.parent is l for i in loops)]
    if not nests:
        return Choice((), ())
    index = {id(b): k for k, b in enumerate(fn.blocks)}
    reasons = {index[id(l.header)]: _refusal(fn, l) for l in nests}
    taped = _taped_blocks(module, spec)
    taping = [index[id(l.header)] for l in nests
              if taped is None or any(index[id(b)] in taped for b in l.blocks)]
    return Choice(tuple(k for k in taping if not reasons[k]),
                  tuple((k, reasons[k]) for k in taping if reasons[k] and taped is not None))


def checkpoint_loops(module: Module, fn: Function, headers: tuple[int, ...]) -> list[Function]:
    """Outline the bodies of `fn`'s loops whose headers are `fn.blocks[k]` for k in
    `headers` (`checkpointed_loops`); the new functions."""
    wanted = {id(fn.blocks[k]) for k in headers}
    made = []
    for loop in [l for l in find_loops(fn) if id(l.header) in wanted]:
        result = outline_loop_body(module, fn, loop)
        if result.function is not None:
            result.function.fn_attrs = RECOMPUTED
            made.append(result.function)
    return made


def _taped_blocks(module: Module, spec: DiffSpec) -> set[int] | None:
    """The indices of the primal's blocks whose reverse, without checkpointing, reads values
    kept per execution, from synthesizing that reverse into `module`; None when it cannot be
    synthesized (then every eligible loop is checkpointed: its error, if any, is raised by
    the real synthesis)."""
    index = {id(b): k for k, b in enumerate(module.functions[spec.primal].blocks)}
    events: list[Retained] = []
    try:
        synthesize_reverse(module, spec, observe=events.append)
    except EnzymePyError:
        return None
    return {index[id(ev.carrier or ev.block)] for ev in events
            if ev.kind in _PER_ITERATION and id(ev.carrier or ev.block) in index}


def _refusal(fn: Function, loop: Loop) -> str:
    """Why `loop` cannot be checkpointed (see module); "" when it can."""
    killed = killed_reads(fn, loop)
    if not killed.proven:
        reason = next(v.reason for v in killed.verdicts if not v.proven)
        return f"an iteration may read memory an earlier one wrote ({reason})"
    if not _reads_kept(fn, loop):
        return "an iteration reads memory written after the loop, or neither an argument " \
               "nor a local array"
    if not _writes_final(fn, loop):
        return "an iteration writes memory other than a local array or out[i] (i the " \
               "loop's counter) that nothing writes after the loop"
    refused = outline_refusal(fn, loop)
    return f"its body cannot be outlined: {refused}" if refused else ""


def _reads_kept(fn: Function, loop: Loop) -> bool:
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


def _writes_final(fn: Function, loop: Loop) -> bool:
    """Whether re-running iterations in the reverse (last first) leaves memory as the primal
    left it: each write of the body goes to a local array nothing outside the function sees
    (`confined`), or to an element of an argument array indexed by the loop's counter (one
    element per iteration, stored whole: `base[c]` indexes elements of the stored type) that
    nothing writes after the loop."""
    exit_at = loop.latches[0].terminator
    counters = _counters(loop)
    in_body = lambda _, write: write.block in loop.blocks    # noqa: E731 (checked here)
    for inst in (i for b in fn.blocks if b in loop.blocks for i in b.instructions):
        if inst.opcode == "call" and role_of(inst) not in _REFERENCES:
            targets = written_arguments(inst)
        elif inst.opcode == "store":
            targets = [inst.operands[1]]
        else:
            continue
        for target in targets:
            for base in pointer_bases(target):
                if role_of(base) is Role.HANDLE_DATA and confined(base, loop):
                    continue
                if not (isinstance(base, Argument) and inst.opcode == "store"
                        and _per_iteration(target, base, counters)
                        and target.source_type == inst.operands[0].type
                        and not written_after(exit_at, [base], in_body,
                                              targets=_data_written)):
                    return False
    return True


def _counters(loop: Loop) -> list[Value]:
    """The header phis stepping by a positive constant from a constant >= 0 each iteration
    (so distinct, non-negative values: Numba's wraparound of a negative index is moot)."""
    return [phi for phi, iv in induction_variables(loop).items()
            if _at_least(iv.start, 0) and _at_least(iv.step, 1)]


def _at_least(v: Value, k: int) -> bool:
    c = int_constant(v)
    return c is not None and c >= k


def _per_iteration(ptr: Value, base: Value, counters: list[Value]) -> bool:
    """Whether `ptr` is `base[c]` (`getelementptr T, base, c`, or Numba's wraparound
    `(base + c) + fix(c)` of a non-negative c) for a counter `c`."""
    if not (isinstance(ptr, Instruction) and ptr.opcode == "getelementptr"
            and len(ptr.operands) == 2):
        return False
    inner, index = ptr.operands
    if inner is base:
        return any(index is c for c in counters)
    return (isinstance(inner, Instruction) and inner.opcode == "getelementptr"
            and len(inner.operands) == 2 and inner.operands[0] is base
            and any(inner.operands[1] is c for c in counters) and _wraparound(index, inner))


def _wraparound(fix: Value, inner: Instruction) -> bool:
    """`select (icmp slt c, 0), n, 0` of the counter c indexing `inner`: 0 for c >= 0."""
    c = inner.operands[1]
    if not (isinstance(fix, Instruction) and fix.opcode == "select"
            and int_constant(fix.operands[2]) == 0):
        return False
    cond = fix.operands[0]
    return (isinstance(cond, Instruction) and cond.opcode == "icmp"
            and cond.predicate == "slt" and cond.operands[0] is c
            and int_constant(cond.operands[1]) == 0)


def _data_written(call) -> list:
    """The pointers a call may write array data through (reference counts are no data)."""
    return [] if role_of(call) in _REFERENCES else written_arguments(call)


_REFERENCES = (Role.INCREF, Role.DECREF, Role.HANDLE_DATA)
