"""The one check of activities against parameter types, shared by every front end.

A front end describes each parameter as a `ParamType` (a float passed by value, an array
passed by reference, or anything else, with its type as the user spells it): the Numba front
end from Numba types, the IR and C front ends from LLVM types, and the synthesizers from the
`DiffSpec` they are given (`spec_param_types`, the last line of defence for direct users of
`ir_passes`). `check_activities` then raises the same `ActivityError`s for all of them.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable

from ..errors import ActivityError
from ..ir.types import FloatType
from ..ir.values import Function
from .spec import Activity, DiffSpec

__all__ = ["ParamKind", "ParamType", "check_activities", "check_mode", "parse_activity",
           "spec_param_types"]

WORDS = ", ".join(a.value for a in (Activity.CONST, Activity.DUP, Activity.ACTIVE,
                                    Activity.DUPNONEED))


class ParamKind(enum.Enum):
    FLOAT = "float"        # a float scalar passed by value: active in reverse, dup in forward
    ARRAY = "array"        # an array (or pointer) of floats passed by reference: dup
    OTHER = "other"        # anything else: const only


@dataclass(frozen=True)
class ParamType:
    name: str
    kind: ParamKind
    type: str = ""         # as the user spells it ("float64", "double"); "" when unknown
    fix: str = ""          # how to make it differentiable, if the front end can tell


def parse_activity(word: str, name: str | None = None) -> Activity:
    """`word` as an `Activity`; `name` is the parameter it was given for, if any."""
    try:
        return Activity(word)
    except ValueError:
        where = f"parameter '{name}': " if name is not None else ""
        raise ActivityError(f"{where}unknown activity {word!r} (expected one of "
                            f"{WORDS})") from None


def check_mode(name: str, activity: Activity, mode: str) -> None:
    """The check that needs no type: 'active' exists only in reverse mode."""
    if activity is Activity.ACTIVE and mode == "forward":
        raise ActivityError(f"parameter '{name}': 'active' is for reverse mode; in forward "
                            "mode mark it 'dup' and pass its tangent")


def check_activities(params: Iterable[ParamType], activities: Iterable[Activity], mode: str,
                     arrays: str = "float arrays") -> None:
    """Raise `ActivityError` for the first activity its parameter's type does not allow.
    `arrays`: what the front end calls the parameters passed by reference."""
    for p, act in zip(params, activities):
        if act is Activity.CONST:
            continue
        check_mode(p.name, act, mode)
        typed = f" ({p.type})" if p.type else ""
        if p.kind is ParamKind.OTHER:
            raise ActivityError(f"parameter '{p.name}' has type {p.type or '?'}: only float "
                                f"scalars and {arrays} can be differentiated; {p.fix}mark it "
                                "'const' if it is not differentiated")
        if p.kind is ParamKind.ARRAY and act is Activity.ACTIVE:
            raise ActivityError(f"parameter '{p.name}' is an array{typed}: arrays are passed "
                                "by reference, mark it 'dup' and pass a shadow array")
        if p.kind is ParamKind.FLOAT and act.has_shadow and mode == "reverse":
            raise ActivityError(f"parameter '{p.name}' is a float passed by value{typed}: in "
                                "reverse mode mark it 'active' to get its gradient returned")


def spec_param_types(fn: Function, spec: DiffSpec) -> list[ParamType]:
    """The parameters of `spec` as `fn`'s LLVM arguments show them."""
    out = []
    for p in spec.params:
        if p.is_array:
            float_data = p.dtype is None or isinstance(p.dtype, FloatType)
            out.append(ParamType(p.name, ParamKind.ARRAY if float_data else ParamKind.OTHER,
                                 f"array of {p.dtype}" if p.dtype is not None else ""))
            continue
        types = [str(fn.args[i].type) for i in p.args]
        single = fn.args[p.args[0]].type if len(p.args) == 1 else None
        kind = ParamKind.FLOAT if isinstance(single, FloatType) else \
            ParamKind.ARRAY if single is not None and single.is_pointer else ParamKind.OTHER
        out.append(ParamType(p.name, kind, ", ".join(types)))
    return out
