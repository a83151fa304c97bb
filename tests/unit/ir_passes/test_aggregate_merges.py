"""aggregate_merges: a phi or select of aggregates read only by extractvalue becomes one merge
per field read (through sub-aggregates read field by field); the insertvalue chains die; a
merge used otherwise is left alone. The result must verify with LLVM."""
from __future__ import annotations

from ir_passes.aggregate_merges import split_aggregate_merges
from ir_passes.canonicalize import verify
from ir_passes.ir.parser import parse_module
from ir_passes.ir.printer import print_module

_ARRAY = "{ ptr, ptr, [2 x i64] }"
_TEXT = f"""define i64 @f(i1 %c, ptr %p, ptr %q, i64 %n, {_ARRAY} %given) {{
entry:
  br i1 %c, label %fresh, label %view

fresh:
  %a0 = insertvalue {_ARRAY} poison, ptr %p, 0
  %a1 = insertvalue {_ARRAY} %a0, ptr null, 1
  %a2 = insertvalue {_ARRAY} %a1, i64 %n, 2, 0
  %a3 = insertvalue {_ARRAY} %a2, i64 3, 2, 1
  br label %join

view:
  br label %join

join:
  %m = phi {_ARRAY} [ %a3, %fresh ], [ %given, %view ]
  %s = select i1 %c, {_ARRAY} %m, {_ARRAY} %given
  %data = extractvalue {_ARRAY} %m, 0
  %shape = extractvalue {_ARRAY} %m, 2
  %rows = extractvalue [2 x i64] %shape, 0
  %cols = extractvalue [2 x i64] %shape, 1
  %other = extractvalue {_ARRAY} %s, 2, 1
  %x = load i64, ptr %data
  %r = mul i64 %rows, %cols
  %t = add i64 %r, %other
  %u = add i64 %t, %x
  ret i64 %u
}}
"""


def _split(text: str):
    module = parse_module(text)
    fn = module.functions["f"]
    changed = split_aggregate_merges(fn)
    out = print_module(module)
    verify(out)
    return changed, fn, out


def test_merges_read_by_field_become_merges_of_fields():
    changed, fn, out = _split(_TEXT)
    assert changed
    ops = [i.opcode for i in fn.instructions()]
    assert "insertvalue" not in ops                   # the chain died
    phis = [i for i in fn.instructions() if i.opcode == "phi"]
    assert sorted(str(p.type) for p in phis) == ["i64", "i64", "ptr"]
    data = next(p for p in phis if str(p.type) == "ptr")
    assert data.operands[0].name == "p"               # what the chain inserted, not a reload
    assert [i.opcode for i in fn.instructions()].count("select") == 1
    assert "%rows" not in out and "%shape" not in out


def test_merges_used_whole_are_left_alone():
    text = _TEXT.replace("  ret i64 %u\n", "  store {_ARRAY} %m, ptr %q\n  ret i64 %u\n"
                         .replace("{_ARRAY}", _ARRAY))
    changed, fn, _ = _split(text)
    phis = [i for i in fn.instructions() if i.opcode == "phi"]
    assert [str(p.type) for p in phis] == [_ARRAY]
    assert changed                                    # the select alone was split
