"""Where derivatives enter a function: the arguments activity analysis starts from.

Float scalars marked active/dup are varied; the data pointer of every array with a shadow,
every pointer parameter with a shadow, and the return slot when the return value is
differentiated, address shadowed memory. The activities are checked against the parameter
types first (`activity_check`).
"""
from __future__ import annotations

from ..ir.types import Type
from ..ir.values import Argument, Function, Value
from .activity_check import check_activities, spec_param_types
from .returns import return_slot
from .spec import DiffSpec, ParamSpec


def activity_seeds(fn: Function, spec: DiffSpec) -> tuple[set[Argument], set[Argument]]:
    """(varied arguments, arguments pointing at shadowed memory) of `fn` under `spec`;
    raises `ActivityError` if an activity does not fit its parameter's type."""
    check_activities(spec_param_types(fn, spec), (p.activity for p in spec.params), spec.mode)
    varied: set[Argument] = set()
    shadowed: set[Argument] = set()
    for p in spec.params:
        if p.activity.is_differentiated and p.is_array:
            shadowed.add(fn.args[p.data_arg])
        elif p.activity.is_differentiated and is_raw_pointer(fn, p):
            shadowed.add(fn.args[p.args[0]])
        elif p.activity.is_differentiated:
            varied.add(fn.args[p.args[0]])
    if return_slot(fn, spec).differentiable:
        shadowed.add(fn.args[spec.retptr])
    return varied, shadowed


def is_raw_pointer(fn: Function, p: ParamSpec) -> bool:
    """A parameter passed as one pointer (not an exploded array): its shadow is a pointer to
    the shadow memory (a callee's pointer argument, see `callees.py`)."""
    return not p.is_array and len(p.args) == 1 and fn.args[p.args[0]].type.is_pointer


def known_element_types(fn: Function, spec: DiffSpec) -> dict[Value, Type]:
    """Element types the ABI tells us: each array parameter's dtype, at its data pointer."""
    return {fn.args[p.data_arg]: p.dtype for p in spec.params
            if p.is_array and p.dtype is not None}
