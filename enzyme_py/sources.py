"""What the user names as a target, loaded or refused with a one-line `InspectionError`.

- `load_python_target("module:func" | "path/file.py:func")`: the object, importing the module;
  a missing file or module, a syntax error, an exception raised at import, a file that is not
  Python, or a missing name becomes one line naming the file and what to do.
- `read_ir(path_or_text)`: the text of an LLVM module from a .ll (text) or .bc (bitcode) file,
  told apart by content, not by suffix; `ir_error(exc, where)` turns LLVM's multi-line parser
  message into one line `file:line:col: message`.
- `numba_error(exc, name, argtypes)`: Numba's typing error (coloured, many lines) as one line
  with the Python `file:line` and the first line of Numba's reason.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import types as pytypes
from typing import Any

import llvmlite.binding as llvm

from ir_passes.errors import EnzymePyError, InvalidIRError

__all__ = ["InspectionError", "ir_error", "load_python_target", "numba_error", "read_ir"]


class InspectionError(EnzymePyError, ValueError):
    """A request the inspection tool cannot serve (bad target, types, stage, missing tool)."""


_TARGET_FORMS = "expected MODULE:FUNC or path/file.py:FUNC (or an LLVM file.ll --func NAME)"


# ---------------------------------------------------------------- Python targets

def load_python_target(spec: str):
    """`"module:func"` or `"path/to/file.py:func"` (`func` may be dotted) -> the object."""
    mod_part, sep, attr = spec.rpartition(":")
    if not sep or not mod_part or not attr:
        raise InspectionError(f"{spec!r}: {_TARGET_FORMS}")
    if mod_part.endswith(".py") or os.sep in mod_part or os.path.exists(mod_part):
        module = _load_file(mod_part)
    else:
        module = _import(mod_part)
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise InspectionError(f"{mod_part} has no function {attr!r}; it defines "
                                  f"{_functions(module)}: give one of them after the ':'"
                                  ) from None
    if not callable(obj):
        raise InspectionError(f"{spec}: {attr} is not a function ({type(obj).__name__}); it "
                              f"defines {_functions(module)}: give one of them after the ':'")
    return obj


def _load_file(given: str) -> pytypes.ModuleType:
    path = os.path.abspath(given)
    if os.path.isdir(path):
        raise InspectionError(f"{given} is a folder: give a Python file, path/file.py:FUNC")
    if not os.path.isfile(path):
        raise InspectionError(f"{given}: no such file (check the path; {_TARGET_FORMS})")
    if not path.endswith(".py"):
        raise InspectionError(f"{given} is not a Python file (.py): {_TARGET_FORMS}")
    name = "_enzyme_inspect_" + os.path.splitext(os.path.basename(path))[0]
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__file__", None) == path:
        return module
    if os.path.dirname(path) not in sys.path:      # for the file's own imports
        sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:     # pragma: no cover - .py files always load
        raise InspectionError(f"{given}: Python cannot load this file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        del sys.modules[name]
        raise _import_failure(given, exc) from None
    return module


def _import(name: str) -> pytypes.ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            raise InspectionError(
                f"no module named {exc.name!r} (searched the current folder and PYTHONPATH): "
                f"give the file instead, path/to/{name.replace('.', '/')}.py:FUNC, or add its "
                "folder to PYTHONPATH") from None
        raise _import_failure(name, exc) from None
    except (Exception, SystemExit) as exc:
        raise _import_failure(name, exc) from None


def _import_failure(given: str, exc: BaseException) -> InspectionError:
    """One line for an exception raised while importing the user's module."""
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename}:{exc.lineno}" if exc.filename else given
        return InspectionError(f"{where}: syntax error: {exc.msg}; fix the file and run again")
    frames = [f for f in _frames(exc.__traceback__) if not f.startswith("<frozen")]
    at = f" at {frames[-1]}" if frames else ""
    reason = f"{type(exc).__name__}: {_first_line(str(exc))}".rstrip(": ")
    return InspectionError(f"importing {given} raised {reason}{at}; fix the module (or what it "
                           "imports) and run again")


