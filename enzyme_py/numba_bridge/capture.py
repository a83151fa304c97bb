"""Capture the raw LLVM IR of a Numba function, with its callees inlined, in canonical form.

``capture(dispatcher, argtypes)`` compiles the primal for one signature through a twin
dispatcher (same ``py_func`` and target options) whose lowering tags every instruction with
the Python line it came from, and returns a ``CapturedFunction``: one self-contained module
holding only the primal's definition, with declarations for what stays external (``NRT_*``,
libm, ``numba_*`` C helpers, LLVM intrinsics). When the dispatcher has compiled that
signature itself, its typed Numba IR is lowered again by the twin's lowering instead (the
same module, without running Numba's front end and type inference a second time).
``capture(..., located=False)`` (what ``derive_diff`` asks first) gives the same code without
source lines, which costs less: the raw module recorded (see below) when the dispatcher has
compiled the signature itself after this module was imported (no lowering at all), else the
module of a twin with Numba's plain lowering (a third cheaper than the locating one, whose
typing a located capture asked for later reuses).

Callee bodies. Numba links callees (other ``@njit`` functions, helpers such as
``int_power_impl``, ``ol_min``, ``python3rem``, array-expression kernels) from libraries that
are already through module O3 and CodeGenPrepare, and it never keeps their pre-optimisation
IR. Most callees are compiled deep inside Numba's lowering (``compile_subroutine``, overload
templates) behind several caches, so rather than recompiling them this module records, from
import time on, the text of every LLVM module handed to ``CPUCodeLibrary.add_llvm_module`` --
the single funnel all lowered Numba code passes through before any optimisation -- keyed weakly
by its library (zlib-compressed, cpython/cfunc wrapper modules skipped; ~1-2% of Numba's compile
time). A capture links the recorded raw modules of every library reachable through
``_linking_libraries`` (except Numba's NRT runtime, which stays declared), marks callees
``alwaysinline``, runs the always-inliner and global DCE, then canonicalises. A library
compiled before this module was imported, or loaded from Numba's disk cache, has no record: it
is compiled again through its dispatcher (``recompile``); if that is impossible, calls into it
stay external and an active call to it is refused with a message naming the function.

Source locations. The twin's lowering gives each instruction of a Numba IR statement a
``DILocation`` (a line table: no variables, no ``dbg.declare``; checked to leave the canonical
code unchanged). LLVM keeps those through its passes far better than custom metadata, which
CSE, hoisting and load/phi folding drop, and the inliner stamps the call's location on inlined
helper code. After canonicalisation each location becomes ``!enzyme.loc !N`` with
``!N = !{!"/path/file.py:LINE"}`` and the debug info is removed, so the pass reads one simple
tag. Instructions merged from different lines (line 0) and argument reference counting in the
prologue/epilogue carry none.
"""
from __future__ import annotations

import functools
import os
import re
import weakref
import zlib
from dataclasses import dataclass, field
from typing import Any

import llvmlite.binding as llvm
from llvmlite import ir as llir
from numba import jit
from numba.core import cgutils, errors, ir
from numba.core import codegen as nb_codegen
from numba.core.annotations.type_annotations import TypeAnnotation
from numba.core.compiler import CompilerBase, DefaultPassBuilder, Flags
from numba.core.compiler_lock import global_compiler_lock
from numba.core.compiler_machinery import register_pass
from numba.core.dispatcher import Dispatcher
from numba.core.funcdesc import PythonFunctionDescriptor
from numba.core.ir_utils import build_definitions
from numba.core.lowering import Lower
from numba.core.runtime import _nrt_python, rtsys
from numba.core.targetconfig import ConfigStack
from numba.core.typed_passes import NativeLowering

from ir_passes.api import (TAPE_ALLOCATE, canonicalize_module, differentiable_tapes, parse,
                           run_module_passes)
from ir_passes.errors import UnsupportedError
from ir_passes.known.calls import describe_symbol
from ir_passes.known.model import known_call

from .complex_power import define_complex_power
from .custom_calls import opaque_symbols
from .noinline import explicitly_noinline
from .link import llvm_abi
from .recompile import Unrecoverable, recompile
from .origins import tag_origins
from .runtime import annotate_runtime
from .unresolved import resolve, unresolved_symbols

__all__ = ["LOC_METADATA", "CapturedFunction", "ParamLayout", "capture"]

LOC_METADATA = "enzyme.loc"

