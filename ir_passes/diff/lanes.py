"""Vector forward mode's lanes: with width k, a float's tangent is `<k x T>` and a shadow
pointer `<k x ptr>`, lane j pointing into the j-th of k shadows laid out `step` bytes apart."""
from __future__ import annotations

from ..ir.builder import Builder
from ..ir.types import I8, I64, Type, VectorType
from ..ir.values import Constant, Value, const_int


def vector_of(b: Builder, elems: list[Value]) -> Value:
    vec: Value = Constant(VectorType(len(elems), elems[0].type), "poison")
    for j, e in enumerate(elems):
        vec = b.insertelement(vec, e, j)
    return vec


def lane_pointers(b: Builder, data: Value, step: Value, width: int) -> Value:
    """`<k x ptr>`: lane j points at data + j * step bytes."""
    return vector_of(b, [b.gep(I8, data, [b.mul(step, const_int(I64, j))])
                         for j in range(width)])


def lane(b: Builder, shadow: Value, j: int, width: int) -> Value:
    """The shadow pointer of lane j (the shadow itself in scalar mode)."""
    return shadow if width == 1 else b.extractelement(shadow, j)


def gather(b: Builder, t: Type, ptrs: Value, width: int) -> Value:
    """`<k x T>`: lane j loaded through lane j of `ptrs`."""
    return vector_of(b, [b.load(t, b.extractelement(ptrs, j)) for j in range(width)])
