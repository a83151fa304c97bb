"""`ir_passes.analysis.cfg_dot` on a tiny canonical loop (no Numba involved)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from ir_passes.analysis.activity import analyze_activity
from ir_passes.analysis.cfg_dot import ACTIVE, DERIVED, DERIVED_FILL, cfg_dot
from ir_passes.diff.reverse.driver import synthesize_reverse
from ir_passes.ir.parser import parse_module

from tests.support.filecheck import check
from .test_tape_report import COUNTED, HERE


def _colors(dot: str) -> str:
    """Colour codes by name, so the patterns read ACTIVE / DERIVED / DERIVED_FILL."""
    for name, code in (("DERIVED_FILL", DERIVED_FILL), ("ACTIVE", ACTIVE), ("DERIVED", DERIVED)):
        dot = dot.replace(code, name)
    return dot


def _graph(with_derivative: bool = True) -> str:
    with open(os.path.join(HERE, "loops.ll")) as f:
        module = parse_module(f.read())
    primal = module.functions["counted"]
    # COUNTED: x dup (data pointer %x.4 shadowed), return active (retptr shadowed)
    info = analyze_activity(primal, set(), {primal.args[6], primal.args[0]})
    derivative = synthesize_reverse(module, COUNTED) if with_derivative else None
    return cfg_dot(primal, info, derivative, module=module, title="counted <x>")


def test_primal_cluster_highlights_active_code():
    dot = _graph(with_derivative=False)
    check(_colors(dot), """
        ; CHECK: digraph "enzyme_py" {
        ; CHECK: label="counted <x>"
        ; CHECK: subgraph cluster_primal {
        ; CHECK: label="primal @counted"
        ; CHECK: primal_2 [label=<{{.*}}BGCOLOR="#ffecec"{{.*}}<B>loop:</B>
        ; CHECK-SAME: <FONT COLOR="ACTIVE"><B>%s = phi double
        ; CHECK-SAME: <FONT COLOR="#b36b00">%p = getelementptr double, ptr %x.4, i64 %i</FONT>
        ; CHECK-SAME: <FONT COLOR="ACTIVE"><B>%e = call double @llvm.exp.f64(double %v)</B></FONT>
        ; CHECK-SAME: <TD ALIGN="LEFT">%done = icmp eq i64 %i.next, %x.5</TD>
        ; CHECK-SAME: tooltip="/src/kernels.py:7, /src/kernels.py:6"
        ; CHECK: primal_0 -> primal_1 [label="T"];
        ; CHECK: primal_0 -> primal_4 [label="F"];
        ; CHECK: primal_2 -> primal_2 [label="F", style=dashed];
        ; CHECK-NOT: cluster_derivative
        ; CHECK: legend
    """)
    assert "%x.5 &lt;" not in dot and "&lt;x&gt;" not in dot   # title is an attribute, not HTML


def test_derivative_cluster_marks_new_blocks_and_code():
    dot = _graph()
    check(_colors(dot), """
        ; CHECK: subgraph cluster_primal {
        ; CHECK: subgraph cluster_derivative {
        ; CHECK: label="derivative @diffe_counted"
        ; CHECK: derivative_0 [label=<{{.*}}BGCOLOR="DERIVED_FILL"{{.*}}<B>entry:</B>
        ; CHECK: <B>loop:</B>
        ; CHECK-SAME: <FONT COLOR="DERIVED">%loop.iter = phi i64
        ; CHECK-SAME: <TD ALIGN="LEFT">%e = call double @llvm.exp.f64(double %v)</TD>
        ; CHECK: BGCOLOR="DERIVED_FILL"{{.*}}<B>loop.rev:</B>
    """)
    # every edge joins two nodes of the same cluster
    for a, b in re.findall(r"(\w+)_\d+ -> (\w+)_\d+", dot):
        assert a == b


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_graphviz_accepts_the_graph():
    proc = subprocess.run(["dot", "-Tsvg"], input=_graph().encode(), capture_output=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"<svg" in proc.stdout and b"diffe_counted" in proc.stdout
