"""A C function's derivative with a C calling convention, as an LLVM module.

`c_derivative(ir_text, fn, activities, mode, symbol, results)` differentiates the C function
`fn` through the IR front end (`ir_target`: the Numba-ABI shim around `fn`, callees
inlined, canonicalised) and the shared pipeline (`pipeline.Stages`: synthesize and verify),
then adds the C-ABI function `symbol` that calls the Numba-ABI derivative:

  parameters  per C parameter in order: `p`, then its shadow `d_p` when it is dup/dupnoneed
              (a pointer's shadow pointer; in forward mode a float's tangent); with
              results="sret" a first `ptr` where the results are stored
  results     reverse mode: the gradients of the active parameters; forward mode: the
              tangent of the float result. Returned as `results` says: "value" (one float,
              or nothing), "struct" (`{double, double}` by value), "sret" (stored through the
              first parameter, C's convention for larger structs); "auto": "value" for at most
              one result, else "sret"

A pointer becomes a 0-d array of the shim (meminfo and parent null, only data is read). The
Numba-ABI derivative is internal and inlined; a non-zero status from it aborts (C code raises
no Python exceptions, so it would mean a bug, never a wrong result).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ir_passes.api import Activity, DiffSpec, Stages, parse_activity, release_symbol
from ir_passes.errors import ActivityError, UnsupportedError
from ir_passes.ir.builder import Builder, declare
from ir_passes.ir.parser import parse_module
from ir_passes.ir.printer import print_module
from ir_passes.ir.types import I32, I64, PTR, VOID, ArrayType, FunctionType, StructType, Type
from ir_passes.ir.values import Function, Module, Value, const_int, zero

from ..ir_target import ir_target, named
from ..sources import InspectionError
from .program import (check_supported, define_runtime_allocator, primal_function,
                      use_runtime_allocator)
from .startup import drop_startup_lists

__all__ = ["CDerivative", "c_derivative", "result_types"]


@dataclass(frozen=True)
class CDerivative:
    """The derivative module and its C-ABI entry point."""
    module_text: str
    symbol: str
    ftype: FunctionType            # the C-ABI function's LLVM type
    activities: tuple[Activity, ...]
    results: tuple[Type, ...]      # gradients (reverse) or tangent (forward), in order
    convention: str                # "value" | "struct" | "sret"


def c_derivative(ir_text: str, fn_name: str, activities, mode: str, symbol: str,
                 results: str = "auto", python_rules: bool = True,
                 strong_zero: bool = False, own_globals: bool = True) -> CDerivative:
    """Differentiate `fn_name` of `ir_text` (tagged IR of a C module) into `symbol` (C ABI).
    `python_rules`: the caller runs in this process, so rules registered from Python apply
    (and error messages may suggest them). `strong_zero`: as `derive_diff`'s. `own_globals`:
    the derivative's module keeps its own globals (not linked into the user's module, whose
    static constructors set them)."""
    ir_text = named(ir_text)
    module = parse_module(ir_text)
    primal = primal_function(module, fn_name)
    drop_startup_lists(module, primal, own_globals)
    acts = _activities(primal, activities, mode)
    use_runtime_allocator(module)
    ret = "dupnoneed" if mode == "forward" and primal.ftype.ret.is_float else None
    try:
        target = ir_target(print_module(module), fn_name, [a.value for a in acts], mode, "c",
                            ret, False, 1, True)
        target = replace(target, spec=replace(target.spec, strong_zero=strong_zero))
    except InspectionError as exc:          # e.g. the inliner met recursion: say where
        check_supported(module, primal)
        raise UnsupportedError(str(exc), function=fn_name) from None
    try:
        dmodule, derivative, _ = Stages(target).synthesized
    except UnsupportedError as exc:
        raise _for_c(exc, python_rules) from None
    define_runtime_allocator(dmodule)
    derivative.linkage = "internal"
    derivative.fn_attrs = "alwaysinline"
    release_all = dmodule.functions.get(release_symbol(derivative.name or ""))
    if release_all is not None:         # no handle calls it: what is kept stays kept
        release_all.linkage = "internal"
    out = result_types(primal, acts, mode)
    if results == "auto":
        results = "sret" if len(out) > 1 else "value"
    wrapper = _wrapper(dmodule, derivative, target.spec, primal, acts, out, results, symbol)
    return CDerivative(print_module(dmodule), symbol, wrapper.ftype, tuple(acts), out, results)


def _for_c(exc: UnsupportedError, python_rules: bool) -> UnsupportedError:
    """The pass's error with a fix that applies to C where its own is about Numba code."""
    if "memory returned by '" in exc.what:
        hint = ("allocate the buffer with malloc (memory from malloc/free gets a shadow), or "
                "pass it in as an argument marked dup")
    elif exc.hint and "register_rule" in exc.hint:
        hint = ("define the function in the same source file, so that its body is "
                "differentiated" + (f", or {exc.hint[exc.hint.index('register'):]}"
                                    if python_rules else ""))
    else:
        return exc
    return UnsupportedError(exc.what, function=exc.function, block=exc.block,
                            instruction=exc.instruction, source=exc.source, hint=hint)


