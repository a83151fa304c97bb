"""Type analysis: element types of memory bases, from accesses and from the ABI."""
from ir_passes.analysis.types import analyze_memory_types, print_types
from ir_passes.ir.parser import parse_function
from ir_passes.ir.types import DOUBLE, I64

IR = """
define void @f(ptr %a, ptr %b, ptr %c, ptr %d, i64 %i) {
entry:
  %pa = getelementptr double, ptr %a, i64 %i
  %x = load double, ptr %pa
  %pb = getelementptr i8, ptr %b, i64 8
  store double %x, ptr %pb
  %y = load i64, ptr %b
  %pd = getelementptr double, ptr %d, i64 1
  %q = phi ptr [ %pd, %entry ]
  store i64 %y, ptr %q
  ret void
}
"""


def test_element_types_from_loads_stores_and_abi():
    fn = parse_function(IR.replace("  %q = phi ptr [ %pd, %entry ]\n", "")
                        .replace("ptr %q", "ptr %pd"))
    a, b, c, d, _ = fn.args
    info = analyze_memory_types(fn, known={c: DOUBLE})
    assert info.element(a) == DOUBLE and info.float_element(a) == DOUBLE
    assert info.element(c) == DOUBLE                  # from the ABI only
    assert info.element(d) == I64 and info.float_element(d) is None
    assert info.mixed(b) and info.element(b) is None  # double and i64 through one base
    assert not info.mixed(a)


def test_print_types_marks_reinterpreted_memory():
    fn = parse_function(IR.replace("  %q = phi ptr [ %pd, %entry ]\n", "")
                        .replace("ptr %q", "ptr %pd"))
    text = print_types(fn, analyze_memory_types(fn))
    lines = {line.split()[0]: line for line in text.splitlines()[1:]}
    assert "double" in lines["%a"] and "mixed" not in lines["%a"]
    assert "mixed float/int" in lines["%b"] and "i64" in lines["%b"]


PHIS = """
define void @g(ptr %a, ptr %b, i1 %c) {
entry:
  br i1 %c, label %left, label %join
left:
  br label %join
join:
  %p = phi ptr [ %a, %entry ], [ %b, %left ]
  %q = phi ptr [ %b, %entry ], [ %a, %left ]
  store double 1.0, ptr %p
  ret void
}
"""


def test_accesses_through_a_phi_type_every_base_behind_it():
    """A copy of `%q` (a phi of the same arrays, accessed only through `%p`) knows they hold
    doubles."""
    fn = parse_function(PHIS)
    a, b, _ = fn.args
    q = next(i for i in fn.instructions() if i.name == "q")
    info = analyze_memory_types(fn)
    assert info.element(a) == DOUBLE and info.element(b) == DOUBLE
    assert info.float_element(q) == DOUBLE
