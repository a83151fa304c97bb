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

from dataclasses import dataclass

from numba import types
from numba.extending import register_jitable

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
    lines: list[str] = []
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
        lines += _shadow_lines(label, name, p, ptype, s, stype, width)
        if isinstance(stype, types.Array):
            buffers.append(Buffer(s, label, writes))
            _refuse_read_only(stype, f"{label} is written by the derivative", writes)
    return lines + _overlap_lines(buffers)


def _refuse_read_only(t, why: str, writes: bool) -> None:
    if writes and isinstance(t, types.Array) and not t.mutable:
        raise ArgumentError(f"{why} but is a read-only array ({t}); pass a writeable "
                            "array (e.g. np.zeros_like(...) or a copy)")


def _shadow_lines(label: str, name: str, p: str, ptype, s: str, stype, width: int):
    """Type checks of a shadow (now) and its shape/stride checks (source lines)."""
    if width > 1:
        return _lane_lines(label, name, p, ptype, s, stype, width)
    if not isinstance(ptype, types.Array):          # forward mode: a float's tangent
        if types.unliteral(stype) != ptype:
            raise ArgumentError(f"{label} must be a {ptype} like '{name}', not {stype} "
                                "(e.g. 1.0, not 1)")
        return []
    if not isinstance(stype, types.Array) or stype.ndim != ptype.ndim:
        raise ArgumentError(f"{label} must be an array like '{name}' ({ptype}), not {stype}")
    _same_dtype(label, stype.dtype, ptype.dtype)
    msg = f"{label} must have the shape and strides of '{name}' (e.g. np.zeros_like({name}))"
    return [f"    if {p}.shape != {s}.shape or {p}.strides != {s}.strides:",
            f"        raise __ArgumentError({msg!r})"]


def _lane_lines(label: str, name: str, p: str, ptype, s: str, stype, width: int):
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
    cond = f"{s}.shape[0] != {width}"
    if ndim > 1:
        cond += f" or {s}.shape[1:] != {p}.shape or {s}.strides[1:] != {p}.strides"
    return [f"    if {cond}:", f"        raise __ArgumentError({msg!r})"]


def _same_dtype(label: str, got, expected) -> None:
    if got != expected:
        raise ArgumentError(f"{label} has dtype {got}, expected {expected}")


def _overlap_lines(buffers: list[Buffer]) -> list[str]:
    """Every pair of array arguments of which one is written must not share memory: each
    array's address range is computed once (`_extent`, compiled once per ndim), then
    `_first_overlap` finds the first pair that intersects, and one `raise` names it (one
    raise site, not one per pair: each costs Numba the release of every live array)."""
    pairs = [(a, b) for i, a in enumerate(buffers) for b in buffers[i + 1:]
             if a.written or b.written]
    if not pairs:
        return []
    used = [x for x in buffers if any(x is a or x is b for a, b in pairs)]
    index = {id(x): k for k, x in enumerate(used)}
    lines = [f"    __e{k} = __extent({x.ident}.ctypes.data, {x.ident}.itemsize, "
             f"{x.ident}.shape, {x.ident}.strides)" for k, x in enumerate(used)]
    messages = []
    for a, b in pairs:
        w = a if a.written else b
        messages.append(f"{a.label} and {b.label} overlap in memory: the derivative writes "
                        f"{w.label} and assumes no other array argument shares its memory "
                        "(pass separate arrays, e.g. a copy)")
    extents = "".join(f"__e{k}, " for k in range(len(used)))
    listed = "".join(f"({index[id(a)]}, {index[id(b)]}), " for a, b in pairs)
    return lines + [f"    __k = __first_overlap(({extents}), ({listed}))",
                    "    if __k >= 0:",
                    f"        raise __ArgumentError(({''.join(f'{m!r}, ' for m in messages)})"
                    "[__k])"]


@register_jitable
def _first_overlap(extents, pairs):
    """The index of the first pair `(a, b)` of `pairs` whose address ranges in `extents`
    intersect, or -1."""
    for k in range(len(pairs)):
        a, b = pairs[k]
        if extents[a][0] < extents[b][1] and extents[b][0] < extents[a][1]:
            return k
    return -1


@register_jitable
def _extent(data, itemsize, shape, strides):
    """The address range `[lo, hi)` an array spans (empty, `(0, 0)`, for no element;
    conservative for interleaved views, which span each other's range without sharing an
    element)."""
    lo = data
    hi = lo + itemsize
    for k in range(len(shape)):
        if shape[k] == 0:
            return 0, 0
        span = (shape[k] - 1) * strides[k]
        if span < 0:
            lo += span
        else:
            hi += span
    return lo, hi


NAMESPACE = {"__ArgumentError": ArgumentError, "__extent": _extent,
             "__first_overlap": _first_overlap}
