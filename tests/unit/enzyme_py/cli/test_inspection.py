"""`enzyme_py.inspection`: every stage of the inspection tool, through the Python API.

Expected output is checked with FileCheck patterns that capture value names instead of
spelling them (Numba's value names change between compilations).
"""
from __future__ import annotations

import os
import re

import llvmlite.binding as llvm
import pytest
from numba import types

from enzyme_py import ActivityError, UnsupportedError, autodiff, derive_diff
from enzyme_py.inspection import (STAGES, InspectionError, inspect, inspection, parse_sizes,
                                  parse_types)
from enzyme_py import cfg_files
from ir_passes import pipeline
from ir_passes.diff.reverse.tape_report import taped_bytes
from ir_passes.vector_math import libmvec_variants

from . import samples
from tests.support.filecheck import check
from .test_tape_report import observed_counts, report_counts

HERE = os.path.dirname(__file__)
KERNELS_LL = os.path.join(HERE, "kernels.ll")
SIN_SUM = dict(types="float64[::1], int64", sizes={"n": 1000})

pytestmark = pytest.mark.xdist_group(name="cli-inspection")


@pytest.fixture(scope="module")
def sin_sum():
    """Without vector math, so that the sine is taped (see `test_tape_with_vector_math`)."""
    return inspection(samples.sin_sum, "dup,const", "reverse", vector_math=False, **SIN_SUM)


HEADER = """
    ; CHECK: ; enzyme-py inspect sin_sum (array(float64, 1d, C), int64) -- STAGE
    ; CHECK-NEXT: ; mode=reverse ret=active
    ; CHECK-NEXT: ;   x: dup -> %arg.x.0 .. %arg.x.6.0 (1-d array, data %arg.x.4)
    ; CHECK-NEXT: ;   n: const -> %arg.n
"""


def _header(stage: str) -> str:
    return HEADER.replace("STAGE", stage)


def test_raw(sin_sum):
    check(sin_sum.text("raw"), _header("raw") + """
        ; CHECK: define i32 @{{.*}}sin_sum{{.*}}(ptr {{.*}}%retptr, ptr {{.*}}%excinfo, {{.*}}ptr %arg.x.4, {{.*}}i64 %arg.n)
        ; CHECK: alloca
        ; CHECK: !enzyme.loc
        ; CHECK: = !{!"{{.*}}tests/unit/enzyme_py/cli/samples.py:12"}
    """)


def test_canonical(sin_sum):
    check(sin_sum.text("canonical"), _header("canonical") + """
        ; CHECK: define i32 @{{.*}}sin_sum
        ; CHECK-NOT: alloca
        ; CHECK: [[LOOP:B[0-9]+]]:
        ; CHECK: [[I:%[^ ]+]] = phi i64 [ [[NEXT:%[^ ]+]], %[[LOOP]] ], [ 0, %[[LOOP]].preheader ]
        ; CHECK: [[NEXT]] = add nuw nsw i64 [[I]], 1
        ; CHECK: [[P:%[^ ]+]] = getelementptr double, ptr %arg.x.4, i64 [[I]]
        ; CHECK: [[X:%[^ ]+]] = load double, ptr [[P]]
        ; CHECK: call double @llvm.sin.f64(double [[X]])
        ; CHECK: icmp eq i64 %arg.n, [[NEXT]]
        ; CHECK: ret i32 0
    """)


def test_activity(sin_sum):
    check(sin_sum.text("activity"), _header("activity") + """
        ; CHECK: icmp slt i64 %arg.n, 1 ; inactive
        ; CHECK: [[S:%[^ ]+]] = phi double {{.*}} ; active
        ; CHECK: [[I:%[^ ]+]] = phi i64 {{.*}} ; inactive
        ; CHECK: [[P:%[^ ]+]] = getelementptr double, ptr %arg.x.4, i64 [[I]] ; shadowed pointer
        ; CHECK: [[X:%[^ ]+]] = load double, ptr [[P]], align 8 ; active
        ; CHECK: [[SIN:%[^ ]+]] = tail call double @llvm.sin.f64(double [[X]]) ; active
        ; CHECK: fmul double {{.*}} ; active
        ; CHECK: icmp eq i64 %arg.n, {{.*}} ; inactive
        ; CHECK: store double {{%[^ ]+}}, ptr %retptr, align 8 ; active store (shadowed memory)
        ; CHECK: ret i32 0 ; inactive
        ; CHECK: ; active instructions by Python source line:
        ; CHECK-NEXT: ;   samples.py:11 0/{{[0-9]+}} for i in range(n):
        ; CHECK-NEXT: ;   samples.py:12 {{[0-9]+}}/{{[0-9]+}} s += math.sin(x[i]) * x[i] load, {{.*}}call llvm.sin.f64, fmul, fadd
        ; CHECK-NEXT: ;   samples.py:13 1/{{[0-9]+}} return s store
    """)


