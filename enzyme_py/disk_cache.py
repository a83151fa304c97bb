"""The on-disk cache of compiled derivatives (`derive_diff(..., cache=True)`), across processes.

A derivative dispatcher with `cache=True` stores each specialisation it compiles -- its
wrapper with the derivative, as object code in Numba's own cache format -- where Numba would
cache the primal (Numba's cache locators: `__pycache__` next to the primal's source file, or
`NUMBA_CACHE_DIR`), in files named after the primal and the derivative. An entry is found
under the argument types, the CPU (Numba's codegen magic tuple) and a `fingerprint` of what
the derivative is made from: the activity specification and options, the versions of Python,
Numba and llvmlite, the sources of `enzyme_py` and `ir_passes` (sizes and modification
times), the rules given to `register_rule`, and the primal's code -- its bytecode, constants,
closure and the globals it reads, followed through the `@njit` functions it calls, with
their registered derivatives. As in Numba's own cache, the index is also stamped with the
primal's source file: editing that file starts the derivative's cache again.

A second process then pays for reading one file and loading its object code (after libmvec,
which vector-math calls resolve against). An entry that cannot be read (a corrupted file: its
SHA-256 digest does not match, or it does not unpickle) is reported by a `RuntimeWarning` and
compiled again, which replaces it; a cache that cannot be written keeps nothing (the cache is
only a speed-up).
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
import sys
import warnings
from types import CodeType, FunctionType, ModuleType

import llvmlite
import numba
import numpy as np
from numba.core import compiler
from numba.core.caching import CompileResultCacheImpl, FunctionCache, IndexDataCacheFile
from numba.core.dispatcher import Dispatcher
from numba.core.serialize import dumps

from ir_passes.vector_math import libmvec_variants

from .rules import registered_rules

__all__ = ["DerivativeCache", "fingerprint"]

_SCALARS = (int, float, complex, str, bytes, bool, type(None))


class _Corrupted(Exception):
    """A cache entry whose digest does not match its content."""


class _DerivativeCacheImpl(CompileResultCacheImpl):
    """Numba's compile-result cache, located by the primal, named after the derivative,
    its entries checked by digest."""

    def __init__(self, primal_py_func, label: str) -> None:
        self._label = label
        super().__init__(primal_py_func)

    def get_filename_base(self, fullname, abiflags):
        return super().get_filename_base(f"{fullname}.enzyme_{self._label}", abiflags)

    def reduce(self, cres):
        blob = dumps(cres._reduce())
        return hashlib.sha256(blob).hexdigest(), blob

    def rebuild(self, target_context, payload):
        digest, blob = payload
        if hashlib.sha256(blob).hexdigest() != digest:
            raise _Corrupted("digest mismatch")
        libmvec_variants()      # vector math calls resolve against libmvec, loaded first
        return compiler.CompileResult._rebuild(target_context, *pickle.loads(blob))


class DerivativeCache(FunctionCache):
    """The cache of one derivative dispatcher (`wrapper_func` is its `py_func`), keyed by
    `key()` (a fingerprint string) besides the signature and CPU."""

    def __init__(self, wrapper_func, primal_py_func, label: str, key) -> None:
        # Cache.__init__ would locate by the generated wrapper, which has no source file
        self._name = repr(wrapper_func)
        self._py_func = wrapper_func
        self._key = key
        self._impl = _DerivativeCacheImpl(primal_py_func, label)
        self._cache_path = self._impl.locator.get_cache_path()
        self._cache_file = IndexDataCacheFile(
            cache_path=self._cache_path, filename_base=self._impl.filename_base,
            source_stamp=self._impl.locator.get_source_stamp())
        self.enable()

    def _index_key(self, sig, codegen):
        return sig, codegen.magic_tuple(), self._key()

    def load_overload(self, sig, target_context):
        try:
            return super().load_overload(sig, target_context)
        except Exception as exc:     # a damaged entry: compile again (and replace it)
            warnings.warn(f"enzyme_py: the cached derivative {self._impl.filename_base} in "
                          f"{self._cache_path} cannot be read ({type(exc).__name__}: {exc}); "
                          "compiling it again", RuntimeWarning, stacklevel=2)
            return None

    def save_overload(self, sig, data):
        try:
            super().save_overload(sig, data)
        except OSError:              # an unwritable cache directory keeps nothing
            return
        except Exception:            # an unreadable index: start it again
            try:
                self._cache_file.flush()
                super().save_overload(sig, data)
            except Exception:
                return


def fingerprint(primal: Dispatcher, parts: tuple) -> str:
    """A digest of `parts` (activities and options), the versions and sources the
    derivative is compiled with, and the primal's code with what it calls."""
    h = hashlib.sha256(repr((parts, _versions())).encode())
    walker = _CodeWalker(h)
    walker.value(primal)
    for symbol, partials in sorted(registered_rules().items()):   # rules of external calls
        walker.write("register_rule", symbol)
        walker.value(partials)
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def _versions() -> tuple:
    """Python, Numba and llvmlite versions, and a stamp of our own sources."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    stamp = []
    for package in ("enzyme_py", "ir_passes"):
        for folder, dirs, files in os.walk(os.path.join(root, package)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(folder, name))
                    stamp.append((os.path.relpath(os.path.join(folder, name), root),
                                  st.st_size, st.st_mtime_ns))
    digest = hashlib.sha256(repr(stamp).encode()).hexdigest()
    return sys.version, numba.__version__, llvmlite.__version__, digest


class _CodeWalker:
    """Feeds a hash with a function's code and what it reads, following called functions."""

    def __init__(self, h) -> None:
        self.h = h
        self.seen: set[int] = set()

    def write(self, *items) -> None:
        self.h.update(repr(items).encode())

    def value(self, v) -> None:
        if isinstance(v, Dispatcher):
            self.write("njit", sorted(v.targetoptions.items(), key=str))
            self.function(v.py_func)
            self.rules(v)
        elif isinstance(v, FunctionType):
            self.function(v)
        elif isinstance(v, ModuleType):
            self.write("module", v.__name__)
        elif isinstance(v, _SCALARS):
            self.write(type(v).__name__, v)
        elif isinstance(v, (tuple, list)):
            self.write("seq", len(v))
            for item in v:
                self.value(item)
        elif isinstance(v, np.ndarray):
            self.write("array", v.dtype.str, v.shape,
                       hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest())
        elif isinstance(v, (np.generic, numba.types.Type)):
            self.write(type(v).__name__, repr(v))
        else:
            self.write("object", type(v).__module__, type(v).__qualname__)
            inner = getattr(v, "py_func", None)
            if isinstance(inner, FunctionType):
                self.function(inner)

    def function(self, fn: FunctionType) -> None:
        if id(fn) in self.seen:
            self.write("again", fn.__qualname__)
            return
        self.seen.add(id(fn))
        self.write("function", fn.__module__, fn.__qualname__)
        self.code(fn.__code__, fn.__globals__)
        self.value(fn.__defaults__)
        for cell in fn.__closure__ or ():
            try:
                self.value(cell.cell_contents)
            except ValueError:           # an empty cell
                self.write("empty cell")

    def code(self, co: CodeType, globals_: dict) -> None:
        self.write(co.co_code, co.co_names, co.co_varnames, co.co_freevars)
        for const in co.co_consts:
            if isinstance(const, CodeType):
                self.code(const, globals_)
            else:
                self.value(const)
        for name in co.co_names:
            if name not in globals_:
                continue
            found = globals_[name]
            self.write("global", name)
            self.value(found)
            if isinstance(found, ModuleType):     # `module.f(...)`: its njit functions
                for attr in co.co_names:
                    member = getattr(found, attr, None)
                    if isinstance(member, Dispatcher):
                        self.write("member", attr)
                        self.value(member)

    def rules(self, dispatcher: Dispatcher) -> None:
        from .numba_bridge.custom_calls import registered_rules
        rules = registered_rules(dispatcher)
        if rules is not None:
            self.write("rules", rules.inactive)
            for rule in (rules.forward, rules.reverse):
                if rule is not None:
                    self.value(rule)
