"""What the reverse pass refuses, checked on each primal instruction before anything is
emitted for it."""
from __future__ import annotations

from ...ir.values import Instruction
from ...known.blas import dot_operands, dot_type, is_dot
from ..common import (check_pointer_to_int, check_reinterpretation, check_store,
                      describe_memory)
from ...known.memory import INERT_CALLS, NRT_RAW_FREE, is_memory_intrinsic
from ..rules import lookup
from ..rules.math import math_rule_name
from .state import ReverseState


def check_forward(st: ReverseState, inst: Instruction) -> None:
    """Reject what the reverse pass cannot handle, before emitting anything for it."""
    op, info = inst.opcode, st.info
    if op == "store":
        check_store(st.diag, st.spec, st.primal, info, inst)
    elif op == "load" and inst.operands[0] in info.shadowed and inst.type.is_int:
        raise st.diag.unsupported("integer load from shadowed (float) memory", inst,
                                  "avoid reinterpreting float arrays as integers")
    elif op == "call":
        _check_call(st, inst)
    elif op == "ptrtoint":
        check_pointer_to_int(st.diag, st.primal, info, inst)
    elif op == "bitcast":
        check_reinterpretation(st.diag, info, inst)
    elif op in ("extractelement", "insertelement", "shufflevector") and inst in info.varied:
        raise st.diag.unsupported(f"'{op}' on active values in reverse mode", inst)


def _check_call(st: ReverseState, inst: Instruction) -> None:
    name = inst.callee_name or ""
    touches = any(o in st.info.shadowed or o in st.info.varied for o in inst.operands)
    if not touches or name.startswith(INERT_CALLS) or name == NRT_RAW_FREE:
        return
    if is_dot(inst):
        _check_dot(st, inst)
    elif is_memory_intrinsic(name):
        if inst.operands[0] not in st.info.shadowed:
            raise st.diag.unsupported(
                f"'{name}' copies active values into memory without a shadow "
                f"({describe_memory(st.spec, inst.operands[0])})", inst)
    elif lookup(math_rule_name(name, inst.type)) is None:
        raise st.diag.unsupported_call(inst)


def _check_dot(st: ReverseState, inst: Instruction) -> None:
    _, x, y, out = dot_operands(inst)
    if dot_type(inst) is None or out not in st.info.shadowed:
        raise st.diag.unsupported("complex or untracked BLAS dot product", inst)
    for v in (x, y):
        if not st.plan.read_only(v):
            raise st.diag.unsupported(
                f"np.dot of an array the function also writes ({describe_memory(st.spec, v)})",
                inst, "take the dot product of a copy, or write it as a loop")
