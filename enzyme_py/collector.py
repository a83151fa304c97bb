"""Compiles run with Python's cyclic garbage collector paused (`paused`).

A derivative's compile allocates hundreds of thousands of objects (Numba's typing and
lowering, llvmlite, our IR) that live for the whole compile: each young collection promotes
them, and every few compiles that promotion triggers a full collection of the process's heap
(~0.1 s with Numba loaded, more in a large process). Paused, the compile's garbage is freed
by one young collection at its end (an explicit one, which never escalates to a full one);
full collections become about a quarter as frequent (3 instead of 12 over 42 derives of the
benchmark kernels).
"""
from __future__ import annotations

import contextlib
import gc

__all__ = ["paused"]


@contextlib.contextmanager
def paused():
    """Pause the cyclic collector for the block, then collect the youngest generation (nested
    pauses keep it paused; a collector the user disabled stays disabled, nothing collected)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
            gc.collect(0)
