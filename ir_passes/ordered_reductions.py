"""Ordered floating-point reductions for our own LLVM optimisation runs, and only for them.

A strict `s += f(x[i])` loop is not vectorised by LLVM on x86 unless reassociation is allowed
(`fastmath`), which changes the result. LLVM's `-force-ordered-reductions` lets the loop
vectoriser vectorise it anyway with in-order reductions (`llvm.vector.reduce.fadd(acc, v)`:
the lanes are added one after the other, so the result is bit-identical to the sequential
loop) -- the vector work is the body (loads, math, tangents), the sum stays serial.

llvmlite can only set LLVM options process-wide (`llvm.set_option`); there is no per-module or
per-loop equivalent (loop metadata `llvm.loop.vectorize.enable` would allow *reordering*). So
`ordered_reductions()` sets the option for the duration of one of our optimisation runs, under
Numba's global compiler lock (every Numba compile holds it, so no other compile in the process
sees the option), and sets it back to LLVM's default, `false`, afterwards.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import llvmlite.binding as llvm

__all__ = ["ordered_reductions"]

_OPTION = "-force-ordered-reductions"


def _compiler_lock():
    """Numba's global compiler lock (reentrant) when Numba is importable, else no lock."""
    try:
        from numba.core.compiler_lock import global_compiler_lock
    except ImportError:   # ir_passes is usable without Numba: then no Numba compile can race
        return contextlib.nullcontext()
    return global_compiler_lock


@contextlib.contextmanager
def ordered_reductions() -> Iterator[None]:
    """Within the block, LLVM's loop vectoriser vectorises strict FP reductions in order."""
    with _compiler_lock():
        llvm.set_option("", f"{_OPTION}=true")
        try:
            yield
        finally:
            llvm.set_option("", f"{_OPTION}=false")
