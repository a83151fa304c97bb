"""The escape analysis of arrays the primal allocates (ir_passes/diff/allocations.py), on tiny
hand-written functions: the meminfo of an array holding active values may be merged by phis
and selects (Numba sinks one decref to the join of two branches, of either array or of null)
and reference counted, but never stored, passed to a call or returned.
"""
from __future__ import annotations

import pytest

from ir_passes.analysis.activity import analyze_activity
from ir_passes.diagnostics import Diagnostics
from ir_passes.diff.allocations import meminfo_merges, shadowed_allocations
from ir_passes.errors import UnsupportedError
from ir_passes.ir.parser import parse_module

DECLS = """
declare ptr @NRT_MemInfo_alloc_aligned(i64, i32)
declare ptr @NRT_MemInfo_data_fast(ptr)
declare void @NRT_decref(ptr)
declare void @sink(ptr)
"""

# A temporary filled from x in one branch; its meminfo reaches the join as a phi with null.
BRANCH = DECLS + """
define void @f(ptr %ret, ptr %x, i1 %c, ptr %out) {
entry:
  %slot = alloca ptr
  call void @sink(ptr %slot)
  br i1 %c, label %then, label %join
then:
  %mi = call ptr @NRT_MemInfo_alloc_aligned(i64 8, i32 32)
  %d = call ptr @NRT_MemInfo_data_fast(ptr %mi)
  %v = load double, ptr %x
  store double %v, ptr %d
  %w = load double, ptr %d
  store double %w, ptr %ret
  br label %join
join:
  %m = phi ptr [ %mi, %then ], [ null, %entry ]
  %m2 = select i1 %c, ptr %m, ptr null
  USE
  ret void
}
"""


def _allocations(use: str):
    module = parse_module(BRANCH.replace("USE", use))
    fn = module.functions["f"]
    args = {a.name: a for a in fn.args}
    info = analyze_activity(fn, set(), {args["x"], args["ret"]})
    return fn, shadowed_allocations(fn, info, Diagnostics(module, fn))


@pytest.mark.parametrize("use", ["call void @NRT_decref(ptr %m)",
                                 "call void @NRT_decref(ptr %m2)",
                                 "%same = icmp eq ptr %m2, null"])
def test_merged_meminfos_that_are_only_counted_do_not_escape(use):
    fn, allocs = _allocations(use)
    assert {a.name for a in allocs} == {"mi"}
    assert [m.name for m in meminfo_merges(fn, allocs)] == ["m", "m2"]


@pytest.mark.parametrize("use, how", [
    ("call void @sink(ptr %m)", "it is passed to 'sink'"),
    ("store ptr %m2, ptr %slot", "it is stored into memory"),
    ("store ptr %m, ptr %out", "it is returned (or stored into an argument)"),
    ("%agg = insertvalue { ptr } undef, ptr %m2, 0", "it flows into 'insertvalue'"),
])
def test_a_merged_meminfo_that_escapes_is_refused(use, how):
    with pytest.raises(UnsupportedError) as err:
        _allocations(use)
    msg = str(err.value)
    assert msg.startswith("cannot differentiate: an array holding active values escapes the "
                          f"function: {how}"), msg
    assert f"  instruction: {use}" in msg, msg
