"""The IR front end: a function of a `.ll` / `.bc` module (or IR text) as a `Target`.

`ir_target(source, func, activities, mode, abi, ret, return_primal, width, canonicalize)`
reads the module, names its unnamed values (`named`), and builds the `DiffSpec`. Two ABIs:
* "numba": `i32 @f(ptr %retptr, ptr %excinfo, ...)` as Numba emits it. Activities map to
  the parameters after retptr/excinfo; arguments named `arg.<p>.<k>` (Numba's names) are
  grouped per Python parameter, and a group of `exploded_count(ndim)` arguments (5 + 2*ndim,
  see ir_passes/known/array_layout.py) is an array.
* "c": plain C functions `double f(double, ...)`, `void f(double *, ...)`: one activity per
  LLVM parameter. The synthesizers expect Numba's ABI, so a shim
  `i32 @f.enzyme_abi(ptr %retptr, ptr %excinfo, ...)` is built (with our `Builder`) that calls
  `f`, stores its result through `retptr` and returns 0; `f` is inlined into it and the shim
  is differentiated. A `dup` pointer becomes a 0-d array in the shim (meminfo, parent,
  nitems, itemsize, data: only data is used), so its shadow is one pointer too.
"auto" picks "numba" for `i32 (ptr %retptr, ptr %excinfo, ...)`, else "c". The C front end
(`enzyme_py.c`) builds its derivatives through this front end too.
"""
from __future__ import annotations

import os

from ir_passes.api import (Activity, DiffSpec, ParamKind, ParamSpec, ParamType, Target,
                           canonicalize_module, check_activities, derivative_symbol,
                           find_return_type, parse, parse_activity, run_module_passes)
from ir_passes.errors import ActivityError, InvalidIRError
from ir_passes.ir.builder import Builder
from ir_passes.ir.parser import parse_module
from ir_passes.ir.printer import print_module
from ir_passes.ir.types import (I32, PTR, ArrayType, FloatType, FunctionType, IntType,
                                StructType, Type)
from ir_passes.ir.values import Function, Module, const_int
from ir_passes.known.array_layout import DATA, exploded_count, exploded_ndim, exploded_types

from .recursive_calls import give_recursion_twins, recursive_functions
from .sources import InspectionError, ir_error, read_ir

__all__ = ["ir_target", "is_ir_source", "named"]


def is_ir_source(target) -> bool:
    if isinstance(target, (str, os.PathLike)):
        text = os.fspath(target)
        return text.endswith((".ll", ".bc")) or "define " in text
    return False


def ir_target(source, func: str, activities, mode: str, abi: str, ret, return_primal: bool,
               width: int, canonicalize: bool) -> Target:
    if mode not in ("forward", "reverse"):
        raise ActivityError(f"mode must be 'forward' or 'reverse', not {mode!r}")
    if not isinstance(width, int) or width < 1:
        raise ActivityError(f"width must be a positive integer, not {width!r}")
    raw, where = read_ir(source)
    try:
        text = named(raw)
    except InvalidIRError as exc:
        raise ir_error(exc, where) from None
    module = parse_module(text)
    fn = _find_function(module, func, where)
    base, func = func, fn.name or func        # derivative named after what was asked for
    if abi == "auto":
        abi = "numba" if _has_numba_abi(fn) else "c"
    if abi not in ("numba", "c"):
        raise InspectionError(f"abi must be auto, numba or c, not {abi!r}")
    if abi == "numba" and not _has_numba_abi(fn):
        raise InspectionError(f"@{fn.name} does not have Numba's calling convention "
                              "(i32 (ptr %retptr, ptr %excinfo, ...)): use --abi c or auto")
    words = activities.split(",") if isinstance(activities, str) else list(activities)
    acts = [parse_activity(str(w).strip()) for w in words]
    if abi == "c":
        primal_name, params = _c_abi_shim(module, fn, acts, mode)
    else:
        primal_name, params = func, _numba_abi_params(fn, acts)
    check_activities(_param_types(module.functions[primal_name], params),
                     [p.activity for p in params], mode,
                     "pointers to floats (dup)" if abi == "c" else "float arrays")
    canonical = _canonical(module, primal_name, canonicalize, text)
    primal = parse_module(canonical).functions[primal_name]
    slot = find_return_type(primal, 0)
    ret_act = _ir_return_activity(slot, ret, mode)
    if width > 1 and mode != "forward":
        raise ActivityError("width > 1 (vector mode) is only available in forward mode")
    dspec = DiffSpec(primal=primal_name, name=derivative_symbol(mode, base), mode=mode,
                     params=tuple(params), ret=ret_act,
                     ret_type=_ir_result_type(primal, params, slot, ret_act, mode, width,
                                              return_primal),
                     width=width, return_primal=return_primal)
    return Target(f"@{func} in {os.path.basename(where)}", raw, canonical, dspec, abi)


