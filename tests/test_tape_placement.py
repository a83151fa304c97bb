"""Tape placement (issue 10): values are taped at the loop level where they change.

Each kernel is checked against finite differences and the inner product identity, and its
tape report shows where the moved slot went: out of the innermost loop (to the exit of the
loop it is invariant in), or gone (recomputed). The report must agree with the slots the
real derivative pushes.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from enzyme_py.inspection import inspection
from ir_passes.diff.reverse.retained import Need
from ir_passes.diff.reverse.tape_report import taped_bytes

from tests.unit.enzyme_py.cli.test_tape_report import observed_counts, report_counts
from tests.support.gradcheck import check_all
from tests.support.kernel import Kernel


def heat_swap(u, v, r, steps):
    """Heat steps ping-ponging between u and v (`a, b = b, a`): pointer phis."""
    ny, nx = u.shape
    a, b = u, v
    for _ in range(steps):
        for i in range(1, ny - 1):
            for j in range(1, nx - 1):
                b[i, j] = a[i, j] + r * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1]
                                         + a[i, j + 1] - 4.0 * a[i, j])
        a, b = b, a
    s = 0.0
    for i in range(ny):
        for j in range(nx):
            s += a[i, j] * a[i, j]
    return s


def packed_triangle(icf, x, qx):
    """ADBench-style |Q x_i|^2 with Q's strict lower triangle packed in icf[d:] and read
    through an affine counter in the triangular loop `range(j + 1, d)`."""
    n, d = x.shape
    total = 0.0
    for i in range(n):
        for j in range(d):
            qx[j] = math.exp(icf[j]) * x[i, j]
        idx = d
        for j in range(d):
            for l in range(j + 1, d):
                qx[l] += icf[idx] * x[i, j]
                idx += 1
        for j in range(d):
            total += qx[j] * qx[j]
    return total


def row_weights(A, w):
    """A value computed in the outer loop (exp) and used by every inner iteration."""
    s = 0.0
    for i in range(A.shape[0]):
        e = math.exp(w[i])
        for j in range(A.shape[1]):
            s += e * math.sin(A[i, j])
    return s


def lower_products(x, y):
    """The inner loop `range(i)` is skipped at i = 0 and entered after: which way the
    reverse goes is the guard's condition, recomputed."""
    s = 0.0
    for i in range(x.shape[0]):
        t = 0.0
        for j in range(i):
            t += y[j] * x[j]
        s += x[i] * t
    return s


KERNELS = {
    "heat_swap": Kernel(
        "heat_swap", heat_swap,
        lambda rng: (rng.standard_normal((6, 5)), rng.standard_normal((6, 5)), 0.15, 3),
        outputs=(0, 1), tags=frozenset({"nested-loop", "array2d", "output", "int-arg"})),
    "lower_products": Kernel(
        "lower_products", lower_products,
        lambda rng: (rng.standard_normal(5), rng.standard_normal(5)),
        tags=frozenset({"nested-loop", "array1d"})),
    "packed_triangle": Kernel(
        "packed_triangle", packed_triangle,
        lambda rng: (0.3 * rng.standard_normal(4 + 6), rng.standard_normal((3, 4)),
                     np.zeros(4)),
        outputs=(2,), tags=frozenset({"nested-loop", "array2d", "math", "output"})),
    "row_weights": Kernel(
        "row_weights", row_weights,
        lambda rng: (rng.standard_normal((3, 4)), 0.5 * rng.standard_normal(3)),
        tags=frozenset({"nested-loop", "array2d", "math"})),
}

TYPES = {"heat_swap": ("dup,dup,const,const", "float64[:, ::1], float64[:, ::1], float64, int64"),
         "lower_products": ("dup,dup", "float64[::1], float64[::1]"),
         "packed_triangle": ("dup,const,dup", "float64[::1], float64[:, ::1], float64[::1]"),
         "row_weights": ("dup,dup", "float64[:, ::1], float64[::1]")}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_derivatives_match_finite_differences(name):
    check_all(KERNELS[name], width=0)


@pytest.fixture(scope="module")
def reports():
    cache = {}

    def get(name):
        if name not in cache:
            acts, types = TYPES[name]
            cache[name] = inspection(KERNELS[name].fn, acts, types=types)
        return cache[name]
    return get


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_report_is_what_the_derivative_pushes(reports, name):
    ins = reports(name)
    assert report_counts(ins.tape) == observed_counts(ins.target.canonical_text, ins.spec)
    assert taped_bytes(ins.derivative) == ins.tape.bytes_by_block()


def test_swapped_buffers_tape_their_shadows_once_per_time_step(reports):
    """Nothing is pushed per grid point: the shadows of the swapped pointers (and their
    row strides) are taped at the exit of the row loop, once per step; indices are
    recomputed from the induction variables."""
    report = reports("heat_swap").tape
    stencil = [l.header for l in report.loops if l.depth == 3]
    assert len(stencil) == 1 and not any(e.loops[-1:] == (stencil[0],) for e in report.taped)
    hoisted = [e for e in report.taped if e.reason.startswith("invariant in loop")]
    assert {e.what for e in hoisted} == {Need.SHADOW, Need.VALUE}
    assert all(len(e.loops) == 1 for e in hoisted)           # in the time loop only
    text = reports("heat_swap").text("tape")
    assert "invariant in loop" in text
    assert "; placement (cheapest first):\n;   1. direct: " in text       # the cost model
    assert ";   5. hoist: values invariant in the loops around the use" in text


def test_triangular_loop_pushes_nothing_per_inner_iteration(reports):
    """The packed-triangle read icf[idx] is reloaded (icf is never written), idx is rebuilt
    from the triangular loop's counter and its start, taped once per run of that loop."""
    report = reports("packed_triangle").tape
    inner = [l.header for l in report.loops if l.depth == 3]
    assert len(inner) == 1 and not any(e.loops[-1:] == (inner[0],) for e in report.taped)
    assert any(e.reason == f"invariant in loop {inner[0]} (taped at its exit, read by its "
               "reverse)" for e in report.taped)


def test_outer_loop_value_taped_once_per_outer_iteration(reports):
    """exp(w[i]) is taped at the inner loop's exit (once per i), not per (i, j)."""
    report = reports("row_weights").tape
    exp_entries = [e for e in report.taped if e.type == "double"
                   and e.reason.startswith("invariant in loop")]
    assert len(exp_entries) == 1
    assert all(len(e.loops) == 1 for e in report.taped if e.value == exp_entries[0].value)


def test_stencil_row_trip_count_recomputed(reports):
    """The stencil's column loop runs max(nx - 2, 0) times (Numba clamps with smax, a pure
    intrinsic): its reverse counter is rebuilt from nx, not taped per row."""
    report = reports("heat_swap").tape
    stencil = [l.header for l in report.loops if l.depth == 3]
    assert len(stencil) == 1
    assert not [e for e in report.taped if e.value == f"{stencil[0]}.iter"]
    assert f"{stencil[0]}.iter" in reports("heat_swap").text("tape")


def test_skipped_inner_loop_choice_recomputed(reports):
    """Whether `range(i)` ran (i = 0 skips it) is the guard's condition, not an i32 per
    outer iteration on the tape."""
    report = reports("lower_products").tape
    assert not [e for e in report.taped if e.type == "i32"]
    assert "from %" in reports("lower_products").text("tape")
