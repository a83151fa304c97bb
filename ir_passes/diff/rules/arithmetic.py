"""Rules for LLVM's floating-point instructions, and `select` (a selection rule)."""
from __future__ import annotations

from .registry import Arm, defrule, defselect


@defrule("fadd")
def _fadd(m, args, res):
    return [m.const(res, 1.0), m.const(res, 1.0)]


@defrule("fsub")
def _fsub(m, args, res):
    return [m.const(res, 1.0), m.const(res, -1.0)]


@defrule("fneg")
def _fneg(m, args, res):
    return [m.const(res, -1.0)]


@defrule("fmul")
def _fmul(m, args, res):
    a, b = args
    return [b, a]


@defrule("fdiv")
def _fdiv(m, args, res):
    a, b = args
    inv = m.recip(b)
    return [inv, m.neg(m.mul(res, inv))]


@defrule("frem")
def _frem(m, args, res):
    # frem(a, b) = a - b * trunc(a / b): ∂a = 1, ∂b = -trunc(a / b)
    a, b = args
    return [m.const(res, 1.0), m.neg(m.call("trunc", m.div(m.sub(a, res), b)))]


@defselect("select")
def _select(m, args, res):
    c, x, y = args
    return [Arm(c, 1), Arm(None, 2)]
