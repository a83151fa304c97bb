"""What to tell the user about a call the pass cannot differentiate: the construct in the user's
terms and a fix that works, or plainly that it is not supported yet.

`register_rule` helps only for external scalar functions (scalar operands, a float result): it
takes one scalar partial per operand. Everything else gets its own message: calls whose record
(`model.KnownCall.problem`) says why (the Numba front end registers its BLAS and LAPACK helpers,
typed containers and Python object operations), Numba-compiled functions whose IR was not
captured (the front end may describe them, see `describe_symbol`), and other external
functions.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..ir.types import FloatType, IntType
from ..ir.values import Argument, GlobalRef, Instruction, Value
from .model import KnownCall, known_call, register


@dataclass(frozen=True)
class CallProblem:
    what: str   # the construct, in the user's terms
    hint: str   # a fix that works, or "not supported yet"


def describe_symbol(symbol: str, what: str, hint: str) -> None:
    """Let a front end describe a function it knows will stay an opaque call (e.g. a Numba
    function whose IR could not be captured), for the error of an active call to it."""
    register(KnownCall(symbol, problem=CallProblem(what, hint)))


_POINTER_GLOBALS: dict[str, CallProblem] = {}


def describe_pointer_globals(prefix: str, what: str, hint: str) -> None:
    """Let a front end describe calls through function pointers loaded from the globals it
    names `prefix...` (Numba keeps a ctypes or cffi function's address in one), for the error
    of an active call; `{pointer}` in `what` becomes the pointer's name."""
    _POINTER_GLOBALS[prefix] = CallProblem(what, hint)


def _pointer_global_problem(callee: Value) -> CallProblem | None:
    """The front end's description of a function pointer loaded from one of its globals."""
    while isinstance(callee, Instruction) and callee.opcode == "bitcast":
        callee = callee.operands[0]
    if not (isinstance(callee, Instruction) and callee.opcode == "load"
            and isinstance(callee.operands[0], GlobalRef)):
        return None
    name = callee.operands[0].name or ""
    return next((p for prefix, p in _POINTER_GLOBALS.items() if name.startswith(prefix)), None)


def known_problem(name: str | None) -> CallProblem | None:
    """Why an active call to `name` can never be differentiated today, if it is known that no
    rule will come from elsewhere: the records' problems (a front end registers its library
    helpers: for Numba, BLAS/LAPACK and containers), and functions a front end described."""
    record = known_call(name)
    if record is None or record.problem is None:
        return None
    if record.prefix:        # one message for a family of functions: it names the callee
        return CallProblem(record.problem.what.format(name=name),
                           record.problem.hint.format(name=name))
    return record.problem


def call_problem(inst: Instruction) -> CallProblem:
    """Why an active call cannot be differentiated, and what to do instead."""
    if isinstance(inst.callee, (Argument, Instruction)):
        described = _pointer_global_problem(inst.callee)
        if described is not None:
            return CallProblem(described.what.format(pointer=f"%{inst.callee.name}"),
                               described.hint)
        return CallProblem(f"indirect call through the function pointer %{inst.callee.name} "
                           "with active arguments",
                           "not supported yet: call the function by its name")
    name = inst.callee_name or "<indirect call>"
    known = known_problem(name)
    if known is not None:
        return known
    python_name = demangle_numba(name)
    if python_name is not None:
        return CallProblem(
            f"call to the Numba-compiled function {python_name} ('{name}'), whose LLVM IR "
            "was not captured", "import enzyme_py before compiling that function")
    if _is_scalar_function(inst):
        return CallProblem(f"no derivative rule for the external function '{name}'",
                           f"register its partial derivatives: enzyme_py.register_rule("
                           f"{name!r}, lambda m, args, res: [...])")
    return CallProblem(f"call to '{name}' with active arguments",
                       f"not supported yet: no derivative is known for '{name}' (register_rule "
                       "only covers scalar functions); keep active values out of this call")


def _is_scalar_function(inst: Instruction) -> bool:
    """A float result from scalar operands: the functions `register_rule` can describe."""
    return isinstance(inst.type, FloatType) and bool(inst.operands) and all(
        isinstance(op.type, (FloatType, IntType)) for op in inst.operands)


_NAME_PART = re.compile(r"(\d+)")


def demangle_numba(symbol: str) -> str | None:
    """`module.qualname` of a Numba-mangled function (`_ZN8__main__6helperB2v1...`), else None."""
    if not symbol.startswith("_ZN"):
        return None
    parts, pos = [], 3
    while pos < len(symbol) and symbol[pos].isdigit():
        digits = _NAME_PART.match(symbol, pos).group(1)  # type: ignore[union-attr]
        start = pos + len(digits)
        parts.append(symbol[start:start + int(digits)])
        pos = start + int(digits)
    if len(parts) < 2:
        return None
    # Numba escapes other characters as _XX without escaping '_' itself: undo only '<', '>'.
    return ".".join(parts).replace("_3c", "<").replace("_3e", ">")
