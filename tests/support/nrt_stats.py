"""NRT's allocation statistics, counted around a block of test code."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Callable, Iterator

import pytest
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


class NRTCounter:
    """NRT's allocation counters over a window opened by `start()` (garbage collected at both
    ends, so arrays Python still holds are not counted as leaks)."""

    def __init__(self) -> None:
        self._start = None

    def start(self) -> None:
        gc.collect()
        self._start = rtsys.get_allocation_stats()

    def delta(self) -> tuple[int, int, int, int]:
        """(alloc, free, mi_alloc, mi_free) since `start()`."""
        assert self._start is not None, "start() first"
        gc.collect()
        return tuple(n - s for n, s in zip(rtsys.get_allocation_stats(), self._start))

    def assert_balanced(self) -> None:
        """As many releases as allocations since `start()`, of memory and of owners."""
        alloc, free, mi_alloc, mi_free = self.delta()
        assert alloc == free, f"NRT allocations {alloc} != frees {free}"
        assert mi_alloc == mi_free, f"NRT meminfo allocations {mi_alloc} != frees {mi_free}"


@pytest.fixture
def nrt_stats() -> Iterator[NRTCounter]:
    """A test's `NRTCounter`, with NRT's statistics enabled for the test (tests/conftest.py
    offers it to every test)."""
    with nrt_statistics():
        yield NRTCounter()
