"""Link synthesized LLVM IR back into Numba as ordinary, njit-callable functions.

A derivative is a function in Numba's own ABI, ``i32 @sym(ptr retptr, ptr excinfo, args...)``
(status 0 = ok, anything else = excinfo holds the exception), compiled into a Numba code
library (``compile_library``). ``lazy_intrinsic`` makes an ``@intrinsic`` that, per distinct
argument types, asks a ``build`` callback for the IR at typing time, compiles it once and emits
a call with Numba's calling convention, propagating the status exactly as a call to the primal
would -- or, ``deferred``, returning it for ``raise_failed`` to propagate once the caller has
released its arrays. ``njit_wrapper`` compiles generated Python source (``def d_f(x, dx): return
__call(x, dx)``) to a dispatcher callable from Python and from other ``@njit`` code, where the
call is inlined; ``njit_generated`` makes a dispatcher whose body is generated per argument types
and compiled once for them (no stub, overload or inlining in between).

Errors from ``build`` reach the caller as themselves, with no wrapping on our side: Numba 0.68
re-raises any exception from a typer that is not a ``numba.core.errors.NumbaError`` unchanged
(``types.Function.get_call_type``), ``new_error_context`` only annotates NumbaErrors and the
dispatcher re-raises other exceptions as they are -- from a Python call and through enclosing
``@njit`` functions alike (tested). So our errors must never derive from NumbaError (they would
become a TypingError listing "No implementation of function"), and a failed build is cached so
it is re-raised, not retried.
"""
from __future__ import annotations

import ctypes
import itertools
from dataclasses import dataclass
from typing import Any, Callable

import llvmlite.binding as llvm
from numba import njit, types
from numba.core import cgutils
from numba.core.callconv import excinfo_ptr_t
from numba.core.codegen import CodeLibrary
from numba.core.compiler_lock import global_compiler_lock
from numba.core.dispatcher import _FunctionCompiler
from numba.core.environment import Environment
from numba.core.registry import cpu_target
from numba.core.runtime import rtsys
from numba.extending import intrinsic

from ir_passes.api import parse
from ir_passes.errors import InvalidIRError
from ir_passes.ordered_reductions import ordered_reductions

__all__ = ["Built", "call_if_compiled", "compile_library", "lazy_intrinsic", "llvm_abi",
           "njit_generated", "njit_wrapper", "raise_failed", "unique_symbol"]

_ENV_PREFIX = "_ZN08NumbaEnv"
_counter = itertools.count()
_defined_symbols: set[str] = set()


def unique_symbol(base: str) -> str:
    """A function name no other library of this process defines (``base`` plus a counter)."""
    return f"{base}.{next(_counter)}"


def call_if_compiled(symbol: str) -> bool:
    """Call `void symbol()` if a compiled library defines it; whether it did."""
    engine = cpu_target.target_context.codegen()._engine
    if not engine.is_symbol_defined(symbol):
        return False
    ctypes.CFUNCTYPE(None)(engine.get_function_address(symbol))()
    return True


def compile_library(module_text: str, name: str, linking_libraries=()) -> CodeLibrary:
    """Verify ``module_text`` and compile it into a finalized Numba code library.

    Exported functions must have external linkage (Numba's module optimisation deletes unused
    ``linkonce`` bodies) and names unique in the process (all libraries share one JIT).
    ``linking_libraries`` (e.g. the primal's library) supply functions the IR calls.
    Strict floating-point reductions are vectorised in order (bit-identical results).
    """
    module = _checked_module(module_text)
    with global_compiler_lock:
        library = cpu_target.target_context.codegen().create_library(name)
        _add_module(library, module, linking_libraries)
        library.finalize()
    return library


