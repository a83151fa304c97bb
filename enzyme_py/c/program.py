"""Checks on a C module before its function is differentiated, with C `file:line` errors.

The pass inlines every callee into the function it differentiates, except recursive functions
with a plain signature (float, integer or pointer parameters; a float, integer or void
result), which are differentiated as functions of their own (`enzyme_py.recursive_calls`).
Recursion through any other function cannot be handled: `check_supported` refuses it at the
recursive call, naming its C source line, where the inliner would fail without one.

The pass gives shadows to the raw allocations of the runtime registered with it (roles
RAW_ALLOC / RAW_FREE: `NRT_Allocate` / `NRT_Free`, what Numba's temporaries use, registered by
the Numba front end this package imports), so `use_runtime_allocator` renames C's `malloc` /
`free` calls to them before differentiation and `define_runtime_allocator` defines them by
`malloc` / `free` in the derivative's module: heap memory allocated inside the function gets
a shadow.
"""
from __future__ import annotations

from ir_passes.api import Diagnostics
from ir_passes.errors import ActivityError, UnsupportedError
from ir_passes.ir.builder import Builder, declare
from ir_passes.ir.types import I64, PTR, VOID, Type
from ir_passes.ir.values import Function, GlobalRef, Instruction, Module
from ir_passes.known.model import Role, runtime_call

__all__ = ["check_supported", "define_runtime_allocator", "primal_function",
           "use_runtime_allocator"]


def _allocator() -> dict[str, tuple[str, Type, list[Type]]]:
    """C's allocator -> (the registered runtime function, its result and parameter types)."""
    return {"malloc": (runtime_call(Role.RAW_ALLOC).name, PTR, [I64]),
            "free": (runtime_call(Role.RAW_FREE).name, VOID, [PTR])}


def primal_function(module: Module, name: str) -> Function:
    """The defined function `name` of a C module, or ActivityError listing what is defined."""
    fn = module.functions.get(name)
    if fn is None or fn.is_declaration:
        defined = ", ".join(sorted(n for n, f in module.functions.items()
                                   if not f.is_declaration)) or "nothing"
        raise ActivityError(f"the C module defines no function {name!r} (it defines "
                            f"{defined}); a function must be defined in the same source file")
    return fn


def check_supported(module: Module, fn: Function) -> None:
    """UnsupportedError at the first call that closes a cycle among `fn`'s callees."""
    path: list[Function] = []
    done: set[str] = set()

    def visit(f: Function) -> None:
        path.append(f)
        for inst in f.instructions():
            callee = module.functions.get(inst.callee_name or "") if inst.opcode == "call" \
                else None
            if callee is None or callee.is_declaration or callee.name in done:
                continue
            if callee in path:
                raise _recursion(module, f, inst, path[path.index(callee):])
            visit(callee)
        path.pop()
        done.add(f.name or "")

    visit(fn)


def _recursion(module: Module, caller: Function, call: Instruction,
               cycle: list[Function]) -> UnsupportedError:
    names = " -> ".join(f"@{f.name}" for f in cycle + [cycle[0]])
    return Diagnostics(module, caller).unsupported(
        f"recursion ({names}) through a function taking or returning a struct or vector "
        "(or variadic) is not supported yet", call,
        hint="pass structs through pointers, or rewrite the recursion as a loop")


def use_runtime_allocator(module: Module) -> None:
    """Calls to `malloc` / `free` become calls to `NRT_Allocate` / `NRT_Free`."""
    allocator = _allocator()
    for fn in list(module.functions.values()):
        for inst in fn.instructions():
            renamed = allocator.get(inst.callee_name or "") if inst.opcode == "call" else None
            if renamed is not None:
                name, ret, params = renamed
                declare(module, name, ret, params)
                inst.callee = GlobalRef(name)
                inst.fn_type = None


def define_runtime_allocator(module: Module) -> None:
    """Define the `NRT_Allocate` / `NRT_Free` that `module` declares as `malloc` / `free`."""
    for libc, (name, ret, params) in _allocator().items():
        fn = module.functions.get(name)
        if fn is None or not fn.is_declaration:
            continue
        fn.linkage = "internal"
        b = Builder(fn.add_block("entry"))
        result = b.call(declare(module, libc, ret, params), list(fn.args), ret)
        b.ret(None if ret.is_void else result)
