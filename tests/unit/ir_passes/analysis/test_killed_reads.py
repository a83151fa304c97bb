"""Kill before read (`ir_passes.analysis.killed_reads`): the outer loop of a Numba kernel is
proven only when every read of memory its body writes follows, in the same iteration, a loop
storing that temporary's whole extent; ADBench GMM's data-point loop is proven."""
from __future__ import annotations

import math
import pathlib
import sys

import numpy as np
import pytest

from enzyme_py.inspection import inspect
from ir_passes.analysis.cfg import find_loops
from ir_passes.analysis.killed_reads import killed_reads, print_killed_reads
from ir_passes.ir.parser import parse_module

_BENCH = pathlib.Path(__file__).parents[4] / "examples" / "benchmarks"
_M2 = "float64[:,::1], float64[::1]"


def _function(py, types, activities):
    module = parse_module(inspect(py, activities, stage="canonical", types=types))
    return next(f for f in module.functions.values() if not f.is_declaration)


def _outer(py, types=_M2, activities=("dup", "dup")):
    """The verdict for the outermost loop holding other loops."""
    fn = _function(py, types, activities)
    loops = find_loops(fn)
    outer = [l for l in loops if l.parent is None and any(o.parent is l for o in loops)]
    assert len(outer) == 1, [l.header.name for l in outer]
    return killed_reads(fn, outer[0])


