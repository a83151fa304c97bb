"""Seeding the reverse pass from `d_ret`, the adjoint of a returned tuple or array.

At the reverse entry the shadow return slot holds, for each returned array, the data pointer
of its shadow (mirrored there by the augmented forward pass; null when the array holds no
active values). A float leaf's adjoint is stored into the shadow slot; an array leaf's
`d_ret` is added into the shadow array and consumed (left zeroed), after checking that it
has the returned array's shape (a mismatch raises ValueError from the derivative).
"""
from __future__ import annotations

from typing import Callable

from ...ir.builder import Builder, counted_loop
from ...ir.types import I64, PTR, VOID, FloatType, FunctionType, IntType, Type
from ...ir.values import Argument, Constant, Function, Module, Value, const_int, zero
from ..raising import raise_exception
from ...known.array_layout import DATA, SHAPE, STRIDES, shape_args, stride_args
from ..returns import ReturnSlot, field_pointer
from ..signature import Signature
from ..spec import ReturnLeaf


def seed_return_adjoints(b: Builder, module: Module, slot: ReturnSlot, slot_ptr: Value,
                         shadow_slot: Value, sig: Signature,
                         release_tape: Callable[[Builder], None]) -> None:
    """Seed every active leaf of the return value from its `d_ret` arguments; `b` is left
    where the reverse pass continues."""
    for leaf, args in zip(slot.leaves, sig.ret_adjoints):
        if not leaf.is_array:
            b.store(args[0], field_pointer(b, slot.type, shadow_slot, leaf.path))
            continue
        _seed_array(b, module, slot, slot_ptr, shadow_slot, leaf, args, sig.excinfo,
                    release_tape)


def _seed_array(b: Builder, module: Module, slot: ReturnSlot, slot_ptr: Value,
                shadow_slot: Value, leaf: ReturnLeaf, d_ret: list[Argument],
                excinfo: Value, release_tape: Callable[[Builder], None]) -> None:
    n = leaf.ndim or 0

    def field(base: Value, *path: int) -> Value:
        return field_pointer(b, slot.type, base, leaf.path + path)

    shape = [b.load(I64, field(slot_ptr, SHAPE, k)) for k in range(n)]
    strides = [b.load(I64, field(slot_ptr, STRIDES, k)) for k in range(n)]
    shadow = b.load(PTR, field(shadow_slot, DATA))
    d_shape, d_strides = shape_args(d_ret), stride_args(d_ret)
    bad: Value = Constant(IntType(1), "false")
    for mine, theirs in zip(shape, d_shape):
        bad = b.binop("or", bad, b.icmp("ne", mine, theirs))
    fn = b.block.function  # type: ignore[union-attr]
    assert fn is not None
    error, ok = fn.add_block("d_ret.shape.error"), fn.add_block("d_ret.seeded")
    b.cbr(bad, error, ok)
    with b.at_end(error) as eb:
        release_tape(eb)
        raise_exception(eb, module, excinfo, ValueError,
                        f"{leaf.label} must have the shape of the returned array")
    b.position_at_end(ok)
    seed = _seed_function(module, leaf.type, n)
    b.call(seed, [shadow, d_ret[DATA], *shape, *strides, *d_strides], VOID)


def _seed_function(module: Module, t: Type, ndim: int) -> Function:
    """`void seed(ptr shadow, ptr d, i64 shape[n], i64 strides[n], i64 d_strides[n])`:
    shadow += d; d = 0, elementwise over the shape (strides in bytes; a null shadow only
    zeroes d)."""
    name = f"enzyme_py.seed_array.{t}.{ndim}"
    fn = module.functions.get(name)
    if fn is not None:
        return fn
    assert isinstance(t, FloatType)
    names = ["shadow", "d"] + [f"shape{k}" for k in range(ndim)] + \
        [f"stride{k}" for k in range(ndim)] + [f"d_stride{k}" for k in range(ndim)]
    fn = Function(name, FunctionType(VOID, (PTR, PTR) + (I64,) * (3 * ndim)), names,
                  linkage="internal")
    shadow_base, d_base = fn.args[:2]
    shape = fn.args[2:2 + ndim]
    strides, d_strides = fn.args[2 + ndim:2 + 2 * ndim], fn.args[2 + 2 * ndim:]
    b = Builder(fn.add_block("entry"))
    scratch = b.alloca(t, "discard")
    has_shadow = b.icmp("ne", shadow_base, Constant(PTR, "null"))
    count: Value = const_int(I64, 1)
    for extent in shape:
        count = b.mul(count, extent)

    def accumulate(b: Builder, i: Value) -> None:
        rest, offset, d_offset = i, const_int(I64, 0), const_int(I64, 0)
        for axis in reversed(range(ndim)):
            index = b.binop("urem", rest, shape[axis])
            rest = b.binop("udiv", rest, shape[axis])
            offset = b.add(offset, b.mul(index, strides[axis]))
            d_offset = b.add(d_offset, b.mul(index, d_strides[axis]))
        d_at = b.gep(IntType(8), d_base, [d_offset])
        at = b.select(has_shadow, b.gep(IntType(8), shadow_base, [offset]), scratch)
        b.store(b.fadd(b.load(t, at), b.load(t, d_at)), at)
        b.store(zero(t), d_at)

    counted_loop(b, count, accumulate)
    b.ret()
    module.add_function(fn)
    return fn
