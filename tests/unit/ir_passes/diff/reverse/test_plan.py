"""The reverse pass's plan (ir_passes/diff/reverse/plan.py): how the reverse of a block gets
each primal value it needs -- "direct", "iv" (rebuilt from the reverse loop counter),
"recompute" (cheap, pure, operands available) or "tape" -- on a small canonical loop."""
from __future__ import annotations

import pytest

from ir_passes.diff.reverse.plan import Access, ReversePlan
from ir_passes.errors import UnsupportedError
from ir_passes.ir.parser import parse_function

LOOP = """
declare double @llvm.sin.f64(double)

define double @f(ptr %a, ptr %out, i64 %n, double %x) {
entry:
  %scale = fmul double %x, 2.0
  %n2 = shl i64 %n, 1
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %k = phi i64 [ 3, %entry ], [ %k.next, %loop ]
  %acc = phi double [ 0.0, %entry ], [ %acc.next, %loop ]
  %pa = getelementptr double, ptr %a, i64 %i
  %va = load double, ptr %pa
  %po = getelementptr double, ptr %out, i64 %i
  %vo = load double, ptr %po
  %s = call double @llvm.sin.f64(double %va)
  %t = fmul double %va, %scale
  %u = fmul double %acc, %t
  %acc.next = fadd double %u, %s
  %w = fadd double %vo, %t
  store double %w, ptr %po
  %i.next = add nuw i64 %i, 1
  %k.next = add i64 %k, %n2
  %c = icmp ult i64 %i.next, %n
  br i1 %c, label %loop, label %exit

exit:
  %r = phi double [ %acc.next, %loop ]
  %last = phi i64 [ %i, %loop ]
  %lf = sitofp i64 %last to double
  %res = fadd double %r, %lf
  ret double %res
}
"""


@pytest.fixture
def plan():
    fn = parse_function(LOOP)
    returns = [b for b in fn.blocks if b.terminator.opcode == "ret"]
    p = ReversePlan(fn, returns)
    p.values = {i.name: i for i in fn.instructions() if i.name}
    p.blocks = {b.name: b for b in fn.blocks}
    p.args = {a.name: a for a in fn.args}
    return p


def test_loop_structure(plan):
    (loop,) = plan.loops
    assert loop.header is plan.blocks["loop"]
    assert plan.preheader(loop) is plan.blocks["entry"]
    assert plan.latch(loop) is plan.blocks["loop"]
    assert plan.loops_containing(plan.blocks["loop"]) == [loop]
    assert plan.loops_containing(plan.blocks["exit"]) == []
    assert {b.name for b in plan.once} == {"entry", "exit"}


def test_induction_variables(plan):
    v = plan.values
    assert plan.is_iv(v["i"]) and plan.is_iv(v["k"])      # steps 1 and the invariant 2n
    assert not plan.is_iv(v["acc"]) and not plan.is_iv(v["i.next"])
    iv = plan.ivs[v["k"]]
    assert iv.start.text == "3" and iv.step is v["n2"]


@pytest.mark.parametrize("name, kind", [
    ("scale", Access.DIRECT),        # computed once, before the loop
    ("n2", Access.DIRECT),
    ("i", Access.IV),                # rebuilt from the reverse loop counter
    ("k", Access.IV),
    ("pa", Access.RECOMPUTE),        # address arithmetic on an iv
    ("va", Access.RECOMPUTE),        # load from %a, which the function never writes
    ("t", Access.RECOMPUTE),         # pure float op of recomputable operands
    ("i.next", Access.RECOMPUTE),
    ("c", Access.RECOMPUTE),
    ("vo", Access.TAPE),             # load from %out, which the function writes
    ("s", Access.TAPE),              # result of a math call
    ("acc", Access.TAPE),            # loop-carried float
    ("u", Access.TAPE),              # depends on a taped value
    ("w", Access.TAPE),
    ("acc.next", Access.TAPE),
])
def test_kind_inside_the_loop(plan, name, kind):
    assert plan.kind(plan.values[name], plan.blocks["loop"]) == kind


def test_kind_outside_the_loop(plan):
    v, exit_ = plan.values, plan.blocks["exit"]
    assert plan.kind(v["r"], exit_) == Access.DIRECT          # exit runs once
    assert plan.kind(v["i"], exit_) == Access.TAPE            # an iv used after its loop
    assert plan.kind(plan.args["x"], exit_) == Access.DIRECT


def test_read_only_memory(plan):
    assert plan.read_only(plan.values["pa"])
    assert plan.read_only(plan.args["a"])
    assert not plan.read_only(plan.values["po"])


def test_a_write_through_an_unknown_pointer_makes_all_memory_writable():
    fn = parse_function("""
define void @g(ptr %a, ptr %pp) {
entry:
  %q = load ptr, ptr %pp
  store double 1.0, ptr %q
  %v = load double, ptr %a
  ret void
}
""")
    plan = ReversePlan(fn, [fn.entry])
    assert not plan.read_only(fn.args[0])


def test_loop_not_in_simplify_form_is_rejected():
    fn = parse_function("""
define void @h(i1 %c, i64 %n) {
entry:
  br i1 %c, label %loop, label %side
side:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ 0, %side ], [ %i.next, %loop ]
  %i.next = add i64 %i, 1
  %more = icmp ult i64 %i.next, %n
  br i1 %more, label %loop, label %exit
exit:
  ret void
}
""")
    with pytest.raises(UnsupportedError, match="loop-simplify form"):
        ReversePlan(fn, [fn.blocks[-1]])