def _checked_module(module_text: str) -> llvm.ModuleRef:
    """``module_text`` parsed and verified, its exported functions external and not defined
    by another library of this process."""
    module = parse(module_text)
    exported = []
    for fn in module.functions:
        if fn.is_declaration or fn.linkage in (llvm.Linkage.internal, llvm.Linkage.private):
            continue
        if fn.linkage != llvm.Linkage.external:
            raise InvalidIRError(f"@{fn.name} has {fn.linkage.name} linkage; exported "
                                 "functions must be external")
        exported.append(fn.name)
    with global_compiler_lock:
        clash = _defined_symbols.intersection(exported)
        if clash:
            raise InvalidIRError(f"@{sorted(clash)[0]} is already defined in this process; "
                                 "use unique_symbol()")
        _defined_symbols.update(exported)
    return module


def _add_module(library: CodeLibrary, module: llvm.ModuleRef, linking_libraries) -> None:
    """Add our `module` to the unfinalized `library`, whose finalisation (one LLVM
    optimisation and code generation for all its code) then vectorises strict floating-point
    reductions in order (only in our libraries). Of `linking_libraries`, only those defining
    a symbol `module` declares are linked (a library compiled for nothing stays unfinalized).

    The module joins the library when it is finalized, after the caller's own module: the
    raw modules `capture` records per library are then linked in an order where each
    `linkonce` definition is already referenced (LLVM's linker drops it otherwise).
    """
    declared = {v.name for v in (*module.functions, *module.global_variables)
                if v.is_declaration}
    runtime = _runtime_library()
    for linked in (runtime, *linking_libraries):
        if declared & _defined_names(linked):
            library.add_linking_library(linked)
    pending = library.__dict__.setdefault("_enzyme_modules", [])
    pending.append(module)
    if "finalize" not in library.__dict__:
        finalize = library.finalize

        def finalize_ordered():
            environments = []
            while pending:
                joining = pending.pop(0)
                environments += _environment_names(joining)
                library.add_llvm_module(joining)
            with ordered_reductions():
                finalize()
            _set_environments(environments)

        library.finalize = finalize_ordered


def _environment_names(module: llvm.ModuleRef) -> list[str]:
    """The Numba environments (`NumbaEnv` globals) the code of `module` reads: Python object
    operations (print) find their function's globals there."""
    return [g.name for g in module.global_variables
            if g.name.startswith(_ENV_PREFIX) and not g.is_declaration]


def _set_environments(names: list[str]) -> None:
    """Point each environment global Numba has not set (that of a captured twin, which is
    never compiled on its own) at its environment, as Numba does for a function it compiles."""
    codegen = cpu_target.target_context.codegen()
    for name in names:
        env = Environment._memo.get(name)
        address = codegen._engine.get_global_value_address(name)
        if env is not None and address and not ctypes.c_void_p.from_address(address).value:
            codegen.set_env(name, env)


def _runtime_library() -> CodeLibrary:
    """Numba's runtime library (it defines `NRT_incref` and the like), initialised first if
    no Numba compile did yet (e.g. the C front end)."""
    rtsys.initialize(cpu_target.target_context)
    return rtsys.library


def _defined_names(library: CodeLibrary) -> set[str]:
    """What `library` and the libraries it links, except Numba's runtime (which defines
    `NRT_incref` and the like), define (finalized or not)."""
    names, stack, seen = set(), [library], {id(_runtime_library())} - {id(library)}
    while stack:
        lib = stack.pop()
        if id(lib) in seen:
            continue
        seen.add(id(lib))
        module = lib._final_module
        names.update(v.name for v in (*module.functions, *module.global_variables)
                     if not v.is_declaration)
        stack.extend(lib._linking_libraries)
    return names


@dataclass(frozen=True)
class Built:
    """What ``build`` returns: IR defining ``symbol`` in Numba's ABI for ``restype``."""
    module_text: str
    symbol: str
    restype: Any
    linking_libraries: tuple = ()
    library: CodeLibrary | None = None    # compiled already (e.g. shared by split halves)


