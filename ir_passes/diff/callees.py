"""Calls that stay calls: callees defined beside the primal that were not inlined.

A front end inlines its callees, except those it cannot or should not inline (recursive
functions, `noinline` ones); those stay defined in the module, in the primal's calling
convention (`i32 @g(ptr retptr, ptr excinfo, args...)`). Such a call, when handed active
values, gets the callee's own derivative, synthesized once per (callee, mode, activities) and
memoised per module, so a recursive callee's derivative calls itself.

The callee's activities follow from the caller's activity analysis: a float argument is
differentiated when it is varied, a pointer argument (an array's data, the return slot) when
it addresses shadowed memory; the return value is differentiated when the caller's return
slot for it is shadowed. Everything else is const.
"""
from __future__ import annotations

import dataclasses
import weakref
from typing import Callable, TypeVar

from ..analysis.activity import ActivityInfo, carries_float
from ..analysis.pointer_stores import PointerStores
from ..diagnostics import Diagnostics
from ..ir.types import I32, PTR, ArrayType, FloatType, Type
from ..ir.values import (Argument, Constant, Function, GlobalRef, Instruction, Module,
                         Value)
from ..known.memory import pointer_base
from ..known.model import (Role, is_local_allocation, known_call, role_of,
                           written_arguments)
from .returns import find_return_type
from .spec import Activity, DiffSpec, ParamSpec

__all__ = ["called_definition", "callee_spec", "hidden_shadows", "memoised",
           "not_inlined_callees", "written_parameters", "written_targets"]

_HINT = "rewrite the callee so that it can be inlined (no recursion, no noinline)"


def not_inlined_callees(module: Module) -> frozenset[str]:
    """The functions defined in `module` without a known-call record (a recursive primal
    calls itself)."""
    return frozenset(name for name, fn in module.functions.items()
                     if not fn.is_declaration and known_call(name) is None)


def called_definition(module: Module, inst: Instruction) -> Function | None:
    """The function defined in `module` that call `inst` calls (None: anything else)."""
    fn = module.functions.get(inst.callee_name or "")
    if fn is None or fn.is_declaration or known_call(fn.name) is not None:
        return None
    return fn


def callee_spec(diag: Diagnostics, inst: Instruction, callee: Function, mode: str,
                info: ActivityInfo, strong_zero: bool = False) -> DiffSpec:
    """The derivative of `callee` the call `inst` needs, named later by `memoised`
    (`strong_zero`: the caller's)."""
    _check_convention(diag, inst, callee)
    differentiated = Activity.ACTIVE if mode == "reverse" else Activity.DUP
    params = []
    for i in range(2, len(callee.args)):
        op = inst.operands[i]
        if op.type.is_pointer:
            act = Activity.DUP if op in info.shadowed else Activity.CONST
        elif op in info.varied and not isinstance(op.type, FloatType):
            raise diag.unsupported(f"call to @{callee.name}, which is not inlined, with an "
                                   f"active argument of type {op.type}", inst, _HINT)
        else:
            act = differentiated if op in info.varied else Activity.CONST
        params.append(ParamSpec(callee.args[i].name or f"arg{i}", act, (i,)))
    slot = _slot_type(diag, inst, callee)
    returned = inst.operands[0] in info.shadowed and carries_float(slot)
    if returned and not isinstance(slot, FloatType):
        raise diag.unsupported(f"call to @{callee.name}, which is not inlined, returning "
                               f"active values of type {slot} (only a float is supported)",
                               inst, "not supported yet: let the callee return one float, or "
                               "(if it is not recursive) drop its inline=\"never\" so that "
                               "it is inlined")
    ret = differentiated if returned else Activity.CONST
    return DiffSpec(primal=callee.name or "", name="", mode=mode, params=tuple(params),
                    ret=ret, ret_type=_result_type(slot, returned, mode), ret_slot=slot,
                    strong_zero=strong_zero)


def _slot_type(diag: Diagnostics, inst: Instruction, callee: Function) -> Type:
    """The type of the return slot the caller hands the callee (a tuple's fields are stored
    one by one, so the callee's stores do not tell it)."""
    slot = inst.operands[0]
    if isinstance(slot, Instruction) and slot.opcode == "alloca" and not slot.operands:
        return slot.source_type                     # type: ignore[return-value]
    if isinstance(slot, Constant) and find_return_type(callee, 0) == PTR:
        return PTR                                  # returns None: nothing is stored
    raise diag.unsupported(f"call to @{callee.name}, which is not inlined, with a return "
                           "slot that is not a local variable", inst, _HINT)


