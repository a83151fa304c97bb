"""Tables (ir_passes/diff/reverse/tables.py): a value invariant in the outermost loop of its
nest, inside loops counted from values fixed before that loop, is kept in a table ("table")
instead of taped per iteration of the outer loop."""
from __future__ import annotations

import pytest

from ir_passes.diff.reverse.plan import Access, ReversePlan
from ir_passes.ir.parser import parse_function

NEST = """
declare double @llvm.exp.f64(double)

define double @f(ptr %a, ptr %x, ptr %dims, i64 %n, i64 %d) {
entry:
  %dw = load i64, ptr %dims
  br label %outer

outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer.latch ]
  %acc = phi double [ 0.0, %entry ], [ %acc.inner, %outer.latch ]
  %px = getelementptr double, ptr %x, i64 %i
  %xi = load double, ptr %px
  br label %inner

inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner ]
  %s = phi double [ %acc, %outer ], [ %s.next, %inner ]
  %pa = getelementptr double, ptr %a, i64 %j
  %va = load double, ptr %pa
  %e = call double @llvm.exp.f64(double %va)
  %ex = fmul double %va, %xi
  %ev = call double @llvm.exp.f64(double %ex)
  %t = fmul double %e, %ev
  %s.next = fadd double %s, %t
  %j.next = add nuw nsw i64 %j, 1
  %c = icmp slt i64 %j.next, %d
  br i1 %c, label %inner, label %outer.latch

outer.latch:
  %acc.inner = phi double [ %s.next, %inner ]
  %i.next = add nuw nsw i64 %i, 1
  %co = icmp slt i64 %i.next, %n
  br i1 %co, label %outer, label %exit

exit:
  %r = phi double [ %acc.inner, %outer.latch ]
  store i64 %n, ptr %dims
  ret double %r
}
"""


def _plan(text: str, reloads: bool = True):
    fn = parse_function(text)
    returns = [b for b in fn.blocks if b.terminator.opcode == "ret"]
    p = ReversePlan(fn, returns, reloads=reloads)
    p.values = {i.name: i for i in fn.instructions() if i.name}
    p.blocks = {b.name: b for b in fn.blocks}
    return p


def test_a_value_invariant_in_the_outer_loop_is_kept_in_a_table():
    plan = _plan(NEST)
    v, inner = plan.values, plan.blocks["inner"]
    assert plan.kind(v["e"], inner) is Access.TABLE
    nest = plan.table_nest(v["e"], inner)
    assert nest.outer.header is plan.blocks["outer"]
    assert [l.header for l in nest.inner] == [inner]
    assert nest.trips[0].bound.name == "d"


def test_a_value_that_varies_with_the_outer_loop_is_taped():
    plan = _plan(NEST)
    assert plan.kind(plan.values["ev"], plan.blocks["inner"]) is Access.TAPE


def test_not_in_split_halves():
    """The halves of a split derivative run in different calls: no shared table."""
    plan = _plan(NEST, reloads=False)
    assert plan.kind(plan.values["e"], plan.blocks["inner"]) is Access.TAPE


@pytest.mark.parametrize("old, new", [
    ("%c = icmp slt i64 %j.next, %d", "%c = icmp slt i64 %j.next, %i"),      # triangular
    ("%c = icmp slt i64 %j.next, %d", "%c = fcmp olt double %s.next, 1.0"),  # data-dependent
])
def test_inner_trip_counts_must_be_fixed_before_the_outer_loop(old, new):
    plan = _plan(NEST.replace(old, new))
    assert plan.kind(plan.values["e"], plan.blocks["inner"]) is Access.TAPE


def test_loads_of_written_memory_vary():
    """`dims` is written (after the loops): a value read from it may differ per iteration."""
    text = NEST.replace("%va = load double, ptr %pa", "%va = load double, ptr %pa\n"
                        "  %dv = load i64, ptr %dims\n  %dvf = sitofp i64 %dv to double\n"
                        "  %vb = fadd double %va, %dvf").replace(
        "%e = call double @llvm.exp.f64(double %va)", "%e = call double @llvm.exp.f64(double %vb)")
    plan = _plan(text)
    assert plan.kind(plan.values["e"], plan.blocks["inner"]) is Access.TAPE
