"""The static constructors of a C/C++ module (C++ dynamic initialisers), seen from a derivative.

clang lists them in `@llvm.global_ctors` (an appending global; `llvm.global_dtors`,
`llvm.used` and `llvm.compiler.used` are the same kind). They belong to the user's program,
never to the derivative's module: `drop_startup_lists` removes those lists from the module
the derivative is made from (otherwise the constructors are leftovers the inliner cannot put
into the function, and the lists, linked into the user's module next to its own, fail to
link or run a constructor twice).

Where the derivative is linked into the user's module (`enzyme-py clang`), its globals defer
to the user's, which the constructors set at startup. A derivative made from Python
(`enzyme_py.c.derive`) has its own copies of the globals and no startup: a global the
function reads and a constructor writes would keep its static value there, a silently wrong
result, so that case is refused naming the global and the constructor.
"""
from __future__ import annotations

import re

from ir_passes.errors import UnsupportedError
from ir_passes.ir.printer import print_function
from ir_passes.ir.values import Function, Module

__all__ = ["drop_startup_lists"]

_LISTS = ("llvm.global_ctors", "llvm.global_dtors", "llvm.used", "llvm.compiler.used")
_REF = re.compile(r'@("(?:[^"\\]|\\.)*"|[-\w.$]+)')
_KIND = re.compile(r'=[^"]*?\b(global|constant)\b')


def drop_startup_lists(module: Module, fn: Function, own_globals: bool) -> None:
    """Remove the startup lists from `module`; with `own_globals` (the derivative keeps its
    own copies of the globals), refuse a global that `fn` reads and a constructor writes."""
    constructors = _references(module.globals.get("llvm.global_ctors", ""))[1:]
    for name in _LISTS:
        module.globals.pop(name, None)
    if not own_globals or not constructors:
        return
    read = _reached_globals(module, [fn.name or ""])
    for ctor in constructors:
        shared = sorted(read & _reached_globals(module, [ctor]))
        if shared:
            raise UnsupportedError(
                f"@{fn.name} reads @{shared[0]}, which the static constructor @{ctor} (a C++ "
                "dynamic initialiser) sets; a derivative built from Python runs no "
                "constructors, so it would read the global's static value",
                function=fn.name,
                hint="initialise the global with a constant expression (constexpr), pass the "
                     "value as an argument, or build the program with `enzyme-py clang` and "
                     "call __enzyme_autodiff / __enzyme_fwddiff (its constructors run at "
                     "startup)")


def _references(text: str) -> list[str]:
    """The `@names` IR text mentions, in order (quotes removed)."""
    return [m.strip('"') for m in _REF.findall(text)]


def _reached_globals(module: Module, roots: list[str]) -> set[str]:
    """The mutable global variables the functions `roots` and the functions they reference
    (transitively, defined in `module`) mention."""
    seen, work, found = set(roots), list(roots), set()
    while work:
        fn = module.functions.get(work.pop())
        if fn is None or fn.is_declaration:
            continue
        for name in _references(print_function(fn, keep_metadata=False)):
            line = module.globals.get(name)
            if line is not None and _mutable(line):
                found.add(name)
            elif name in module.functions and name not in seen:
                seen.add(name)
                work.append(name)
    return found


def _mutable(line: str) -> bool:
    """Whether a global's definition line defines a variable (`global`, not `constant`)."""
    kind = _KIND.search(line)
    return kind is not None and kind.group(1) == "global"
