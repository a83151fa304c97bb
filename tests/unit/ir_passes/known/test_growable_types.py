"""`growable_float_type`: the float type of a list's storage, gathered over every call asking
for the owner's data (each is a base of its own), ignoring the integer header fields."""
from __future__ import annotations

import enzyme_py.numba_bridge  # noqa: F401  (registers NRT's roles)
from ir_passes.ir.parser import parse_module
from ir_passes.ir.types import DOUBLE
from ir_passes.known.growable_types import growable_float_type

_IR = """
declare ptr @NRT_MemInfo_new_varsize_dtor(i64, ptr)
declare ptr @NRT_MemInfo_data_fast(ptr)
declare ptr @NRT_MemInfo_alloc_aligned(i64, i32)
declare void @llvm.memmove.p0.p0.i64(ptr, ptr, i64, i1)

define void @f(double %v, float %w, i64 %n) {
entry:
  %list = call ptr @NRT_MemInfo_new_varsize_dtor(i64 64, ptr null)
  %header = call ptr @NRT_MemInfo_data_fast(ptr %list)
  store i64 %n, ptr %header
  %data = call ptr @NRT_MemInfo_data_fast(ptr %list)
  %items = getelementptr i8, ptr %data, i64 16
  store double %v, ptr %items
  store {T} {V}, ptr %data
  %moved = call ptr @NRT_MemInfo_data_fast(ptr %list)
  %array = call ptr @NRT_MemInfo_alloc_aligned(i64 8, i32 8)
  %adata = call ptr @NRT_MemInfo_data_fast(ptr %array)
  store double %v, ptr %adata
  call void @llvm.memmove.p0.p0.i64(ptr %moved, ptr %items, i64 8, i1 false)
  ret void
}
"""


def _function(other: str):
    """`other`: the float type of a second store into the list's storage."""
    value = "%v" if other == "double" else "%w"
    return parse_module(_IR.replace("{T}", other).replace("{V}", value)).functions["f"]


def _named(fn, name):
    return next(i for i in fn.instructions() if i.name == name)


def test_the_items_float_type_through_another_data_call():
    fn = _function("double")
    assert growable_float_type(fn, _named(fn, "moved")) == DOUBLE


def test_not_a_list_or_two_float_types():
    fn = _function("double")
    assert growable_float_type(fn, _named(fn, "adata")) is None    # an array's owner
    fn = _function("float")
    assert growable_float_type(fn, _named(fn, "moved")) is None    # double and float
