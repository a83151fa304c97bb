"""Activity analysis (ir_passes/analysis/activity.py) on tiny hand-written functions.

Each test seeds the analysis the way the synthesizers do (varied float arguments, shadowed
pointer arguments) and checks the varied / useful / shadowed sets by value name, and the
annotated listing `print_activity` produces (FileCheck patterns).
"""
from __future__ import annotations

from ir_passes.analysis.activity import analyze_activity, carries_float, print_activity
from ir_passes.ir.parser import parse_function, parse_type
from tests.support.filecheck import check


def _analyze(text: str, varied=(), shadowed=()):
    fn = parse_function(text)
    args = {a.name: a for a in fn.args}
    info = analyze_activity(fn, {args[n] for n in varied}, {args[n] for n in shadowed})
    return fn, info


def _named(values) -> set[str]:
    return {v.name for v in values if v.name}


SCALAR = """
define void @scalar(ptr %ret, double %x, double %y) {
entry:
  %a = fmul double %x, %y
  %b = fmul double %y, %y
  %unused = fadd double %x, 1.0
  %n = fptosi double %x to i64
  %s = fadd double %a, %b
  store double %s, ptr %ret
  ret void
}
"""


def test_scalar_varied_useful_active():
    fn, info = _analyze(SCALAR, varied=["x"], shadowed=["ret"])
    assert _named(info.varied) == {"x", "a", "unused", "s"}       # depend on x
    assert {"a", "s"} <= _named(info.useful)                      # reach the shadowed store
    assert "unused" not in _named(info.useful) and "b" not in _named(info.varied)
    assert "n" not in _named(info.varied)                         # an integer carries nothing
    by = {i.name: i for i in fn.instructions() if i.name}
    assert info.is_active(by["a"]) and info.is_active(by["s"])
    assert not info.is_active(by["unused"]) and not info.is_active(by["b"])
    assert _named(info.shadowed) == {"ret"}


def test_print_activity_labels():
    fn, info = _analyze(SCALAR, varied=["x"], shadowed=["ret"])
    check(print_activity(fn, info), """
        CHECK-LABEL: define void @scalar(ptr %ret, double %x, double %y)
        CHECK: %a = fmul double %x, %y {{ +}}; active
        CHECK-NEXT: %b = fmul double %y, %y {{ +}}; inactive
        CHECK-NEXT: %unused = fadd double %x, 1.0{{.*}} ; varied, not useful
        CHECK-NEXT: %n = fptosi double %x to i64 {{ +}}; inactive
        CHECK-NEXT: %s = fadd double %a, %b {{ +}}; active
        CHECK-NEXT: store double %s, ptr %ret {{ +}}; active store (shadowed memory)
        CHECK-NEXT: ret void {{ +}}; inactive
    """)


def test_nothing_is_active_without_seeds():
    fn, info = _analyze(SCALAR)
    assert not info.varied and not info.useful and not info.shadowed
    assert "; active" not in print_activity(fn, info)


def test_no_shadowed_output_means_nothing_is_useful():
    _, info = _analyze(SCALAR, varied=["x"])
    assert {"a", "s"} <= _named(info.varied)
    assert not info.useful


ARRAYS = """
define void @arrays(ptr %a, ptr %w, ptr %out, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi double [ 0.0, %entry ], [ %acc.next, %loop ]
  %pa = getelementptr double, ptr %a, i64 %i
  %pw = getelementptr double, ptr %w, i64 %i
  %va = load double, ptr %pa
  %vw = load double, ptr %pw
  %prod = fmul double %va, %vw
  %ww = fmul double %vw, %vw
  %acc.next = fadd double %acc, %prod
  %po = getelementptr double, ptr %out, i64 %i
  store double %ww, ptr %po
  %i.next = add i64 %i, 1
  %c = icmp ult i64 %i.next, %n
  br i1 %c, label %loop, label %exit
exit:
  %r = phi double [ %acc.next, %loop ]
  store double %r, ptr %out
  ret void
}
"""