def test_activity_names_varied_values_that_reach_no_output():
    text = inspect(samples.store_to_const, "const,dup", stage="activity",
                   types="float64[::1], float64[::1]")
    check(text, """
        ; CHECK: [[X:%[^ ]+]] = load double, ptr %arg.x.4, align 8 ; varied, not useful
        ; CHECK: fmul double [[X]], 2.000000e+00 ; varied, not useful
        ; CHECK: ;   samples.py:{{[0-9]+}} 0/{{[0-9]+}} out[0] = 2.0 * x[0] (varied, not useful: load, fmul)
    """)


@pytest.mark.parametrize("fn, acts, argtypes", [
    (samples.sin_sum, "dup,const", "float64[::1], int64"),
    (samples.sin_grid, "dup,dup", "float64[:, ::1], float64[::1]"),
    (samples.branchy, "dup", "float64[::1]"),
    (samples.until_small, "active", "float64"),
    (samples.scale, "dup,dup,active", "float64[::1], float64[::1], float64"),
    (KERNELS_LL, "dup,dup,active,const", "axpy"),
    (KERNELS_LL, "dup,dup,const", "dot"),
])
def test_tape_report_matches_the_synthesizer(fn, acts, argtypes):
    """The report is what the synthesizer's observer heard; the real derivative's tape pushes
    agree per block, so the stage prints no warning."""
    if fn == KERNELS_LL:
        ins = inspection(fn, acts, func=argtypes)
    else:
        ins = inspection(fn, acts, types=argtypes)
    assert report_counts(ins.tape) == observed_counts(ins.target.canonical_text, ins.spec)
    assert taped_bytes(ins.derivative) == ins.tape.bytes_by_block()
    assert "warning" not in ins.text("tape")


def test_tape_stage_warns_when_the_derivative_pushes_more_than_reported(monkeypatch):
    ins = inspection(KERNELS_LL, "dup,dup,const", func="dot")
    real = taped_bytes(ins.derivative)
    monkeypatch.setattr(pipeline, "taped_bytes", lambda fn: {**real, "extra": 1})
    assert "; warning: the synthesized derivative pushes" in ins.text("tape")


def test_derivative(sin_sum):
    check(sin_sum.text("derivative"), _header("derivative") + """
        ; CHECK: define i32 @diffe_sin_sum(ptr %retptr, ptr %excinfo, {{.*}}ptr noalias %arg.x.4, {{.*}}ptr noalias %"x'.4", {{.*}}i64 %arg.n) {
        ; CHECK: [[SIN:%[^ ]+]] = tail call double @llvm.sin.f64
        ; CHECK: store double [[SIN]], ptr %tape.top
        ; CHECK: reverse.entry:
        ; CHECK: store double 1.000000e+00, ptr %"ret.slot'"
        ; CHECK: [[POP:%[^ ]+]].tape = load double, ptr
        ; CHECK: call double @llvm.cos.f64
        ; CHECK: getelementptr double, ptr %"x'.4", i64
        ; CHECK: reverse.done:
        ; CHECK: call void @enzyme_py.tape.release
    """)


def test_optimized(sin_sum):
    check(sin_sum.text("optimized"), _header("optimized") + """
        ; CHECK: define {{.*}}i32 @diffe_sin_sum(
        ; CHECK-NOT: alloca
        ; CHECK: @llvm.cos.f64
        ; CHECK: ret i32 0
    """)