def result_types(primal: Function, acts, mode: str) -> tuple[Type, ...]:
    """What the C-ABI derivative returns: active parameters' types, or the float result's."""
    if mode == "reverse":
        return tuple(a.type for a, act in zip(primal.args, acts) if act is Activity.ACTIVE)
    return (primal.ftype.ret,) if primal.ftype.ret.is_float else ()


def _activities(primal: Function, activities, mode: str) -> list[Activity]:
    if mode not in ("forward", "reverse"):
        raise ActivityError(f"mode must be 'forward' or 'reverse', not {mode!r}")
    words = activities.split(",") if isinstance(activities, str) else list(activities)
    if len(words) != len(primal.args):
        raise ActivityError(f"@{primal.name} has {len(primal.args)} parameter(s) but "
                            f"{len(words)} activities were given")
    acts = []
    for arg, word in zip(primal.args, words):
        acts.append(word if isinstance(word, Activity) else parse_activity(str(word).strip()))
        if "byval" in arg.attrs or "sret" in arg.attrs:
            raise UnsupportedError(f"@{primal.name}: a struct passed by value (parameter "
                                   f"{arg.index}) is not supported yet",
                                   function=primal.name,
                                   hint="pass a pointer to the struct and mark it dup")
    return acts


def _wrapper(module: Module, derivative: Function, spec: DiffSpec, primal: Function,
             acts, out: tuple[Type, ...], convention: str, symbol: str) -> Function:
    params: list[Type] = [PTR] if convention == "sret" else []
    for arg, act in zip(primal.args, acts):
        params += [arg.type] * (2 if act.has_shadow else 1)
    ret = _return_type(out, convention)
    fn = Function(symbol, FunctionType(ret, tuple(params)))
    module.add_function(fn)
    b = Builder(fn.add_block("entry"))
    slot = b.alloca(spec.ret_type, "results") if spec.ret_type is not None else zero(PTR)
    excinfo = b.alloca(PTR, "excinfo")
    status = b.call(derivative, [slot, excinfo, *_numba_args(fn, spec, convention)], I32)
    ok, fail = fn.add_block("ok"), fn.add_block("failed")
    b.cbr(b.icmp("eq", status, const_int(I32, 0)), ok, fail)
    b.position_at_end(fail)
    b.call(declare(module, "abort", VOID, []), [], VOID)
    b.unreachable()
    b.position_at_end(ok)
    values = [b.load(t, _field(b, spec.ret_type, slot, i)) for i, t in enumerate(out)]
    _return(b, fn, values, ret, convention)
    return fn


def _numba_args(fn: Function, spec: DiffSpec, convention: str) -> list[Value]:
    """The wrapper's C arguments exploded into the Numba-ABI derivative's argument list."""
    c_args = iter(fn.args[1:] if convention == "sret" else fn.args)
    out: list[Value] = []
    for p in spec.params:
        for _ in range(2 if p.activity.has_shadow else 1):
            value = next(c_args)
            if p.is_array:                  # a 0-d array: meminfo, parent, nitems, itemsize
                out += [zero(PTR), zero(PTR), const_int(I64, 1), const_int(I64, 8), value]
            else:
                out.append(value)
    return out


def _field(b: Builder, ty: Type | None, slot: Value, i: int) -> Value:
    if isinstance(ty, (ArrayType, StructType)):
        return b.gep(ty, slot, [const_int(I32, 0), const_int(I32, i)])
    return slot


def _return_type(out: tuple[Type, ...], convention: str) -> Type:
    if convention == "sret" or not out:
        return VOID
    if convention == "struct":
        return StructType(out)
    if len(out) > 1:
        raise ActivityError(f"{len(out)} results need a struct: results='struct' or 'sret'")
    return out[0]


def _return(b: Builder, fn: Function, values: list[Value], ret: Type, convention: str) -> None:
    if convention == "sret":
        layout = StructType(tuple(v.type for v in values))
        for i, v in enumerate(values):
            b.store(v, _field(b, layout, fn.args[0], i))
        b.ret()
    elif convention == "struct" and values:
        agg: Value = zero(ret)
        for i, v in enumerate(values):
            agg = b.insertvalue(agg, v, (i,))
        b.ret(agg)
    else:
        b.ret(values[0] if values else None)
