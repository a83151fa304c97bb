"""clang-22 as the C front end's compiler: C sources to LLVM IR text the pass can read.

`c_to_ir(path, flags, opt_level)` runs `clang-22 -O1 -gline-tables-only -emit-llvm -S` (-O1 by
default: mem2reg and simplification; `opt_level` picks another of OPT_LEVELS; never loop or SLP
vectorisation or unrolling, as the pass expects; line tables: each instruction's C line; no
call-site info, which would leave debug info on declarations) and returns the module
with its debug locations turned into `!enzyme.loc !{!"file.c:LINE"}` tags, the form
`ir_passes.diagnostics` reads, so errors name the C `file:line`. `load_ir(source)` accepts a
`.c` path, a `.ll` / `.bc` path, IR text or bitcode bytes.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

import llvmlite.binding as llvm

from ir_passes.errors import EnzymePyError, InvalidIRError

from ..numba_bridge.capture import _dbg_to_loc

__all__ = ["ClangError", "C_SUFFIXES", "OPT_LEVELS", "c_to_ir", "clang", "load_ir"]

C_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".C")
OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3", "-Os", "-Oz")
_IR_FLAGS = ("-gline-tables-only", "-gno-call-site-info", "-emit-llvm", "-S",
             "-fno-vectorize", "-fno-slp-vectorize", "-fno-unroll-loops")


class ClangError(EnzymePyError, RuntimeError):
    """clang-22 is missing, or it rejected a source file."""


def clang() -> str:
    """Path of clang-22 (`$ENZYME_PY_CLANG` overrides), or ClangError saying how to get it."""
    override = os.environ.get("ENZYME_PY_CLANG")
    if override:
        if not (os.path.isfile(override) and os.access(override, os.X_OK)):
            raise ClangError(f"ENZYME_PY_CLANG={override} is not an executable file")
        return override
    path = shutil.which("clang-22")
    if path is None:
        raise ClangError("clang-22 is not on PATH; it must match llvmlite's LLVM 22. Debian/"
                         "Ubuntu: apt-get install clang-22 (apt.llvm.org for older releases), "
                         "or set ENZYME_PY_CLANG to its path")
    return path


def run_clang(args: list[str]) -> None:
    """Run clang-22 with `args`; ClangError with its diagnostics if it fails."""
    proc = subprocess.run([clang(), *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ClangError(f"clang-22 failed ({' '.join(args)}):\n{proc.stderr.strip()}")


def c_to_ir(path: str, flags: tuple[str, ...] = (), opt_level: str = "-O1") -> str:
    """IR text of the C/C++ source `path` (compiled with `flags`, e.g. -I/-D/-std, at
    `opt_level`, one of OPT_LEVELS), tagged with its C source lines."""
    if opt_level not in OPT_LEVELS:
        raise ClangError(f"opt_level={opt_level!r} is not one of {', '.join(OPT_LEVELS)}")
    with tempfile.TemporaryDirectory(prefix="enzyme_py_") as tmp:
        out = os.path.join(tmp, "module.ll")
        run_clang([*flags, opt_level, *_IR_FLAGS, os.path.abspath(path), "-o", out])
        with open(out) as f:
            return tag_lines(f.read())


def tag_lines(text: str) -> str:
    """The module with debug locations turned into `!enzyme.loc` tags, debug info dropped."""
    return _dbg_to_loc(text)


def load_ir(source, opt_level: str = "-O1") -> str:
    """Tagged IR text of a C source path (compiled at `opt_level`), a .ll/.bc path, IR text or
    bitcode bytes."""
    if isinstance(source, (bytes, bytearray)):
        return tag_lines(_bitcode_text(bytes(source), "<bitcode>"))
    text = os.fspath(source)
    if "define " in text and not os.path.exists(text):
        return tag_lines(text)
    if not os.path.isfile(text):
        raise ClangError(f"{text}: no such file")
    if text.endswith(C_SUFFIXES):
        return c_to_ir(text, opt_level=opt_level)
    if text.endswith(".bc"):
        with open(text, "rb") as f:
            return tag_lines(_bitcode_text(f.read(), text))
    with open(text) as f:
        return tag_lines(f.read())


def _bitcode_text(data: bytes, where: str) -> str:
    try:
        return str(llvm.parse_bitcode(data))
    except RuntimeError as exc:
        raise InvalidIRError(f"{where}: {exc}") from None
