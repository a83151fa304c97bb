"""`ir_passes.diff.reverse.tape_report` on tiny canonical loops and branches (no Numba)."""
from __future__ import annotations

import os

import pytest

from ir_passes.diff.reverse.driver import synthesize_reverse
from ir_passes.diff.reverse.retained import Need, Retained, Retention
from ir_passes.diff.reverse.tape_entries import REBUILT
from ir_passes.diff.reverse.tape_report import (Expr, TapeReport, print_tape, shared_carriers,
                                                tape_report, taped_bytes)
from ir_passes.diff.spec import Activity, DiffSpec, ParamSpec
from ir_passes.ir.parser import parse_module
from ir_passes.ir.printer import print_module
from ir_passes.ir.types import DOUBLE, ArrayType, StructType

from tests.support.filecheck import check

HERE = os.path.dirname(__file__)
A, C = Activity.ACTIVE, Activity.CONST


def _module():
    with open(os.path.join(HERE, "loops.ll")) as f:
        return parse_module(f.read())


def _scalar_spec(fn: str, *acts: Activity) -> DiffSpec:
    params = (ParamSpec("x", acts[0], (2,)),) + tuple(
        ParamSpec(n, a, (3 + i,)) for i, (n, a) in enumerate(zip(("n",), acts[1:])))
    return DiffSpec(primal=fn, name=f"diffe_{fn}", mode="reverse", params=params,
                    ret=Activity.ACTIVE, ret_type=ArrayType(1, DOUBLE))  # d/dx


COUNTED = DiffSpec(primal="counted", name="diffe_counted", mode="reverse",
                   params=(ParamSpec("x", Activity.DUP, tuple(range(2, 9)), 1),),
                   ret=Activity.ACTIVE, ret_type=StructType(()))


def test_counted_loop_tapes_exp_and_recomputes_its_trip_count():
    report = tape_report(_module(), COUNTED)
    assert [(l.header, str(l.trips)) for l in report.loops] == [("loop", "x.shape[0]")]
    taped = {(e.value, e.block, e.loops) for e in report.taped}
    assert taped == {("%e", "loop", ("loop",))}
    assert str(report.total_bytes()) == "8 * x.shape[0]"
    assert report.total_bytes().evaluate({"x.shape[0]": 100}) == 800
    # the load feeding exp is not needed (exp's derivative reads its result); i is an iv;
    # the trip count comes back from the loop's bound
    assert {e.value: e.kind for e in report.recomputed} == {
        "%i": Retention.IV, "loop.iter": Retention.RECOMPUTE}


def test_counted_loop_printed():
    text = print_tape(tape_report(_module(), COUNTED), {"x": 1000})
    check(text, """
        ; CHECK: ; tape of @counted (reverse mode)
        ; CHECK: ;   loop depth 1 trips = x.shape[0] kernels.py:6
        ; CHECK: ; taped (1 value(s)
        ; CHECK: ;   value type block loop bytes/iter total bytes needed for source
        ; CHECK: ;   %e double loop loop 8 8 * x.shape[0] = 8000 result of llvm.exp, for its derivative kernels.py:7
        ; CHECK: ; recomputed in the reverse pass instead of taped (2):
        ; CHECK: ;   %i i64 iv of loop loop loop index of %p
        ; CHECK: ;   loop.iter i64 recompute exit.loopexit trip count of loop loop
        ; CHECK: ; total tape per call: 8 * x.shape[0] = 8000 bytes
    """)


def observed_counts(module_text: str, spec: DiffSpec) -> dict[str, int]:
    """What the synthesizer's observer hears, deduplicated as the report promises: a tape slot
    per (value, block), a spill slot per value, a recompute per (value, block), a choice per
    (block, deciding condition)."""
    events: list[Retained] = []
    synthesize_reverse(parse_module(module_text), spec, observe=events.append)
    shared = shared_carriers(events)      # taped once by the loop's latch for its blocks
    keys = {"tape": {(e.what, e.carrier if (id(e.value), e.carrier) in shared else e.block,
                      e.value) for e in events if e.kind is Retention.TAPE},
            "spill": {(e.what, e.value) for e in events if e.kind is Retention.SPILL},
            "recompute": {(e.block, e.value) for e in events
                          if e.kind in REBUILT
                          and e.what is Need.VALUE},
            "choice": {(e.block, e.value) for e in events if e.what is Need.CHOICE}}
    return {k: len(v) for k, v in keys.items()}


def report_counts(report: TapeReport) -> dict[str, int]:
    return {"tape": len(report.taped), "spill": len(report.spilled),
            "recompute": len(report.recomputed), "choice": len(report.choices)}


SPECS = {"counted": COUNTED, "from_one": _scalar_spec("from_one", A, C),
         "triangular": _scalar_spec("triangular", A, C), "halved": _scalar_spec("halved", A, C),
         "until": _scalar_spec("until", A),
         "ifelse": _scalar_spec("ifelse", A), "parity": _scalar_spec("parity", A, C),
         "clamp_loop": _scalar_spec("clamp_loop", A, C)}