def filled(x, out):
    n, d = x.shape
    t = np.empty(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(x[i, j])
        for j in range(d):
            s += t[j] * t[j]
    return s


def filled_then_updated(x, out):                 # GMM's qxc: filled, then read-modify-write
    n, d = x.shape
    t = np.empty(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(x[i, j])
        for j in range(d):
            for l in range(j + 1, d):
                t[l] += x[i, j] * t[j]
        for j in range(d):
            s += math.sin(t[j])
    return s


def read_before_fill(x, out):
    n, d = x.shape
    t = np.zeros(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            s += t[j] * x[i, j]
        for j in range(d):
            t[j] = math.exp(x[i, j])
    return s


def partly_filled(x, out):
    n, d = x.shape
    t = np.zeros(d)
    s = 0.0
    for i in range(n):
        for j in range(d - 1):
            t[j] = math.exp(x[i, j])
        for j in range(d):
            s += math.sin(t[j])
    return s


def filled_from_one(x, out):
    n, d = x.shape
    t = np.zeros(d)
    s = 0.0
    for i in range(n):
        for j in range(1, d):
            t[j] = math.exp(x[i, j])
        for j in range(d):
            s += math.sin(t[j])
    return s


def filled_conditionally(x, out):
    n, d = x.shape
    t = np.zeros(d)
    s = 0.0
    for i in range(n):
        if x[i, 0] > 0.0:
            for j in range(d):
                t[j] = math.exp(x[i, j])
        for j in range(d):
            s += math.sin(t[j])
    return s


def filled_every_other(x, out):
    n, d = x.shape
    t = np.zeros(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            if j % 2 == 0:
                t[j] = math.exp(x[i, j])
        for j in range(d):
            s += math.sin(t[j])
    return s


def argument_read_back(x, out):
    n, d = x.shape
    s = 0.0
    for i in range(n):
        for j in range(d):
            out[j] = math.exp(x[i, j])
        for j in range(d):
            s += math.sin(out[j])
    return s


def larger_allocation(x, out):
    n, d = x.shape
    t = np.empty(d + 1)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(x[i, j])
        for j in range(d):
            s += math.sin(t[j])
    return s


def fill_reads_itself(x, out):
    n, d = x.shape
    t = np.zeros(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(x[i, j]) * t[d - 1 - j]
        for j in range(d):
            s += math.sin(t[j])
    return s


def raising_body(x, out):
    n, d = x.shape
    t = np.empty(d)
    s = 0.0
    for i in range(n):
        for j in range(d):
            t[j] = math.exp(x[i, j])
        if t[0] > 1e300:
            raise ValueError("overflow")
        for j in range(d):
            s += t[j] * t[j]
    return s


def filled_per_row(x, out):                      # the body is the fill loop itself: not inner
    n, d = x.shape
    t = np.empty(n)
    s = 0.0
    for i in range(n):
        t[i] = math.exp(x[i, 0])
        for j in range(i + 1):                   # reads what earlier iterations wrote
            s += math.sin(t[j]) * x[i, 0]
    return s


@pytest.mark.parametrize("py", [filled, filled_then_updated, raising_body])
def test_proven(py):
    result = _outer(py)
    assert result.proven, print_killed_reads(result)
    assert len(result.verdicts) == 1


@pytest.mark.parametrize("py, reason", [
    (read_before_fill, "before a whole fill"),
    (partly_filled, "no loop in the body stores its whole extent"),
    (filled_from_one, "no loop in the body stores its whole extent"),
    (filled_conditionally, "before a whole fill"),
    (filled_every_other, "no loop in the body stores its whole extent"),
    (argument_read_back, "not a temporary the function allocated"),
    (larger_allocation, "no loop in the body stores its whole extent"),
    (fill_reads_itself, "before a whole fill"),
    (filled_per_row, "no loop in the body stores its whole extent"),
])
def test_not_proven(py, reason):
    result = _outer(py)
    assert not result.proven
    assert reason in print_killed_reads(result)


def test_gmm_data_point_loop():
    """GMM's loop over data points i: qxc is filled per component k before its reads,
    main_term is filled by the k loop before the max and the log-sum-exp read it (when
    K == 0 the reads are out of bounds: that path is not walked)."""
    sys.path.insert(0, str(_BENCH))
    try:
        import bench_kernels
    finally:
        sys.path.remove(str(_BENCH))
    fn = _function(bench_kernels.gmm_objective,
                   "float64[::1], float64[:,::1], float64[:,::1], float64[:,::1], float64, "
                   "int64", ("dup", "dup", "dup", "const", "const", "const"))
    loops = find_loops(fn)
    by_size = sorted(loops, key=lambda l: len(l.blocks))
    data_points = by_size[-1]
    assert data_points.parent is None
    result = killed_reads(fn, data_points)
    text = print_killed_reads(result)
    assert result.proven, text
    assert len(result.verdicts) == 2 and text.count(": proven (filled by %") == 2
    # the triangular update loop alone reads qxc it did not fill
    update = next(l for l in loops if l.parent is not None and l.parent.parent is data_points
                  and any(o.parent is l for o in loops))
    assert not killed_reads(fn, update).proven


_IR = """
declare ptr @NRT_MemInfo_alloc_aligned(i64, i32)
declare ptr @NRT_MemInfo_data_fast(ptr)

define double @f(ptr %x, i64 %n, i64 %m, i64 %other) {{
entry:
  %size = {size}
  %mi = call ptr @NRT_MemInfo_alloc_aligned(i64 %size, i32 32)
  %t = call ptr @NRT_MemInfo_data_fast(ptr %mi)
  br label %outer

outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer.latch ]
  %s = phi double [ 0.0, %entry ], [ %s.next, %outer.latch ]
  %empty = icmp eq i64 {guard}, 0
  br i1 %empty, label %read.pre, label %fill

fill:
  %j = phi i64 [ 0, %outer ], [ %j.next, %fill ]
  %xj.at = getelementptr double, ptr %x, i64 %j
  %xj = load double, ptr %xj.at, align 8
  %tj = getelementptr {elem}, ptr %t, i64 %j
  store double %xj, ptr %tj, align 8
  %j.next = add nuw nsw i64 %j, 1
  %done = icmp eq i64 %j.next, %n
  br i1 %done, label %read.pre, label %fill

read.pre:
  %t0 = load double, ptr %t, align 8
  %s.next = fadd double %s, %t0
  br label %outer.latch

outer.latch:
  %i.next = add nuw nsw i64 %i, 1
  %end = icmp eq i64 %i.next, %m
  br i1 %end, label %exit, label %outer

exit:
  ret double %s.next
}}
"""


@pytest.mark.parametrize("size, elem, guard, proven", [
    ("shl i64 %n, 3", "double", "%n", True),
    ("mul i64 %n, 8", "double", "%n", True),
    ("mul i64 8, %n", "double", "%n", True),
    ("shl i64 %n, 4", "double", "%n", False),      # twice as long as the fill
    ("shl i64 %m, 3", "double", "%n", False),      # another length
    ("shl i64 %n, 3", "i8", "%n", False),          # the index counts bytes
    ("shl i64 %n, 3", "double", "%other", False),  # skipping the fill says nothing of %n
])
def test_whole_extent_on_ir(size, elem, guard, proven):
    fn = parse_module(_IR.format(size=size, elem=elem, guard=guard)).functions["f"]
    outer = next(l for l in find_loops(fn) if l.header.name == "outer")
    assert killed_reads(fn, outer).proven is proven


def test_memory_of_unknown_origin():
    """A pointer loaded from memory may address what the body writes."""
    fn = parse_module("""
define double @f(ptr %pp, ptr %y, i64 %m) {
entry:
  br label %outer

outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer ]
  %s = phi double [ 0.0, %entry ], [ %s.next, %outer ]
  %p = load ptr, ptr %pp, align 8
  %v = load double, ptr %p, align 8
  store double %v, ptr %y, align 8
  %s.next = fadd double %s, %v
  %i.next = add nuw nsw i64 %i, 1
  %end = icmp eq i64 %i.next, %m
  br i1 %end, label %exit, label %outer

exit:
  ret double %s.next
}
""").functions["f"]
    result = killed_reads(fn, find_loops(fn)[0])
    assert not result.proven
    assert "memory of unknown origin" in print_killed_reads(result)
