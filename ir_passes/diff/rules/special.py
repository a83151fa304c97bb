"""Support functions derivative rules need but no math library provides.

`digamma(m, x)` emits a call to ψ(x) = Γ'(x)/Γ(x) (the derivative of lgamma; Γ' = Γ·ψ). The
function `enzyme_py.digamma.f64` / `.f32` is built with our `Builder` into the rule's output
module, with internal linkage, the first time a rule asks for it at that float type; later
calls reuse it. Consumes a `MathEmitter` (its builder and module); produces one call.

The algorithm, for any non-pole x:
  x < 0:   reflection ψ(x) = ψ(1 - x) - π / tan(π x)
  x < 6:   recurrence ψ(x) = ψ(x + 1) - 1/x (at most 6 steps)
  x >= 6:  asymptotic ψ(x) = ln x - 1/(2x) - Σ_{k=1..8} B_2k / (2k x^2k)
The first omitted term is below 4e-14·ψ(6), so float64 results are within ~1e-13 relative
(except near ψ's root x₀ ≈ 1.4616, where only the absolute error is that small).
"""
from __future__ import annotations

import math

from ...ir.builder import Builder, add_incoming
from ...ir.types import FunctionType, Type, VectorType
from ...ir.values import Function, Module, Value
from .emitter import MathEmitter, intrinsic_suffix

# Below this the recurrence shifts x up; from here on the asymptotic series is accurate.
_ASYMPTOTIC_FROM = 6.0
# B_2k / (2k) for k = 1..8 (Bernoulli numbers 1/6, -1/30, 1/42, -1/30, 5/66, -691/2730, 7/6,
# -3617/510).
_SERIES = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12, -3617 / 8160)


def digamma_symbol(t: Type) -> str:
    return f"enzyme_py.digamma.{intrinsic_suffix(t)}"


def digamma(m: MathEmitter, x: Value) -> Value:
    """Call ψ(x), defining the support function in `m.module` on first use (once per lane
    of a vector `x`)."""
    if isinstance(x.type, VectorType):
        return m.lanewise(lambda lane: digamma(m, lane), x)
    fn = define_digamma(m.module, x.type)
    return m.helper(fn.name or "", x.type, x)


def define_digamma(module: Module, t: Type) -> Function:
    """The ψ function for float type `t` in `module` (built once, internal linkage)."""
    name = digamma_symbol(t)
    existing = module.functions.get(name)
    if existing is not None and not existing.is_declaration:
        return existing
    fn = Function(name, FunctionType(t, (t,)), ["x"], linkage="internal")
    module.functions[name] = fn     # replaces a declaration left by an earlier `helper` call
    x = fn.args[0]
    entry, reflect, loop, step, series = (fn.add_block(n) for n in (
        "entry", "reflect", "recurrence", "step", "asymptotic"))
    m = MathEmitter(Builder(entry), module)
    b = m.b
    b.cbr(m.fcmp("olt", x, m.const(x, 0.0)), reflect, loop)

    # ψ(x) = ψ(1 - x) - π/tan(πx). tan(πx) has period 1, so take it at the exact remainder
    # r = x - round(x) ∈ [-1/2, 1/2] rather than at π·x, which loses digits for large |x|.
    b.position_at_end(reflect)
    r = m.sub(x, m.call("round", x))
    cot = m.div(m.const(x, math.pi), m.call("tan", m.mul(m.const(x, math.pi), r)))
    reflected = m.sub(m.const(x, 1.0), x)
    start_acc = m.neg(cot)
    b.br(loop)

    # z runs x, x+1, ... while acc collects -1/x - 1/(x+1) - ... (plus the reflection term).
    # A NaN z fails `z < 6` and falls through to the series, so the loop always ends.
    b.position_at_end(loop)
    z = b.phi(t, "z")
    acc = b.phi(t, "acc")
    b.cbr(m.fcmp("olt", z, m.const(x, _ASYMPTOTIC_FROM)), step, series)

    b.position_at_end(step)
    next_acc = m.sub(acc, m.recip(z))
    next_z = m.add(z, m.const(x, 1.0))
    b.br(loop)
    for value, block in ((x, entry), (reflected, reflect), (next_z, step)):
        add_incoming(z, value, block)
    for value, block in ((m.const(x, 0.0), entry), (start_acc, reflect), (next_acc, step)):
        add_incoming(acc, value, block)

    # ln z - 1/(2z) - w·(c1 + w·(c2 + ... + w·c8)),  w = 1/z²
    b.position_at_end(series)
    w = m.recip(m.square(z))
    poly: Value = m.const(x, _SERIES[-1])
    for c in reversed(_SERIES[:-1]):
        poly = m.add(m.mul(poly, w), m.const(x, c))
    tail = m.add(m.div(m.const(x, 0.5), z), m.mul(w, poly))
    b.ret(m.add(acc, m.sub(m.call("log", z), tail)))
    return fn


__all__ = ["define_digamma", "digamma", "digamma_symbol"]
