"""Lowering `__enzyme_autodiff(fn, ...)` / `__enzyme_fwddiff(fn, ...)` calls in a C module.

`lower_module(ir_text, tag)` takes the tagged IR of one translation unit and returns IR in
which every such call is a call to a synthesized C-ABI derivative (`cabi.c_derivative`), with
the derivatives' modules linked in. Enzyme's conventions:

- The first argument is the function (defined in the same file); then, per parameter of it,
  an optional activity marker -- `enzyme_dup`, `enzyme_dupnoneed`, `enzyme_const`,
  `enzyme_out` (active scalar), `extern int` globals passed by value -- and the argument,
  followed by its shadow (pointers) or tangent (floats in forward mode) when dup/dupnoneed.
  Without a marker a pointer is dup, a float active (reverse) or dup (forward), an integer
  const.
- Results: reverse mode returns the active parameters' gradients -- one as a float, several
  as a struct of doubles (`{double, double}` by value or through clang's `sret` pointer, as
  the declared return type makes clang lower the call); forward mode returns the tangent.

A call whose arguments do not fit the function (count, types, markers) is an error naming
the call's C `file:line`. Static (internal) globals are renamed and made hidden so that the
derivative, compiled in its own module, shares them with the rest of the file.
"""
from __future__ import annotations

from dataclasses import dataclass

import llvmlite.binding as llvm

from ir_passes.api import Activity, Diagnostics, parse
from ir_passes.diff.reverse.tape import TAPE_PREFIX
from ir_passes.errors import ActivityError, EnzymePyError, UnsupportedError
from ir_passes.ir.builder import Builder
from ir_passes.ir.parser import parse_module
from ir_passes.ir.printer import print_module
from ir_passes.ir.types import FloatType, FunctionType, StructType, Type
from ir_passes.ir.values import Function, GlobalRef, Instruction, Module, Value

from ..ir_target import named
from .cabi import c_derivative, result_types

__all__ = ["ENTRY_POINTS", "has_enzyme_calls", "lower_module"]

ENTRY_POINTS = {"__enzyme_autodiff": "reverse", "__enzyme_fwddiff": "forward"}
MARKERS = {"enzyme_dup": Activity.DUP, "enzyme_dupnoneed": Activity.DUPNONEED,
           "enzyme_const": Activity.CONST, "enzyme_out": Activity.ACTIVE}


@dataclass
class CallSite:
    """One `__enzyme_*` call, decoded."""
    call: Instruction
    caller: Function
    mode: str
    fn: Function
    activities: tuple[Activity, ...]
    args: list[Value]               # the derivative's C arguments: [sret], p, [d_p], ...
    convention: str                 # "value" | "struct" | "sret"


def has_enzyme_calls(ir_text: str) -> bool:
    """Whether the module calls `__enzyme_autodiff` / `__enzyme_fwddiff` (declares them)."""
    return any(f.name in ENTRY_POINTS and f.is_declaration
               for f in parse(ir_text).functions)


def lower_module(ir_text: str, tag: str) -> str:
    """`ir_text` with its `__enzyme_*` calls lowered; `tag` makes its symbols unique."""
    ir_text = named(_expose_statics(ir_text, tag))
    module = parse_module(ir_text)
    built: dict[tuple, tuple[str, FunctionType, str]] = {}
    for caller in list(module.functions.values()):
        for call in [i for i in caller.instructions() if i.opcode == "call"
                     and i.callee_name in ENTRY_POINTS]:
            site = _decode(module, caller, call)
            key = (site.fn.name, site.mode, site.activities, site.convention)
            if key not in built:
                symbol = f"__enzyme_py.{site.mode}.{site.fn.name}.{len(built)}.{tag}"
                built[key] = _build(module, site, ir_text, symbol)
            symbol, ftype, _ = built[key]
            _replace(module, site, module.get_or_declare(symbol, ftype))
    return _link(print_module(module), [text for *_, text in built.values()],
                 [symbol for symbol, *_ in built.values()])


def _build(module: Module, site: CallSite, ir_text: str,
           symbol: str) -> tuple[str, FunctionType, str]:
    try:
        d = c_derivative(ir_text, site.fn.name or "", site.activities, site.mode, symbol,
                         site.convention, python_rules=False, own_globals=False)
    except UnsupportedError:                # already names the C line it is about
        raise
    except EnzymePyError as exc:            # name the call the activities came from
        raise type(exc)(f"{_where(module, site.caller, site.call)}{exc}") from None
    return symbol, d.ftype, d.module_text


def _where(module: Module, caller: Function, call: Instruction) -> str:
    loc = Diagnostics(module, caller).source(call)
    return f"{loc}: {call.callee_name}: " if loc else f"{call.callee_name}: "