def test_tape(sin_sum):
    check(sin_sum.text("tape"), _header("tape") + """
        ; CHECK: ; tape of @{{.*}}sin_sum{{.*}} (reverse mode)
        ; CHECK: ; loops (trip count per entry):
        ; CHECK-NEXT: ;   [[LOOP:B[0-9]+]] depth 1 trips = n samples.py:11
        ; CHECK: ; taped (1 value(s), 8-byte slots (i1: 1, i32/float: 4)
        ; CHECK: ;   [[SIN:%[^ ]+]] double [[LOOP]] [[LOOP]] 8 8 * n = 8000 operand 1 of fmul {{.*}} samples.py:12
        ; CHECK: ; spilled (0 value(s)
        ; CHECK: ; recomputed in the reverse pass instead of taped (4):
        ; CHECK: ;   [[X:%[^ ]+]] double recompute [[LOOP]] operand 0 of llvm.sin [[SIN]] / operand 0 of fmul
        ; CHECK-NEXT: ;   {{%[^ ]+}} ptr recompute [[LOOP]] operand of recomputed [[X]]
        ; CHECK: iv of loop [[LOOP]]
        ; CHECK: ;   [[LOOP]].iter i64 recompute {{B[0-9]+}}.loopexit trip count of loop [[LOOP]]
        ; CHECK: ; total tape per call: 8 * n = 8000 bytes
        ; CHECK-NOT: warning
    """)


@pytest.mark.skipif(not libmvec_variants(), reason="no libmvec on this host")
def test_tape_with_vector_math():
    """With vector math (the default) the reverse loop recomputes the sine, which LLVM
    vectorises with libmvec, rather than reading it back from 8 bytes per element."""
    ins = inspection(samples.sin_sum, "dup,const", "reverse", **SIN_SUM)
    check(ins.text("tape"), """
        ; CHECK: ; taped (0 value(s)
        ; CHECK: ; recomputed in the reverse pass instead of taped (5):
        ; CHECK: ;   [[SIN:%[^ ]+]] double recompute {{B[0-9]+}} operand 1 of fmul {{.*}} samples.py:12
        ; CHECK: ; total tape per call: 0 bytes
    """)
    assert re.search(r"call <\d+ x double> @_ZGV\w+_sin", ins.text("optimized"))


def test_all_stages_in_order(sin_sum):
    text = sin_sum.text("all")
    positions = [text.index(f"-- {stage}\n") for stage in STAGES]
    assert positions == sorted(positions)


def test_forward_mode():
    ins = inspection(samples.sin_sum, "dup,const", "forward", types="float64[::1], int64")
    check(ins.text("derivative"), """
        ; CHECK: ; mode=forward ret=dup
        ; CHECK: define i32 @fwddiffe_sin_sum(
        ; CHECK: call contract double @llvm.cos.f64
        ; CHECK: insertvalue [2 x double]
    """)
    assert "forward mode keeps no tape" in ins.text("tape")


def test_active_scalar_and_output_array():
    text = inspect(samples.scale, "dup,dup,active", stage="derivative",
                   types="float64[::1], float64[::1], float64")
    check(text, """
        ; CHECK: ; mode=reverse ret=const
        ; CHECK: ;   a: active -> %arg.a
        ; CHECK: define i32 @diffe_scale(
        ; CHECK: reverse.done:
        ; CHECK: [[A:%[^ ]+]] = load double, ptr %arg.a.adj
        ; CHECK: [[G:%[^ ]+]] = fadd double [[A]], 0.000000e+00
        ; CHECK: insertvalue [1 x double] poison, double [[G]], 0
    """)


def test_nested_loops_tape_total():
    text = inspect(samples.sin_grid, "dup,dup", stage="tape", sizes={"a": 10},
                   types="float64[:, ::1], float64[::1]")
    check(text, """
        ; CHECK: trips = a.shape[0]
        ; CHECK: depth 2 in {{B[0-9.a-z]+}} trips = a.shape[1]
        ; CHECK: predecessor choices recomputed from the branch condition instead of taped (2)
        ; CHECK: total tape per call: 0 bytes
    """)


def test_data_dependent_loop():
    text = inspect(samples.until_small, "active", stage="tape", types="float64")
    check(text, """
        ; CHECK: trips = ? (data-dependent)
        ; CHECK: total tape per call: ? bytes (some trip counts are data-dependent)
    """)


# ---------------------------------------------------------------- IR files

def test_c_abi_activity_and_tape():
    ins = inspection(KERNELS_LL, "dup,dup,active,const", func="axpy", sizes={"n": 10})
    check(ins.text("activity"), """
        ; CHECK: ; enzyme-py inspect @axpy in kernels.ll -- activity
        ; CHECK: ; mode=reverse ret=const (C ABI through shim @axpy.enzyme_abi)
        ; CHECK: ;   out: dup -> %out.meminfo .. %out (a pointer, passed as a 0-d array: only %out is used)
        ; CHECK: ;   a: active -> %a
        ; CHECK: define i32 @axpy.enzyme_abi(ptr %retptr, ptr %excinfo, ptr %out.meminfo, {{.*}}, ptr %out, {{.*}}, ptr %x, double %a, i64 %n)
        ; CHECK: [[EX:%[^ ]+]] = {{.*}}call double @exp(double {{%[^ ]+}}) ; active
        ; CHECK: fmul double %a, [[EX]] ; active
        ; CHECK: store double {{.*}} ; active store (shadowed memory)
    """)
    check(ins.text("tape"), """
        ; CHECK: trips = n
        ; CHECK: ;   [[EX:%ex[^ ]*]] double {{.*}} 8 8 * n = 80 result of exp, for its derivative / operand 1 of fmul
        ; CHECK: ; total tape per call: 8 * n = 80 bytes
    """)


