"""Pytest parameters: the kernel corpus for the end-to-end derivative tests, the test tiers,
and the order pytest-xdist hands out work.

``corpus_params(check)`` is every corpus kernel as a ``pytest.param`` with the kernel name as
id, grouped per kernel for ``pytest-xdist --dist loadgroup`` (the checks of one kernel then
run in one worker and share the derivatives ``tests.support.gradcheck`` caches there).

``kernel_checks(kernels, checks)`` is the same for a test file's own kernels: one
``(kernel, check)`` param per kernel and check, with ids ``check-name``, grouped per kernel.

Known failures go in ``KNOWN_FAILURES`` as ``(kernel name, check) -> reason``; they are marked
``xfail(strict=True)``, so a fix shows up as an XPASS that must remove the entry.

Tiers (the one place that decides which parametrized cases a run takes; ``conftest.py``
applies it). ``python -m pytest tests`` is the quick tier; ``ENZYME_TESTS=full`` (``FULL``)
runs every case. A case is a base case (always run) or a *variant*: another dtype, layout,
activity, option set or seed of something a base case already runs. One call marks them:

    @pytest.mark.parametrize("kernel", sampled(variant_params, keep=1))
    pytest.param(..., marks=variant("family", "key"))      # the same, one param at a time

The quick tier runs ``keep`` of a family's keys, chosen by the run's seed
(``ENZYME_TESTS_SEED``, random unless set, printed first and last): the keys sorted, a window
of ``keep`` starting at ``seed * keep + crc32(family)``. A seed always picks the same cases,
and ``ceil(n / keep)`` consecutive seeds run every variant. Keys are param ids, so the
forward, reverse and inner-product tests of one variant kernel run (or not) together and
share its derivatives. ``kernel_variants(kernels)`` finds the variants in a list of
``Kernel``s (same function, same argument shape classes as an earlier kernel): a LAPACK battery
runs all its base kernels and one of its variants. A test named with its
parameters on the command line (``file.py::test[id]``) always runs.

Scheduling: ``heavy_first`` puts the costliest work units (``_costs.json``) first.
"""
from __future__ import annotations

import json
import os
import random
import zlib
from typing import Iterable, Sequence

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


# --- tiers -------------------------------------------------------------------------------------

#: ``ENZYME_TESTS=full``: every case runs; otherwise the quick tier samples the variants.
FULL = os.environ.get("ENZYME_TESTS", "").strip().lower() == "full"


def tier_seed() -> int:
    """The run's sampling seed: ``ENZYME_TESTS_SEED``, else a random one written there so
    that pytest-xdist's workers (started after ``pytest_configure``) draw the same cases."""
    if not os.environ.get("ENZYME_TESTS_SEED", "").strip():
        os.environ["ENZYME_TESTS_SEED"] = str(random.randrange(10_000))
    return int(os.environ["ENZYME_TESTS_SEED"])


def variant(family: str, key: str, keep: int = 1) -> pytest.MarkDecorator:
    """The mark of a case the quick tier samples: it runs ``keep`` of ``family``'s keys."""
    return pytest.mark.variant(family, key, keep)


def sampled(params: Iterable, keep: int = 1, family: str | None = None) -> list:
    """``params`` (values or ``pytest.param``s) as one family of variants, keyed by their ids,
    of which the quick tier runs ``keep``. ``family`` defaults to the sorted ids, so two
    parametrizations over the same cases (forward and reverse of the same kernels) pick the
    same ones."""
    params = [p if isinstance(p, _PARAM) else pytest.param(p) for p in params]
    keys = [_key(p) for p in params]
    family = family or "|".join(sorted(keys))
    return [pytest.param(*p.values, id=p.id, marks=[*p.marks, variant(family, k, keep)])
            for p, k in zip(params, keys)]


def kernel_variants(kernels: Sequence[Kernel], keep: int = 1) -> dict[str, list]:
    """Kernel name -> its marks. A kernel with the function and the argument shape classes of
    an earlier one (each array's dimensions, and whether a matrix is tall, square or wide)
    differs from it only in dtype, layout, activity or size: a variant. The variants of
    ``kernels`` form one family, of which the quick tier runs ``keep``; the others (the base
    kernels) always run."""
    bases: set[tuple] = set()
    variants = []
    for k in kernels:
        shapes = tuple(_shape_class(a) for a in k.args(0))
        if (k.fn, shapes) in bases:
            variants.append(k.name)
        bases.add((k.fn, shapes))
    family = "|".join(sorted(variants))
    return {k.name: [variant(family, k.name, keep)] if k.name in variants else []
            for k in kernels}