# ---------------------------------------------------------------------------------------------
# Raw module recorder

_raw_modules: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_original_add_llvm_module = nb_codegen.CPUCodeLibrary.add_llvm_module
_WRAPPERS = ("_ZN7cpython", "cfunc.")   # Numba's Python and C entry points


_definers: dict[str, weakref.ref] = {}    # symbol -> the library whose raw IR defines it


def _recording_add_llvm_module(self, ll_module):
    defined = [fn.name for fn in ll_module.functions if not fn.is_declaration]
    if not all(name.startswith(_WRAPPERS) for name in defined):
        _raw_modules.setdefault(self, []).append(zlib.compress(str(ll_module).encode(), 1))
        for fn in ll_module.functions:     # the first, external definition (not a copy)
            if not fn.is_declaration and not str(fn.linkage).endswith(("internal", "private")) \
                    and _definer(fn.name) is None:
                _definers[fn.name] = weakref.ref(self)
    if getattr(self, "_enzyme_capture_only", False):   # a twin's: optimised only if linked
        return self._final_module.link_in(ll_module)
    return _original_add_llvm_module(self, ll_module)


# The tape of a captured derivative (`differentiable_tapes`) is allocated by NRT_Allocate
# under another name, which tells the pass that the memory is a tape.
llvm.add_symbol(TAPE_ALLOCATE, _nrt_python.c_helpers["Allocate"])

if not getattr(nb_codegen.CPUCodeLibrary.add_llvm_module, "_enzyme_recorder", False):
    _recording_add_llvm_module._enzyme_recorder = True
    nb_codegen.CPUCodeLibrary.add_llvm_module = _recording_add_llvm_module


def _recorded(library) -> list[str] | None:
    texts = _raw_modules.get(library)
    return None if texts is None else [zlib.decompress(t).decode() for t in texts]


# ---------------------------------------------------------------------------------------------
# Capturing pipeline: Numba's nopython pipeline with a lowering that tags source lines


class _CaptureOnlyLower(Lower):
    """Numba's lowering, into a library optimised and compiled only if a derivative links it
    (see ``_lowered_only``)."""

    def pre_lower(self):
        super().pre_lower()
        self.library._enzyme_capture_only = True


class _LocatingLower(_CaptureOnlyLower):
    """Lowering that gives every instruction of a Numba IR statement a ``DILocation`` (line
    tables only: no variables, no ``dbg.declare``), which LLVM carries through its passes."""

    def pre_lower(self):
        super().pre_lower()
        module = self.module
        self._files = {}
        path = self.func_ir.loc.filename
        unit = module.add_debug_info("DICompileUnit", {
            "language": llir.DIToken("DW_LANG_Python"), "file": self._difile(path),
            "producer": "enzyme_py", "runtimeVersion": 0, "isOptimized": True,
            "emissionKind": llir.DIToken("LineTablesOnly")}, is_distinct=True)
        self._subprogram = module.add_debug_info("DISubprogram", {
            "name": self.fndesc.qualname, "linkageName": self.function.name,
            "scope": self._difile(path), "file": self._difile(path),
            "line": self.defn_loc.line, "scopeLine": self.defn_loc.line,
            "type": module.add_debug_info("DISubroutineType",
                                          {"types": module.add_metadata([])}),
            "isLocal": False, "isDefinition": True, "isOptimized": True, "unit": unit,
        }, is_distinct=True)
        self._scopes = {path: self._subprogram}
        self.function.set_metadata("dbg", self._subprogram)
        cgutils.get_or_insert_named_metadata(module, "llvm.dbg.cu").add(unit)
        cgutils.get_or_insert_named_metadata(module, "llvm.module.flags").add(
            module.add_metadata([llir.IntType(32)(2), "Debug Info Version",
                                 llir.IntType(32)(3)]))

    def _difile(self, path: str):
        path = os.path.abspath(path)
        if path not in self._files:
            self._files[path] = self.module.add_debug_info("DIFile", {
                "filename": os.path.basename(path), "directory": os.path.dirname(path)})
        return self._files[path]

    def _scope(self, path: str):
        """The subprogram, or a lexical block file for statements inlined from other files."""
        if path not in self._scopes:
            self._scopes[path] = self.module.add_debug_info("DILexicalBlockFile", {
                "scope": self._subprogram, "file": self._difile(path), "discriminator": 0})
        return self._scopes[path]

    def lower_inst(self, inst):
        loc = inst.loc
        if loc is not None and loc.line is not None and loc.line > 0:
            self.builder.debug_metadata = self.module.add_debug_info("DILocation", {
                "line": loc.line, "column": 0, "scope": self._scope(loc.filename)})
        try:
            super().lower_inst(inst)
        finally:
            self.builder.debug_metadata = None