def test_c_abi_scalar_function_both_modes():
    check(inspect(KERNELS_LL, "active,active", func="poly"), """
        ; CHECK: define i32 @diffe_poly(ptr %retptr, ptr %excinfo, double %x, double %y)
        ; CHECK: call double @llvm.cos.f64(double %y)
        ; CHECK: insertvalue [2 x double]
        ; CHECK: store [2 x double] {{%[^ ]+}}, ptr %retptr
    """)
    check(inspect(KERNELS_LL, "dup,const", "forward", func="poly", stage="optimized"), """
        ; CHECK: define {{.*}}i32 @fwddiffe_poly({{.*}}double %x, double %"x'", double %y)
        ; CHECK: fadd contract double [[D:%[^ ]+]], [[D]]
    """)


def test_ir_without_value_names():
    """clang drops value names: arguments, blocks and values are numbered (%0, %2:, ...)."""
    ins = inspection(os.path.join(HERE, "unnamed.ll"), "dup,const", func="sumexp",
                     sizes={"arg1": 100})
    assert "define dso_local double @sumexp(ptr noundef readonly %0, i32" in ins.text("raw")
    check(ins.text("tape"), """
        ; CHECK: ;   arg0: dup -> %arg0.meminfo .. %arg0
        ; CHECK: ;   arg1: const -> %arg1
        ; CHECK: [[LOOP:bb[0-9]+[.a-z]*]] depth 1 trips = arg1
        ; CHECK: %v13{{[.a-z]*}} double [[LOOP]] [[LOOP]] 8 8 * arg1 = 800 result of exp
        ; CHECK: total tape per call: 8 * arg1 = 800 bytes
    """)


def test_numba_abi_ll_and_bc_round_trip(sin_sum, tmp_path):
    ll = tmp_path / "sin_sum.ll"
    ll.write_text(sin_sum.text("canonical"))
    bc = tmp_path / "sin_sum.bc"
    bc.write_bytes(llvm.parse_assembly(ll.read_text()).as_bitcode())
    # the same code, but without the Numba wrapper's call checks, so without noalias
    want = _body(sin_sum.text("derivative")).replace("ptr noalias ", "ptr ")
    assert want != _body(sin_sum.text("derivative"))
    for path in (ll, bc):       # func: a part of the mangled name
        ins = inspection(str(path), "dup,const", func="sin_sum", canonicalize=False)
        assert ins.target.abi == "numba"
        assert [p.name for p in ins.spec.params] == ["x", "n"]
        assert _body(ins.text("derivative")) == want
    # canonicalising again keeps the code (LLVM drops some !enzyme.loc tags on the way)
    again = inspection(str(ll), "dup,const", func="sin_sum", sizes={"n": 1000})
    assert again.text("tape").endswith("; total tape per call: 8 * n = 8000 bytes\n")


def _body(text: str) -> str:
    return text[text.index("define "):]


def test_ir_errors():
    with pytest.raises(InspectionError, match="defines no function @nope; it defines @poly"):
        inspect(KERNELS_LL, "const", func="nope")
    with pytest.raises(ActivityError, match="@dot has 3 parameter"):
        inspect(KERNELS_LL, "dup", func="dot")
    with pytest.raises(ActivityError, match="parameter 'n' has type i64"):
        inspect(KERNELS_LL, "dup,const,active", func="dot")
    with pytest.raises(InspectionError, match="needs the name of the function"):
        inspect(KERNELS_LL, "dup")
    with pytest.raises(InspectionError, match="an IR function's types are in its signature"):
        inspect(KERNELS_LL, "dup,const,const", func="dot", types="float64")
    with pytest.raises(InspectionError, match="for Python give MODULE:FUNC"):
        inspect(samples.square, "active", types="float64", func="square")


# ---------------------------------------------------------------- Numba targets and checks