@pytest.mark.parametrize("fn", sorted(SPECS))
def test_report_is_what_the_observer_saw(fn):
    """Counts equal the observer's (loops, nested, while, branches); the derivative's real
    tape pushes agree per block; the caller's module is left untouched."""
    module = _module()
    before = print_module(module)
    report = tape_report(module, SPECS[fn])
    assert print_module(module) == before
    assert report_counts(report) == observed_counts(before, SPECS[fn])
    assert taped_bytes(synthesize_reverse(module, SPECS[fn])) == report.bytes_by_block()


def test_value_computed_once_is_spilled_and_if_else_choice_recomputed():
    report = tape_report(_module(), SPECS["ifelse"])
    assert report.taped == ()
    (spill,) = report.spilled
    assert (spill.value, spill.block, spill.loops, spill.bytes_per_iteration) == \
        ("%e", "then", (), 0)
    (choice,) = report.choices
    assert (choice.value, choice.block, choice.kind) == ("%c", "merge", Retention.RECOMPUTE)
    assert str(report.total_bytes()) == "0"
    check(print_tape(report), """
        ; CHECK: ; taped (0 value(s)
        ; CHECK-NEXT: ;   (nothing)
        ; CHECK-NEXT: ; spilled (1 value(s) computed at most once: one stack slot per call
        ; CHECK-NEXT: ;   value type read by the reverse of needed for source
        ; CHECK-NEXT: ;   %e double then result of llvm.exp, for its derivative kernels.py:12
        ; CHECK: ; predecessor choices recomputed from the branch condition instead of taped (1): merge from %c
        ; CHECK-NEXT: ; total tape per call: 0 bytes
    """)


def test_choice_on_the_induction_variable_is_recomputed_from_its_operands():
    report = tape_report(_module(), SPECS["parity"])
    assert [(e.value, e.kind, e.block, e.reason) for e in report.recomputed] == [
        ("%even", Retention.RECOMPUTE, "latch", "condition choosing the predecessor of latch"),
        ("%odd", Retention.RECOMPUTE, "latch", "operand of recomputed %even"),
        ("%i", Retention.IV, "latch", "operand of recomputed %odd")]
    assert {(e.value, e.block) for e in report.taped} == {
        ("%y", "a"), ("%y", "b"), ("loop.iter", "exit")}
    assert str(report.total_bytes()) == "16 * n + 8"


def test_choice_on_a_loop_carried_float_is_taped():
    report = tape_report(_module(), SPECS["clamp_loop"])
    assert report.choices == ()
    which = next(e for e in report.taped if e.block == "latch")
    assert (which.value, which.type, which.loops, which.reason) == \
        ("latch.from", "i32", ("loop",), "which predecessor entered latch")


@pytest.mark.parametrize("fn, trips", [
    ("from_one", "n - 1"),          # i = 1; ++i < n
    ("step2", "ceil(n/2)"),         # i += 2 while i + 2 < n
    ("before_step", "n"),           # compares i (before the step) with n - 1
    ("until", "None"),              # fcmp exit: data-dependent
])
def test_trip_counts(fn, trips):
    acts = (A,) if fn == "until" else (A, C)
    report = tape_report(_module(), _scalar_spec(fn, *acts))
    (loop,) = report.loops
    assert str(loop.trips) == trips


def test_triangular_inner_loop_counts_in_the_outer_counter():
    report = tape_report(_module(), _scalar_spec("triangular", A, C))
    trips = {l.header: (l.depth, l.parent, str(l.trips)) for l in report.loops}
    assert trips["outer"] == (1, None, "n")
    assert trips["inner"] == (2, "outer", "k[outer] + 1")   # bound: the outer variable + 1
    total = report.total_bytes()
    n = 7                                                     # cos(z) per inner iteration
    assert total.evaluate({"n": n}) == 8 * n * (n + 1) // 2 + 8 * n + 8
    check(print_tape(report, {"n": n}), """
        ; CHECK: inner depth 2 in outer trips = k[outer] + 1
        ; CHECK: %z double inner inner 8 8 * sum(k[outer] < n: k[outer] + 1) = 224 operand 0 of llvm.cos
        ; CHECK: total tape per call: {{.*}} = 288 bytes
    """)


def test_bound_halved_by_a_shift():
    report = tape_report(_module(), _scalar_spec("halved", A, C))
    (loop,) = report.loops
    assert str(loop.trips) == "floor(n/2)"
    assert loop.trips.evaluate({"n": 9}) == 4


def test_expr_folds_constants():
    n, m = Expr.sym("n"), Expr.sym("m")
    one = Expr.const(1)
    assert str(n - one + one) == "n"
    assert str(n - (m + Expr.const(2))) == "n - m - 2"
    assert str(Expr.const(8) * n * m + Expr.const(8)) == "8 * n * m + 8"
    assert (n - one).ceildiv(2).evaluate({"n": 10}) == 5
    assert (n + m).evaluate({"n": 1}) is None
    assert n.floordiv(2).evaluate({"n": 7}) == 3 and str(n.floordiv(1)) == "n"


def test_expr_sum_over_a_counter():
    n, k = Expr.sym("n"), Expr.sym("k")
    assert Expr.sum("k", n, Expr.const(3)) == Expr.const(3) * n   # no counter: a product
    tri = Expr.sum("k", n, n - k)
    assert str(tri) == "sum(k < n: n - k)" and tri.symbols() == {"n"}
    assert tri.evaluate({"n": 4}) == 4 + 3 + 2 + 1