@register_pass(mutates_CFG=True, analysis_only=False)
class _LocatingNativeLowering(NativeLowering):
    _name = "enzyme_locating_native_lowering"

    @property
    def lowering_class(self):
        return _LocatingLower


@register_pass(mutates_CFG=True, analysis_only=False)
class _CaptureOnlyNativeLowering(NativeLowering):
    _name = "enzyme_capture_only_native_lowering"

    @property
    def lowering_class(self):
        return _CaptureOnlyLower


class _CapturingCompiler(CompilerBase):
    lowering = _LocatingNativeLowering

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.passes = [(self.lowering if p is NativeLowering else p, d) for p, d in pm.passes]
        pm.finalize()
        return [pm]


class _PlainCapturingCompiler(_CapturingCompiler):
    lowering = _CaptureOnlyNativeLowering


_twins: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_plain_twins: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _twin(dispatcher: Dispatcher, located: bool = True) -> Dispatcher:
    """A dispatcher of the same function and options compiled through the capturing pipeline
    (``located=False``: without source lines)."""
    twins = _twins if located else _plain_twins
    twin = twins.get(dispatcher)
    if twin is None:
        options = dict(dispatcher.targetoptions)
        if options.get("parallel"):
            raise UnsupportedError(
                f"{dispatcher.py_func.__qualname__} is compiled with parallel=True",
                hint="differentiate a serial version (no parallel=True / prange)")
        options["nopython"] = True
        # never called: no Python or C entry point to generate, optimise and compile
        options.update(no_cpython_wrapper=True, no_cfunc_wrapper=True)
        pipeline = _CapturingCompiler if located else _PlainCapturingCompiler
        twin = jit(locals=dispatcher.locals, pipeline_class=pipeline,
                   **options)(dispatcher.py_func)
        twin._compiler._customize_flags = _lowered_only
        twin.add_overload = functools.partial(_keep_overload, twin)
        twins[dispatcher] = twin
    return twin


def _lowered_only(flags):
    """The twin's compile stops after lowering: its library is optimised and compiled to
    machine code only if a derivative links it (``link.lazy_intrinsic`` links only libraries
    defining a symbol the derivative uses)."""
    flags.no_compile = True
    return flags


def _keep_overload(twin: Dispatcher, cres) -> None:
    """Keep a compile result with no machine code (never called: nothing to dispatch to)."""
    twin.overloads[tuple(cres.signature.args)] = cres


# ---------------------------------------------------------------------------------------------
# Result


@dataclass(frozen=True)
class ParamLayout:
    """A Python parameter and the indices of its exploded arguments in the LLVM signature.

    Index 0 is the return pointer, 1 the excinfo pointer; an array parameter explodes into
    `exploded_count(ndim)` arguments (ir_passes/known/array_layout.py).
    """
    name: str
    numba_type: Any
    llvm_args: tuple[int, ...]


@dataclass(frozen=True)
class CapturedFunction:
    """One specialisation of a primal, ready for the pass."""
    module_text: str            # canonical, self-contained module
    func_name: str              # LLVM symbol of the primal
    argtypes: tuple
    restype: Any
    params: tuple[ParamLayout, ...]
    return_llvm_type: str       # pointee type of the return pointer
    library: Any                # the primal's Numba code library (link against it)
    _raw_debug_text: str = field(repr=False, compare=False)
    located: bool = True        # instructions carry their Python lines (``!enzyme.loc``)

    @functools.cached_property
    def raw_text(self) -> str:
        """The primal's module straight out of Numba's lowering (locations as ``!enzyme.loc``)."""
        return _dbg_to_loc(self._raw_debug_text)