def test_pointers_into_dup_arrays_are_shadowed():
    fn, info = _analyze(ARRAYS, shadowed=["a", "out"])
    assert _named(info.shadowed) == {"a", "out", "pa", "po"}
    assert "pw" not in _named(info.shadowed)                     # w is const
    assert _named(info.varied) >= {"va", "prod", "acc", "acc.next", "r"}
    assert "ww" not in _named(info.varied) and "vw" not in _named(info.varied)
    assert _named(info.useful) >= {"va", "prod", "acc", "acc.next", "r"}
    check(print_activity(fn, info), """
        CHECK: %acc = phi double {{.*}}; active
        CHECK: %pa = getelementptr {{.*}}; shadowed pointer
        CHECK-NEXT: %pw = getelementptr {{.*}}; inactive
        CHECK-NEXT: %va = load double, ptr %pa {{ +}}; active
        CHECK-NEXT: %vw = load double, ptr %pw {{ +}}; inactive
        CHECK: %po = getelementptr {{.*}}; shadowed pointer
        CHECK-NEXT: store double %ww, ptr %po {{ +}}; active store (shadowed memory)
        CHECK: store double %r, ptr %out {{ +}}; active store (shadowed memory)
    """)


def test_alloca_receiving_active_values_becomes_shadowed():
    fn, info = _analyze("""
define void @local(ptr %ret, double %x) {
entry:
  %slot = alloca [2 x double]
  %cold = alloca double
  %p1 = getelementptr [2 x double], ptr %slot, i64 0, i64 1
  %sq = fmul double %x, %x
  store double %sq, ptr %p1
  store double 1.0, ptr %cold
  %back = load double, ptr %p1
  %c = load double, ptr %cold
  %s = fmul double %back, %c
  store double %s, ptr %ret
  ret void
}
""", varied=["x"], shadowed=["ret"])
    assert {"slot", "p1"} <= _named(info.shadowed)
    assert "cold" not in _named(info.shadowed)
    assert {"back", "s"} <= _named(info.varied) and "c" not in _named(info.varied)
    assert {"sq", "back", "s"} <= _named(info.useful)


def test_select_and_phi_of_pointers_propagate_shadows():
    _, info = _analyze("""
define void @choose(ptr %a, ptr %b, i1 %c, ptr %ret) {
entry:
  %p = select i1 %c, ptr %a, ptr %b
  br i1 %c, label %l, label %r
l:
  br label %j
r:
  br label %j
j:
  %q = phi ptr [ %a, %l ], [ %b, %r ]
  %v = load double, ptr %p
  %u = load double, ptr %q
  %s = fadd double %v, %u
  store double %s, ptr %ret
  ret void
}
""", shadowed=["a", "b", "ret"])
    assert {"p", "q"} <= _named(info.shadowed)
    assert {"v", "u", "s"} <= _named(info.varied) & _named(info.useful)


def test_varied_through_calls_and_casts():
    _, info = _analyze("""
declare double @llvm.exp.f64(double)
declare double @llvm.floor.f64(double)

define void @calls(ptr %ret, float %x) {
entry:
  %e = fpext float %x to double
  %ex = call double @llvm.exp.f64(double %e)
  %fl = call double @llvm.floor.f64(double %ex)
  %i = fptoui double %ex to i32
  %s = fadd double %ex, %fl
  store double %s, ptr %ret
  ret void
}
""", varied=["x"], shadowed=["ret"])
    assert {"e", "ex", "fl", "s"} <= _named(info.varied) & _named(info.useful)
    assert "i" not in _named(info.varied)


def test_carries_float():
    for text, expected in [("double", True), ("float", True), ("i64", False), ("ptr", False),
                           ("<4 x float>", True), ("[3 x double]", True),
                           ("{ i64, double }", True), ("{ i64, ptr }", False),
                           ("[2 x { i32, float }]", True)]:
        assert carries_float(parse_type(text)) is expected, text
