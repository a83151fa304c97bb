"""The layout of an array as the pass sees it (Numba's array struct), in one place.

As a struct value: `{meminfo, parent, nitems, itemsize, data, [ndim x i64] shape,
[ndim x i64] strides}` (fields `MEMINFO` .. `STRIDES`). Exploded into function arguments
(Numba's calling convention, and the shadow arguments of derivatives): `meminfo, parent,
nitems, itemsize, data, shape[0..ndim), strides[0..ndim)`, i.e. `exploded_count(ndim)`
arguments with the data pointer at `DATA`, the extents (`shape_args`, extent k at
`shape_arg(k)`), then the byte strides (`stride_args`).
"""
from __future__ import annotations

from typing import Sequence, TypeVar

from ..ir.types import I64, PTR, Type

MEMINFO, PARENT, NITEMS, ITEMSIZE, DATA, SHAPE, STRIDES = range(7)
HEADER = SHAPE       # exploded arguments before the shape: meminfo .. data

_T = TypeVar("_T")


def exploded_count(ndim: int) -> int:
    """How many arguments an exploded `ndim`-d array takes."""
    return HEADER + 2 * ndim


def exploded_ndim(count: int) -> int | None:
    """The rank of an exploded array of `count` arguments (None: not an array's count)."""
    return (count - HEADER) // 2 if count >= HEADER and (count - HEADER) % 2 == 0 else None


def exploded_types(ndim: int) -> list[Type]:
    return [PTR, PTR, I64, I64, PTR] + [I64] * (2 * ndim)


def shape_arg(k: int) -> int:
    """Position of extent k among an exploded array's arguments."""
    return HEADER + k


def shape_args(args: Sequence[_T]) -> Sequence[_T]:
    ndim = (len(args) - HEADER) // 2
    return args[HEADER:HEADER + ndim]


def stride_args(args: Sequence[_T]) -> Sequence[_T]:
    ndim = (len(args) - HEADER) // 2
    return args[HEADER + ndim:]