_captures: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def capture(dispatcher: Dispatcher, argtypes: tuple, located: bool = True) -> CapturedFunction:
    """Capture ``dispatcher`` specialised for ``argtypes`` (a tuple of Numba types). Cached.

    ``located=False``: the same code without source lines (cheaper, see the module
    docstring); a located capture made already serves it too."""
    if not isinstance(dispatcher, Dispatcher):
        raise TypeError(f"expected a numba.njit dispatcher, got {type(dispatcher).__name__}")
    argtypes = tuple(argtypes)
    with global_compiler_lock:
        per_dispatcher = _captures.setdefault(dispatcher, {})
        key = argtypes, located
        if key not in per_dispatcher:
            if not located and (argtypes, True) in per_dispatcher:
                return per_dispatcher[argtypes, True]
            per_dispatcher[key] = _capture(dispatcher, argtypes, located)
        return per_dispatcher[key]


def _capture(dispatcher: Dispatcher, argtypes: tuple, located: bool) -> CapturedFunction:
    if "objmode" in dispatcher.py_func.__code__.co_names:
        raise UnsupportedError(
            f"{dispatcher.py_func.__qualname__} has a numba.objmode block (object-mode code, "
            "whose results come back from Python)",
            hint="move the object-mode code out of the differentiated function (compute its "
            "results before the call and pass them in)")
    fndesc, library = _lowered(dispatcher, argtypes, located)
    name = fndesc.llvm_func_name
    module, raw_text = _canonical_module(library, name)

    arg_texts, ret_text = llvm_abi(fndesc.argtypes, fndesc.restype)
    params, index = [], 2
    for pname, ptype, texts in zip(fndesc.args, fndesc.argtypes, arg_texts):
        params.append(ParamLayout(pname, ptype, tuple(range(index, index + len(texts)))))
        index += len(texts)
    n_llvm = len(module.get_function(name).global_value_type.get_function_parameters())
    assert n_llvm == index, f"ABI mismatch for {name}: {n_llvm} LLVM args, expected {index}"

    return CapturedFunction(module_text=_dbg_to_loc(str(module)), func_name=name,
                            argtypes=argtypes, restype=fndesc.restype,
                            params=tuple(params), return_llvm_type=ret_text,
                            library=library, _raw_debug_text=raw_text, located=located)


# Numba memoizes environments weakly (a compile result holds its own): the environments of
# lowerings done again, which print and other object operations read, are held here.
_LOWERED_ENVIRONMENTS: list = []


def _lowered(dispatcher: Dispatcher, argtypes: tuple, located: bool):
    """``(fndesc, library)``: the primal lowered for ``argtypes``. Without source lines, the
    dispatcher's own compile when recorded, else a plain twin's; with them, the typed IR of
    the dispatcher's (or the plain twin's) compile lowered again, else a locating twin's."""
    if not located:
        return _compiled(dispatcher, argtypes) or _twin_compiled(dispatcher, argtypes, False)
    twin = _twin(dispatcher)
    for typed in (dispatcher, _plain_twins.get(dispatcher)):
        lowered = None if typed is None else _lowered_again(typed, twin, argtypes)
        if lowered is not None:
            return lowered
    return _twin_compiled(dispatcher, argtypes, True)


def _twin_compiled(dispatcher: Dispatcher, argtypes: tuple, located: bool):
    """``(fndesc, library)`` of the twin's compile of ``argtypes`` (typed and lowered)."""
    twin = _twin(dispatcher, located)
    try:
        twin.compile(argtypes)
    except errors.NumbaRuntimeError as exc:
        if "re-entrant" not in str(exc):  # the twin reached the original by recursion
            raise
        raise UnsupportedError(f"{dispatcher.py_func.__qualname__} is recursive",
                               hint="differentiate a non-recursive version") from exc
    cres = twin.overloads[argtypes]
    return cres.fndesc, cres.library


def _compiled(dispatcher: Dispatcher, argtypes: tuple):
    """``(fndesc, library)`` of ``dispatcher``'s own compile of ``argtypes`` in nopython mode
    when the recorder saw its raw module (the code the twin would lower, without locations);
    else None."""
    cres = dispatcher.overloads.get(argtypes)
    annotation = getattr(cres, "type_annotation", None)
    if not isinstance(annotation, TypeAnnotation) or cres.objectmode or cres.lifted \
            or annotation.func_id.is_generator \
            or _definer(cres.fndesc.llvm_func_name) is not cres.library:
        return None
    return cres.fndesc, cres.library


