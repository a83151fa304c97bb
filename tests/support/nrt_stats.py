"""NRT's allocation statistics, counted around a block of test code."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

from numba.core.runtime import _nrt_python, rtsys


@contextmanager
def nrt_statistics() -> Iterator[None]:
    """NRT counts its allocations inside the block (as it did before, after it)."""
    was_enabled = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        yield
    finally:
        if not was_enabled:
            _nrt_python.memsys_disable_stats()


def frees_by(*calls: Callable[[], object]) -> list[int]:
    """The owners (meminfos) each of `calls`, made in turn, frees."""
    freed = []
    with nrt_statistics():
        for call in calls:
            before = rtsys.get_allocation_stats().mi_free
            call()
            freed.append(rtsys.get_allocation_stats().mi_free - before)
    return freed
