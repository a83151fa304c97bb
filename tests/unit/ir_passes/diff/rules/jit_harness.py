"""A small MCJIT harness: compile our IR `Module`s with llvmlite and call them through ctypes.

`compile_modules` prints each module with our printer, parses and verifies it with llvmlite
(so a malformed module raises a Python error naming it before codegen can abort the process),
resolves its external symbols, and adds it to one MCJIT engine. `Jit.function` returns a
ctypes callable.

Symbols are resolved explicitly, because an unresolved symbol in MCJIT is a segfault at call
time rather than an error: libm names (also the libcalls LLVM lowers math intrinsics to, e.g.
`llvm.tanh.f32` -> `tanhf`), Numba's C helpers (`numba_gamma`, from `numba._helperlib`) and
the compiler-rt routines `llvm.powi` lowers to (`__powidf2`, from libgcc_s).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any, Iterable

import llvmlite.binding as llvm

from ir_passes.ir.printer import print_module
from ir_passes.ir.values import Module

_POWI_LIBCALLS = {"f64": "__powidf2", "f32": "__powisf2"}


@functools.cache
def _init() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


def _target_machine() -> llvm.TargetMachine:
    """A fresh target machine: an MCJIT engine takes ownership of (and frees) its own."""
    _init()
    return llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine()


@functools.cache
def _libraries() -> tuple[ctypes.CDLL, ...]:
    libs = [ctypes.CDLL(None)]
    for name in ("m", "gcc_s"):
        path = ctypes.util.find_library(name)
        if path:
            libs.append(ctypes.CDLL(path))
    return tuple(libs)


def _address_in_process(name: str) -> int | None:
    if name.startswith("numba_"):
        from numba import _helperlib   # Numba's C helpers are not exported as dynamic symbols
        addr = _helperlib.c_helpers.get(name[len("numba_"):])
        if addr:
            return int(addr)
    for lib in _libraries():
        try:
            return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
        except AttributeError:
            continue
    return None


def ensure_symbol(name: str, required: bool = True) -> bool:
    """Make `name` resolvable by the JIT; False (or LookupError if `required`) if not found."""
    if llvm.address_of_symbol(name):
        return True
    addr = _address_in_process(name)
    if addr:
        llvm.add_symbol(name, addr)
        return True
    if required:
        raise LookupError(f"JIT symbol {name!r} is not in this process (libm, libgcc_s, numba)")
    return False


def _libcalls_of_intrinsic(name: str) -> list[str]:
    """Library functions the backend may call for math intrinsic `name` (best effort)."""
    parts = name.split(".")            # llvm.<op>.<f32|f64>[.<int type>]
    if len(parts) < 3 or parts[2] not in ("f32", "f64"):
        return []
    op, suffix = parts[1], parts[2]
    if op == "powi":
        return [_POWI_LIBCALLS[suffix]]
    return [op + ("f" if suffix == "f32" else "")]


def ensure_symbols(module: Module) -> None:
    """Resolve every function `module` declares (and the libcalls its intrinsics lower to)."""
    for fn in module.functions.values():
        if not fn.is_declaration:
            continue
        name = fn.name or ""
        if name.startswith("llvm."):
            for libcall in _libcalls_of_intrinsic(name):
                ensure_symbol(libcall, required=libcall.startswith("__powi"))
        else:
            ensure_symbol(name)


def parse_and_verify(module: Module) -> llvm.ModuleRef:
    """Our module -> a verified llvmlite module (raises RuntimeError on invalid IR)."""
    _init()
    text = print_module(module)
    try:
        ref = llvm.parse_assembly(text)
        ref.verify()
    except RuntimeError as exc:
        raise RuntimeError(f"{exc}\n--- module ---\n{text}") from None
    ref.triple = llvm.get_process_triple()
    return ref


class Jit:
    """Native code for one or more modules; keep it alive while its functions are in use."""

    def __init__(self, modules: Iterable[Module]) -> None:
        refs = []
        for module in modules:
            refs.append(parse_and_verify(module))
            ensure_symbols(module)
        assert refs, "nothing to compile"
        self._engine = llvm.create_mcjit_compiler(refs[0], _target_machine())
        for ref in refs[1:]:
            self._engine.add_module(ref)
        self._engine.finalize_object()

    def address(self, name: str) -> int:
        addr = self._engine.get_function_address(name)
        if not addr:
            raise LookupError(f"no compiled function {name!r}")
        return addr

    def function(self, name: str, restype: Any, *argtypes: Any) -> Any:
        return ctypes.CFUNCTYPE(restype, *argtypes)(self.address(name))


def compile_modules(*modules: Module) -> Jit:
    return Jit(modules)


__all__ = ["Jit", "compile_modules", "ensure_symbol", "ensure_symbols", "parse_and_verify"]
