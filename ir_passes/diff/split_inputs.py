"""Argument memory the caller of a split derivative may change between its halves.

`fwd` and `rev` run in two calls, and the caller may write argument arrays in between
(API.md, "Split mode"). What the reverse half reads from such memory must be what `fwd` saw
(Enzyme caches "possibly overwritten arguments" the same way):
- an array the function never writes is copied whole into the state, and the reverse half
  reads the copy (`reverse/split_copies.py`): one memcpy of its bytes, where taping each load
  would keep an element once per read (GMM reads its data once per component);
- an array the function writes is `changing`: a load the reverse needs is kept on the tape,
  not read again (`ReversePlan.read_only`), a matrix product's operand is copied at the call
  (`KnownCall.prepare`), a callee that is not inlined keeps what it reads, and any other read
  by a call's reverse (a custom rule, np.linalg.norm) is refused.
Parameters declared `unchanged=(...)` are read again, as in reverse mode."""
from __future__ import annotations

from ..ir.values import Argument, Function, Value
from ..known.memory import pointer_bases
from .reverse.plan import written_bases
from .spec import DiffSpec


def copied_arrays(fn: Function, spec: DiffSpec) -> list[tuple[Argument, ...]]:
    """The exploded arguments of the arrays of `fn` (the primal of `spec`) the forward half
    copies: not `unchanged`, never written by the function (split mode only)."""
    split = spec.split
    written = written_bases(fn)
    if split is None or split.unchanged is None or written is None:
        return []
    return [tuple(fn.args[i] for i in p.args) for k, p in enumerate(spec.params)
            if p.is_array and k not in split.unchanged and fn.args[p.data_arg] not in written]


def changing_arguments(fn: Function, spec: DiffSpec) -> frozenset[Argument]:
    """The pointer arguments of `fn` (the primal of `spec`) whose memory may change between
    the halves and is not copied whole: none outside split mode, else all but those of
    `unchanged` parameters and `copied_arrays`."""
    split = spec.split
    if split is None or split.unchanged is None:
        return frozenset()
    kept = {i for k, p in enumerate(spec.params) if k in split.unchanged for i in p.args}
    copied = {id(a) for args in copied_arrays(fn, spec) for a in args}
    return frozenset(a for a in fn.args if a.type.is_pointer and a.index not in kept
                     and id(a) not in copied)


def moving_parameter(spec: DiffSpec, changing: frozenset[Argument], ptr: Value) -> str | None:
    """The name of the parameter whose changing memory `ptr` may address (None: none)."""
    for base in pointer_bases(ptr):
        if base in changing:
            p = spec.param_of_arg(base.index)  # type: ignore[union-attr]
            return p.name if p is not None else f"%{base.name}"
    return None


__all__ = ["changing_arguments", "copied_arrays", "moving_parameter"]