def _lowered_again(dispatcher: Dispatcher, twin: Dispatcher, argtypes: tuple):
    """When ``dispatcher`` has compiled ``argtypes`` itself (in nopython mode, not loaded
    from Numba's disk cache), its typed and legalised Numba IR lowered again by the twin's
    lowering under a name of its own: ``(fndesc, library)``, the library lowered only, as a
    twin's. The same code the twin's compile lowers, without typing the primal again; None
    otherwise (the twin compiles)."""
    cres = dispatcher.overloads.get(argtypes)
    annotation = getattr(cres, "type_annotation", None)
    if not isinstance(annotation, TypeAnnotation) or cres.objectmode or cres.lifted \
            or annotation.func_id.is_generator:
        return None
    func_id = annotation.func_id.derive()     # blocks as lowered: typed, legalised
    func_ir = ir.FunctionIR(annotation.blocks, False, func_id, ir.Loc.from_function_id(func_id),
                            build_definitions(annotation.blocks), func_id.arg_count,
                            func_id.arg_names)
    base, context = cres.fndesc, cres.target_context
    fndesc = PythonFunctionDescriptor.from_specialized_function(
        func_ir, base.typemap, base.restype, base.calltypes, mangler=context.mangler,
        inline=base.inline, noalias=base.noalias, abi_tags=base.abi_tags)
    library = context.codegen().create_library(func_ir.func_id.func_qualname)
    library.enable_object_caching()
    library._reload_init.update(cres.reload_init)
    flags = Flags()
    twin._compiler.targetdescr.options.parse_as_flags(flags, twin._compiler.targetoptions)
    with ConfigStack().enter(_lowered_only(flags)), context.push_code_library(library):
        lower = _LocatingLower(context, library, fndesc, func_ir, metadata={})
        lower.lower()
    _LOWERED_ENVIRONMENTS.append(lower.env)
    return fndesc, library


def _canonical_module(library, name: str) -> tuple[llvm.ModuleRef, str]:
    """The canonical module of function ``name`` of ``library``, and the raw text defining it."""
    module, raw_text = _link_raw(library, name)
    _inline_callees(module, name, opaque_symbols())
    canonicalize_module(module)
    run_module_passes(module, ("global_dead_code_eliminate", "strip_dead_prototype"))
    return module, raw_text


def _raw_libraries(root) -> list[tuple[list[str], dict[str, str]]]:
    """The recorded raw module texts of ``root`` and every library it links, depth first,
    without duplicates or the NRT runtime; each with the symbol renames of a library that had
    no record and was compiled again (see ``recompile``). A library that cannot be compiled
    again is left out: calls into it stay external, described for the error they may cause."""
    seen, out, stack = {id(rtsys.library)}, [], [root]
    while stack:
        library = stack.pop()
        if id(library) in seen:
            continue
        seen.add(id(library))
        texts, renames = _recorded(library), {}
        if texts is None:
            found = recompile(library)
            if isinstance(found, Unrecoverable):
                for symbol in found.symbols:
                    describe_symbol(symbol, found.what, found.hint)
                continue
            library, renames = found.library, found.renames
            texts = _recorded(library) or []
        out.append((texts, renames))
        stack.extend(reversed(library._linking_libraries))
    return out


def _link_raw(root_library, primal: str) -> tuple[llvm.ModuleRef, str]:
    """One module of the raw IR of ``root_library`` and the libraries it links (and those
    defining what recursion left unresolved, see ``unresolved``), and the raw text of the
    module defining ``primal``."""
    linked, primal_text = _link_libraries(_raw_libraries(root_library), primal, None, None)
    seen = {id(root_library)}
    while True:
        defined = {fn.name for fn in linked.functions if not fn.is_declaration}
        missing = unresolved_symbols(linked) - defined
        libraries = [lib for lib in map(_definer, missing)
                     if lib is not None and id(lib) not in seen]
        if not libraries:
            return resolve(linked), primal_text
        seen.update(map(id, libraries))
        for library in libraries:     # `missing` stay external: nothing calls them directly
            linked, primal_text = _link_libraries(_raw_libraries(library), primal, linked,
                                                  primal_text, missing)


def _definer(symbol: str):
    """The library whose recorded raw IR defines ``symbol``, if it is still alive."""
    ref = _definers.get(symbol)
    return None if ref is None else ref()


