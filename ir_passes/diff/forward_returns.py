"""Forward mode: the tangent of a returned tuple or array, completed at each return.

The shadow return slot mirrors the primal's stores (see `returns.py`), so it already holds
the tangent of every float and the shadow array of every returned array that has one. Two
parts are filled in here: arrays without a shadow (they do not depend on the differentiated
inputs, or hold no floats) get a fresh zero array of their shape, and tuple elements that are
neither floats nor arrays (integers, booleans) get a zero tangent.
"""
from __future__ import annotations

from ..ir.builder import Builder, add_incoming
from ..ir.types import I32, I64, PTR, ArrayType, StructType, Type
from ..ir.values import Constant, Function, Module, Value, const_int, zero
from ..known.array_layout import DATA, ITEMSIZE, MEMINFO, NITEMS, PARENT, SHAPE, STRIDES
from .returns import ReturnSlot, aggregate_fields
from .shadows import allocate_shadow
from .spec import DiffSpec

Path = tuple[int, ...]


def complete_tangent(b: Builder, fn: Function, module: Module, spec: DiffSpec,
                     slot: ReturnSlot, value: Value, tangent: Value,
                     untracked_arrays: bool) -> Value:
    """The tangent of the return `value`; `b` is left where the derivative returns."""
    if spec.ret_leaves is None:
        return tangent
    if untracked_arrays:
        for path in spec.ret_arrays:
            tangent = _zero_if_untracked(b, fn, module, value, tangent, path)
    elements = aggregate_fields(slot.type)
    if elements and all(len(leaf.path) == 1 for leaf in slot.leaves):
        kept = {leaf.path[0] for leaf in slot.leaves} | {p[0] for p in spec.ret_arrays}
        for i, t in enumerate(elements):
            if i not in kept:
                tangent = b.insertvalue(tangent, zero(t), (i,))
    return tangent


def _zero_if_untracked(b: Builder, fn: Function, module: Module, value: Value,
                       tangent: Value, path: Path) -> Value:
    """`tangent` with the array at `path` replaced by zeros when its shadow pointer is null."""
    untracked = b.icmp("eq", _get(b, tangent, path + (DATA,)), Constant(PTR, "null"))
    before = b.block
    make, join = fn.add_block("ret.zero_tangent"), fn.add_block("ret.tangent")
    b.cbr(untracked, make, join)
    b.position_at_end(make)
    array = _get(b, value, path)
    nitems, itemsize = _get(b, array, (NITEMS,)), _get(b, array, (ITEMSIZE,))
    meminfo, data = allocate_shadow(b, module, b.mul(nitems, itemsize), const_int(I32, 32))
    array = b.insertvalue(array, meminfo, (MEMINFO,))
    array = b.insertvalue(array, Constant(PTR, "null"), (PARENT,))
    array = b.insertvalue(array, data, (DATA,))
    shape_type = _field_type(array.type, SHAPE)
    stride: Value = itemsize
    for k in reversed(range(shape_type.count)):          # C-contiguous strides
        array = b.insertvalue(array, stride, (STRIDES, k))
        stride = b.mul(stride, _get(b, array, (SHAPE, k)))
    zeroed = _set(b, tangent, path, array)
    b.br(join)
    b.position_at_end(join)
    merged = b.phi(tangent.type, "ret.tangent")
    add_incoming(merged, tangent, before)  # type: ignore[arg-type]
    add_incoming(merged, zeroed, make)
    return merged


def _field_type(t: Type, index: int) -> ArrayType:
    assert isinstance(t, StructType)
    shape = t.elements[index]
    assert isinstance(shape, ArrayType) and shape.element == I64
    return shape


def _get(b: Builder, agg: Value, path: Path) -> Value:
    return b.extractvalue(agg, path) if path else agg


def _set(b: Builder, agg: Value, path: Path, v: Value) -> Value:
    return b.insertvalue(agg, v, path) if path else v