def _find_function(module: Module, func: str, where: str) -> Function:
    """The function named `func`, or the only defined one whose name contains it (so Numba's
    mangled names can be given as the Python name)."""
    defined = [f for f in module.functions.values() if not f.is_declaration]
    exact = [f for f in defined if f.name == func]
    matches = exact or [f for f in defined if func in (f.name or "")]
    if len(matches) == 1:
        return matches[0]
    names = ", ".join(f"@{f.name}" for f in (matches or defined)) or "nothing"
    if matches:
        raise InspectionError(f"{where}: --func {func} is ambiguous: {names}")
    raise InspectionError(f"{where} defines no function @{func}; it defines {names}")


def named(text: str) -> str:
    """The module verified by LLVM, with numbered arguments and blocks named (`%arg0`, `%bb4`,
    and `%v13` for the values numbered alongside them), as clang prints them without value
    names; `ir_passes.ir.parser` reads only named arguments and blocks."""
    ref = parse(text)                       # verify first: llvmlite's LLVM aborts on bad IR
    changed = False
    for fn in ref.functions:
        if fn.is_declaration or (all(a.name for a in fn.arguments)
                                 and all(b.name for b in fn.blocks)):
            continue
        changed = True
        number = 0                          # LLVM's numbering of unnamed values
        for i, arg in enumerate(fn.arguments):
            if not arg.name:
                arg.name = f"arg{i}"
                number += 1
        for block in fn.blocks:
            if not block.name:
                block.name = f"bb{number}"
                number += 1
            for inst in block.instructions:
                if not inst.name and str(inst.type) != "void":
                    inst.name = f"v{number}"
                    number += 1
    return str(ref) if changed else text


def _has_numba_abi(fn: Function) -> bool:
    a = fn.args
    return (fn.ftype.ret == I32 and len(a) >= 2 and a[0].type == PTR and a[1].type == PTR
            and a[0].name == "retptr" and a[1].name == "excinfo")


def _numba_abi_params(fn: Function, acts: list[Activity]) -> list[ParamSpec]:
    """Parameters of a Numba-ABI function: `arg.<p>.<k>` arguments grouped per parameter."""
    groups: list[tuple[str, list[int]]] = []
    for arg in fn.args[2:]:
        name = arg.name or f"arg{arg.index}"
        pname = name[4:].split(".")[0] if name.startswith("arg.") else name
        if groups and groups[-1][0] == pname and name.startswith("arg."):
            groups[-1][1].append(arg.index)
        else:
            groups.append((pname, [arg.index]))
    params: list[ParamSpec] = []
    for pname, idx in groups:
        n = len(idx)
        if n == 1:
            params.append(ParamSpec(pname, Activity.CONST, (idx[0],)))
        elif exploded_ndim(n) is not None and fn.args[idx[DATA]].type == PTR:
            params.append(ParamSpec(pname, Activity.CONST, tuple(idx), exploded_ndim(n)))
        else:                               # a tuple or struct: one parameter per argument
            params += [ParamSpec(f"{pname}.{k}", Activity.CONST, (i,)) for k, i in enumerate(idx)]
    if len(acts) != len(params):
        described = ", ".join(f"{p.name}" + (f" ({p.ndim}-d array)" if p.is_array else "")
                              for p in params)
        raise ActivityError(f"@{fn.name} has {len(params)} parameter(s) after retptr/excinfo "
                            f"({described}) but {len(acts)} activities were given")
    return [ParamSpec(p.name, a, p.args, p.ndim) for p, a in zip(params, acts)]


def _c_abi_shim(module: Module, fn: Function, acts: list[Activity],
                mode: str) -> tuple[str, list[ParamSpec]]:
    """Add `i32 @<fn>.enzyme_abi(ptr %retptr, ptr %excinfo, ...)` calling `fn` (see module doc)."""
    if len(acts) != len(fn.args):
        raise ActivityError(f"@{fn.name} has {len(fn.args)} parameter(s) but {len(acts)} "
                            "activities were given")
    ret = fn.ftype.ret
    if fn.ftype.vararg or not (ret.is_void or isinstance(ret, (FloatType, IntType))):
        raise InspectionError(f"@{fn.name}: only C functions returning a float, an integer or "
                              "void are supported (shape double f(double, ...), "
                              "void f(double *, ...))")
    types_: list[Type] = [PTR, PTR]
    names: list[str | None] = ["retptr", "excinfo"]
    params: list[ParamSpec] = []
    call_args: list[int] = []
    for k, (arg, act) in enumerate(zip(fn.args, acts)):
        pname = arg.name or f"arg{k}"
        start = len(types_)
        if arg.type.is_pointer and act.has_shadow:   # a 0-d array: only `data` is used
            types_ += exploded_types(0)
            names += [f"{pname}.meminfo", f"{pname}.parent", f"{pname}.nitems",
                      f"{pname}.itemsize", pname]
            params.append(ParamSpec(pname, act, tuple(range(start, start + exploded_count(0))), 0))
            call_args.append(start + DATA)
        elif isinstance(arg.type, (FloatType, IntType)) or arg.type.is_pointer:
            types_.append(arg.type)
            names.append(pname)
            params.append(ParamSpec(pname, act, (start,)))
            call_args.append(start)
        else:
            raise InspectionError(f"@{fn.name}: parameter {pname} of type {arg.type} is not "
                                  "supported by the C ABI shim (floats, integers, pointers)")
    shim = Function(f"{fn.name}.enzyme_abi", FunctionType(I32, tuple(types_)), names)
    b = Builder(shim.add_block("entry"))
    result = b.call(fn, [shim.args[i] for i in call_args], ret)
    if not ret.is_void:
        b.store(result, shim.args[0])
    b.ret(const_int(I32, 0))
    module.add_function(shim)
    return shim.name or "", params


