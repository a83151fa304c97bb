"""Parser and printer (ir_passes/ir/parser.py, printer.py): round trips and expected text.

Round trips run on IR Numba really produces: the canonical and the raw module of ~20 corpus
kernels chosen for their variety (branches, loops, while, nested loops, 2-D / strided arrays,
in-place updates, allocation, callees, math, min/max, float32). For each, the printed text
must parse and verify with llvmlite, print identically a second time (printer and parser are
inverse on their own output), and hold the same instructions as the input (opcode and type,
block by block, read back by llvmlite). Hand-written snippets cover constructs Numba rarely
emits; their expected text is checked with FileCheck patterns.
"""
from __future__ import annotations

import functools

import llvmlite.binding as llvm
import numba
import pytest

from enzyme_py.numba_bridge.capture import capture
from ir_passes.canonicalize import verify
from ir_passes.errors import InvalidIRError
from ir_passes.ir.lexer import bracket_depth, tokenize
from ir_passes.ir.parser import parse_function, parse_module, parse_type
from ir_passes.ir.printer import print_function, print_module
from tests.support.filecheck import check
from tests.kernels import by_name

ROUND_TRIP_KERNELS = [
    "arith", "int_power_var", "m_erf", "m_copysign", "br_nested", "br_early_return",
    "exp_series", "loop_break", "loop_continue", "quadform", "newton_cubic",
    "while_true_halving", "matmul", "strided_transposed_matvec", "inplace_swap_scale",
    "gauss_seidel", "sorted_weighted_sum", "mlp_loss", "rk4_pendulum", "softmax",
    "f32_matvec", "mandelbrot_smooth", "callee_writes",
]


@functools.cache
def _captured(name: str):
    k = by_name(name)
    args = k.args(0)
    return capture(numba.njit(k.fn), tuple(numba.typeof(a) for a in args))


def _shape(text: str) -> list:
    """What llvmlite reads back: per defined function, per block, (opcode, type) pairs."""
    module = llvm.parse_assembly(text)
    out = []
    for fn in module.functions:
        if fn.is_declaration:
            continue
        out.append((fn.name, [[(i.opcode, str(i.type)) for i in b.instructions]
                              for b in fn.blocks]))
    return sorted(out)


@pytest.mark.parametrize("stage", ["canonical", "raw"])
@pytest.mark.parametrize("name", ROUND_TRIP_KERNELS)
def test_round_trip_on_numba_ir(name, stage):
    cap = _captured(name)
    original = cap.module_text if stage == "canonical" else cap.raw_text
    module = parse_module(original)
    printed = print_module(module)
    verify(printed)                                          # parses and verifies in LLVM
    assert print_module(module) == printed                   # printing is pure
    assert print_module(parse_module(printed)) == printed    # stable after one round trip
    assert _shape(printed) == _shape(original)               # same instructions
    if stage == "canonical":
        fn = module.functions[cap.func_name]
        assert not fn.is_declaration
        assert parse_function(print_function(fn)).name == cap.func_name


def test_source_locations_survive_the_round_trip():
    cap = _captured("gauss_seidel")
    printed = print_module(parse_module(cap.module_text))
    check(printed, """
        CHECK: store double {{.*}}, !enzyme.loc [[LOC:![0-9]+]]
        CHECK: [[LOC]] = !{!"{{.*}}arrays.py:{{[0-9]+}}"}
    """)


# --------------------------------------------------------------------------------- snippets

