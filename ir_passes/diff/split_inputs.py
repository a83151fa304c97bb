"""Argument memory the caller of a split derivative may change between its halves.

`fwd` and `rev` run in two calls, and the caller may write argument arrays in between
(API.md, "Split mode"). What the reverse half reads from such memory must be what `fwd` saw:
a load is then kept on the tape, not read again (`ReversePlan.read_only`), a matrix product's
operand is copied at the call (`KnownCall.prepare`), and any other read by a call's reverse
(a custom rule, a callee that is not inlined) is refused. Parameters declared
`unchanged=(...)` are read again, as in reverse mode (Enzyme's "possibly overwritten
arguments", which it caches, are these)."""
from __future__ import annotations

from ..ir.values import Argument, Function, Value
from ..known.memory import pointer_bases
from .spec import DiffSpec


def changing_arguments(fn: Function, spec: DiffSpec) -> frozenset[Argument]:
    """The pointer arguments of `fn` (the primal of `spec`) whose memory may change between
    the halves: none outside split mode, else all but those of `unchanged` parameters."""
    split = spec.split
    if split is None or split.unchanged is None:
        return frozenset()
    kept = {i for k, p in enumerate(spec.params) if k in split.unchanged for i in p.args}
    return frozenset(a for a in fn.args if a.type.is_pointer and a.index not in kept)


def moving_parameter(spec: DiffSpec, changing: frozenset[Argument], ptr: Value) -> str | None:
    """The name of the parameter whose changing memory `ptr` may address (None: none)."""
    for base in pointer_bases(ptr):
        if base in changing:
            p = spec.param_of_arg(base.index)  # type: ignore[union-attr]
            return p.name if p is not None else f"%{base.name}"
    return None


__all__ = ["changing_arguments", "moving_parameter"]
