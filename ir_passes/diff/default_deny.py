"""Default deny by type and opcode: what neither synthesizer differentiates is refused by name
(with the instruction and its source line) before any code is emitted, never left inactive.

Refused when they touch values with derivatives or shadowed memory:
- atomic read-modify-write (`atomicrmw`, `cmpxchg`);
- values of a named struct type (`%struct.S`: the pass does not resolve its layout, so it
  cannot tell whether it holds floats);
- floats other than float and double (half, bfloat, x86_fp80, fp128: no math rules for them);
- scalable vectors (their lane count is unknown when compiling);
- SIMD vector values in vector forward mode (width > 1: a tangent would be a vector of
  vectors);
- bitcasts of floats that change what the float lanes are (`<2 x double>` as `<4 x float>`).
"""
from __future__ import annotations

from ..analysis.activity import ActivityInfo, carries_float
from ..diagnostics import Diagnostics
from ..ir.types import (ArrayType, FloatType, NamedStructType, StructType, Type, VectorType)
from ..ir.values import Function, Instruction
from .vectors import reinterprets_lanes

_ATOMICS = ("atomicrmw", "cmpxchg")
_FLOAT_KINDS = ("float", "double")


def refuse_unhandled(diag: Diagnostics, fn: Function, info: ActivityInfo, width: int = 1) -> None:
    """Raise `UnsupportedError` for the first instruction of `fn` that touches derivatives in
    a way the synthesizers have no rule for (see the module docstring)."""
    for inst in fn.instructions():
        touched = _touched_type(inst, info)
        if touched is None:
            continue
        what = _refusal(inst, touched, width)
        if what is not None:
            raise diag.unsupported(what, inst, _HINTS.get(what.split(" ")[0]))


def _touched_type(inst: Instruction, info: ActivityInfo) -> Type | None:
    """The type of the derivative-carrying value `inst` handles, if it touches one: its
    result, a stored value, a value loaded from or stored to shadowed memory."""
    if inst.opcode == "store":
        v, ptr = inst.operands
        return v.type if v in info.varied or ptr in info.shadowed else None
    if inst.opcode == "load" and inst.operands[0] in info.shadowed:
        return inst.type
    if inst.opcode in _ATOMICS:
        return inst.type if any(op in info.varied or op in info.shadowed
                                for op in inst.operands) else None
    return inst.type if inst in info.varied else None


def _refusal(inst: Instruction, t: Type, width: int) -> str | None:
    if inst.opcode in _ATOMICS:
        return f"atomic '{inst.opcode}' on memory or values with derivatives"
    if _contains(t, lambda e: isinstance(e, NamedStructType)):
        return f"named struct type {t} on memory or values with derivatives (its layout is " \
               "not resolved)"
    odd = _contains(t, lambda e: isinstance(e, FloatType) and e.kind not in _FLOAT_KINDS)
    if odd:
        return f"floating-point type {t} (only float and double are differentiated)"
    if isinstance(t, VectorType) and t.scalable and carries_float(t):
        return f"scalable vector {t} holding active values"
    if width > 1 and isinstance(t, VectorType) and carries_float(t):
        return f"SIMD vector {t} of active values in vector forward mode (width {width})"
    if inst.opcode == "bitcast" and not reinterprets_lanes(inst.operands[0].type, t):
        return f"bitcast of active floats from {inst.operands[0].type} to {t}, which changes " \
               "what the float lanes are"
    return None


_HINTS = {
    "atomic": "not supported yet: use plain loads and stores",
    "named": "not supported yet: pass and copy the struct's fields one by one",
    "floating-point": "compute in float or double",
    "scalable": "not supported yet: compile without scalable vectors (no SVE / RVV -march "
                "flags)",
    "SIMD": "not supported yet: use width=1 (or reverse mode)",
    "bitcast": "not supported yet: convert the values with arithmetic",
}


def _contains(t: Type, pred) -> bool:
    if pred(t):
        return True
    if isinstance(t, (VectorType, ArrayType)):
        return _contains(t.element, pred)
    if isinstance(t, StructType):
        return any(_contains(e, pred) for e in t.elements)
    return False