def lazy_intrinsic(name: str, build: Callable[[tuple], Built], *, deferred: bool = False):
    """An ``@intrinsic`` ``f(*args)`` calling ``build(argtypes).symbol``.

    ``build`` runs once per distinct (unliteral) argument types, at typing time, and its IR is
    checked then. The first caller lowered compiles that IR as part of its own library (one
    LLVM optimisation and code generation, not one more for a library of its own); later
    callers link that library, as Numba links any callee. A ``Built`` with a ``library`` of
    its own (e.g. shared by split halves) is linked as it is. By default an exception of the
    callee leaves the caller at once (Numba's own convention). With ``deferred=True`` the
    intrinsic never leaves its caller: it returns a ``(failed, code, excinfo, value)`` outcome
    that ``raise_failed`` / ``outcome_value`` take apart (see ``raise_failed`` for why).
    """
    specialisations: dict[tuple, Built | Exception] = {}
    pending: dict[str, llvm.ModuleRef] = {}   # by symbol: checked, not yet in a library
    homes: dict[str, CodeLibrary] = {}        # by symbol: the library compiling it

    def specialise(argtypes: tuple) -> Built:
        entry = specialisations.get(argtypes)
        if entry is None:
            try:
                entry = build(argtypes)
                if entry.library is not None:
                    homes[entry.symbol] = entry.library
                elif entry.symbol not in homes and entry.symbol not in pending:
                    pending[entry.symbol] = _checked_module(entry.module_text)
            except Exception as exc:  # cached: typing may ask again, build must not rerun
                entry = exc
            specialisations[argtypes] = entry
        if isinstance(entry, Exception):
            raise entry
        return entry

    def link(built: Built, active: CodeLibrary) -> None:
        home = homes.get(built.symbol)
        if home is None:
            _add_module(active, pending.pop(built.symbol), built.linking_libraries)
            homes[built.symbol] = active
        elif home is not active:
            active.add_linking_library(home)

    def typer(typingctx, *args):
        if len(args) == 1 and isinstance(args[0], types.StarArgTuple):
            args = args[0].types
        argtypes = tuple(types.unliteral(a) for a in args)
        built = specialise(argtypes)

        def codegen(context, builder, signature, llargs):
            argtys = signature.args[0].types
            values = cgutils.unpack_tuple(builder, llargs[0], len(argtys))
            link(built, context.active_code_library)
            fnty = context.call_conv.get_function_type(built.restype, argtys)
            fn = cgutils.get_or_insert_function(builder.module, fnty, built.symbol)
            status, out = context.call_conv.call_function(builder, fn, built.restype, argtys,
                                                          values)
            if deferred:
                excinfo = builder.bitcast(status.excinfoptr, cgutils.voidptr_t)
                return context.make_tuple(builder, signature.return_type,
                                          (status.is_error, status.code, excinfo, out))
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return out

        restype = _outcome_type(built.restype) if deferred else built.restype
        return restype(types.StarArgTuple(argtypes)), codegen

    typer.__name__ = typer.__qualname__ = name
    return intrinsic(typer)


def _outcome_type(restype):
    return types.Tuple((types.boolean, types.int32, types.voidptr, restype))


@intrinsic
def raise_failed(typingctx, outcome, *live):
    """``raise_failed(outcome, *live)``: leave the calling function with the exception of a
    failed deferred call, releasing ``live`` (the caller's variables still holding references).

    Numba leaves a function on a callee's exception straight from the call, skipping the
    release of the caller's references: each array argument of a wrapper calling a raising
    function would leak. Called when the call's arguments are dead (Numba releases a variable
    right after its last use), this exit leaks nothing.
    """
    live_types = live[0].types if live and isinstance(live[0], types.StarArgTuple) else live

    def codegen(context, builder, signature, llargs):
        failed, code, excinfo = (builder.extract_value(llargs[0], i) for i in range(3))
        values = cgutils.unpack_tuple(builder, llargs[1], len(live_types)) if live_types else ()
        with cgutils.if_unlikely(builder, failed):
            for ty, value in zip(live_types, values):
                context.nrt.decref(builder, ty, value)
            excinfo = builder.bitcast(excinfo, excinfo_ptr_t)
            status = context.call_conv._get_return_status(builder, code, excinfo)
            context.call_conv.return_status_propagate(builder, status)
        return context.get_dummy_value()

    return types.none(outcome, types.StarArgTuple(live_types)), codegen