def _result_type(slot: Type, returned: bool, mode: str) -> Type | None:
    if mode == "forward" and returned:
        return ArrayType(2, slot)
    return slot if slot != PTR else None


def _check_convention(diag: Diagnostics, inst: Instruction, callee: Function) -> None:
    args = callee.args
    if callee.ftype.ret != I32 or len(args) < 2 or not all(a.type.is_pointer for a in args[:2]):
        raise diag.unsupported(f"call to @{callee.name}, which is not inlined and does not "
                               "use the calling convention i32 (ptr retptr, ptr excinfo, ...)",
                               inst, _HINT)


def hidden_shadows(diag: Diagnostics, fn: Function, info: ActivityInfo,
                   calls: list[Instruction], callees: frozenset[str]) -> None:
    """Refuse a call (of `calls`) handed memory that may hold an address of shadowed memory
    (stored there by the caller): the callee would reach that memory without its shadow."""
    if not calls:
        return
    stores = PointerStores(fn, callees)
    shadowed = set(info.shadowed)
    changed = True
    while changed:
        changed = False
        for inst in fn.instructions():
            changed |= stores.record(inst, shadowed)
    for inst in calls:
        held = [op for op in inst.operands if op.type.is_pointer and stores.may_hold(op)]
        if any(role_of(pointer_base(op)) in (Role.HANDLE_ALLOC, Role.HANDLE_DATA)
               for op in held):
            raise diag.unsupported(f"call to @{inst.callee_name}, which is not inlined, "
                                   "handed an array the function allocated, holding active "
                                   "values", inst, "not supported yet: pass the helper an array "
                                   "argument of the function (marked 'dup') instead of a "
                                   "temporary, or drop its inline=\"never\" so that it is "
                                   "inlined")
        if held:
            raise diag.unsupported(f"call to @{inst.callee_name}, which is not inlined, "
                                   "handed memory holding the address of an active array",
                                   inst, "pass the array itself as an argument")


_memo: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

Made = TypeVar("Made")


def memoised(module: Module, spec: DiffSpec,
             make: Callable[[DiffSpec], tuple[Made, Callable[[], None]]]) -> Made:
    """What `make` returns for the derivative `spec` describes (named here), made once per
    module and activities; `make` returns it with a thunk synthesizing the body, which runs
    after it is memoised, so a recursive callee's derivative finds itself."""
    per_module = _memo.setdefault(module, {})
    key = (spec.primal, spec.mode, tuple(p.activity for p in spec.params), spec.ret,
           spec.split.unchanged if spec.split is not None else None)
    if key in per_module:
        return per_module[key]
    prefix = "fwddiffe_" if spec.mode == "forward" else "diffe_"
    made, synthesize = make(dataclasses.replace(
        spec, name=f"{prefix}{spec.primal}.{len(per_module)}"))
    per_module[key] = made
    synthesize()
    return made


_written: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def written_parameters(module: Module) -> dict[str, frozenset[int]]:
    """Per function defined in `module`, the indices of the pointer parameters it may write
    through, itself or in the callees it hands them to (a fixpoint over the call graph). A
    write to memory of unknown origin counts as a write through every pointer parameter."""
    found = _written.get(module)
    if found is not None:
        return found
    defined = {n: f for n, f in module.functions.items() if not f.is_declaration}
    written: dict[str, set[int]] = {n: set() for n in defined}
    changed = True
    while changed:
        changed = False
        for name, fn in defined.items():
            before = len(written[name])
            for inst in fn.instructions():
                for target in written_targets(inst, written):
                    written[name] |= _parameters_behind(fn, pointer_base(target))
            changed |= len(written[name]) != before
    found = _written[module] = {n: frozenset(w) for n, w in written.items()}
    return found


def written_targets(inst: Instruction, written: dict) -> list[Value]:
    """The pointers `inst` may write through; `written`: `written_parameters` of callees."""
    if inst.opcode == "store":
        return [inst.operands[1]]
    if inst.opcode == "call" and inst.callee_name in written:
        return [inst.operands[i] for i in written[inst.callee_name]]
    return written_arguments(inst) if inst.opcode == "call" else []


def _parameters_behind(fn: Function, base: Value) -> set[int]:
    if isinstance(base, Argument):
        return {base.index}
    if isinstance(base, GlobalRef) or is_local_allocation(base) or \
            isinstance(base, Instruction) and base.opcode == "alloca":
        return set()
    return {a.index for a in fn.args if a.type.is_pointer}
