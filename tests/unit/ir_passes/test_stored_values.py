"""Reads of a filled temporary rebuilt from the filling loop's stored value
(`ir_passes.stored_values`): only when the fill certainly wrote the element, in the same
iteration of the loops around both, and nothing else writes the temporary; a temporary no
longer read loses its stores and its allocation."""
from __future__ import annotations

from ir_passes.ir.parser import parse_module
from ir_passes.stored_values import forward_stored_values

_IR = """
declare ptr @NRT_MemInfo_alloc_aligned(i64, i32)
declare ptr @NRT_MemInfo_data_fast(ptr)
declare void @NRT_decref(ptr)
declare void @opaque(ptr)

define double @f(ptr %x, ptr %y, i64 %n, i64 %m, i1 %c) {{
entry:
  %mi = call ptr @NRT_MemInfo_alloc_aligned(i64 80, i32 32)
  %t = call ptr @NRT_MemInfo_data_fast(ptr %mi)
  {escape}
  {enter}

fill.pre:
  br label %fill

fill:
  %j = phi i64 [ 0, %fill.pre ], [ %j.next, %fill.latch ]
  %xj.at = getelementptr double, ptr {source}, i64 %j
  %xj = load double, ptr %xj.at, align 8
  %v = fmul double %xj, 2.0
  {to_store}

fill.store:
  %tj = getelementptr double, ptr %t, i64 %j
  store double %v, ptr %tj, align 8
  br label %fill.latch

fill.latch:
  %j.next = add nuw nsw i64 %j, 1
  %done = icmp eq i64 %j.next, %n
  br i1 %done, label %read.pre, label %fill

read.pre:
  br label %read

read:
  %i = phi i64 [ 0, %read.pre ], [ %i.next, %read ]
  %s = phi double [ 0.0, %read.pre ], [ %s.next, %read ]
  %ti = getelementptr double, ptr %t, i64 %i
  %r = load double, ptr %ti, align 8
  %s.next = fadd double %s, %r
  %i.next = add nuw nsw i64 %i, 1
  %end = icmp eq i64 %i.next, {read_bound}
  br i1 %end, label %exit, label %read

exit:
  store double 0.0, ptr %y, align 8
  call void @NRT_decref(ptr %mi)
  ret double %s.next
}}
"""

_DEFAULTS = dict(escape="", enter="br label %fill.pre", source="%x",
                 to_store="br label %fill.store", read_bound="%n")


def _forward(**changes) -> tuple[bool, str]:
    fn = parse_module(_IR.format(**{**_DEFAULTS, **changes})).functions["f"]
    changed = forward_stored_values(fn)
    reads = [i for i in fn.instructions() if i.opcode == "load" and i.block.name == "read"]
    return changed, reads[0].operands[0].name if reads else ""


def test_the_read_becomes_the_stored_expression_and_the_store_goes():
    fn = parse_module(_IR.format(**_DEFAULTS)).functions["f"]
    assert forward_stored_values(fn)
    read = {i.name: i for i in fn.instructions() if i.block.name == "read"}
    assert read["s.next"].operands[1].opcode == "fmul"            # 2.0 * x[i]
    loads = [i for i in read.values() if i.opcode == "load"]
    assert [l.operands[0].operands[:2] for l in loads] == [[fn.args[0], read["i"]]]
    assert not any(i.opcode == "store" and i.block.name == "fill.store"
                   for i in fn.instructions())
    assert not any((i.callee_name or "").startswith("NRT_") for i in fn.instructions())


def test_a_temporary_still_read_somewhere_keeps_its_allocation():
    changed, _ = _forward(read_bound="%m")
    fn = parse_module(_IR.format(**{**_DEFAULTS, "read_bound": "%m"})).functions["f"]
    forward_stored_values(fn)
    assert not changed and any(i.callee_name == "NRT_MemInfo_alloc_aligned"
                               for i in fn.instructions())


def test_a_fill_that_may_be_skipped_is_not_forwarded():
    assert _forward(enter="br i1 %c, label %fill.pre, label %read.pre") == (False, "ti")


def test_a_read_of_another_range_is_not_forwarded():
    assert _forward(read_bound="%m") == (False, "ti")


def test_a_store_on_some_iterations_only_is_not_forwarded():
    assert _forward(to_store="br i1 %c, label %fill.store, label %fill.latch") == (False, "ti")


def test_a_value_read_from_written_memory_is_not_forwarded():
    """The fill reads y, which the function writes later: not the same value at the read."""
    assert _forward(source="%y") == (False, "ti")


def test_a_temporary_handed_to_a_call_is_not_forwarded():
    assert _forward(escape="call void @opaque(ptr %t)") == (False, "ti")
