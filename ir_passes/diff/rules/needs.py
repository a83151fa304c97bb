"""Which primal values a rule's partials actually read (found by a dry run, cached).

Reverse mode must make every value it reads available after the forward pass (possibly by
taping it), so it asks only for what the rule uses: `fadd` needs nothing, `exp` only its
result, `fmul` both operands.
"""
from __future__ import annotations

from functools import lru_cache

from ...ir.builder import Builder
from ...ir.types import FunctionType, Type, VOID
from ...ir.values import Function, Instruction, Module, Value
from .emitter import MathEmitter
from .registry import Rule


@lru_cache(maxsize=None)
def rule_needs(rule: Rule, arg_types: tuple[Type, ...], res_type: Type,
               wanted: frozenset[int]) -> tuple[frozenset[int], bool]:
    """(indices of operands read, whether the result is read) by the partials in `wanted`."""
    scratch = Function("dry_run", FunctionType(VOID, arg_types + (res_type,)))
    block = scratch.add_block("entry")
    *args, res = scratch.args
    partials = rule.partials(MathEmitter(Builder(block), Module()), args, res)
    used: set[int] = set()
    work: list[Value] = [p for i, p in enumerate(partials) if i in wanted and p is not None]
    while work:
        v = work.pop()
        if id(v) in used:
            continue
        used.add(id(v))
        if isinstance(v, Instruction):
            work.extend(v.operands)
    return frozenset(i for i, a in enumerate(args) if id(a) in used), id(res) in used
