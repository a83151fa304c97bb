"""Pytest parameters over the kernel corpus for the end-to-end derivative tests.

``corpus_params(check)`` is every corpus kernel as a ``pytest.param`` with the kernel name as
id, grouped per kernel for ``pytest-xdist --dist loadgroup`` (the checks of one kernel then
run in one worker and share the derivatives ``tests.support.gradcheck`` caches there).

``kernel_checks(kernels, checks)`` is the same for a test file's own kernels: one
``(kernel, check)`` param per kernel and check, with ids ``check-name``, grouped per kernel.

Known failures go in ``KNOWN_FAILURES`` as ``(kernel name, check) -> reason``; they are marked
``xfail(strict=True)``, so a fix shows up as an XPASS that must remove the entry.

``full_tier()``: whether ``ENZYME_TESTS=full`` asks for the full test tier (longer runs).
"""
from __future__ import annotations

import os

import pytest

from tests.kernels import KERNELS
from tests.support.kernel import Kernel

CHECKS = ("forward", "reverse", "inner_product", "vector_forward")

#: (kernel name, check) -> why it fails. Empty: every corpus kernel passes every check.
KNOWN_FAILURES: dict[tuple[str, str], str] = {}


def kernel_param(k: Kernel, check: str) -> object:
    assert check in CHECKS
    marks = [pytest.mark.xdist_group(name=f"kernel-{k.name}")]
    reason = KNOWN_FAILURES.get((k.name, check))
    if reason is not None:
        marks.append(pytest.mark.xfail(strict=True, reason=reason))
    return pytest.param(k, id=k.name, marks=marks)


def corpus_params(check: str, kernels: list[Kernel] | None = None) -> list:
    return [kernel_param(k, check) for k in (KERNELS if kernels is None else kernels)]


def kernel_checks(kernels: list[Kernel], checks: tuple[str, ...] = CHECKS[:3]) -> list:
    """``(kernel, check)`` for every kernel and check (see ``tests.support.gradcheck.run_check``),
    the checks of one kernel in one xdist group: the inner product and the vector forward
    check reuse the derivatives the forward and reverse checks compiled on that worker."""
    assert set(checks) <= set(CHECKS)
    return [pytest.param(k, c, id=f"{c}-{k.name}",
                         marks=[pytest.mark.xdist_group(name=f"{k.fn.__module__}-{k.name}")])
            for k in kernels for c in checks]


def full_tier() -> bool:
    """``ENZYME_TESTS=full``: tests with a default and a full size run the full one."""
    return os.environ.get("ENZYME_TESTS", "") == "full"
