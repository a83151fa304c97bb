"""The derivative code of a selection rule's arms, for both synthesizers.

A selection (select, fabs, copysign, min/max) is linear in the operand it picks, as JAX's
`select_n` is: forward mode selects the tangent of the chosen operand (negated on a negated
arm), reverse mode routes the adjoint into the chosen operand and a zero into the others, all
by `select`. No partial multiplies a tangent or an adjoint, so an operand that was not chosen
contributes exactly zero even when its own tangent or adjoint is infinite or NaN (fmax(sqrt(x),
1) at x = 0).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Callable, Sequence

from ...ir.builder import Builder
from ...ir.types import Type
from ...ir.values import Value
from .needs import dry_run
from .registry import Arm, Rule


@lru_cache(maxsize=None)
def droppable_operands(rule: Rule, arg_types: tuple[Type, ...], res_type: Type
                       ) -> frozenset[int]:
    """The operands of selection `rule` that some arm does not pick (both of fmax, copysign's
    sign operand, none of fabs): their adjoint may be an exact zero."""
    assert rule.choose is not None
    arms = rule.choose(*dry_run(arg_types, res_type))
    return frozenset(i for i in range(len(arg_types)) if any(a.operand != i for a in arms))


def selected_tangent(b: Builder, arms: Sequence[Arm], tangent: Callable[[int], Value | None],
                     zero: Value) -> Value:
    """The tangent of the result: the chosen operand's (`tangent(i)`; None: zero)."""
    def signed(arm: Arm) -> Value:
        t = tangent(arm.operand)
        return zero if t is None else b.fneg(t) if arm.negate else t
    return _chain(b, arms, signed)


def routed_adjoints(b: Builder, arms: Sequence[Arm], adj: Value, zero: Value,
                    wanted: Sequence[int]) -> dict[int, Value]:
    """The adjoint each operand in `wanted` receives: `±adj` where its arm is chosen, else
    `zero`."""
    negated: list[Value] = []

    def minus_adj() -> Value:          # one negation shared by every negated arm
        if not negated:
            negated.append(b.fneg(adj))
        return negated[0]
    out = {}
    for i in wanted:
        if any(arm.operand == i for arm in arms):
            out[i] = _chain(b, arms, lambda arm: zero if arm.operand != i
                            else minus_adj() if arm.negate else adj)
    return out


def _chain(b: Builder, arms: Sequence[Arm], value: Callable[[Arm], Value]) -> Value:
    """`select(c0, v0, select(c1, v1, ... v_last))`, skipping selects of equal values."""
    *guarded, last = arms
    assert last.cond is None and all(arm.cond is not None for arm in guarded), arms
    out = value(last)
    for arm in reversed(guarded):
        v = value(arm)
        if v is not out:
            out = b.select(arm.cond, v, out)     # type: ignore[arg-type]
    return out


__all__ = ["droppable_operands", "routed_adjoints", "selected_tangent"]
