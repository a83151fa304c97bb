"""Loop-invariant loads moved to the preheader (`ir_passes.invariant_loads`): only when no
write of the loop may touch their memory and they run whenever the loop is entered."""
from __future__ import annotations

import pytest

from ir_passes.invariant_loads import hoist_invariant_loads
from ir_passes.ir.parser import parse_module

_LOOP = """
declare ptr @NRT_MemInfo_alloc_aligned(i64, i32)
declare ptr @NRT_MemInfo_data_fast(ptr)
declare void @opaque(ptr)

define double @f(ptr %arg, ptr %other, i64 %n, i1 %c) {{
entry:
  %mi.a = call ptr @NRT_MemInfo_alloc_aligned(i64 80, i32 32)
  %a = call ptr @NRT_MemInfo_data_fast(ptr %mi.a)
  %mi.b = call ptr @NRT_MemInfo_alloc_aligned(i64 80, i32 32)
  %b = call ptr @NRT_MemInfo_data_fast(ptr %mi.b)
  %read = getelementptr double, ptr {read}, i64 3
  br label %pre

pre:
  br label %loop

loop:
  %i = phi i64 [ 0, %pre ], [ %i.next, %latch ]
  br i1 %c, label %then, label %latch

then:
  br label %latch

latch:
  %v = load double, ptr %read, align 8
  %at = getelementptr double, ptr {write}, i64 %i
  store double %v, ptr %at, align 8
  {extra}
  %i.next = add i64 %i, 1
  %more = icmp slt i64 %i.next, %n
  br i1 %more, label %loop, label %exit

exit:
  ret double %v
}}
"""


def _hoisted(read: str, write: str, extra: str = "") -> bool:
    module = parse_module(_LOOP.format(read=read, write=write, extra=extra))
    fn = module.functions["f"]
    changed = hoist_invariant_loads(fn)
    load = next(i for i in fn.instructions() if i.opcode == "load")
    assert changed == (load.block.name == "pre")
    return changed


def test_a_load_of_one_allocation_leaves_a_loop_writing_another():
    assert _hoisted("%a", "%b")


def test_a_load_stays_when_the_loop_writes_its_memory():
    assert not _hoisted("%a", "%a")


@pytest.mark.parametrize("read, write", [("%arg", "%other"), ("%arg", "%a")])
def test_arguments_count_as_one_memory(read, write):
    """Two pointer arguments may alias (C); an argument never aliases an allocation."""
    assert _hoisted(read, write) == (write == "%a")


def test_an_unknown_call_may_write_anything():
    assert not _hoisted("%a", "%b", "call void @opaque(ptr %other)")


def test_a_conditional_load_stays():
    """A load in a block that does not dominate the loop's exits may not run at all."""
    text = _LOOP.format(read="%a", write="%b", extra="").replace(
        "then:\n  br label %latch", "then:\n  %w = load double, ptr %read, align 8\n"
        "  br label %latch")
    fn = parse_module(text).functions["f"]
    hoist_invariant_loads(fn)
    conditional = next(i for i in fn.instructions() if i.name == "w")
    assert conditional.block.name == "then"
