"""Which primal values a rule's partials actually read (found by a dry run, cached).

Reverse mode must make every value it reads available after the forward pass (possibly by
taping it), so it asks only for what the rule uses: `fadd` needs nothing, `exp` only its
result, `fmul` both operands, a selection rule what its arms' conditions read.
"""
from __future__ import annotations

from functools import lru_cache

from ...ir.builder import Builder
from ...ir.types import FunctionType, Type, VOID
from ...ir.values import Argument, Function, Instruction, Module, Value
from .emitter import MathEmitter
from .registry import Rule


def dry_run(arg_types: tuple[Type, ...], res_type: Type
            ) -> tuple[MathEmitter, list[Argument], Argument]:
    """An emitter into a scratch function, its operands of `arg_types` and a result."""
    scratch = Function("dry_run", FunctionType(VOID, arg_types + (res_type,)))
    *args, res = scratch.args
    return MathEmitter(Builder(scratch.add_block("entry")), Module()), args, res


@lru_cache(maxsize=None)
def rule_needs(rule: Rule, arg_types: tuple[Type, ...], res_type: Type,
               wanted: frozenset[int]) -> tuple[frozenset[int], bool]:
    """(indices of operands read, whether the result is read) by the partials in `wanted`."""
    m, args, res = dry_run(arg_types, res_type)
    work: list[Value]
    if rule.choose is not None:
        work = [arm.cond for arm in rule.choose(m, args, res) if arm.cond is not None]
    else:
        assert rule.partials is not None
        work = [p for i, p in enumerate(rule.partials(m, args, res))
                if i in wanted and p is not None]
    used: set[int] = set()
    while work:
        v = work.pop()
        if id(v) in used:
            continue
        used.add(id(v))
        if isinstance(v, Instruction):
            work.extend(v.operands)
    return frozenset(i for i, a in enumerate(args) if id(a) in used), id(res) in used
