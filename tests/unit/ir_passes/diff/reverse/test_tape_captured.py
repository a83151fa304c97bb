"""The tape of a derivative that is itself differentiated (ir_passes/diff/reverse/
tape_captured.py): the module text a front end captures, rewritten so that every tape buffer
is an allocation the pass shadows. (End to end: tests/test_second_order.py.)"""
from __future__ import annotations

import enzyme_py  # noqa: F401  (registers Numba's runtime: the raw free is NRT_Free)
from ir_passes.canonicalize import verify
from ir_passes.diff.reverse.tape_captured import differentiable_tapes
from ir_passes.ir.printer import print_module
from tests.support.filecheck import check
from tests.unit.ir_passes.diff.reverse.test_tape import build_lifo


def test_captured_tape_starts_empty_grows_by_copy_and_is_freed():
    text = differentiable_tapes(print_module(build_lifo()))
    verify(text)
    check(text, """
        CHECK-LABEL: define void @lifo(ptr %in, ptr %out, i64 %n)
        CHECK-NOT: atomicrmw
        CHECK: [[EMPTY:%[^ ]+]] = call ptr @enzyme_py.tape.allocate(i64 8)
        CHECK-NEXT: store i64 0, ptr [[EMPTY]]
        CHECK: store ptr [[EMPTY]], ptr %tape.base
        CHECK-LABEL: done:
        CHECK: call void @enzyme_py.tape.release(ptr
        CHECK-LABEL: define internal { ptr, ptr, ptr } @enzyme_py.tape.grow(
        CHECK-SAME: ptr %base, ptr %top, ptr %end, i64 %need) {
        CHECK: [[NEW:%[^ ]+]] = call ptr @enzyme_py.tape.allocate(i64
        CHECK-NEXT: call void @llvm.memcpy.p0.p0.i64(ptr [[NEW]], ptr %base, i64 {{%.+}}, i1 true)
        CHECK-NEXT: call void @NRT_Free(ptr %base)
        CHECK-LABEL: define internal void @enzyme_py.tape.release(ptr %base, ptr %end) {
        CHECK-NEXT: entry:
        CHECK-NEXT: call void @NRT_Free(ptr %base)
        CHECK-NEXT: ret void
    """)
    assert "call ptr @realloc" not in text and "atomicrmw" not in text


def test_modules_without_a_tape_are_left_as_they_are():
    text = "define i64 @f(i64 %x) {\nentry:\n  ret i64 %x\n}\n"
    assert differentiable_tapes(text) is text
