"""Derivative rules as data, shared by forward and reverse mode.

A rule maps the primal operands (and result) of one operation to its partial derivatives
∂result/∂operand_i, emitted as IR through a `MathEmitter`. Forward mode forms
Σ ∂_i · tangent_i; reverse mode accumulates ∂_i · adjoint into each operand's adjoint. A
partial of `None` means "identically zero" (the operand is not differentiable, e.g. the
integer exponent of powi). An operation with no registered rule is an error, never a zero.

A selection rule (`defselect`: select, fabs, copysign, min/max) instead says which operand the
result is, by `Arm`s: both modes pass the chosen operand's tangent or adjoint through a
`select` (`rules/selection.py`), never a product with a 0/1 partial, so the operand not chosen
contributes nothing even when its own derivative is infinite or NaN (`0 * inf` would be NaN).

Partials have their operand's type, so vector operands get lane-wise partials. A horizontal
operation (a vector reduction to a scalar) lists in `reduces` the vector operands whose
partial is the gradient of the scalar result with respect to the lanes: forward mode sums the
lanes of ∂_i · tangent_i, reverse mode multiplies ∂_i by the adjoint splat across the lanes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ...ir.values import Value
from .emitter import MathEmitter

Partials = Callable[[MathEmitter, Sequence[Value], Value], Sequence["Value | None"]]


@dataclass(frozen=True, slots=True)
class Arm:
    """The result is `±operand` (`negate`) when `cond` holds and no earlier arm's did; the
    last arm has `cond` None (otherwise)."""
    cond: Value | None
    operand: int
    negate: bool = False


Chooser = Callable[[MathEmitter, Sequence[Value], Value], Sequence[Arm]]


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    partials: Partials | None       # None for a selection rule
    nondiff: bool = False   # every partial is zero (floor, round, sign-like ops)
    choose: Chooser | None = None   # a selection rule's arms (`defselect`)
    reduces: frozenset[int] = frozenset()   # vector operands reduced to the scalar result

    @property
    def is_selection(self) -> bool:
        return self.choose is not None


_RULES: dict[str, Rule] = {}


def defrule(*names: str, reduces: tuple[int, ...] = ()) -> Callable[[Partials], Partials]:
    """Register `partials` for one or more op names (opcode, `llvm.<intrinsic>`, libm name);
    `reduces`: the operands a vector reduction sums over (see the module docstring)."""
    def register(fn: Partials) -> Partials:
        for name in names:
            assert name not in _RULES, f"duplicate rule for {name}"
            _RULES[name] = Rule(name, fn, reduces=frozenset(reduces))
        return fn
    return register


def defselect(*names: str) -> Callable[[Chooser], Chooser]:
    """Register `choose` (the arms saying which operand the result is) for op names."""
    def register(fn: Chooser) -> Chooser:
        for name in names:
            assert name not in _RULES, f"duplicate rule for {name}"
            _RULES[name] = Rule(name, None, choose=fn)
        return fn
    return register


def defzero(*names: str) -> None:
    """Register ops whose derivative is zero almost everywhere (piecewise constant)."""
    for name in names:
        assert name not in _RULES, f"duplicate rule for {name}"
        _RULES[name] = Rule(name, lambda m, args, res: [None] * len(args), nondiff=True)


def lookup(name: str) -> Rule | None:
    return _RULES.get(name)


def all_rules() -> dict[str, Rule]:
    return dict(_RULES)
