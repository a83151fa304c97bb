"""Where derivatives enter a function: the arguments activity analysis starts from.

Float scalars marked active/dup are varied; the data pointer of every array with a shadow,
and the return slot when the return value is differentiated, address shadowed memory. The
checks are those that hold in both modes; mode-specific ones live in the synthesizers.
"""
from __future__ import annotations

from ..errors import ActivityError
from ..ir.types import FloatType, Type
from ..ir.values import Argument, Function, Value
from .returns import return_slot
from .spec import Activity, DiffSpec


def activity_seeds(fn: Function, spec: DiffSpec) -> tuple[set[Argument], set[Argument]]:
    """(varied arguments, arguments pointing at shadowed memory) of `fn` under `spec`."""
    varied: set[Argument] = set()
    shadowed: set[Argument] = set()
    for p in spec.params:
        if not p.activity.is_differentiated:
            continue
        if p.is_array:
            if p.activity is Activity.ACTIVE:
                raise ActivityError(f"parameter '{p.name}' is an array: mark it 'dup' "
                                    "(arrays are passed by reference)")
            shadowed.add(fn.args[p.data_arg])
            continue
        arg = fn.args[p.args[0]]
        if len(p.args) != 1 or not isinstance(arg.type, FloatType):
            raise ActivityError(f"parameter '{p.name}' is not a float: mark it 'const'")
        varied.add(arg)
    if return_slot(fn, spec).differentiable:
        shadowed.add(fn.args[spec.retptr])
    return varied, shadowed


def known_element_types(fn: Function, spec: DiffSpec) -> dict[Value, Type]:
    """Element types the ABI tells us: each array parameter's dtype, at its data pointer."""
    return {fn.args[p.data_arg]: p.dtype for p in spec.params
            if p.is_array and p.dtype is not None}