SNIPPET = r"""
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"

%pair = type { double, i64 }
@table = internal constant [2 x double] [double 1.0, double 2.0]

declare double @llvm.fma.f64(double, double, double)
declare void @sink(ptr, ...)

define internal fastcc double @"odd name"(ptr noalias %p, i32 %k, <2 x double> %v) #0 {
entry:
  %0 = load double, ptr %p, align 8, !enzyme.loc !2
  %x = fneg fast double %0
  %e = extractelement <2 x double> %v, i64 1
  %ins = insertelement <2 x double> %v, double %x, i64 0
  %sh = shufflevector <2 x double> %ins, <2 x double> poison, <2 x i32> <i32 1, i32 0>
  %agg = insertvalue { double, i64 } poison, double %e, 0
  %d = extractvalue { double, i64 } %agg, 0
  %g = getelementptr inbounds nuw [2 x double], ptr @table, i64 0, i64 1
  %t = load double, ptr %g, align 8
  %f = call nnan double @llvm.fma.f64(double %d, double %t, double 1.500000e+00)
  %c = fcmp olt double %f, 0x3FF0000000000000
  %sel = select i1 %c, double %f, double -0.000000e+00
  %fr = freeze double %sel
  %w = zext i32 %k to i64
  switch i32 %k, label %other [
    i32 0, label %zero
    i32 7, label %other
  ]

zero:
  call void (ptr, ...) @sink(ptr %p, i64 %w)
  br label %other

other:
  %r = phi double [ %fr, %entry ], [ %fr, %entry ], [ 0.000000e+00, %zero ]
  %fin = fadd reassoc nsz double %r, %x
  ret double %fin
}

attributes #0 = { nounwind }
!2 = !{!"snippet.py:3"}
"""


def test_snippet_round_trip_and_expected_text():
    printed = print_module(parse_module(SNIPPET))
    verify(printed)
    assert print_module(parse_module(printed)) == printed
    check(printed, r"""
        CHECK: %pair = type { double, i64 }
        CHECK: @table = internal constant [2 x double]
        CHECK-LABEL: define internal fastcc double @"odd name"(
        CHECK-SAME: ptr noalias %p, i32 %k, <2 x double> %v) #0 {
        CHECK-NEXT: entry:
        CHECK-NEXT: [[L:%[^ ]+]] = load double, ptr %p, align 8, !enzyme.loc !2
        CHECK-NEXT: %x = fneg fast double [[L]]
        CHECK: %sh = shufflevector <2 x double> %ins, <2 x double> poison, <2 x i32> <i32 1, i32 0>
        CHECK: %d = extractvalue { double, i64 } %agg, 0
        CHECK: %g = getelementptr inbounds nuw [2 x double], ptr @table, i64 0, i64 1
        CHECK: %f = call nnan double @llvm.fma.f64(double %d, double %t, double 1.500000e+00)
        CHECK: %c = fcmp olt double %f, {{1.000000e\+00|0x3FF0000000000000}}
        CHECK: switch i32 %k, label %other [
        CHECK: i32 0, label %zero
        CHECK: i32 7, label %other
        CHECK: call void (ptr, ...) @sink(ptr %p, i64 %w)
        CHECK: %r = phi double [ %fr, %entry ], [ %fr, %entry ], [ 0.000000e+00, %zero ]
        CHECK: %fin = fadd reassoc nsz double %r, %x
        CHECK: attributes #0 = { nounwind }
        CHECK: !2 = !{!"snippet.py:3"}
    """)


def test_parsed_objects():
    fn = parse_module(SNIPPET).functions["odd name"]
    assert [b.name for b in fn.blocks] == ["entry", "zero", "other"]
    assert [a.name for a in fn.args] == ["p", "k", "v"]
    insts = {i.name: i for i in fn.instructions() if i.name}
    assert insts["x"].flags == ("fast",)
    assert insts["c"].predicate == "olt"
    assert insts["d"].indices == (0,)
    assert str(insts["g"].source_type) == "[2 x double]"
    assert insts["f"].callee_name == "llvm.fma.f64"
    phi = insts["r"]
    assert [b.name for b in phi.incoming] == ["entry", "entry", "zero"]
    assert phi.operands[0] is insts["fr"]
    switch = fn.entry.terminator
    assert switch.opcode == "switch"
    assert [b.name for b in switch.successors()] == ["other", "zero", "other"]