def _link_libraries(libraries, primal: str, linked, primal_text, kept=frozenset()):
    """Link the raw modules of ``libraries`` into ``linked`` (None: a new module).

    Every definition except the primal and those ``kept`` becomes ``weak_odr``: duplicates
    merge, and none is skipped for being unreferenced yet (a ``linkonce`` one would be, and a
    module linked later referring to it would find it missing: a Numba helper the inner
    primal of a differentiated derivative shares with the outer function). What is
    unreferenced once callees are inlined is made internal and dropped (``_inline_callees``).
    """
    for texts, renames in libraries:
        for text in texts:
            module = llvm.parse_assembly(
                tag_origins(annotate_runtime(differentiable_tapes(text))))
            for value in (*module.functions, *module.global_variables):
                if value.is_declaration:
                    continue
                if value.name in renames:
                    value.name = renames[value.name]
                if value.name == primal:
                    primal_text = text
                elif value.name not in kept and value.linkage in (llvm.Linkage.external,
                                                                  llvm.Linkage.common):
                    value.linkage = "weak_odr"
            if linked is None:
                linked = module
            else:
                linked.link_in(module)
    define_complex_power(linked)
    return linked, primal_text


def _inline_callees(module: llvm.ModuleRef, primal: str, opaque: set[str]) -> None:
    """Inline every callee into the primal, except functions with user rules (`opaque`) or
    with emitters of their own (a `KnownCall` record: np.linalg.det), and those marked
    noinline (in LLVM, or `@njit(inline="never")` written out). Functions left over are made
    internal: noinline ones, recursive ones (the pass differentiates both as functions of
    their own), and ones only referenced by address (exception-argument unwrappers,
    container destructors)."""
    never_inline = {fn.name for fn in module.functions
                    if fn.name in opaque or _has_emitters(fn)
                    or any(b"noinline" in a for a in fn.attributes)
                    or not fn.is_declaration and explicitly_noinline(fn.name)}
    for fn in module.functions:
        if not fn.is_declaration and fn.name != primal and fn.name not in never_inline:
            fn.add_function_attribute("alwaysinline")
    run_module_passes(module, ("always_inliner", "global_dead_code_eliminate"))
    for fn in module.functions:
        if not fn.is_declaration and fn.name != primal:
            fn.linkage = "internal"
    for gv in module.global_variables:
        if gv.linkage == llvm.Linkage.weak_odr:
            gv.linkage = "linkonce_odr"
    run_module_passes(module, ("global_dead_code_eliminate",))


def _has_emitters(fn: llvm.ValueRef) -> bool:
    record = None if fn.is_declaration else known_call(fn.name)
    return record is not None and (record.forward is not None or record.reverse is not None)


_MD_NODE = re.compile(r"^!(\d+) = (?:distinct )?!(\w+)\((.*)\)$", re.M)
_DBG_ATTACHMENT = re.compile(r", !dbg !(\d+)")


def _field(body: str, name: str) -> str | None:
    match = re.search(rf"\b{name}: (?:\"((?:[^\"\\]|\\.)*)\"|!?(\d+))", body)
    return None if match is None else (match.group(1) if match.group(1) is not None
                                       else match.group(2))


def _dbg_to_loc(module_text: str) -> str:
    """Replace the ``DILocation`` of each instruction by ``!enzyme.loc !{!"file:line"}`` and
    drop the debug info (line 0, LLVM's merge of different lines, gets no tag)."""
    nodes = {int(n): (kind, body) for n, kind, body in _MD_NODE.findall(module_text)}

    def path(scope: str) -> str:
        kind, body = nodes[int(scope)]
        if kind != "DIFile":
            return path(_field(body, "file"))
        return os.path.join(_field(body, "directory") or "", _field(body, "filename") or "")

    new_nodes: dict[str, int] = {}
    first_free = 1 + max((int(n) for n in re.findall(r"^!(\d+) = ", module_text, re.M)),
                         default=-1)

    def retag(match: re.Match) -> str:
        _, body = nodes[int(match.group(1))]
        line = int(_field(body, "line") or 0)
        if line == 0:
            return ""
        key = f"{path(_field(body, 'scope'))}:{line}"
        number = new_nodes.setdefault(key, first_free + len(new_nodes))
        return f", !{LOC_METADATA} !{number}"

    lines = []
    for line in module_text.splitlines():
        if line.startswith("define "):
            line = re.sub(r" !dbg !\d+", "", line)
        elif line.startswith("  "):
            line = _DBG_ATTACHMENT.sub(retag, line)
        elif line.startswith(("!llvm.dbg.cu ", "!llvm.module.flags ")):
            continue
        lines.append(line)
    lines += [f'!{n} = !{{!"{key}"}}' for key, n in new_nodes.items()]
    return str(parse("\n".join(lines)))
