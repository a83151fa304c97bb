"""Recursive functions of a plain (C) calling convention, given the pass's calling convention.

The pass differentiates a callee that cannot be inlined as a function of its own, in the
convention the synthesizers use (`i32 @g(ptr retptr, ptr excinfo, args...)`, see
ir_passes/diff/callees.py). `give_recursion_twins(module, root)` adds, for every function
`g` reachable from `root` that calls itself (directly or through others) and has a plain
signature (a float, integer or void result; float, integer or pointer parameters), a twin
`@g.recursive(ptr %retptr, ptr %excinfo, ...)` that calls `g` and stores its result, and
makes every call to `g` a call to the twin. Inlining `g` everywhere then leaves the twins as
the only recursive functions: the IR front end keeps them, the pass differentiates them.
"""
from __future__ import annotations

from ir_passes.ir.builder import Builder
from ir_passes.ir.types import I32, PTR, FloatType, FunctionType, IntType
from ir_passes.ir.values import Constant, Function, Instruction, Module, const_int

__all__ = ["give_recursion_twins", "recursive_functions"]


def recursive_functions(module: Module, root: str) -> list[Function]:
    """The defined functions reachable from `root` that can reach themselves."""
    def callees(fn: Function) -> set[str]:
        return {i.callee_name for i in fn.instructions() if i.opcode == "call"
                and i.callee_name in module.functions
                and not module.functions[i.callee_name].is_declaration}

    graph = {name: callees(fn) for name, fn in module.functions.items()
             if not fn.is_declaration}
    reach: dict[str, set[str]] = {}
    for name in graph:
        seen, work = set(), list(graph[name])
        while work:
            n = work.pop()
            if n not in seen:
                seen.add(n)
                work.extend(graph.get(n, ()))
        reach[name] = seen
    return [module.functions[n] for n in sorted(reach.get(root, set()) | {root})
            if n in reach and n in reach[n]]


def give_recursion_twins(module: Module, root: str) -> set[str]:
    """Give every recursive plain-convention function reachable from `root` its twin in the
    pass's convention (see the module doc); returns the twins' names."""
    twins = {g.name: _twin(module, g) for g in recursive_functions(module, root)
             if _plain(g)}
    for fn in list(module.functions.values()):
        if fn.is_declaration or fn.name in {t.name for t in twins.values()}:
            continue
        for call in [i for i in fn.instructions() if i.callee_name in twins]:
            _redirect(fn, call, twins[call.callee_name])  # type: ignore[index]
    return {t.name or "" for t in twins.values()}


def _plain(g: Function) -> bool:
    ret = g.ftype.ret
    scalar = (FloatType, IntType)
    return not g.ftype.vararg and (ret.is_void or isinstance(ret, scalar)) and all(
        isinstance(a.type, scalar) or a.type.is_pointer for a in g.args)


def _twin(module: Module, g: Function) -> Function:
    names = ["retptr", "excinfo"] + [a.name or f"arg{a.index}" for a in g.args]
    twin = Function(f"{g.name}.recursive", FunctionType(I32, (PTR, PTR, *g.ftype.params)),
                    names, linkage="internal")
    b = Builder(twin.add_block("entry"))
    result = b.call(g, twin.args[2:], g.ftype.ret)
    if not g.ftype.ret.is_void:
        b.store(result, twin.args[0])
    b.ret(const_int(I32, 0))
    return module.add_function(twin)


def _redirect(fn: Function, call: Instruction, twin: Function) -> None:
    """Replace `call` (to the twin's function) in `fn` by a call to the twin through a slot."""
    ret = call.type
    b = Builder()
    b.position_before(fn.entry.instructions[0])
    slot = b.alloca(ret if not ret.is_void else I32, f"{call.name or 'call'}.slot")
    b.position_before(call)
    b.call(twin, [slot, Constant(PTR, "null"), *call.operands], I32).metadata = call.metadata
    result = b.load(ret, slot, call.name) if not ret.is_void else None
    block = call.block
    assert block is not None
    block.instructions.remove(call)
    if result is not None:
        for inst in fn.instructions():
            inst.replace_uses(call, result)