def njit_wrapper(source: str, name: str, namespace: dict, *, as_name: str | None = None,
                 **njit_options):
    """Exec ``source`` (which defines ``name``) in a copy of ``namespace``; njit the function,
    renamed ``as_name`` if given (any string: the source needs no valid identifier)."""
    scope = dict(namespace)
    exec(compile(source, f"<enzyme_py:{as_name or name}>", "exec"), scope)
    fn = scope[name]
    if as_name is not None:
        fn.__name__ = fn.__qualname__ = as_name
    return njit(**njit_options)(fn)


def njit_generated(params: list[str], rest: bool, generate: Callable[[tuple], Any], name: str,
                   **njit_options):
    """An njit dispatcher of `params` (each defaulting to None) or, with `rest`, of `params`
    and ``*rest``, whose body for each set of argument types is the function
    ``generate(argtypes)`` returns (same parameters; an omitted argument's type is Numba's
    ``Omitted``), compiled directly. Its ``py_func`` calls the dispatcher (so
    ``njit(d.py_func)`` works) and is marked ``_enzyme_generated`` (its defaults are not the
    user's, `omitted.parameter_defaults`)."""
    if rest:
        signature = arguments = ", ".join(params + ["*rest"])
    else:
        signature, arguments = ", ".join(f"{a}=None" for a in params), ", ".join(params)
    scope: dict = {}
    dispatcher = njit_wrapper(f"def body({signature}):\n    return __self({arguments})\n",
                              "body", scope, as_name=name, **njit_options)
    dispatcher.py_func.__globals__["__self"] = dispatcher
    dispatcher.py_func._enzyme_generated = True
    base = dispatcher._compiler
    dispatcher._compiler = _GeneratedCompiler(base.py_func, base.targetdescr,
                                              base.targetoptions, base.locals,
                                              base.pipeline_class, generate)
    return dispatcher


class _GeneratedCompiler(_FunctionCompiler):
    """Numba's function compiler, compiling the generated body for the argument types."""

    def __init__(self, py_func, targetdescr, targetoptions, locals_, pipeline_class, generate):
        super().__init__(py_func, targetdescr, targetoptions, locals_, pipeline_class)
        self._generate = generate

    def _get_implementation(self, args, kws):
        return self._generate(tuple(args))


def llvm_abi(argtypes, restype) -> tuple[list[list[str]], str]:
    """LLVM types of each parameter's exploded arguments and of the return slot's pointee,
    from Numba's data model (``UniTuple(float64, 2)`` -> ``[2 x double]``)."""
    dmm = cpu_target.target_context.data_model_manager
    per_param = [list(_flatten(dmm[ty].get_argument_type())) for ty in argtypes]
    ret = dmm[restype].get_return_type()
    texts = _llvm_texts([t for group in per_param for t in group] + [ret])
    it = iter(texts)
    return [[next(it) for _ in group] for group in per_param], next(it)


def _flatten(argtype):
    if isinstance(argtype, (tuple, list)):
        for item in argtype:
            yield from _flatten(item)
    else:
        yield argtype


def _llvm_texts(irtypes: list) -> list[str]:
    """LLVM 22's own spelling (opaque ``ptr``) of llvmlite.ir types."""
    decl = f"declare void @abi({', '.join(str(t) for t in irtypes)})"
    fn = llvm.parse_assembly(decl).get_function("abi")
    return [str(t) for t in fn.global_value_type.get_function_parameters()]