def _decode(module: Module, caller: Function, call: Instruction) -> CallSite:
    def error(what: str) -> ActivityError:
        return ActivityError(f"{_where(module, caller, call)}{what}")

    ops = list(call.operands)
    sret = ops.pop(0) if call.arg_attrs and "sret" in call.arg_attrs[0] else None
    fn = module.functions.get(ops[0].name or "") if ops and isinstance(ops[0], GlobalRef) \
        else None
    if fn is None or fn.is_declaration:
        raise error("the first argument must be a function defined in the same source file")
    mode = ENTRY_POINTS[call.callee_name or ""]
    rest, acts, args = ops[1:], [], [sret] if sret is not None else []
    for param in fn.args:
        marker = _marker(rest[0]) if rest else None
        if marker is not None:
            rest.pop(0)
        act = marker or _default(param.type, mode)
        for role in ("", " (its shadow)")[:2 if act.has_shadow else 1]:
            if not rest:
                raise error(f"too few arguments for @{fn.name}: parameter {param.index}"
                            f"{role} is missing")
            value = rest.pop(0)
            if value.type != param.type:
                raise error(f"argument for parameter {param.index}{role} of @{fn.name} has "
                            f"type {value.type}, expected {param.type} (cast it in C)")
            args.append(value)
        acts.append(act)
    if rest:
        raise error(f"{len(rest)} argument(s) too many for @{fn.name} "
                    f"({len(fn.args)} parameter(s))")
    convention = _convention(result_types(fn, acts, mode), call, sret, error)
    return CallSite(call, caller, mode, fn, tuple(acts), args, convention)


def _marker(value: Value) -> Activity | None:
    if isinstance(value, Instruction) and value.opcode == "load" \
            and isinstance(value.operands[0], GlobalRef):
        return MARKERS.get(value.operands[0].name or "")
    return None


def _default(t: Type, mode: str) -> Activity:
    if t.is_pointer:
        return Activity.DUP
    if isinstance(t, FloatType):
        return Activity.ACTIVE if mode == "reverse" else Activity.DUP
    return Activity.CONST


def _convention(out: tuple[Type, ...], call: Instruction, sret, error) -> str:
    if sret is not None:
        if len(out) < 2:
            raise error(f"the call returns a struct, but there are {len(out)} result(s)")
        return "sret"
    if isinstance(call.type, StructType):
        if call.type.elements != out:
            raise error(f"the call returns {call.type}, but the results are "
                        f"{{{', '.join(map(str, out))}}}")
        return "struct"
    if len(out) > 1:
        raise error(f"{len(out)} results: declare the call as returning a struct of "
                    f"{len(out)} doubles")
    if out and call.type != out[0]:
        raise error(f"the call returns {call.type}, but the result is {out[0]}")
    return "value"


def _replace(module: Module, site: CallSite, derivative: Function) -> None:
    b = Builder()
    b.position_before(site.call)
    new = b.call(derivative, site.args, derivative.ftype.ret)
    if site.call.type != derivative.ftype.ret:      # nothing to return, result unused
        if any(site.call in i.operands for i in site.caller.instructions()):
            raise ActivityError(f"{_where(module, site.caller, site.call)}there is no result "
                                "to use (no active parameter / float return)")
    else:
        for inst in site.caller.instructions():
            inst.replace_uses(site.call, new)
    site.call.block.instructions.remove(site.call)
    for value in set(site.call.operands):
        if _marker(value) is not None and not any(
                value in i.operands for i in site.caller.instructions()):
            value.block.instructions.remove(value)


def _expose_statics(ir_text: str, tag: str) -> str:
    """Internal globals renamed `<name>.<tag>` with hidden external linkage (see module doc)."""
    ref = parse(ir_text)
    for gv in ref.global_variables:
        if gv.linkage in (llvm.Linkage.internal, llvm.Linkage.private):
            gv.name = f"{gv.name}.{tag}"
            gv.linkage = llvm.Linkage.external
            gv.visibility = llvm.Visibility.hidden
    return str(ref)


def _link(user_text: str, derivative_texts: list[str], symbols: list[str]) -> str:
    """Link the derivatives into the user's module; their copies of its globals defer to it."""
    ref = parse(user_text)
    for text in derivative_texts:
        other = parse(text)
        for gv in other.global_variables:
            if not gv.is_declaration and not gv.name.startswith(TAPE_PREFIX):   # tape's own
                gv.linkage = llvm.Linkage.linkonce_odr
        try:
            ref.link_in(other)
        except RuntimeError as exc:     # an internal error, but said as one, not a traceback
            raise EnzymePyError(f"linking a derivative into the module failed: {exc}") \
                from None
    for symbol in symbols:
        ref.get_function(symbol).linkage = llvm.Linkage.internal
    ref.verify()
    return str(ref)

