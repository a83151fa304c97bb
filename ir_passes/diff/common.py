"""Small pieces both synthesizers share: fast-math flags, scaling by a partial, naming the
memory behind a pointer in diagnostics."""
from __future__ import annotations

from ..ir.builder import Builder
from ..ir.values import Argument, ConstFloat, Instruction, Value
from .memory import pointer_base
from .spec import DiffSpec

FAST_MATH_FLAGS = frozenset({"fast", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc"})


def fast_math_of(inst: Instruction) -> tuple[str, ...]:
    """The fast-math flags of a primal instruction, to put on its derivative code."""
    return tuple(f for f in inst.flags if f in FAST_MATH_FLAGS)


def scale(b: Builder, partial: Value, v: Value, width: int = 1) -> Value:
    """`partial * v`, folding partials of ±1 (v may be a width-long vector of lanes)."""
    if isinstance(partial, ConstFloat) and partial.value == 1.0:
        return v
    if isinstance(partial, ConstFloat) and partial.value == -1.0:
        return b.fneg(v)
    return b.fmul(b.splat(partial, width) if width > 1 else partial, v)


def describe_memory(spec: DiffSpec, ptr: Value) -> str:
    """What memory `ptr` addresses, in the user's terms (for error messages)."""
    base = pointer_base(ptr)
    if isinstance(base, Argument):
        p = spec.param_of_arg(base.index)
        if p is not None:
            return f"array '{p.name}' is {p.activity.value}"
    if isinstance(base, Instruction) and base.opcode == "call":
        return f"memory returned by '{base.callee_name}'"
    return "memory of unknown origin"
