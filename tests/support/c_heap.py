"""The C heap's bytes in use, for tests that check memory the derivative mallocs itself
(tape, tables) is released on every return."""
from __future__ import annotations

import ctypes
import ctypes.util
from typing import Callable


def c_heap_bytes() -> Callable[[], int] | None:
    """A probe of the bytes in use in the C heap (glibc mallinfo2: arena + mmapped chunks), or
    None where libc has no mallinfo2."""
    path = ctypes.util.find_library("c")
    libc = ctypes.CDLL(path) if path else None
    if libc is None or not hasattr(libc, "mallinfo2"):
        return None

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]
    libc.mallinfo2.restype = MallInfo2
    return lambda: (lambda m: m.uordblks + m.hblkhd)(libc.mallinfo2())
