"""Tiny timing helpers shared by the benchmark scripts (not a test harness).

Every measurement is a median over repeats after warm-up calls (the first call of a Numba
function compiles it). `compare` interleaves the calls it compares, one repeat of each in
turn, so that clock drift, frequency scaling and cache state hit all of them alike.

The clock is the process's CPU time by default: on a shared machine, a process descheduled for
a few milliseconds does not charge that to whichever function happened to be running, which
wall-clock medians do (we saw single rows double). For single-threaded Numba code CPU time is
the run time; for multi-threaded code (JAX) it is the total work of all threads.
`set_clock("wall")` switches to `time.perf_counter`.
"""
from __future__ import annotations

import os
import statistics
import time
from typing import Callable, Sequence

__all__ = ["calibrate", "clock_name", "compare", "fmt_time", "machine_note", "median_time",
           "now", "set_clock", "table"]

_CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
_clock = "cpu"


def set_clock(name: str) -> None:
    """Measure with "cpu" (process CPU time, the default) or "wall" (perf_counter)."""
    global _clock
    if name not in _CLOCKS:
        raise ValueError(f"clock must be one of {sorted(_CLOCKS)}, got {name!r}")
    _clock = name


def clock_name() -> str:
    return {"cpu": "process CPU time", "wall": "wall-clock time"}[_clock]


def now() -> float:
    """Seconds on the selected clock."""
    return _CLOCKS[_clock]()


def calibrate(fn: Callable[[], object], min_seconds: float = 2e-3) -> int:
    """How many back-to-back calls of `fn` take at least `min_seconds` (so that the clock's
    resolution and the ~0.2 us Python->Numba call overhead are negligible)."""
    number = 1
    while True:
        t0 = now()
        for _ in range(number):
            fn()
        if now() - t0 >= min_seconds:
            return number
        number *= 2


def median_time(fn: Callable[[], object], repeats: int = 21, warmup: int = 2) -> float:
    """Median seconds per call of `fn` over `repeats` samples, after `warmup` calls."""
    return compare([fn], repeats, warmup)[0]


def compare(fns: Sequence[Callable[[], object]], repeats: int = 21, warmup: int = 2,
            min_seconds: float = 2e-3) -> list[float]:
    """Median seconds per call of each of `fns`, measured interleaved in one run."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    numbers = [calibrate(fn, min_seconds) for fn in fns]
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, number, out in zip(fns, numbers, samples):
            t0 = now()
            for _ in range(number):
                fn()
            out.append((now() - t0) / number)
    return [statistics.median(s) for s in samples]


def fmt_time(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def machine_note() -> str:
    """One line on the clock and how busy the machine is."""
    cpus = os.cpu_count() or 1
    try:
        load = f"load average {os.getloadavg()[0]:.2f} on {cpus} CPUs"
    except OSError:                    # not available on this platform
        load = f"{cpus} CPUs"
    return f"clock: {clock_name()}; {load}"


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Plain-text table with left-aligned first column and right-aligned others."""
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(r):
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(r, widths)))
    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)
