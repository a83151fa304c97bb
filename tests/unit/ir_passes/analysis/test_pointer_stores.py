"""Pointers stored to memory and loaded back (`ir_passes.analysis.pointer_stores`): byte
offsets of GEPs, which reloaded pointers activity analysis marks as having an unknown shadow,
and which stack slots are never read back."""
from __future__ import annotations

import pytest

from ir_passes.analysis.activity import analyze_activity
from ir_passes.analysis.pointer_stores import base_and_offset, gep_offset, never_reloaded
from ir_passes.ir.parser import parse_module

_IR = """
declare void @opaque(ptr)
declare ptr @interior(ptr)
declare i32 @numba_attempt_nocopy_reshape(i64, ptr, ptr, i64, ptr, ptr, i64, i32)

define double @f(ptr %x, ptr %c) {
entry:
  %slot = alloca { ptr, ptr, i64, i64, ptr, [1 x i64], [1 x i64] }, align 8
  %data = getelementptr { ptr, ptr, i64, i64, ptr, [1 x i64], [1 x i64] }, ptr %slot, i64 0, i32 4
  %shape = getelementptr inbounds nuw i8, ptr %slot, i64 40
  %stride = getelementptr { ptr, ptr, i64, i64, ptr, [1 x i64], [1 x i64] }, ptr %slot, i64 0, i32 6, i64 0
  store ptr %c, ptr %slot, align 8
  store ptr %x, ptr %data, align 8
  %r = call i32 @numba_attempt_nocopy_reshape(i64 1, ptr %shape, ptr %stride, i64 1, ptr %shape, ptr %shape, i64 8, i32 0)
  %meminfo = load ptr, ptr %slot, align 8
  %reloaded = load ptr, ptr %data, align 8
  %v = load double, ptr %reloaded, align 8
  %w = load double, ptr %meminfo, align 8
  %s = fadd double %v, %w
  ret double %s
}

define double @g(ptr %x) {
entry:
  %slot = alloca [2 x ptr], align 8
  store ptr %x, ptr %slot, align 8
  call void @opaque(ptr %slot)
  %other = getelementptr inbounds nuw i8, ptr %slot, i64 8
  %reloaded = load ptr, ptr %other, align 8
  %v = load double, ptr %reloaded, align 8
  ret double %v
}

define double @k(ptr %x) {
entry:
  %p = call ptr @interior(ptr %x)
  %v = load double, ptr %p, align 8
  ret double %v
}

define i32 @h(ptr %x) {
entry:
  %slot = alloca { ptr, i64 }, align 8
  %n = getelementptr inbounds nuw i8, ptr %slot, i64 8
  store ptr %x, ptr %slot, align 8
  store i64 3, ptr %n, align 8
  %r = call i32 @numba_attempt_nocopy_reshape(i64 1, ptr %n, ptr %n, i64 1, ptr %n, ptr %n, i64 8, i32 0)
  ret i32 %r
}
"""


@pytest.fixture(scope="module")
def module():
    return parse_module(_IR)


def _inst(fn, name):
    return next(i for i in fn.instructions() if i.name == name)


def test_gep_offsets_follow_struct_layout(module):
    f = module.functions["f"]
    assert gep_offset(_inst(f, "data")) == 32
    assert gep_offset(_inst(f, "shape")) == 40
    assert gep_offset(_inst(f, "stride")) == 48
    base, offset = base_and_offset(_inst(f, "stride"))
    assert base is _inst(f, "slot") and offset == 48


def test_reloaded_field_has_unknown_shadow_but_other_fields_do_not(module):
    f = module.functions["f"]
    x = f.args[0]
    info = analyze_activity(f, set(), {x})
    assert info.has_shadow(_inst(f, "reloaded"))         # data field held a shadowed pointer
    assert not info.has_shadow(_inst(f, "meminfo"))      # the const pointer's field
    assert info.is_varied(_inst(f, "v")) and not info.is_varied(_inst(f, "w"))


def test_a_call_that_may_copy_pointers_taints_the_whole_slot(module):
    g = module.functions["g"]
    info = analyze_activity(g, set(), {g.args[0]})
    assert info.has_shadow(_inst(g, "reloaded"))         # offset 8, but @opaque may copy


def test_a_pointer_returned_by_an_unknown_call_handed_a_shadowed_one(module):
    k = module.functions["k"]
    info = analyze_activity(k, set(), {k.args[0]})
    assert info.has_shadow(_inst(k, "p")) and info.is_varied(_inst(k, "v"))


def test_stores_never_read_back(module):
    f, g = module.functions["f"], module.functions["g"]
    stores = [i for i in f.instructions() if i.opcode == "store"]
    assert not any(never_reloaded(f, s) for s in stores)     # both fields are reloaded
    (g_store,) = [i for i in g.instructions() if i.opcode == "store"]
    assert not never_reloaded(g, g_store)                     # the slot escapes to @opaque
    h = module.functions["h"]
    h_store = next(i for i in h.instructions() if i.opcode == "store")
    assert never_reloaded(h, h_store)          # only a runtime call reading integers sees it