def _shape_class(a) -> tuple | None:
    shape = getattr(a, "shape", None)
    if shape is None:
        return None
    return (len(shape), (shape[0] > shape[1]) - (shape[0] < shape[1]) if len(shape) == 2 else 0)


def select_variants(items: list, seed: int, named: Sequence[str] = ()) -> tuple[list, list]:
    """``(kept, deselected)`` items of the quick tier for ``seed``. An item runs when the seed
    picks each of its ``variant`` marks (none: a base case), or its node id ends with one of
    ``named``."""
    families: dict[str, set[str]] = {}
    keeps: dict[str, int] = {}
    for item in items:
        for family, key, keep in (m.args for m in item.iter_markers("variant")):
            families.setdefault(family, set()).add(key)
            keeps[family] = keep
    chosen = {f: _window(sorted(keys), seed, f, keeps[f]) for f, keys in families.items()}
    kept, dropped = [], []
    for item in items:
        run = (all(key in chosen[family] for family, key, _ in
                   (m.args for m in item.iter_markers("variant")))
               or any(item.nodeid.split("@")[0].endswith("::" + n) for n in named))
        (kept if run else dropped).append(item)
    return kept, dropped


def _window(keys: list[str], seed: int, family: str, keep: int) -> set[str]:
    n = len(keys)
    start = seed * keep + zlib.crc32(family.encode())
    return {keys[(start + j) % n] for j in range(min(keep, n))}


def tier_header() -> str:
    if FULL:
        return "enzyme_py tests: full tier (ENZYME_TESTS=full), every case"
    seed = tier_seed()
    return (f"enzyme_py tests: quick tier, variants sampled with seed {seed} "
            f"(ENZYME_TESTS_SEED={seed} repeats this run; ENZYME_TESTS=full runs every case)")


# --- scheduling: heaviest work units first ----------------------------------------------------

#: Seconds per pytest-xdist work unit (an ``xdist_group`` name, or a test's node id); refresh
#: on a quiet machine with ``ENZYME_TESTS=full ENZYME_TESTS_COSTS=tests/_costs.json python -m
#: pytest -q tests`` (``record_cost``). Only the order matters: a stale table costs balance.
COSTS_FILE = os.path.join(os.path.dirname(__file__), "_costs.json")
#: The cost of a test in a unit the table does not list.
DEFAULT_COST = 0.3


def unit_of(item) -> str:
    """The item's pytest-xdist work unit under ``--dist loadgroup``."""
    groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                     for m in item.iter_markers("xdist_group")})
    return "_".join(groups) if groups else item.nodeid


def heavy_first(items: list) -> list:
    """``items`` with the work units in decreasing cost (``COSTS_FILE``), each unit's items in
    their order: ``--dist loadgroup --no-loadscope-reorder`` hands units out in this order, so
    the last to start are short and both workers finish together."""
    with open(COSTS_FILE, encoding="utf-8") as f:
        costs = json.load(f)
    units: dict[str, list] = {}
    for item in items:
        units.setdefault(unit_of(item), []).append(item)
    order = sorted(units, key=lambda u: -costs.get(u, DEFAULT_COST * len(units[u])))
    return [item for u in order for item in units[u]]


def record_cost(costs: dict[str, float], nodeid: str, seconds: float) -> None:
    """Add a test phase's ``seconds`` to its unit's cost (node ids as pytest-xdist reports
    them: ``...::test[id]@group`` under loadgroup)."""
    unit = nodeid.rsplit("@", 1)[1] if nodeid.rfind("@") > nodeid.rfind("]") else nodeid
    costs[unit] = costs.get(unit, 0.0) + seconds


def write_costs(costs: dict[str, float], path: str) -> None:
    """The units above 1 s, rounded, heaviest first."""
    table = {u: round(c, 1) for u, c in sorted(costs.items(), key=lambda kv: -kv[1]) if c >= 1.0}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(table, f, indent=0)
        f.write("\n")


_PARAM = type(pytest.param(None))


def _key(p) -> str:
    return p.id if p.id is not None else "-".join(map(str, p.values))
