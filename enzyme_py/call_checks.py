"""What a derivative checks about its arguments before it runs, as lines of its wrapper.

A derivative trusts its arguments in ways a wrong call breaks silently: a shadow has its
primal's shape and strides; the arrays it writes (every reverse-mode shadow, the tangents of
arrays the function writes, those arrays themselves) can be written and share no memory with
any other array argument. `check_lines` decides, for one specialisation's argument types,
which checks apply: what the types decide (a shadow that is no array or has the wrong dtype, a
read-only array that would be written) raises `ArgumentError` at once, at typing time; the rest
becomes Python source lines (shapes, strides, overlaps) for the generated wrapper, which
raise `ArgumentError` (a ValueError) at call time.

Arguments are named in the source by generated identifiers only; the user's parameter names
appear only inside the messages, as string literals.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ir_passes.errors import ArgumentError


@dataclass(frozen=True)
class Buffer:
    """One array argument of the derivative: its identifier in the wrapper, how messages
    name it, and whether the derivative writes it."""
    ident: str
    label: str
    written: bool


def check_lines(mode: str, width: int, params, written: set[int],
                seeds: tuple[str, ...] = ()) -> list[str]:
    """Wrapper lines checking the arguments of one specialisation.

    `params` holds per primal parameter `(name, primal_ident, primal_type, shadow_ident,
    shadow_type)` (shadow fields None without a shadow); `written` the indices of primal
    arrays the function writes; `seeds` the expressions of the array parts of `d_ret` (the
    derivative consumes them).
    """
    layouts: list[tuple] = []                 # (label, primal ident or None, shadow, lanes)
    buffers: list[Buffer] = [Buffer(e, repr(e), True) for e in seeds]
    role = "shadow" if mode == "reverse" else "tangent"
    for i, (name, p, ptype, s, stype) in enumerate(params):
        if isinstance(ptype, types.Array):
            buffers.append(Buffer(p, f"'{name}'", i in written))
            _refuse_read_only(ptype, f"'{name}' is written by the function", i in written)
        if s is None:
            continue
        label = f"the {role} of '{name}'"
        writes = mode == "reverse" or i in written
        layouts += _shadow_layout(label, name, p, ptype, s, stype, width)
        if isinstance(stype, types.Array):
            buffers.append(Buffer(s, label, writes))
            _refuse_read_only(stype, f"{label} is written by the derivative", writes)
    return _check_call(layouts, buffers)


def _refuse_read_only(t, why: str, writes: bool) -> None:
    if writes and isinstance(t, types.Array) and not t.mutable:
        raise ArgumentError(f"{why} but is a read-only array ({t}); pass a writeable "
                            "array (e.g. np.zeros_like(...) or a copy)")


def _shadow_layout(label: str, name: str, p: str, ptype, s: str, stype, width: int):
    """Type checks of a shadow (now), and its shape/stride check for the wrapper: `[(message,
    primal identifier or None, shadow identifier, lanes)]` (`lanes` 0, or the width the
    shadow's leading extent must have)."""
    if width > 1:
        return _lane_layout(label, name, p, ptype, s, stype, width)
    if not isinstance(ptype, types.Array):          # forward mode: a float's tangent
        if types.unliteral(stype) != ptype:
            raise ArgumentError(f"{label} must be a {ptype} like '{name}', not {stype} "
                                "(e.g. 1.0, not 1)")
        return []
    if not isinstance(stype, types.Array) or stype.ndim != ptype.ndim:
        raise ArgumentError(f"{label} must be an array like '{name}' ({ptype}), not {stype}")
    _same_dtype(label, stype.dtype, ptype.dtype)
    msg = f"{label} must have the shape and strides of '{name}' (e.g. np.zeros_like({name}))"
    return [(msg, p, s, 0)]


def _lane_layout(label: str, name: str, p: str, ptype, s: str, stype, width: int):
    """Vector forward mode: a tangent is `width` lanes, each shaped like its primal."""
    if isinstance(ptype, types.Array):
        expected, ndim, dtype = (f"an array of shape (width,) + the shape of '{name}', "
                                 "with its strides", ptype.ndim + 1, ptype.dtype)
    else:
        label = f"the tangent of scalar '{name}'"
        expected, ndim, dtype = "a 1-D array of length width", 1, ptype
    msg = f"{label} must be {expected} (width={width})"
    if not (isinstance(stype, types.Array) and stype.ndim == ndim):
        raise ArgumentError(f"{msg}, not {stype}")
    _same_dtype(label, stype.dtype, dtype)
    return [(msg, p if ndim > 1 else None, s, width)]


def _same_dtype(label: str, got, expected) -> None:
    if got != expected:
        raise ArgumentError(f"{label} has dtype {got}, expected {expected}")


def _check_call(layouts: list[tuple], buffers: list[Buffer]) -> list[str]:
    """One call of `__array_checks` (index of the first failing check, or -1) and one raise
    naming it: the shape/stride check of each shadow (`layouts`), then every pair of array
    arguments of which one is written (they must share no memory). The checks are emitted as
    LLVM IR (`_array_checks`), not as Python source Numba would type and lower: one raise
    site, and no helper compiled per array count."""
    pairs = [(a, b) for i, a in enumerate(buffers) for b in buffers[i + 1:]
             if a.written or b.written]
    if not layouts and not pairs:
        return []
    idents: list[str] = []

    def slot(ident: str) -> int:
        if ident not in idents:
            idents.append(ident)
        return idents.index(ident)

    plan = (tuple((-1 if p is None else slot(p), slot(s), lanes) for _, p, s, lanes in layouts),
            tuple((slot(a.ident), slot(b.ident)) for a, b in pairs))
    messages = [msg for msg, *_ in layouts]
    for a, b in pairs:
        w = a if a.written else b
        messages.append(f"{a.label} and {b.label} overlap in memory: the derivative writes "
                        f"{w.label} and assumes no other array argument shares its memory "
                        "(pass separate arrays, e.g. a copy)")
    return [f"    __c = __array_checks({str(plan)!r}, {', '.join(idents)})",
            "    if __c >= 0:",
            f"        raise __ArgumentError(__check_message(__c, {_SEP.join(messages)!r}))"]


_SEP = "\0"


class _View:
    """The fields of one array argument the checks read, as LLVM values."""

    def __init__(self, context, builder, aryty, value):
        ary = context.make_array(aryty)(context, builder, value)
        self.shape = cgutils.unpack_tuple(builder, ary.shape, aryty.ndim)
        self.strides = cgutils.unpack_tuple(builder, ary.strides, aryty.ndim)
        self.data = builder.ptrtoint(ary.data, cgutils.intp_t)
        self.itemsize = ary.itemsize

    def extent(self, builder):
        """The address range `[lo, hi)` the array spans (`(0, 0)` for no element;
        conservative for interleaved views, which span each other's range without sharing
        an element)."""
        zero = cgutils.intp_t(0)
        lo, hi, empty = self.data, builder.add(self.data, self.itemsize), cgutils.false_bit
        for n, stride in zip(self.shape, self.strides):
            empty = builder.or_(empty, builder.icmp_signed("==", n, zero))
            span = builder.mul(builder.sub(n, cgutils.intp_t(1)), stride)
            negative = builder.icmp_signed("<", span, zero)
            lo = builder.add(lo, builder.select(negative, span, zero))
            hi = builder.add(hi, builder.select(negative, zero, span))
        return builder.select(empty, zero, lo), builder.select(empty, zero, hi)


def _layout_differs(builder, views, p: int, s: int, lanes: int):
    """Whether shadow `s` lacks `lanes` leading lanes (if any) of the shape and strides of
    primal `p` (-1: no primal array, a scalar's lanes)."""
    shadow, differs = views[s], cgutils.false_bit
    if lanes:
        differs = builder.icmp_signed("!=", shadow.shape[0], cgutils.intp_t(lanes))
    if p >= 0:
        off = 1 if lanes else 0
        for got, want in zip(shadow.shape[off:] + shadow.strides[off:],
                             views[p].shape + views[p].strides):
            differs = builder.or_(differs, builder.icmp_signed("!=", got, want))
    return differs


@intrinsic(prefer_literal=True)
def _array_checks(typingctx, plan, *arrays):
    """`_array_checks(plan, *arrays)`: the index of the first failing check of `plan` (see
    `_check_call`), or -1."""
    if len(arrays) == 1 and isinstance(arrays[0], types.StarArgTuple):
        arrays = arrays[0].types
    if not isinstance(plan, types.StringLiteral):
        return None
    layouts, pairs = ast.literal_eval(plan.literal_value)

    def codegen(context, builder, signature, llargs):
        values = cgutils.unpack_tuple(builder, llargs[1], len(arrays))
        views = [_View(context, builder, t, v) for t, v in zip(arrays, values)]
        failed = [_layout_differs(builder, views, *entry) for entry in layouts]
        extents = {k: views[k].extent(builder) for pair in pairs for k in pair}
        for a, b in pairs:
            failed.append(builder.and_(builder.icmp_signed("<", extents[a][0], extents[b][1]),
                                       builder.icmp_signed("<", extents[b][0], extents[a][1])))
        code = cgutils.intp_t(-1)
        for k in reversed(range(len(failed))):
            code = builder.select(failed[k], cgutils.intp_t(k), code)
        return code

    return types.intp(plan, types.StarArgTuple(arrays)), codegen


@intrinsic(prefer_literal=True)
def _check_message(typingctx, code, messages):
    """`_check_message(k, messages)`: the `k`-th of the `_SEP`-separated `messages`."""
    if not isinstance(messages, types.StringLiteral):
        return None
    texts = messages.literal_value.split(_SEP)

    def codegen(context, builder, signature, llargs):
        out = context.get_constant_generic(builder, types.unicode_type, texts[0])
        for k in range(1, len(texts)):
            out = builder.select(builder.icmp_signed("==", llargs[0], cgutils.intp_t(k)),
                                 context.get_constant_generic(builder, types.unicode_type,
                                                              texts[k]), out)
        return out

    return types.unicode_type(types.intp, messages), codegen


NAMESPACE = {"__ArgumentError": ArgumentError, "__array_checks": _array_checks,
             "__check_message": _check_message}
