"""Functions with user rules (`enzyme_py.register_derivative`, `enzyme_py.inactive`) as known
calls of the pass.

Each compiled signature of a registered `@njit` function is called by its own symbol; once the
primal is compiled (its callees with it), `opaque_symbols` gives every such symbol a
`KnownCall` record and returns them, so the capture keeps calls to them instead of inlining
their bodies. A registered derivative's record calls the user's rules (`custom_emit`); the
libraries of the rules it compiled are linked into the derivative (`rule_libraries`). An
inactive function's record has no derivative: its result is a constant, and it must not write
memory that carries derivatives.
"""
from __future__ import annotations

from dataclasses import dataclass

from numba.core.dispatcher import Dispatcher

from ir_passes.ir.values import Instruction
from ir_passes.known.array_layout import DATA
from ir_passes.known.model import CallContext, Flow, KnownCall, ReadInReverse, register

from .custom_emit import CustomCall, call_params

_WRITING = (b"readonly", b"readnone")       # pointer attributes of arguments never written


@dataclass(frozen=True)
class Rules:
    function: Dispatcher
    forward: Dispatcher | None = None
    reverse: Dispatcher | None = None
    inactive: bool = False


_RULES: dict[Dispatcher, Rules] = {}
_SYMBOLS: set[str] = set()
_LIBRARIES: dict = {}           # rule symbol -> the rule's code library


def add_rules(rules: Rules) -> None:
    """Register the rules of a function (once: a second registration raises ValueError)."""
    if rules.function in _RULES:
        kind = "declared inactive" if _RULES[rules.function].inactive else \
            "given a derivative"
        raise ValueError(f"{rules.function.py_func.__qualname__} is already {kind}")
    _RULES[rules.function] = rules


def registered_rules(function: Dispatcher) -> Rules | None:
    """The rules registered for `function`, if any."""
    return _RULES.get(function)


def opaque_symbols() -> set[str]:
    """The symbols of every compiled signature of the functions with rules, each with its
    record (made on first sight)."""
    for rules in list(_RULES.values()):
        for cres in list(rules.function.overloads.values()):
            symbol = cres.fndesc.llvm_func_name
            if symbol not in _SYMBOLS:
                register(_record(rules, symbol, cres))
                _SYMBOLS.add(symbol)
    return set(_SYMBOLS)


def register_library(symbol: str, library) -> None:
    """Link `library`, which defines `symbol`, into every derivative calling `symbol`."""
    _LIBRARIES[symbol] = library


def rule_libraries(module_text: str) -> tuple:
    """The code libraries of the rules `module_text` calls (to link with the derivative)."""
    return tuple(lib for symbol, lib in _LIBRARIES.items() if f"@{symbol}(" in module_text
                 or f'@"{symbol}"(' in module_text)


def _record(rules: Rules, symbol: str, cres) -> KnownCall:
    params = call_params(cres.fndesc.args, cres.fndesc.argtypes, cres.fndesc.restype)
    written = _written_arrays(cres.library, symbol, params)
    if rules.inactive:
        return KnownCall(symbol, pointer_neutral=True,
                         writes=(0, *(p.positions[DATA] for p in written)),
                         check=_InactiveCheck(rules.function, tuple(written)),
                         forward=_no_derivative, reverse=_no_derivative)
    call = CustomCall(rules.function, rules.forward, rules.reverse, params,
                      cres.fndesc.restype, _LIBRARIES, tuple(written))
    arrays = tuple(p.positions[DATA] for p in params if p.kind == "array")
    floats = tuple(p.positions[0] for p in params if p.kind == "float")
    return KnownCall(
        symbol, pointer_neutral=True, writes=(0,), flow=Flow(0, arrays + floats),
        check=call.check, forward=call.forward, reverse=call.reverse,
        reverse_reads=ReadInReverse(
            arrays, f"call to {call.name} (registered derivative) with an array the function "
            "also writes", f"pass a copy of the array to {call.name}"))


def _written_arrays(library, symbol: str, params) -> list:
    """The array parameters the optimized function may write (LLVM's inferred attributes)."""
    args = list(library.get_function(symbol).arguments)
    return [p for p in params if p.kind in ("array", "const") and len(p.positions) > 1
            and not any(a in _WRITING for a in args[p.positions[DATA]].attributes)]


def _no_derivative(ctx, inst: Instruction) -> None:
    """Calls to an inactive function have no derivative."""


@dataclass(frozen=True)
class _InactiveCheck:
    function: Dispatcher
    written: tuple

    def __call__(self, ctx: CallContext, inst: Instruction) -> None:
        for p in self.written:
            if ctx.has_shadow(inst.operands[p.positions[DATA]]):
                name = self.function.py_func.__qualname__
                raise ctx.diag.unsupported(
                    f"call to {name}, declared inactive, which writes its array argument "
                    f"{p.name} ({ctx.describe(inst.operands[p.positions[DATA]])}), which "
                    "carries derivatives", inst, f"an inactive function must not write "
                    f"differentiated arrays: pass {name} a scratch array, or give it a "
                    "derivative with enzyme_py.register_derivative")
