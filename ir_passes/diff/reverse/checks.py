"""What the reverse pass refuses, checked on each primal instruction before anything is
emitted for it."""
from __future__ import annotations

from ...analysis.activity import carries_float
from ...ir.values import Argument, Instruction
from ...known.memory import pointer_base
from ..common import (check_pointer_to_int, check_reinterpretation, check_store,
                      describe_memory)
from ...known.model import ReadInReverse, Role, call_record
from ..held_pointers import check_aggregate_load, check_held_copy, is_held_copy
from ..rules import lookup
from ..rules.math import math_rule_name
from ..split_inputs import moving_parameter
from .calls import ReverseCallContext, emits_reverse
from .kept import hold_until_reverse, local_owner, written_after
from .state import ReverseState


def check_forward(st: ReverseState, inst: Instruction) -> None:
    """Reject what the reverse pass cannot handle, before emitting anything for it."""
    op, info = inst.opcode, st.info
    check_aggregate_load(st.diag, info, inst)
    if op == "store":
        check_store(st.diag, st.spec, st.primal, info, inst)
    elif op == "load" and inst.operands[0] in info.shadowed and not carries_float(inst.type) \
            and inst in info.varied:                # (not an integer kept on a tape)
        raise st.diag.unsupported("integer load from shadowed (float) memory", inst,
                                  "avoid reinterpreting float arrays as integers")
    elif op == "call":
        _check_call(st, inst)
    elif op == "ptrtoint":
        check_pointer_to_int(st.diag, st.primal, info, inst)
    elif op == "bitcast":
        check_reinterpretation(st.diag, info, inst)


def _check_call(st: ReverseState, inst: Instruction) -> None:
    if is_held_copy(inst, st.info):
        check_held_copy(st.diag, st.info, inst, reverse=True)
    record = call_record(inst)
    touches = any(o in st.info.shadowed or o in st.info.varied for o in inst.operands)
    if not touches or record is not None and (record.inert or record.role is Role.RAW_FREE):
        return
    if record is not None and record.reverse is not None:
        if record.check is not None:
            record.check(ReverseCallContext(st), inst)
        reads = record.reverse_reads
        _check_reverse_reads(st, inst, reads(inst) if callable(reads) else reads)
    elif lookup(math_rule_name(inst.callee_name or "", inst.type)) is None:
        raise st.diag.unsupported_call(inst)


def _check_reverse_reads(st: ReverseState, inst: Instruction,
                         reads: ReadInReverse | None) -> None:
    """The memory a reverse emitter reads must still hold the call's operands then: arguments
    the function never writes, or arrays it allocated and does not write after the call
    (kept alive until the call's reverse, `kept.py`), or arguments it does not write after the
    call."""
    if reads is None or not emits_reverse(st, inst):
        return
    for v in (inst.operands[i] for i in reads.args):
        refuse_moving_read(st, inst, v, reads.what)
        if st.plan.read_only(v):
            continue
        base = pointer_base(v)
        if isinstance(base, Argument) and not written_after(inst, [base], reads.allowed):
            continue
        owned = local_owner(v)
        if owned is None or written_after(inst, owned[1], reads.allowed):
            raise st.diag.unsupported(f"{reads.what} ({describe_memory(st.spec, v)})", inst,
                                      reads.hint)
        hold_until_reverse(st, inst, owned[0])


def refuse_moving_read(st: ReverseState, inst: Instruction, v, what: str) -> None:
    """Split mode: the reverse of call `inst` would read `v` again, argument memory the
    caller may change between the halves (`split_inputs.py`)."""
    name = moving_parameter(st.spec, st.plan.changing, v)
    if name is not None:
        raise st.diag.unsupported(
            f"{what}: its reverse reads parameter '{name}' again, which the caller may change "
            "between the split halves", inst,
            f"declare unchanged=('{name}',) if the caller does not modify '{name}' between "
            "fwd and rev, or use mode='reverse'")