def test_same_derivative_as_derive_diff():
    """The tool shows exactly what `derive_diff` compiles (same dispatcher, same types)."""
    import numpy as np
    df = derive_diff(samples.square, "d_square", "active")
    assert df(3.0) == (6.0,)
    linked = df.enzyme.inspect("derivative")
    shown = inspect(df, types="float64", stage="derivative")
    symbol = linked[linked.index("@diffe_") + 1:linked.index("(", linked.index("@diffe_"))]
    assert _body(shown).replace("@diffe_square(", f"@{symbol}(") == _body(linked).rstrip() + "\n"
    assert np.isfinite(df(2.0)[0])


def test_autodiff_object_supplies_activities_and_mode():
    f = autodiff(samples.sin_sum, mode="forward", args=("dup", "const"))
    text = inspect(f, types="float64[::1], int64", stage="activity")
    assert "; mode=forward ret=dup" in text and ";   x: dup" in text


def test_signature_from_a_compiled_dispatcher():
    from numba import njit
    f = njit("float64(float64)")(samples.square)
    assert "; enzyme-py inspect square (float64)" in inspect(f, "active", stage="canonical")
    with pytest.raises(InspectionError, match="give the argument types"):
        inspect(samples.square, "active")


def test_python_target_strings():
    path = os.path.join(HERE, "samples.py")
    assert "square (float64)" in inspect(f"{path}:square", "active", types="float64",
                                         stage="canonical")
    assert "square (float64)" in inspect("tests.unit.enzyme_py.cli.samples:square", "active", types="float64",
                                         stage="canonical")
    with pytest.raises(InspectionError, match="has no function 'nope'; it defines branchy"):
        inspect("tests.unit.enzyme_py.cli.samples:nope", "active", types="float64")


def test_source_location_in_unsupported_error():
    with pytest.raises(UnsupportedError) as err:
        inspect(samples.store_to_const, "const,dup", types="float64[::1], float64[::1]")
    assert "active value stored into memory without a shadow" in str(err.value)
    with open(samples.__file__) as f:
        line = 1 + [ln.strip() for ln in f].index("out[0] = 2.0 * x[0]")
    assert f"at {samples.__file__}:{line}\n" in str(err.value)


def test_bad_requests():
    with pytest.raises(ActivityError, match="2 parameter"):
        inspect(samples.sin_sum, "dup", types="float64[::1], int64")
    with pytest.raises(InspectionError, match="2 parameter.* but 1 type"):
        inspect(samples.sin_sum, "dup,const", types="float64[::1]")
    with pytest.raises(InspectionError, match="unknown stage 'nope'"):
        inspect(samples.square, "active", types="float64", stage="nope")


def test_parse_types():
    assert parse_types("float64[::1], int64") == (types.float64[::1], types.int64)
    assert parse_types("float32") == (types.float32,)
    assert parse_types("UniTuple(float64, 2)") == (types.UniTuple(types.float64, 2),)
    assert parse_types("float64[:, :]")[0].layout == "A"
    for bad, why in [("__import__('os')", "unknown Numba type '__import__'"),
                     ("float64.__class__", "Attribute is not allowed"),
                     ("float64[", "cannot parse"), ("1", "is not a Numba type"),
                     ("(lambda: 0)()", "Lambda is not allowed")]:
        with pytest.raises(InspectionError, match=why.replace("(", r"\(")):
            parse_types(bad)


def test_parse_sizes():
    assert parse_sizes(["n=1000", "m=3,x.shape[0]=7"]) == {"n": 1000, "m": 3, "x.shape[0]": 7}
    with pytest.raises(InspectionError, match="NAME=INTEGER"):
        parse_sizes(["n"])


def test_cfg_dot_and_missing_graphviz(sin_sum, tmp_path, monkeypatch):
    dot = sin_sum.cfg_dot()
    assert "subgraph cluster_primal" in dot and "subgraph cluster_derivative" in dot
    sin_sum.write_cfg(tmp_path / "g.dot")
    assert (tmp_path / "g.dot").read_text() == dot
    monkeypatch.setattr(cfg_files.shutil, "which", lambda name: None)
    with pytest.raises(InspectionError, match="apt-get install graphviz.*or write the graph "
                                              "as .dot"):
        sin_sum.write_cfg(tmp_path / "g.svg")
    with pytest.raises(InspectionError, match="expected a .dot, .svg or .png"):
        sin_sum.write_cfg(tmp_path / "g.pdf")
