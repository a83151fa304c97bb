"""The primal's return slot and the derivative's packed results.

Numba returns values by storing them through `retptr`; derivatives keep a local slot (and a
shadow slot) for the primal's value and, at each return, store their results (primal value,
tangent, gradients) as the fields of the derivative's own return type. The shadow slot
mirrors every store to the slot: tangents/adjoints of floats, shadow pointers of pointers,
so a returned array's shadow array can be found there (forward mode returns it as the
tangent; reverse mode seeds it from `d_ret`).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..analysis.activity import carries_float
from ..diagnostics import Diagnostics
from ..ir.builder import Builder
from ..ir.types import I1, I8, I32, PTR, ArrayType, StructType, Type
from ..ir.values import (Argument, Constant, Function, Instruction, Module, Value, const_int,
                         zero)
from ..known.array_layout import MEMINFO
from .shadows import release
from .spec import DiffSpec, ReturnLeaf



@dataclass(frozen=True)
class ReturnSlot:
    type: Type
    leaves: tuple[ReturnLeaf, ...] = ()     # the differentiated parts of the return value

    @property
    def has_value(self) -> bool:
        """False for `None` returns (Numba stores a null pointer)."""
        return self.type != PTR

    @property
    def differentiable(self) -> bool:
        return bool(self.leaves)


def return_slot(primal: Function, spec: DiffSpec) -> ReturnSlot:
    """The primal's return slot and its differentiated leaves under `spec`."""
    t = spec.ret_slot or find_return_type(primal, spec.retptr)
    if not spec.ret.is_differentiated:
        return ReturnSlot(t)
    if spec.ret_leaves is not None:
        return ReturnSlot(t, spec.ret_leaves)
    return ReturnSlot(t, (ReturnLeaf((), t),) if carries_float(t) else ())


def field_pointer(b: Builder, slot_type: Type, base: Value, path: tuple[int, ...]) -> Value:
    """Address of the part of a `slot_type` value at index `path`, in memory at `base`."""
    if not path:
        return base
    return b.gep(slot_type, base, [const_int(I32, 0)] + [const_int(I32, i) for i in path])


def release_arrays(b: Builder, module: Module, spec: DiffSpec, value: Value) -> None:
    """Drop the reference the caller owns to every array in a return value not passed on."""
    for path in spec.ret_arrays:
        release(b, module, b.extractvalue(value, path + (MEMINFO,)))


def is_exceptional_return(ret: Instruction) -> bool:
    """A `ret` of a constant nonzero status: Numba's "an exception was raised" exit."""
    status = ret.operands[0] if ret.operands else None
    return isinstance(status, Constant) and status.text != "0"


def find_return_type(primal: Function, retptr_index: int) -> Type:
    retptr = primal.args[retptr_index]
    types = {inst.operands[0].type for inst in primal.instructions()
             if inst.opcode == "store" and inst.operands[1] is retptr}
    if len(types) > 1:
        raise ValueError(f"@{primal.name} stores values of several types to its return slot")
    return types.pop() if types else PTR


Results = "Value | list[Results] | None"


def pack_results(b: Builder, retptr: Argument, ret_type: Type | None, results: Results,
                 diag: Diagnostics) -> None:
    """Store `results` (a value, or a nested list matching `ret_type`'s aggregates) to retptr."""
    if ret_type is None:
        assert results is None, "results without a return type"
        return
    b.store(_pack(b, ret_type, results, diag), retptr)


def _pack(b: Builder, t: Type, results: Results, diag: Diagnostics) -> Value:
    if results is None:
        assert t == PTR, f"no value for a return field of type {t}"
        return Constant(PTR, "null")
    if isinstance(results, list):
        assert isinstance(t, (StructType, ArrayType)), f"{len(results)} results for type {t}"
        fields = aggregate_fields(t)
        if len(fields) != len(results):
            raise diag.unsupported(f"{len(results)} results do not fit return type {t}")
        agg: Value = Constant(t, "poison")
        for i, (ft, r) in enumerate(zip(fields, results)):
            agg = b.insertvalue(agg, _pack(b, ft, r, diag), (i,))
        return agg
    fitted = _fit(b, results, t)
    if fitted is None:
        raise diag.unsupported(f"result of type {results.type} does not fit return type {t}")
    return fitted


def _fit(b: Builder, v: Value, t: Type) -> Value | None:
    """`v` as type `t` when the two differ at most in how booleans are held: `i8` in memory
    and in Numba's return slot, `i1` inside a returned tuple's value (the forward derivative
    returns `(value, tangent)` of a tuple with a boolean element). None if they differ more."""
    if v.type == t:
        return v
    if {v.type, t} == {I1, I8}:
        return b.icmp("ne", v, zero(I8)) if t == I1 else b.cast("zext", v, I8)
    fields, given = aggregate_fields(t), aggregate_fields(v.type)
    if not fields or len(fields) != len(given) or type(t) is not type(v.type):
        return None
    agg: Value = Constant(t, "poison")
    for i, ft in enumerate(fields):
        part = _fit(b, b.extractvalue(v, (i,)), ft)
        if part is None:
            return None
        agg = b.insertvalue(agg, part, (i,))
    return agg


def aggregate_fields(t: Type) -> tuple[Type, ...]:
    """The field types of a struct or array type (() for other types)."""
    if isinstance(t, StructType):
        return t.elements
    if isinstance(t, ArrayType):
        return (t.element,) * t.count
    return ()
