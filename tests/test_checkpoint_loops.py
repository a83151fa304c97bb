"""Checkpointed loops (`derive_diff(..., checkpoint=True)`, `ir_passes/checkpoint_loops.py`):
the reverse re-runs each iteration of an outermost loop whose body reads only memory it
wrote itself, instead of taping all iterations. Checked against finite differences and
forward-vs-reverse inner products; the loop is shown checkpointed (its body outlined and
its augmented forward called from the reverse) and its tape gone from the caller's."""
from __future__ import annotations

import functools
import math
import pathlib
import sys

import numpy as np
import pytest

from enzyme_py import derive_diff
from enzyme_py.inspection import inspection
from ir_passes.pipeline import Stages
from tests.support.gradcheck import check_inner_product, check_reverse
from tests.support.kernel import Kernel

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "examples" / "benchmarks"))
from bench_kernels import gmm_objective  # noqa: E402

_DERIVE = functools.partial(derive_diff, checkpoint=True)


def filled_rows(x, out):
    """A temporary filled per row, reduced into a carried sum; one output per row."""
    n, d = x.shape
    t = np.empty(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(0.3 * x[i, j])
        for j in range(d):
            for l in range(j + 1, d):
                t[l] += x[i, j] * t[j]
        r = 0.0
        for j in range(d):
            r += math.sin(t[j]) * t[j]
        out[i] = r
        s += r * r
    return s


def raising_rows(x):
    """A body that can raise (not on these inputs)."""
    n, d = x.shape
    t = np.empty(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(x[i, j])
        if t[0] > 1e300:
            raise ValueError("overflow")
        for j in range(d):
            s += t[j] * math.cos(t[j])
    return s


def read_before_fill(x):
    """Not provable (each iteration reads the previous one's fill): today's tape."""
    n, d = x.shape
    t = np.zeros(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            s += math.sin(t[j]) * x[i, j]
        for j in range(d):
            t[j] = math.exp(0.5 * x[i, j])
    return s


def written_after_loop(x, y):
    """Not checkpointed: the body reads y, which is written after the loop."""
    n, d = x.shape
    t = np.empty(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(y[j] * x[i, j])
        for j in range(d):
            s += t[j] * t[j]
    y[0] = s
    return s


def last_row(x, out):
    """Not checkpointed: every iteration writes out[0] (a reverse re-running the iterations,
    last first, would leave the first one's value)."""
    n, d = x.shape
    s = 0.0
    for i in range(n):
        r = 0.0
        for j in range(d):
            r += math.sin(x[i, j]) * x[i, j]
        out[0] = r
        s += r * r
    return s


def overwritten_after_loop(x, out):
    """Not checkpointed: out[i] is written once per iteration, but out[0] again after the
    loop (a re-run iteration would restore its own value)."""
    n, d = x.shape
    s = 0.0
    for i in range(n):
        r = 0.0
        for j in range(d):
            r += math.sin(x[i, j]) * x[i, j]
        out[i] = r
        s += r * r
    out[0] = 2.0 * s
    return s


def _gmm_args(rng):
    d, k, n = 3, 4, 12
    return (rng.normal(size=k), rng.normal(size=(k, d)),
            0.3 * rng.normal(size=(k, d + d * (d - 1) // 2)), rng.normal(size=(n, d)), 1.0, 0)


KERNELS = [
    Kernel("gmm", gmm_objective, _gmm_args, const=(4,)),
    Kernel("filled_rows", filled_rows,
           lambda rng: (rng.uniform(-1, 1, (6, 4)), np.zeros(6)), outputs=(1,)),
    Kernel("raising_rows", raising_rows, lambda rng: (rng.uniform(-1, 1, (5, 3)),)),
    Kernel("read_before_fill", read_before_fill, lambda rng: (rng.uniform(-1, 1, (5, 3)),)),
    Kernel("written_after_loop", written_after_loop,
           lambda rng: (rng.uniform(-1, 1, (5, 3)), rng.uniform(-1, 1, 3)), outputs=(1,)),
    Kernel("last_row", last_row,
           lambda rng: (rng.uniform(-1, 1, (5, 3)), np.zeros(5)), outputs=(1,)),
    Kernel("overwritten_after_loop", overwritten_after_loop,
           lambda rng: (rng.uniform(-1, 1, (5, 3)), np.zeros(5)), outputs=(1,)),
]


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_finite_differences(kernel):
    check_reverse(kernel, derive=_DERIVE)


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_inner_products(kernel):
    check_inner_product(kernel, derive=_DERIVE)


def _stages(fn, acts, types, checkpoint):
    target = inspection(fn, acts, types=types).stages.target
    return Stages(target, checkpoint=checkpoint)


_GMM = ("float64[::1], float64[:,::1], float64[:,::1], float64[:,::1], float64, int64",
        ("dup", "dup", "dup", "const", "const", "const"))


def test_gmm_checkpointed():
    """The data-point loop's body is outlined, run by the forward pass as the primal, and
    by its reverse as augmented forward then reverse; the caller's tape no longer grows
    with the data points (the carried sum is added after each call, not handed to it)."""
    types, acts = _GMM
    on = _stages(gmm_objective, acts, types, True)
    text = on.module_text
    calls = [line for line in text.splitlines() if " call i32 @" in line]
    body = [c for c in calls if ".body.B" in c and "augmented_" not in c and "diffe_" not in c]
    assert body and any("augmented_" in c for c in calls)
    off = _stages(gmm_objective, acts, types, False)
    per_n = {s: _per_point(st) for s, st in (("on", on), ("off", off))}
    assert per_n["on"] == 0 and per_n["off"] > 2000, per_n


def _per_point(stages) -> int:
    """The tape report's bytes per data point (the total at n = 2 minus n = 1)."""
    def total(n):
        text = stages.tape_text({"x.shape[0]": n, "alphas.shape[0]": 25, "x.shape[1]": 10})
        line = next(l for l in text.splitlines() if "total tape per call" in l)
        return int(line.rsplit("=", 1)[1].split()[0])
    return total(2) - total(1)


@pytest.mark.parametrize("fn, types, acts, outlined", [
    (filled_rows, "float64[:,::1], float64[::1]", ("dup", "dup"), True),
    (raising_rows, "float64[:,::1]", ("dup",), True),
    (read_before_fill, "float64[:,::1]", ("dup",), False),
    (written_after_loop, "float64[:,::1], float64[::1]", ("dup", "dup"), False),
    (last_row, "float64[:,::1], float64[::1]", ("dup", "dup"), False),
    (overwritten_after_loop, "float64[:,::1], float64[::1]", ("dup", "dup"), False),
])
def test_which_loops_are_checkpointed(fn, types, acts, outlined):
    text = _stages(fn, acts, types, True).module_text
    calls = [l for l in text.splitlines() if " call i32 @" in l and ".body.B" in l]
    assert bool(calls) is outlined


def test_gmm_loops_chosen():
    """Of GMM's three outermost loops holding loops, the data-point loop (line 62) and the
    prior's K loop (line 94, an exp per j taped) are checkpointed; the K loop summing icf
    (line 56) is not: its reverse keeps nothing per iteration, so a recompute buys nothing.
    The loops inside a checkpointed body stay in it (no nested checkpointing)."""
    types, acts = _GMM
    on = _stages(gmm_objective, acts, types, True)
    text = on.tape_text({})
    lines = {l.split()[1]: l.split()[-1] for l in text.splitlines()
             if l.startswith(";   B") and "trips =" in l}
    chosen = next(l for l in text.splitlines() if l.startswith("; checkpointed loops"))
    headers = chosen.split(": ", 1)[1].split(", ")
    assert sorted(lines[h] for h in headers) == ["bench_kernels.py:62", "bench_kernels.py:94"]
    bodies = [f for f in on.module.functions.values() if ".body." in (f.name or "")]
    assert len(bodies) == 2
    assert not any(i.opcode == "call" and ".body." in getattr(i.callee, "name", "")
                   for f in bodies for i in f.instructions())