def _frames(tb) -> list[str]:
    out = []
    while tb is not None:
        out.append(f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}")
        tb = tb.tb_next
    return out


def _functions(module: pytypes.ModuleType) -> str:
    names = sorted(k for k, v in vars(module).items()
                   if callable(v) and not k.startswith("_")
                   and getattr(v, "__module__", None) == module.__name__)
    return ", ".join(names) if names else "no functions"


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in _ANSI.sub("", text).splitlines() if ln.strip()]
    return lines[0] if lines else ""


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


# ---------------------------------------------------------------- Numba errors

def numba_error(exc: Exception, name: str, argtypes: tuple) -> InspectionError:
    """One line for a Numba compile failure of `name` with `argtypes`."""
    lines = [ln.strip() for ln in _ANSI.sub("", str(exc)).splitlines() if ln.strip()]
    reasons = [ln for ln in lines if not ln.startswith(("Failed in ", "During:", "File \""))]
    reason = reasons[0] if reasons else type(exc).__name__
    if reason.endswith("found for signature:") and len(reasons) > 1:
        reason = f"{reason} {reasons[1].lstrip('> ')}"      # "No implementation ... getitem(...)"
    loc = getattr(exc, "loc", None)
    where = f"{loc.filename}:{loc.line}: " if loc is not None and loc.line else ""
    sig = ", ".join(str(t) for t in argtypes)
    return InspectionError(f"{where}Numba cannot compile {name}({sig}): {reason.rstrip(':')}; "
                           "fix the function or --types so that numba.njit compiles it")


# ---------------------------------------------------------------- LLVM IR files

_BITCODE_MAGIC = (b"BC\xc0\xde", b"\xde\xc0\x17\x0b")     # raw bitcode, wrapper header


def read_ir(target) -> tuple[str, str]:
    """(module text, display name) of a .ll / .bc file or of IR text itself."""
    given = os.fspath(target)
    if "define " in given and not os.path.exists(given):
        return given, "<ir>"
    if os.path.isdir(given):
        raise InspectionError(f"{given} is a folder: give an LLVM IR file (.ll or .bc)")
    if not os.path.isfile(given):
        raise InspectionError(f"{given}: no such file (check the path)")
    with open(given, "rb") as f:
        data = f.read()
    if given.endswith(".bc") and not data.startswith(_BITCODE_MAGIC):
        raise InspectionError(f"{given} is not LLVM bitcode (no bitcode header): produce it "
                              "with clang -c -emit-llvm, or give LLVM IR text as a .ll file")
    if data.startswith(_BITCODE_MAGIC):
        try:
            return str(llvm.parse_bitcode(data)), given
        except RuntimeError as exc:
            raise InspectionError(f"{given}: damaged LLVM bitcode ({_llvm_reason(exc)}); "
                                  "produce it again (clang -c -emit-llvm)") from None
    try:
        return data.decode("utf-8"), given
    except UnicodeDecodeError as exc:
        raise InspectionError(
            f"{given} is neither LLVM IR text nor bitcode (byte {data[exc.start]:#04x} at offset "
            f"{exc.start} is not text): give a .ll file (clang -S -emit-llvm) or a .bc file "
            "(clang -c -emit-llvm)") from None


def ir_error(exc: InvalidIRError, where: str) -> InspectionError:
    """LLVM's `<string>:3:7: error: msg` (plus the source line and a caret) as one line."""
    text = str(exc)
    match = re.search(r"<string>:(\d+):(\d+): error: (.*)", text)
    if match:
        line, col, msg = match.groups()
        return InspectionError(f"{where}:{line}:{col}: {msg.strip()}: not valid LLVM IR (fix "
                               "the file, or produce it again with clang -S -emit-llvm)")
    return InspectionError(f"{where}: not valid LLVM IR: {_llvm_reason(exc)}")


def _llvm_reason(exc: Exception) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return "; ".join(ln for ln in lines if not ln.startswith("LLVM bitcode parsing error")
                     ) or "unknown reason"