def _param_types(fn: Function, params: list[ParamSpec]) -> list[ParamType]:
    """The parameters as the shared activity check describes them (arrays: by reference)."""
    out = []
    for p in params:
        t = fn.args[p.args[0]].type
        kind = ParamKind.ARRAY if p.is_array else \
            ParamKind.FLOAT if isinstance(t, FloatType) else ParamKind.OTHER
        out.append(ParamType(p.name, kind, "" if p.is_array else str(t)))
    return out


def _ir_return_activity(slot: Type, ret: str | None, mode: str) -> Activity:
    differentiable = isinstance(slot, FloatType)
    if ret is None:
        if not differentiable:
            return Activity.CONST
        return Activity.ACTIVE if mode == "reverse" else Activity.DUP
    act = parse_activity(ret)
    allowed = ("active", "const") if mode == "reverse" else ("dup", "dupnoneed", "const")
    if act.value not in allowed:
        raise ActivityError(f"ret={ret!r} is not valid in {mode} mode (expected one of "
                            f"{', '.join(allowed)})")
    if act is not Activity.CONST and not differentiable:
        raise ActivityError(f"ret={ret!r} needs a float return value, but the function "
                            f"returns {slot}")
    return act


def _ir_result_type(fn: Function, params: list[ParamSpec], slot: Type, ret_act: Activity,
                    mode: str, width: int, return_primal: bool) -> Type | None:
    """The derivative's retptr pointee, laid out as Numba lays out the same tuple."""
    prim = slot if slot != PTR else None
    if mode == "reverse":
        grads = [fn.args[p.args[0]].type for p in params if p.activity is Activity.ACTIVE]
        packed: Type = (ArrayType(len(grads), grads[0]) if grads and len(set(grads)) == 1
                        else StructType(tuple(grads)))
        if return_primal:
            return StructType((prim or PTR, packed))
        return packed
    if not ret_act.is_differentiated:
        return prim
    if width > 1:
        return None if ret_act is Activity.DUPNONEED else prim
    return prim if ret_act is Activity.DUPNONEED else ArrayType(2, slot)


def _canonical(module: Module, primal: str, canonicalize: bool, raw: str) -> str:
    """Inline every other defined function into `primal`, then canonicalise (as capture does)
    unless the input is known to be canonical already. Recursive functions stay functions:
    in Numba's calling convention, or given a twin in it (`recursive_calls`)."""
    twins = give_recursion_twins(module, primal)
    others = [f for n, f in module.functions.items() if n != primal and not f.is_declaration]
    if not canonicalize and not others:
        return raw                          # nothing to do: keep the input's value names
    for fn in others:
        fn.linkage = "internal"
        fn.fn_attrs = "alwaysinline"         # drops noinline/optnone attribute groups
        fn.prefix_attrs = " ".join(w for w in fn.prefix_attrs.split() if w not in _NOT_LOCAL)
    ref = parse(print_module(module))
    run_module_passes(ref, ("always_inliner", "global_dead_code_eliminate"))
    recursive = twins | {f.name for f in recursive_functions(module, primal)
                         if _has_numba_abi(f)}
    leftover = [f.name for f in ref.functions
                if not f.is_declaration and f.name != primal and f.name not in recursive]
    if leftover:
        raise InspectionError(f"@{leftover[0]} cannot be inlined into @{primal} (recursive?)")
    if canonicalize:
        canonicalize_module(ref)
    run_module_passes(ref, ("global_dead_code_eliminate", "strip_dead_prototype"))
    return str(ref)


_NOT_LOCAL = {"dso_local", "dso_preemptable", "hidden", "protected", "default", "dllimport",
              "dllexport"}
