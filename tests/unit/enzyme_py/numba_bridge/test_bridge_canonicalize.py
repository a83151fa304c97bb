"""The llvmlite-only canonicaliser / optimiser / verifier (ir_passes.canonicalize)."""
import re
import subprocess
import sys

import pytest

from ir_passes.canonicalize import canonicalize, optimize, verify
from ir_passes.errors import InvalidIRError

# sum of squares as a naive front end emits it: allocas, a do-while with a separate latch
SUMSQ = """
define double @sumsq(ptr %a, i64 %n) {
entry:
  %s = alloca double
  %i = alloca i64
  store double 0.0, ptr %s
  store i64 0, ptr %i
  br label %head
head:
  %iv = load i64, ptr %i
  %more = icmp slt i64 %iv, %n
  br i1 %more, label %body, label %exit
body:
  %p = getelementptr double, ptr %a, i64 %iv
  %x = load double, ptr %p
  %sq = fmul double %x, %x
  %acc = load double, ptr %s
  %acc2 = fadd double %acc, %sq
  store double %acc2, ptr %s
  %next = add i64 %iv, 1
  store i64 %next, ptr %i
  br label %head
exit:
  %r = load double, ptr %s
  ret double %r
}
"""

CONST_TRIP = """
define double @poly(double %x) {
entry:
  br label %loop
loop:
  %k = phi i64 [ 0, %entry ], [ %k1, %loop ]
  %p = phi double [ 1.0, %entry ], [ %p1, %loop ]
  %p1 = fmul double %p, %x
  %k1 = add i64 %k, 1
  %c = icmp ult i64 %k1, 3
  br i1 %c, label %loop, label %done
done:
  ret double %p1
}
"""


def _body(text, name):
    return text[text.index(f"@{name}("):]


def test_canonical_loop_shape():
    out = _body(canonicalize(SUMSQ), "sumsq")
    assert "alloca" not in out
    assert re.search(r"phi i64 \[ %[\w.]+, %\w+ \], \[ 0, %[\w.]*preheader \]", out)
    assert re.search(r"\.lcssa = phi double", out)      # LCSSA exit value
    assert "<" not in out.split("\n", 1)[1]             # no vectors
    verify(canonicalize(SUMSQ))


def test_only_small_constant_trip_loops_are_unrolled():
    out = _body(canonicalize(CONST_TRIP), "poly")   # x**3 as 1*x*x*x, the 1* folded away
    assert " phi " not in out and " br " not in out and out.count("fmul double") == 2
    large_trip = _body(canonicalize(CONST_TRIP.replace("i64 %k1, 3", "i64 %k1, 300")), "poly")
    assert " phi i64 " in large_trip and large_trip.count("fmul double") == 1


def test_optimize_vectorises_and_unrolls():
    fast = SUMSQ.replace("fmul double", "fmul fast double").replace("fadd double",
                                                                    "fadd fast double")
    out = optimize(fast)
    assert re.search(r"<\d+ x double>", out)
    assert "<" not in _body(optimize(fast, level=1), "sumsq").split("\n", 1)[1]
    with pytest.raises(ValueError):
        optimize(fast, level=5)


# two independent sums side by side: what the SLP vectoriser packs into one <2 x double> add
PAIR = """
define void @pair(ptr noalias %a, ptr noalias %b) {
entry:
  %a1 = getelementptr double, ptr %a, i64 1
  %b1 = getelementptr double, ptr %b, i64 1
  %x0 = load double, ptr %a
  %x1 = load double, ptr %a1
  %y0 = load double, ptr %b
  %y1 = load double, ptr %b1
  %s0 = fadd double %x0, %y0
  %s1 = fadd double %x1, %y1
  store double %s0, ptr %a
  store double %s1, ptr %a1
  ret void
}
"""


def test_optimize_leaves_straight_line_code_scalar_as_numba_does():
    """Numba's codegen (which compiles the derivative that runs) has SLP vectorisation off:
    the optimized stage must not show vectors the compiled code does not have."""
    assert not re.search(r"<\d+ x double>", _body(optimize(PAIR), "pair"))


def test_invalid_ir_raises_with_llvm_message():
    with pytest.raises(InvalidIRError, match="expected type"):
        verify("define i32 @f( { ret }")
    bad = "define i32 @f(i32 %x) {\na:\n  ret i32 %y\nb:\n  %y = add i32 %x, 1\n  br label %a\n}"
    with pytest.raises(InvalidIRError, match="dominate"):
        canonicalize(bad)
    with pytest.raises(InvalidIRError):
        optimize(bad)


def test_invalid_ir_of_our_own_step_is_reported_as_our_bug():
    with pytest.raises(InvalidIRError, match=r"(?s)jamming @f produced invalid IR; this is a "
                                             r"bug\..*expected type"):
        verify("define i32 @f( { ret }", "jamming @f")


def test_usable_without_numba():
    code = ("import sys; from ir_passes.canonicalize import canonicalize; "
            f"canonicalize({SUMSQ!r}); assert 'numba' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
