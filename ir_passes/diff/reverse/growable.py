"""Reverse mode's shadow of growable memory (a list's storage: an owner of role
HANDLE_VARSIZE, resized by calls of role VARSIZE_REALLOC).

A resize may move the memory, but the reverse pass still needs every version of the shadow
at the addresses the augmented forward pass used (it tapes them). So the shadow is a box
`{ptr data, i64 size}` of raw buffers, and a resize keeps the old version alive: it allocates
a zeroed buffer, copies the old one into it and links the old one from a header in front of
the new data:

    version = [ptr previous data, i64 previous size | data ...]

The reverse of a resize is the reverse of that copy: the adjoints gathered in the new version
move back into the old one (which nothing has touched since the forward copy: the primal
never uses memory it resized), the new version is freed and the box points at the old one
again. The reverse of the allocation frees the first version and the box. No tape is needed:
each version knows its predecessor.
"""
from __future__ import annotations

from ...ir.builder import Builder, declare
from ...ir.types import I1, I64, PTR, VOID
from ...ir.values import FALSE, NULL, Module, Value, const_int
from ...known.generic import zero_memory
from ...known.model import Role, runtime_call

#: Bytes of a version's header (previous data pointer, previous size) and of the box.
HEADER = 16


def allocate_growable(b: Builder, module: Module, size: Value) -> Value:
    """The box of a zeroed first version of `size` bytes."""
    box = _raw_alloc(b, module, const_int(I64, HEADER))
    _set(b, box, _new_version(b, module, size, NULL, const_int(I64, 0)), size)
    return box


def growable_data(b: Builder, box: Value) -> Value:
    """The data of the current version (the shadow of the owner's data pointer)."""
    return b.load(PTR, box)


def resize_growable(b: Builder, module: Module, box: Value, size: Value) -> None:
    """A new current version of `size` bytes holding the old one's (as far as both reach)."""
    old, old_size = b.load(PTR, box), b.load(I64, _size_field(b, box))
    new = _new_version(b, module, size, old, old_size)
    _copy(b, module, new, old, _min(b, size, old_size))
    _set(b, box, new, size)


def undo_resize(b: Builder, module: Module, box: Value) -> None:
    """The reverse of the last resize: adjoints back into the previous version."""
    new, size = b.load(PTR, box), b.load(I64, _size_field(b, box))
    header = b.gep(PTR, new, [const_int(I64, -2)])
    old = b.load(PTR, header)
    old_size = b.load(I64, b.gep(I64, new, [const_int(I64, -1)]))
    _copy(b, module, old, new, _min(b, size, old_size))
    _raw_free(b, module, header)
    _set(b, box, old, old_size)


def release_growable(b: Builder, module: Module, box: Value) -> None:
    """The reverse of the allocation: free the first version and the box."""
    _raw_free(b, module, b.gep(PTR, b.load(PTR, box), [const_int(I64, -2)]))
    _raw_free(b, module, box)


def _new_version(b: Builder, module: Module, size: Value, previous: Value,
                 previous_size: Value) -> Value:
    header = _raw_alloc(b, module, b.add(size, const_int(I64, HEADER)))
    b.store(previous, header)
    b.store(previous_size, b.gep(PTR, header, [const_int(I64, 1)]))
    data = b.gep(PTR, header, [const_int(I64, 2)])
    zero_memory(b, module, data, size, FALSE)
    return data


def _set(b: Builder, box: Value, data: Value, size: Value) -> None:
    b.store(data, box)
    b.store(size, _size_field(b, box))


def _size_field(b: Builder, box: Value) -> Value:
    return b.gep(PTR, box, [const_int(I64, 1)])


def _min(b: Builder, x: Value, y: Value) -> Value:
    return b.select(b.icmp("ult", x, y), x, y)


def _copy(b: Builder, module: Module, dst: Value, src: Value, size: Value) -> None:
    memcpy = declare(module, "llvm.memcpy.p0.p0.i64", VOID, [PTR, PTR, I64, I1])
    b.call(memcpy, [dst, src, size, FALSE], VOID)


def _raw_alloc(b: Builder, module: Module, size: Value) -> Value:
    return b.call(declare(module, runtime_call(Role.RAW_ALLOC).name, PTR, [I64]), [size], PTR)


def _raw_free(b: Builder, module: Module, data: Value) -> None:
    b.call(declare(module, runtime_call(Role.RAW_FREE).name, VOID, [PTR]), [data], VOID)
