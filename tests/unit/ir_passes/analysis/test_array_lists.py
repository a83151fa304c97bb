"""The storage of a list of arrays (`ir_passes.analysis.array_lists`): which memory is a
list's storage, which lists hold pointers, the field of an item a pointer addresses (by a
run-time index or a constant offset), which stores mix pointers with and without a shadow in
one field; and that activity analysis gives such a list's storage a shadow."""
from __future__ import annotations

import pytest

from ir_passes.analysis.activity import analyze_activity
from ir_passes.analysis.array_lists import (holds_pointers, in_list_storage, item_field,
                                            unshadowed_item)
from ir_passes.ir.parser import parse_module

_IR = """
declare ptr @NRT_MemInfo_new_varsize_dtor(i64, ptr)
declare ptr @NRT_MemInfo_data_fast(ptr)
declare void @dtor(ptr, i64, ptr)

define double @f(ptr %x, ptr %c, i64 %i) {
entry:
  %list = call ptr @NRT_MemInfo_new_varsize_dtor(i64 136, ptr @dtor)
  %data = call ptr @NRT_MemInfo_data_fast(ptr %list)
  %items = getelementptr inbounds nuw i8, ptr %data, i64 24
  %item = getelementptr { ptr, ptr, i64, i64, ptr, [1 x i64], [1 x i64] }, ptr %items, i64 %i
  %field = getelementptr inbounds nuw i8, ptr %item, i64 32
  store ptr %x, ptr %field, align 8
  %first = getelementptr inbounds nuw i8, ptr %data, i64 56
  store ptr %c, ptr %first, align 8
  %second = getelementptr inbounds nuw i8, ptr %data, i64 88
  store ptr %c, ptr %second, align 8
  store i64 2, ptr %data, align 8
  %again = call ptr @NRT_MemInfo_data_fast(ptr %list)
  %at = getelementptr inbounds nuw i8, ptr %again, i64 112
  %read = load ptr, ptr %at, align 8
  %v = load double, ptr %read, align 8
  ret double %v
}

define void @g(ptr %x) {
entry:
  %list = call ptr @NRT_MemInfo_new_varsize_dtor(i64 40, ptr @dtor)
  %data = call ptr @NRT_MemInfo_data_fast(ptr %list)
  store i64 1, ptr %data, align 8
  ret void
}
"""


@pytest.fixture(scope="module")
def module():
    return parse_module(_IR)


def _inst(fn, name):
    return next(i for i in fn.instructions() if i.name == name)


def _stores(fn):
    return [i for i in fn.instructions() if i.opcode == "store"]


def test_list_storage_and_lists_holding_pointers(module):
    f, g = module.functions["f"], module.functions["g"]
    assert in_list_storage(_inst(f, "field")) and in_list_storage(_inst(f, "at"))
    assert not in_list_storage(f.args[0])
    assert holds_pointers(f, _inst(f, "list"))
    assert not holds_pointers(g, _inst(g, "list"))      # only integers: a list of numbers


def test_item_fields_by_run_time_index_and_by_constant_offset(module):
    f = module.functions["f"]
    assert item_field(f, _inst(f, "field")) == 32
    assert item_field(f, _inst(f, "item")) == 0
    assert item_field(f, _inst(f, "first")) == 32       # (56 - 24) % 56: item 0's data
    assert item_field(f, _inst(f, "second")) == 8       # (88 - 24) % 56: item 1's parent
    assert item_field(f, _inst(f, "at")) == 32          # another data call of the same list
    assert item_field(f, _inst(f, "data")) is None      # the header


def test_unshadowed_pointer_in_a_shadowed_field_is_found(module):
    f = module.functions["f"]
    x = f.args[0]
    dup, first, second, _ = _stores(f)
    has_shadow = lambda v: v is x  # noqa: E731
    assert unshadowed_item(f, first, has_shadow)        # c beside x in the data field
    assert not unshadowed_item(f, second, has_shadow)   # c in a field x never goes to


def test_activity_gives_the_list_storage_a_shadow(module):
    f = module.functions["f"]
    info = analyze_activity(f, set(), {f.args[0]})
    assert info.has_shadow(_inst(f, "data")) and info.has_shadow(_inst(f, "again"))
    assert info.has_shadow(_inst(f, "read")) and info.is_varied(_inst(f, "v"))
