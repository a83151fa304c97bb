"""`enzyme-py clang [clang arguments]`: clang-22 with `__enzyme_autodiff` / `__enzyme_fwddiff`.

Each C/C++ source that calls them is compiled to LLVM IR (`clang.c_to_ir`), its calls are
lowered to synthesized derivatives (`lower.lower_module`), and the result is compiled to an
object with the user's flags (-O level, -fPIC, ...); other sources are compiled as clang
would. Then, unless `-c` was given, clang-22 links with the user's arguments, the sources
replaced by their objects, plus `-lm` (derivatives call libm) and, for C++ sources,
`-lstdc++`. `-E`, `-S`, `-M`, `-fsyntax-only`, `--version` and a command line without sources
go to clang-22 unchanged.

`--compiler-launcher COMPILER ARGS...` is the form CMake's `<LANG>_COMPILER_LAUNCHER` uses:
COMPILER (CMake's own compiler) is dropped. Dependency-file options (-MD, -MF ...) apply to
the real source only, never to the intermediate IR file.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile

from ir_passes.errors import EnzymePyError

from .clang import C_SUFFIXES, c_to_ir, clang, run_clang
from .lower import has_enzyme_calls, lower_module

__all__ = ["main"]

_TAKES_VALUE = {"-o", "-I", "-D", "-U", "-include", "-isystem", "-iquote", "-L", "-l", "-x",
                "-MF", "-MT", "-MQ", "-Xlinker", "-Xclang", "-target", "-idirafter",
                "-isysroot", "-imacros", "-arch", "-mllvm", "-Xassembler", "-Xpreprocessor"}
_LINK_ONLY = ("-l", "-L", "-Wl,", "-shared", "-static", "-rdynamic", "-Xlinker")
_PASS_THROUGH = {"-E", "-S", "-M", "-MM", "-fsyntax-only", "--version", "-v", "-###"}
_QUIET = "-Wno-unused-command-line-argument"


def main(argv: list[str]) -> int:
    """Run the driver on clang-style arguments; the exit status."""
    try:
        return _drive(list(argv))
    except EnzymePyError as exc:
        print(f"enzyme-py clang: error: {exc}", file=sys.stderr)
        return 1


def _drive(argv: list[str]) -> int:
    if argv[:1] == ["--compiler-launcher"]:
        argv = argv[2:]
    sources = _sources(argv)
    if not sources or _PASS_THROUGH.intersection(argv):
        return subprocess.run([clang(), *argv], check=False).returncode
    compile_only = "-c" in argv
    output = _value_of(argv, "-o")
    if compile_only and output and len(sources) > 1:
        raise EnzymePyError("-o with -c needs a single source file")
    flags = _compile_flags(argv, sources)
    with tempfile.TemporaryDirectory(prefix="enzyme_py_clang_") as tmp:
        objects = {}
        for k in sources:
            src = argv[k]
            obj = (output or _object_name(src)) if compile_only else \
                os.path.join(tmp, f"{k}.{os.path.basename(src)}.o")
            _compile(src, obj, flags, tmp)
            objects[k] = obj
        if not compile_only:
            cxx = ["-lstdc++"] if any(not argv[k].endswith(".c") for k in sources) else []
            run_clang([objects.get(k, a) for k, a in enumerate(argv)] + cxx + ["-lm", _QUIET])
    return 0


def _compile(src: str, obj: str, flags: list[str], tmp: str) -> None:
    """Compile one source to an object, lowering its `__enzyme_*` calls if it has any."""
    ir_text = c_to_ir(src, tuple(_ir_flags(flags)))
    if not has_enzyme_calls(ir_text):
        run_clang([*flags, "-c", src, "-o", obj])
        return
    tag = hashlib.sha1(os.path.abspath(src).encode()).hexdigest()[:8]
    lowered = os.path.join(tmp, os.path.basename(src) + ".lowered.ll")
    with open(lowered, "w") as f:
        f.write(lower_module(ir_text, tag))
    run_clang([*_without_depfile(flags), _QUIET, "-c", lowered, "-o", obj])


def _sources(argv: list[str]) -> list[int]:
    """Indices of the C/C++ source arguments (not values of options such as -o)."""
    out, skip = [], False
    for k, a in enumerate(argv):
        if skip:
            skip = False
        elif a in _TAKES_VALUE:
            skip = True
        elif not a.startswith("-") and a.endswith(C_SUFFIXES):
            out.append(k)
    return out


def _value_of(argv: list[str], option: str) -> str | None:
    for k, a in enumerate(argv[:-1]):
        if a == option:
            return argv[k + 1]
    return None


def _compile_flags(argv: list[str], sources: list[int]) -> list[str]:
    """The arguments that concern compiling: no sources, outputs, -c or linker options."""
    out, k = [], 0
    while k < len(argv):
        a = argv[k]
        takes = a in _TAKES_VALUE
        if k in sources or a == "-c" or a == "-o" or a.startswith(_LINK_ONLY) \
                or (not a.startswith("-") and not a.endswith(C_SUFFIXES)):
            k += 2 if takes else 1
            continue
        out += argv[k:k + (2 if takes else 1)]
        k += 2 if takes else 1
    return out


def _without_depfile(flags: list[str]) -> list[str]:
    out, skip = [], False
    for f in flags:
        if skip or f in ("-MD", "-MMD", "-MP"):
            skip = False
            continue
        skip = f in ("-MF", "-MT", "-MQ")
        if not skip:
            out.append(f)
    return out


def _ir_flags(flags: list[str]) -> list[str]:
    """Flags for the IR the pass reads: the user's, minus optimisation and debug levels."""
    return [f for f in flags if not f.startswith(("-O", "-g"))]


def _object_name(src: str) -> str:
    return os.path.splitext(os.path.basename(src))[0] + ".o"
