"""Link synthesized LLVM IR back into Numba as ordinary, njit-callable functions.

A derivative is a function in Numba's own ABI, ``i32 @sym(ptr retptr, ptr excinfo, args...)``
(status 0 = ok, anything else = excinfo holds the exception), compiled into a Numba code
library (``compile_library``). ``lazy_intrinsic`` makes an ``@intrinsic`` that, per distinct
argument types, asks a ``build`` callback for the IR at typing time, compiles it once and emits
a call with Numba's calling convention, propagating the status exactly as a call to the primal
would. ``njit_wrapper`` compiles generated Python source (``def d_f(x, dx): return
__call(x, dx)``) to a dispatcher callable from Python and from other ``@njit`` code, where the
call is inlined.

Errors from ``build`` reach the caller as themselves, with no wrapping on our side: Numba 0.68
re-raises any exception from a typer that is not a ``numba.core.errors.NumbaError`` unchanged
(``types.Function.get_call_type``), ``new_error_context`` only annotates NumbaErrors and the
dispatcher re-raises other exceptions as they are -- from a Python call and through enclosing
``@njit`` functions alike (tested). So our errors must never derive from NumbaError (they would
become a TypingError listing "No implementation of function"), and a failed build is cached so
it is re-raised, not retried.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable

import llvmlite.binding as llvm
from numba import njit, types
from numba.core import cgutils
from numba.core.codegen import CodeLibrary
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import cpu_target
from numba.extending import intrinsic

from ir_passes.canonicalize import parse
from ir_passes.errors import InvalidIRError

__all__ = ["Built", "compile_library", "lazy_intrinsic", "llvm_abi", "njit_wrapper",
           "unique_symbol"]

_counter = itertools.count()
_defined_symbols: set[str] = set()


def unique_symbol(base: str) -> str:
    """A function name no other library of this process defines (``base`` plus a counter)."""
    return f"{base}.{next(_counter)}"


def compile_library(module_text: str, name: str, linking_libraries=()) -> CodeLibrary:
    """Verify ``module_text`` and compile it into a finalized Numba code library.

    Exported functions must have external linkage (Numba's module optimisation deletes unused
    ``linkonce`` bodies) and names unique in the process (all libraries share one JIT).
    ``linking_libraries`` (e.g. the primal's library) supply functions the IR calls.
    """
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
        library = cpu_target.target_context.codegen().create_library(name)
        for linked in linking_libraries:
            library.add_linking_library(linked)
        library.add_llvm_module(module)
        library.finalize()
        _defined_symbols.update(exported)
    return library


@dataclass(frozen=True)
class Built:
    """What ``build`` returns: IR defining ``symbol`` in Numba's ABI for ``restype``."""
    module_text: str
    symbol: str
    restype: Any
    linking_libraries: tuple = ()


def lazy_intrinsic(name: str, build: Callable[[tuple], Built]):
    """An ``@intrinsic`` ``f(*args)`` calling ``build(argtypes).symbol``.

    ``build`` runs once per distinct (unliteral) argument types, at typing time; the library of
    each symbol it returns is compiled once and linked into every caller.
    """
    specialisations: dict[tuple, tuple[Built, CodeLibrary] | Exception] = {}
    libraries: dict[str, CodeLibrary] = {}   # by symbol: build may return one Built for several

    def specialise(argtypes: tuple) -> tuple[Built, CodeLibrary]:
        entry = specialisations.get(argtypes)
        if entry is None:
            try:
                built = build(argtypes)
                if built.symbol not in libraries:
                    libraries[built.symbol] = compile_library(built.module_text, name,
                                                              built.linking_libraries)
                entry = built, libraries[built.symbol]
            except Exception as exc:  # cached: typing may ask again, build must not rerun
                entry = exc
            specialisations[argtypes] = entry
        if isinstance(entry, Exception):
            raise entry
        return entry

    def typer(typingctx, *args):
        if len(args) == 1 and isinstance(args[0], types.StarArgTuple):
            args = args[0].types
        argtypes = tuple(types.unliteral(a) for a in args)
        built, library = specialise(argtypes)

        def codegen(context, builder, signature, llargs):
            argtys = signature.args[0].types
            values = cgutils.unpack_tuple(builder, llargs[0], len(argtys))
            context.active_code_library.add_linking_library(library)
            fnty = context.call_conv.get_function_type(built.restype, argtys)
            fn = cgutils.get_or_insert_function(builder.module, fnty, built.symbol)
            status, out = context.call_conv.call_function(builder, fn, built.restype, argtys,
                                                          values)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return out

        return built.restype(types.StarArgTuple(argtypes)), codegen

    typer.__name__ = typer.__qualname__ = name
    return intrinsic(typer)


def njit_wrapper(source: str, name: str, namespace: dict, **njit_options):
    """Exec ``source`` (which defines ``name``) in a copy of ``namespace``; njit the function."""
    scope = dict(namespace)
    exec(compile(source, f"<enzyme_py:{name}>", "exec"), scope)
    return njit(**njit_options)(scope[name])


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