def test_unnamed_values_get_fresh_printable_names():
    text = """
define double @f(double %x) {
  %1 = fmul double %x, %x
  %2 = fadd double %1, 1.0
  ret double %2
}
"""
    printed = print_module(parse_module(text))
    verify(printed)
    check(printed, r"""
        CHECK: define double @f(double %x)
        CHECK-NEXT: [[B:[^ ]+]]:
        CHECK-NEXT: [[M:%[^ ]+]] = fmul double %x, %x
        CHECK-NEXT: [[S:%[^ ]+]] = fadd double [[M]], {{1.0|1.000000e\+00}}
        CHECK-NEXT: ret double [[S]]
    """)


def test_numbered_arguments():
    text = """
define double @f(double %0) {
  %2 = fmul double %0, %0
  %3 = fadd double %2, 1.0
  ret double %3
}
"""
    printed = print_module(parse_module(text))
    verify(printed)
    check(printed, r"""
        CHECK: define double @f(double [[A:%[^ )]+]])
        CHECK: [[M:%[^ ]+]] = fmul double [[A]], [[A]]
        CHECK-NEXT: [[S:%[^ ]+]] = fadd double [[M]], {{1.0|1.000000e\+00}}
        CHECK-NEXT: ret double [[S]]
    """)


def test_forward_references_resolve():
    text = """
define i64 @count(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %next = add nuw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret i64 %next
}
"""
    fn = parse_function(text)
    phi = fn.blocks[1].instructions[0]
    nxt = fn.blocks[1].instructions[1]
    assert phi.operands[1] is nxt
    verify(print_module(parse_module(text)))


def test_extractvalue_of_a_named_struct():
    text = """%pair = type { double, i64 }
define double @f(double %e) {
entry:
  %agg = insertvalue %pair poison, double %e, 0
  %d = extractvalue %pair %agg, 0
  ret double %d
}
"""
    printed = print_module(parse_module(text))
    verify(printed)
    check(printed, "CHECK: %d = extractvalue %pair %agg, 0")


@pytest.mark.parametrize("text", ["double", "float", "i1", "i64", "ptr", "<4 x float>",
                                  "[3 x [2 x i32]]", "{ ptr, i64, [2 x double] }",
                                  "<{ i8, i32 }>", "void"])
def test_types_round_trip(text):
    assert str(parse_type(text)) == text


@pytest.mark.parametrize("body, opcode", [
    ("%l = landingpad { ptr, i32 } cleanup\n  ret void", "landingpad"),
    ("resume { ptr, i32 } poison", "resume"),
])
def test_exception_handling_is_rejected_naming_the_opcode(body, opcode):
    text = f"define void @f(ptr %p) {{\nentry:\n  {body}\n}}\n"
    with pytest.raises(InvalidIRError, match=opcode):
        parse_module(text)


def test_atomics_round_trip():
    text = """
define i32 @f(ptr %p) {
entry:
  %old = atomicrmw add ptr %p, i32 1 seq_cst, align 4
  %pair = cmpxchg ptr %p, i32 %old, i32 7 acq_rel monotonic, align 4
  fence release
  %v = extractvalue { i32, i1 } %pair, 0
  ret i32 %v
}
"""
    printed = print_module(parse_module(text))
    verify(printed)
    assert print_module(parse_module(printed)) == printed
    check(printed, """
        CHECK: %old = atomicrmw add ptr %p, i32 1 seq_cst, align 4
        CHECK-NEXT: %pair = cmpxchg ptr %p, i32 %old, i32 7 acq_rel monotonic, align 4
        CHECK-NEXT: fence release
    """)


@pytest.mark.parametrize("line", [
    "switch i64 %x, label %d [",
    "i64 1, label %a ]",
    '%s = call i32 @"f(" (ptr @"g[")',
    "store double 1.0, ptr %p ; (unbalanced in a comment",
    '@c = constant [3 x i8] c"{(["',
    "%v = insertvalue { [2 x double] } %a, double %b, 0, 1",
])
def test_bracket_depth_counts_punctuation_only(line):
    """The quick count (no quote, no comment on the line) agrees with the tokenized one."""
    tokenized = sum((t.text in "([{") - (t.text in ")]}") for t in tokenize(line)
                    if t.kind == "punct")
    assert bracket_depth(line) == tokenized
