"""One numpy sweep entry, and the test kernel generated from it.

An entry is a numpy call written as an expression over named parameters (``"np.sin(x)"``
over ``"x"``), with a point generator for the parameters. Its kernel is the generated source

    def k(x, w):                        # array result: w is a const weight array, so every
        return (np.sin(x) * w).sum()    # output component reaches the float result

or ``def k(x): return <expr>`` when the expression is a float. Statements in ``setup`` come
before the return (``"z = x.copy()"``, ``"z.sort()"``, then the expression ``"z"``).
"""
from __future__ import annotations

import linecache
import re
from dataclasses import dataclass
from typing import Callable

import numba
import numpy as np

from tests.support.kernel import Kernel

#: Seed of the fixed weights that reduce an array result to a float.
WEIGHT_SEED = 12345


#: Operator spellings in entry names, as words (so identifiers stay distinct).
_SYMBOLS = (("**", " pow "), ("+", " plus "), ("-", " minus "), ("*", " mul "), ("/", " div "),
            ("@", " matmul "), (">", " gt "), ("=", " eq "), (":", " all "))


@dataclass(frozen=True)
class Entry:
    """A numpy call to differentiate.

    name:        what users write (``"np.sin"``, ``"x.reshape"``); unique in the sweep.
    expr:        a float or float-array expression of ``params``.
    point:       ``rng -> tuple`` of the parameter values (fresh arrays).
    params:      comma-separated parameter names (integer/bool arrays are const by type).
    category:    the section of the sweep (``"unary"``, ``"reduction"``, ...).
    setup:       statements run before ``expr``.
    known_wrong: why the derivative is wrong today (the modes in ``wrong_modes`` are then
                 strict xfails); ``None`` when it is right or refused.
    fd_rtol:     finite-difference tolerance override (``None``: the checker's default).
    """

    name: str
    expr: str
    point: Callable[[np.random.Generator], tuple]
    params: str = "x"
    category: str = ""
    setup: tuple[str, ...] = ()
    known_wrong: str | None = None
    wrong_modes: tuple[str, ...] = ("forward", "reverse")
    fd_rtol: float | None = None

    @property
    def ident(self) -> str:
        """A Python identifier made from the name (for kernel and derivative names)."""
        name = self.name
        for symbol, word in _SYMBOLS:
            name = name.replace(symbol, word)
        return re.sub(r"_+", "_", re.sub(r"\W", "_", name)).strip("_")

    def is_known_wrong(self, mode: str) -> bool:
        return self.known_wrong is not None and mode in self.wrong_modes


def _source(entry: Entry, weighted: bool) -> str:
    params = entry.params + (", w" if weighted else "")
    body = [f"    {line}" for line in entry.setup]
    result = f"(({entry.expr}) * w).sum()" if weighted else entry.expr
    return "\n".join([f"def sweep_{entry.ident}({params}):", *body, f"    return {result}", ""])


def _define(entry: Entry, source: str) -> Callable:
    """exec ``source``; its lines are registered with linecache so tracebacks and Numba
    messages can show them."""
    filename = f"<numpy-sweep {entry.name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {"np": np, "numba": numba}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[f"sweep_{entry.ident}"]


def make_kernel(entry: Entry) -> Kernel:
    """The entry's test kernel: float result, with a const weight array appended when the
    expression is an array (weights of magnitude 0.5..1.5, random signs, fixed seed)."""
    plain = _define(entry, _source(entry, False))
    value = plain(*entry.point(np.random.default_rng(0)))
    if not isinstance(value, np.ndarray):
        return Kernel(entry.ident, plain, entry.point, fd_rtol=entry.fd_rtol)
    rng = np.random.default_rng(WEIGHT_SEED)
    weights = rng.uniform(0.5, 1.5, size=value.shape) * rng.choice((-1.0, 1.0), value.shape)
    n_params = len(entry.params.split(","))
    return Kernel(entry.ident, _define(entry, _source(entry, True)),
                  lambda r: entry.point(r) + (weights.copy(),), const=(n_params,),
                  fd_rtol=entry.fd_rtol)
