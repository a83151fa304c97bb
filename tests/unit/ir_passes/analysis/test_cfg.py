"""Control-flow facts (ir_passes/analysis/cfg.py) on small hand-written functions:
reverse post-order, immediate dominators, natural loops and their nesting."""
from __future__ import annotations

from ir_passes.analysis.cfg import dominates, dominators, find_loops, reverse_post_order
from ir_passes.ir.parser import parse_function

# Two nested loops (the inner one with a branch inside its body), an early exit from the
# outer loop, and a block nothing reaches.
NESTED = """
define double @nest(ptr %a, i64 %n, i64 %m) {
entry:
  %empty = icmp eq i64 %n, 0
  br i1 %empty, label %exit, label %outer

outer:
  %i = phi i64 [ 0, %entry ], [ %i.next, %outer.latch ]
  %acc = phi double [ 0.0, %entry ], [ %acc.inner, %outer.latch ]
  br label %inner

inner:
  %j = phi i64 [ 0, %outer ], [ %j.next, %inner.latch ]
  %acc.in = phi double [ %acc, %outer ], [ %acc.inner.next, %inner.latch ]
  %p = getelementptr double, ptr %a, i64 %j
  %v = load double, ptr %p
  %neg = fcmp olt double %v, 0.0
  br i1 %neg, label %then, label %inner.latch

then:
  %w = fneg double %v
  br label %inner.latch

inner.latch:
  %t = phi double [ %w, %then ], [ %v, %inner ]
  %acc.inner.next = fadd double %acc.in, %t
  %j.next = add i64 %j, 1
  %more.j = icmp ult i64 %j.next, %m
  br i1 %more.j, label %inner, label %outer.latch

outer.latch:
  %acc.inner = phi double [ %acc.inner.next, %inner.latch ]
  %big = fcmp ogt double %acc.inner, 100.0
  br i1 %big, label %exit, label %outer.next

outer.next:
  %i.next = add i64 %i, 1
  %more.i = icmp ult i64 %i.next, %n
  br i1 %more.i, label %outer.back, label %exit

outer.back:
  br label %outer

dead:
  br label %exit

exit:
  %r = phi double [ 0.0, %entry ], [ %acc.inner, %outer.latch ], [ %acc.inner, %outer.next ], [ 1.0, %dead ]
  ret double %r
}
"""


def _names(blocks) -> list[str]:
    return [b.name for b in blocks]


def test_reverse_post_order():
    fn = parse_function(NESTED)
    rpo = reverse_post_order(fn)
    order = _names(rpo)
    assert order[0] == "entry"
    assert "dead" not in order                           # unreachable blocks are left out
    assert sorted(order) == sorted(b.name for b in fn.blocks if b.name != "dead")
    pos = {name: k for k, name in enumerate(order)}
    # every block comes after its immediate dominator, and forward edges go forward
    idom = dominators(fn)
    for block in rpo[1:]:
        assert pos[idom[block].name] < pos[block.name]
    for a, b in [("outer", "inner"), ("inner", "then"), ("then", "inner.latch"),
                 ("inner.latch", "outer.latch"), ("outer.latch", "outer.next"),
                 ("outer.next", "outer.back")]:
        assert pos[a] < pos[b]
    assert pos["exit"] > pos["outer.next"]


def test_immediate_dominators():
    fn = parse_function(NESTED)
    idom = {b.name: (d.name if d is not None else None) for b, d in dominators(fn).items()}
    assert idom == {
        "entry": None,
        "outer": "entry",
        "inner": "outer",
        "then": "inner",
        "inner.latch": "inner",
        "outer.latch": "inner.latch",
        "outer.next": "outer.latch",
        "outer.back": "outer.next",
        "exit": "entry",
    }


def test_dominates_is_reflexive_and_transitive():
    fn = parse_function(NESTED)
    idom = dominators(fn)
    by = {b.name: b for b in fn.blocks}
    assert dominates(idom, by["entry"], by["exit"])
    assert dominates(idom, by["inner"], by["inner"])
    assert dominates(idom, by["outer"], by["outer.back"])
    assert not dominates(idom, by["then"], by["inner.latch"])
    assert not dominates(idom, by["outer"], by["exit"])


def test_find_loops_nesting():
    fn = parse_function(NESTED)
    loops = find_loops(fn)
    assert len(loops) == 2
    inner, outer = loops                                  # innermost first
    assert inner.header.name == "inner" and outer.header.name == "outer"
    assert set(_names(inner.blocks)) == {"inner", "then", "inner.latch"}
    assert set(_names(outer.blocks)) == {"outer", "inner", "then", "inner.latch",
                                         "outer.latch", "outer.next", "outer.back"}
    assert _names(inner.latches) == ["inner.latch"]
    assert _names(outer.latches) == ["outer.back"]
    assert inner.parent is outer and outer.parent is None
    assert (inner.depth, outer.depth) == (2, 1)


def test_no_loops_in_straight_line_and_diamond_code():
    fn = parse_function("""
define double @diamond(double %x) {
entry:
  %c = fcmp olt double %x, 0.0
  br i1 %c, label %left, label %right
left:
  %l = fneg double %x
  br label %join
right:
  br label %join
join:
  %r = phi double [ %l, %left ], [ %x, %right ]
  ret double %r
}
""")
    assert find_loops(fn) == []
    idom = {b.name: (d.name if d else None) for b, d in dominators(fn).items()}
    assert idom == {"entry": None, "left": "entry", "right": "entry", "join": "entry"}
    assert _names(reverse_post_order(fn))[-1] == "join"


def test_self_loop_and_sibling_loops():
    fn = parse_function("""
define void @siblings(i64 %n) {
entry:
  br label %a
a:
  %i = phi i64 [ 0, %entry ], [ %i1, %a ]
  %i1 = add i64 %i, 1
  %ca = icmp ult i64 %i1, %n
  br i1 %ca, label %a, label %mid
mid:
  br label %b
b:
  %j = phi i64 [ 0, %mid ], [ %j1, %b.latch ]
  br label %b.latch
b.latch:
  %j1 = add i64 %j, 1
  %cb = icmp ult i64 %j1, %n
  br i1 %cb, label %b, label %exit
exit:
  ret void
}
""")
    loops = {loop.header.name: loop for loop in find_loops(fn)}
    assert set(loops) == {"a", "b"}
    assert _names(loops["a"].latches) == ["a"] and set(_names(loops["a"].blocks)) == {"a"}
    assert set(_names(loops["b"].blocks)) == {"b", "b.latch"}
    assert loops["a"].parent is None and loops["b"].parent is None
