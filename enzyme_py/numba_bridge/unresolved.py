"""Calls Numba leaves unresolved in recursion, made direct calls again.

When type inference of a recursive function meets a signature still being compiled (e.g.
`tree(a, 0, n)` specialised on the literal 0 calls `tree(a, lo, mid)`), Numba lowers the
call as an indirect call through a global `@".numba.unresolved$SYM"` that its runtime linker
fills in later with the address of `SYM`. A capture needs the callee's body instead:
`unresolved_symbols` names those symbols, and `resolve` gives each global the function as
its constant initialiser, so canonicalisation folds the load and the call becomes direct.
"""
from __future__ import annotations

import llvmlite.binding as llvm

__all__ = ["resolve", "unresolved_symbols"]

_PREFIX = ".numba.unresolved$"


def unresolved_symbols(module: llvm.ModuleRef) -> set[str]:
    """The symbols `module` reaches only through Numba's unresolved-reference globals."""
    return {gv.name[len(_PREFIX):] for gv in module.global_variables
            if gv.name.startswith(_PREFIX) and gv.is_declaration}


def resolve(module: llvm.ModuleRef) -> llvm.ModuleRef:
    """`module` with each unresolved-reference global whose function it defines made a
    constant pointing at that function (the same module when there is none)."""
    defined = {fn.name for fn in module.functions if not fn.is_declaration}
    symbols = unresolved_symbols(module) & defined
    if not symbols:
        return module
    lines = str(module).splitlines()
    for i, line in enumerate(lines):
        for sym in symbols:
            if line.startswith(f'@"{_PREFIX}{sym}" = external global ptr'):
                lines[i] = f'@"{_PREFIX}{sym}" = internal constant ptr @"{sym}"'
    resolved = llvm.parse_assembly("\n".join(lines))
    resolved.verify()
    return resolved
