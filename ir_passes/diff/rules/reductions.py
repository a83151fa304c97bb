"""Rules for LLVM's vector reductions (`llvm.vector.reduce.fadd` / `fmul` / `fmax` / `fmin` /
`fmaximum` / `fminimum`), which the loop and SLP vectorisers emit for sums, products and
extrema, and clang for `__builtin_reduce_max` / `__builtin_reduce_min`.

The vector operand's partial is the gradient of the scalar result with respect to its lanes
(registered with `reduces`, see `registry`). Ordered and reassociating sums have the same
derivative (a sum is linear whatever its order).
"""
from __future__ import annotations

from ...ir.values import FALSE, TRUE
from .registry import defrule


@defrule("llvm.vector.reduce.fadd", reduces=(1,))
def _reduce_fadd(m, args, res):
    start, vec = args     # start + Σ v_j
    return [m.const(start, 1.0), m.const(vec, 1.0)]


@defrule("llvm.vector.reduce.fmul", reduces=(1,))
def _reduce_fmul(m, args, res):
    # start · Π v_j: ∂start = Π v_j, ∂v_i = start · Π_{j≠i} v_j (prefix times suffix products,
    # exact at zeros, unlike res / v_i)
    start, vec = args
    lanes = m.lanes(vec)
    n = len(lanes)
    prefix = [start]
    for v in lanes[:-1]:
        prefix.append(m.mul(prefix[-1], v))
    suffix = [m.const(start, 1.0)]
    for v in reversed(lanes[1:]):
        suffix.append(m.mul(v, suffix[-1]))
    suffix.reverse()
    product = lanes[0]
    for v in lanes[1:]:
        product = m.mul(product, v)
    return [product, m.vector([m.mul(prefix[i], suffix[i]) for i in range(n)])]


@defrule("llvm.vector.reduce.fmax", "llvm.vector.reduce.fmin", "llvm.vector.reduce.fmaximum",
         "llvm.vector.reduce.fminimum", reduces=(0,))
def _reduce_extremum(m, args, res):
    # The result is one of the lanes: ∂ is 1 for the first lane equal to it, 0 for the others
    # (all 0 when the result is NaN).
    vec, = args
    one, zero = m.const(res, 1.0), m.const(res, 0.0)
    taken = FALSE
    partials = []
    for v in m.lanes(vec):
        picked = m.select(taken, FALSE, m.fcmp("oeq", v, res))
        partials.append(m.select(picked, one, zero))
        taken = m.select(taken, TRUE, picked)
    return [m.vector(partials)]
