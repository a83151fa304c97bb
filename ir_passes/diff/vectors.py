"""SIMD vector values (`<2 x double>`) in both synthesizers: the lane operations with no rule
in the registry (reinterpretations, shuffles and their transposes, summing lanes).

Arithmetic and math intrinsics on vectors use the scalar rules lane-wise (`rules.emitter`),
vector reductions their own rules (`rules.reductions`); what is refused is decided in
`default_deny`.

Undefined lanes (a vector built from `poison`, a shuffle mask lane `poison`) are given a value
before synthesis (`define_lanes`): derivative code multiplies whole vectors, and a zero
adjoint times a poison lane is poison, which would reach the other lanes' adjoints.
"""
from __future__ import annotations

import re

from ..analysis.activity import carries_float
from ..ir.builder import Builder, declare
from ..ir.types import Type, VectorType
from ..ir.values import Constant, Function, Instruction, Module, Value, const_float, zero
from .rules.emitter import intrinsic_suffix


def define_lanes(fn: Function) -> None:
    """Refine undefined lanes of float vectors in `fn` to zeros (allowed: poison may become any
    value): poison/undef vectors built on or shuffled become zeroinitializer, and undefined
    lanes of shuffle masks pick lane 0 (defined once every such operand is)."""
    for inst in fn.instructions():
        if inst.opcode not in ("insertelement", "shufflevector") or not carries_float(inst.type):
            continue
        ops = inst.operands
        for i in (0,) if inst.opcode == "insertelement" else (0, 1):
            if isinstance(ops[i], Constant) and ops[i].text in ("poison", "undef"):
                ops[i] = zero(ops[i].type)
        if inst.opcode == "shufflevector" and None in (mask := shuffle_mask(ops[2])):
            ops[2] = Constant(ops[2].type, "<" + ", ".join(
                f"i32 {0 if lane is None else lane}" for lane in mask) + ">")


def reinterprets_lanes(src: Type, dst: Type) -> bool:
    """Whether a bitcast from `src` to `dst` keeps every float lane what it was (`double` as
    `<1 x double>`): its derivative is the same bitcast of the tangent or adjoint."""
    def lanes(t: Type) -> tuple[Type, int]:
        return (t.element, t.count) if isinstance(t, VectorType) else (t, 1)
    (se, sn), (de, dn) = lanes(src), lanes(dst)
    return se.is_float and se == de and sn == dn


def sum_lanes(b: Builder, module: Module, v: Value) -> Value:
    """The sum of the lanes of float vector `v` (`llvm.vector.reduce.fadd` from -0.0)."""
    t = v.type
    assert isinstance(t, VectorType)
    fn = declare(module, f"llvm.vector.reduce.fadd.{intrinsic_suffix(t)}", t.element,
                 [t.element, t])
    return b.call(fn, [const_float(t.element, -0.0), v], t.element)


_LANE = re.compile(r"\s*i\d+\s+(-?\d+|poison|undef)\s*")


def shuffle_mask(mask: Value) -> list[int | None]:
    """The lanes a `shufflevector` mask picks (None: an undefined lane)."""
    t = mask.type
    assert isinstance(t, VectorType) and isinstance(mask, Constant), mask
    text = mask.text.strip()
    if text == "zeroinitializer":
        return [0] * t.count
    if text in ("poison", "undef"):
        return [None] * t.count
    splat = re.fullmatch(r"splat\s*\((.*)\)", text)
    if splat is not None:
        return [_lane(splat.group(1))] * t.count
    assert text.startswith("<") and text.endswith(">"), text
    return [_lane(part) for part in text[1:-1].split(",")]


def _lane(text: str) -> int | None:
    m = _LANE.fullmatch(text)
    assert m is not None, text
    return None if m.group(1) in ("poison", "undef") else int(m.group(1))


def shuffle_transpose(b: Builder, inst: Instruction, adj: Value) -> tuple[Value, Value]:
    """The adjoints of the two inputs of `shufflevector` `inst` given the adjoint of its result:
    each input lane collects the adjoints of the result lanes that picked it."""
    a = inst.operands[0]
    t = a.type
    assert isinstance(t, VectorType)
    n = t.count
    sums: list[Value | None] = [None] * (2 * n)
    for i, src in enumerate(shuffle_mask(inst.operands[2])):
        if src is None:
            continue
        lane = b.extractelement(adj, i)
        prev = sums[src]
        sums[src] = lane if prev is None else b.fadd(prev, lane)
    out = []
    for half in (sums[:n], sums[n:]):
        vec: Value = zero(t)
        for j, s in enumerate(half):
            if s is not None:
                vec = b.insertelement(vec, s, j)
        out.append(vec)
    return out[0], out[1]
