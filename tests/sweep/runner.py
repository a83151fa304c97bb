"""Check one sweep entry in one mode and classify the outcome.

Outcomes:
- ``ok``: the derivative matches central finite differences (forward: the directional
  derivative along a random tangent; reverse: the gradient of the seeded outputs) and, in
  reverse mode when forward is also ok, the inner-product identity ``<J t, w> == <t, J^T w>``.
- ``unsupported``: ``enzyme_py.UnsupportedError``, a clean refusal.
- ``wrong``: the derivative differs from finite differences or from the other mode.
- ``numba-unsupported``: Numba itself cannot compile the primal for these types.
- ``crash``: anything else (an internal error of the pass, a Numba failure while compiling
  the derivative, a Python exception): a bug.

One derivative per (entry, mode) is compiled per process (``tests.support.gradcheck`` caches
them); finite differences are skipped once a derivative is refused.
"""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass, replace

from numba.core.errors import TypingError

import enzyme_py
from tests.support.gradcheck import (check_forward, check_inner_product, check_reverse,
                                     compiled)
from tests.support.kernel import Kernel
from tests.sweep.entry import Entry, make_kernel

MODES = ("forward", "reverse")
OUTCOMES = ("ok", "unsupported", "wrong", "numba-unsupported", "crash")

#: jit_options={} makes the checkers hand the primal's own dispatcher to derive_diff, so
#: the primal is compiled once per entry.
JIT = {}


@dataclass(frozen=True)
class Result:
    entry: Entry
    mode: str
    outcome: str
    message: str = ""          # the error's text ("" when ok)
    seconds: float = 0.0       # process CPU time of the checks (compiles included)

    @property
    def first_line(self) -> str:
        return self.message.strip().splitlines()[0] if self.message.strip() else ""


_KERNELS: dict[str, Kernel] = {}
_RESULTS: dict[tuple[str, str], Result] = {}


def kernel_of(entry: Entry) -> Kernel:
    if entry.name not in _KERNELS:
        _KERNELS[entry.name] = make_kernel(entry)
    return _KERNELS[entry.name]


def _primal_error(kernel: Kernel) -> str | None:
    """Numba's message when it cannot compile the primal, else None."""
    try:
        compiled(kernel.fn, JIT)(*kernel.args())
    except TypingError as exc:
        return str(exc)
    return None


def _check(kernel: Kernel, mode: str, with_inner_product: bool) -> None:
    if mode == "forward":
        check_forward(kernel, jit_options=JIT)
    else:
        check_reverse(kernel, jit_options=JIT)
        if with_inner_product:
            check_inner_product(kernel, jit_options=JIT)


def run(entry: Entry, mode: str) -> Result:
    """The entry's outcome in ``mode`` (memoized per process). Reverse mode runs forward
    first: the inner-product check needs both derivatives."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    key = (entry.name, mode)
    if key not in _RESULTS:
        inner = mode == "reverse" and run(entry, "forward").outcome == "ok"
        start = time.process_time()
        result = _classify(entry, mode, inner)
        _RESULTS[key] = replace(result, seconds=time.process_time() - start)
    return _RESULTS[key]


def _classify(entry: Entry, mode: str, with_inner_product: bool) -> Result:
    kernel = kernel_of(entry)
    numba_error = _primal_error(kernel)
    if numba_error is not None:
        return Result(entry, mode, "numba-unsupported", numba_error)
    try:
        _check(kernel, mode, with_inner_product)
    except enzyme_py.UnsupportedError as exc:
        return Result(entry, mode, "unsupported", str(exc))
    except AssertionError as exc:
        return Result(entry, mode, "wrong", str(exc))
    except Exception as exc:  # noqa: BLE001 - every other failure is a crash to report
        return Result(entry, mode, "crash",
                      f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}")
    return Result(entry, mode, "ok")
