"""The type model of memory: what each byte offset of each memory object holds."""
from ir_passes.analysis.layout import FLOAT, INT, PTR, UNKNOWN, Span, analyze_layout, print_layout
from ir_passes.ir.parser import parse_function
from ir_passes.ir.types import DOUBLE, I64, StructType

# %v: { i64 n, double w, ptr data } ; %rows: ptr[] ; %c: memcpy'd from %v ; %u: handed to @g
IR = """
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
declare void @g(ptr)

define double @f(ptr %v, ptr %rows, ptr %c, ptr %u, ptr %k, i64 %i) {
entry:
  %n = load i64, ptr %v
  %pw = getelementptr inbounds i8, ptr %v, i64 8
  %w = load double, ptr %pw
  %pd = getelementptr inbounds { i64, double, ptr }, ptr %v, i64 0, i32 2
  %data = load ptr, ptr %pd
  %px = getelementptr double, ptr %data, i64 %i
  %x = load double, ptr %px
  %pr = getelementptr ptr, ptr %rows, i64 %i
  %row = load ptr, ptr %pr
  %bits = ptrtoint ptr %row to i64
  store i64 %bits, ptr %k
  call void @llvm.memcpy.p0.p0.i64(ptr %c, ptr %v, i64 24, i1 false)
  call void @g(ptr %u)
  %y = fmul double %w, %x
  ret double %y
}
"""


def _layout(known=None):
    fn = parse_function(IR)
    return fn, analyze_layout(fn, known)


def test_kinds_per_offset_of_a_struct():
    fn, layout = _layout()
    v = fn.args[0]
    data = next(i for i in fn.instructions() if i.name == "data")
    assert layout.kinds(v, 8) == {INT}                     # n: offset 0
    pw = next(i for i in fn.instructions() if i.name == "pw")
    assert layout.kinds(pw, 8) == {FLOAT}                  # w: offset 8
    pd = next(i for i in fn.instructions() if i.name == "pd")
    assert layout.kinds(pd, 8) == {PTR}                    # data: offset 16 (struct GEP)
    assert layout.kinds(data, 8) == {FLOAT}                # the object a loaded pointer names
    assert layout.holds_only(v, 8, frozenset({INT}))
    assert not layout.holds_only(pw, 8, frozenset({INT}))


def test_strided_pointers_copies_calls_and_abi():
    fn, layout = _layout()
    v, rows, c, u, k, _ = fn.args
    pr = next(i for i in fn.instructions() if i.name == "pr")
    assert layout.kinds(pr, 8) == {PTR} and layout.kinds(rows, 8) == {PTR}   # every element
    assert layout.kinds(k, 8) == {PTR}                     # a pointer's bits, as an integer
    assert layout.kinds(c, 8) == {INT}                     # memcpy carries n, w, data
    assert (Span(16, 0, 8), PTR) in layout.held[c] and (Span(8, 0, 8), FLOAT) in layout.held[c]
    assert UNKNOWN in layout.kinds(u, 8)                   # handed to an unknown call
    seeded = analyze_layout(fn, {u: DOUBLE, k: StructType((I64, DOUBLE))})   # dtypes
    assert seeded.kinds(u, 8) == {FLOAT, UNKNOWN}
    assert set(seeded.held[k]) >= {(Span(0, 16, 8), INT), (Span(8, 16, 8), FLOAT)}  # records
    assert "%rows" in print_layout(fn, layout)


def test_span_overlaps_modulo_strides():
    assert Span(0, 16, 8).overlaps(Span(32, 0, 8))         # element 2 of a 16-byte stride
    assert not Span(0, 16, 8).overlaps(Span(8, 0, 8))      # the other field of each element
    assert not Span(0, 16, 8).overlaps(Span(8, 16, 8))
    assert Span(0, 16, 8).overlaps(Span(4, 0, 8))          # partial overlap
    assert Span(None, 0, 8).overlaps(Span(1000, 0, 1))     # anywhere
    assert not Span(0, 0, 8).overlaps(Span(8, 0, 8)) and Span(0, 0, 9).overlaps(Span(8, 0, 8))
