"""Raw IR of Numba code compiled before the recorder in ``capture`` was installed.

The recorder sees the LLVM modules lowered after ``enzyme_py`` is imported. A callee whose
library has no record -- an ``@njit`` function compiled before ``import enzyme_py``, one loaded
from Numba's on-disk cache (``cache=True``), an overload implementation (``np.sum``, ...)
compiled then, a ``@vectorize`` kernel -- is found through its dispatcher (the live dispatcher
one of whose compiled signatures owns the library) and compiled again, for the same signature,
by a fresh uncached dispatcher of the same Python function and options, which the recorder
sees. The fresh compile gives the function a new unique symbol: the replacement maps it back to
the symbol callers use. Finding the dispatcher scans the objects of the garbage collector
(~50 ms), only when a library without record turns up.

Numba's cache of internal subroutines (``compile_subroutine``: ``int_power_impl`` and the like)
is emptied when this module is imported, for the same reason: it holds unrecorded code; later
compiles fill it again, recorded.
"""
from __future__ import annotations

import gc
import weakref
from dataclasses import dataclass
from typing import Any

from numba import jit
from numba.core.dispatcher import Dispatcher
from numba.core.registry import cpu_target
from numba.core.typing import Signature
from numba.np.ufunc.ufuncbuilder import UFuncDispatcher

from ir_passes.known.calls import demangle_numba

__all__ = ["Replacement", "Unrecoverable", "recompile"]

cpu_target.target_context.cached_internal_func.clear()


@dataclass(frozen=True)
class Replacement:
    """A recorded library defining what an unrecorded one defines, under ``renames``
    (new symbol -> the symbol callers use)."""
    library: Any
    renames: dict[str, str]


@dataclass(frozen=True)
class Unrecoverable:
    """Why an unrecorded library could not be compiled again, in the user's terms."""
    symbols: tuple[str, ...]      # the functions it defines
    what: str
    hint: str


_results: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_fresh: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # dispatcher -> its fresh twin


def recompile(library) -> Replacement | Unrecoverable:
    """A recorded replacement of ``library`` (which has no record), or why there is none."""
    result = _results.get(library)
    if result is None:
        result = _results[library] = _recompile(library)
    return result


def _recompile(library) -> Replacement | Unrecoverable:
    symbols = tuple(fn.name for fn in library.get_defined_functions())
    owner = _owner(library)
    if owner is None:
        names = ", ".join(sorted({demangle_numba(s) or s for s in symbols}))
        return Unrecoverable(symbols, f"call to {names}, compiled by Numba before enzyme_py was "
                             "imported from no function enzyme_py can compile again",
                             "import enzyme_py before compiling any Numba function")
    dispatcher, key = owner
    old = dispatcher.overloads[key]
    argtypes = key.args if isinstance(key, Signature) else key
    py_func = dispatcher.py_func
    code = py_func.__code__
    try:
        fresh = _fresh.get(dispatcher)
        if fresh is None:
            fresh = _fresh[dispatcher] = jit(locals=dispatcher.locals,
                                             **dispatcher.targetoptions)(py_func)
        fresh.compile(tuple(argtypes))
    except Exception as exc:    # any failure leaves the old, unrecorded code in use
        return Unrecoverable(
            symbols, f"call to the @njit function {py_func.__qualname__} "
            f"({code.co_filename}:{code.co_firstlineno}), compiled before enzyme_py was "
            f"imported, which enzyme_py cannot compile again ({type(exc).__name__})",
            "import enzyme_py before that function is first compiled")
    new = fresh.overloads[tuple(argtypes)]
    return Replacement(new.library, {new.fndesc.llvm_func_name: old.fndesc.llvm_func_name})


def _owner(library) -> tuple[Any, Any] | None:
    """The live dispatcher (``@njit``, or a ``@vectorize`` kernel's) and the key in its
    ``overloads`` (argument types or signature) whose compiled code is ``library``."""
    for obj in _tracked_objects():
        if issubclass(type(obj), (Dispatcher, UFuncDispatcher)):  # not isinstance: weak proxies
            for key, cres in list(obj.overloads.items()):
                if getattr(cres, "library", None) is library:
                    return obj, key
    return None


def _tracked_objects() -> list:
    """Every object the garbage collector tracks, those `gc.freeze` moved out of its
    generations included (`gc.get_objects` omits them); they are frozen again after, with
    what the generations held."""
    if not gc.get_freeze_count():
        return gc.get_objects()
    gc.unfreeze()
    try:
        return gc.get_objects()
    finally:
        gc.freeze()
