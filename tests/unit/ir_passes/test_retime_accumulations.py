"""Constant-offset accumulations of a loop counting down retimed (`ir_passes.retime_accumulations`):
each case runs the loop before and after (LLVM's JIT) and compares bit for bit; loops where an
access may hit the addresses in flight, whose offsets are not constant or not consecutive, or
whose accumulations interleave, are left unchanged."""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest

from ir_passes.canonicalize import _target_machine, parse
from ir_passes.ir.parser import parse_module
from ir_passes.ir.printer import print_module
from ir_passes.retime_accumulations import retime_accumulations

_IR = """
declare void @opaque()

define void @f(ptr noalias %d, ptr noalias %g, ptr {h_attr} %h, i64 %n, i64 %w) {{
entry:
  br label %loop

loop:
  %iv = phi i64 [ %n, %entry ], [ %iv.next, %loop ]
  %j = add nuw i64 %iv, 1
  %gi = getelementptr double, ptr %g, i64 %iv
  %t = load double, ptr %gi, align 8
  %u = fmul double %t, 3.0
  %p = getelementptr double, ptr %d, i64 %j
  %neg = icmp slt i64 %j, 0
  %wrap = select i1 %neg, i64 %w, i64 0
  %pw = getelementptr double, ptr %p, i64 %wrap
  %lo = getelementptr i8, ptr {lo_base}, i64 -8
  %hi = getelementptr i8, ptr %p, i64 {hi_offset}
  {body}
  %iv.next = add i64 %iv, -1
  %done = icmp eq i64 %iv, 0
  br i1 %done, label %exit, label %loop

exit:
  ret void
}}
"""

_ACCUMULATE = """
  %x1 = load double, ptr %hi, align 8
  %y1 = fadd nsz double %t, %x1
  store double %y1, ptr %hi, align 8
  %x2 = load double, ptr %lo, align 8
  %y2 = fadd nsz double %x2, %u
  store double %y2, ptr %lo, align 8
  %x3 = load double, ptr %pw, align 8
  %y3 = fadd nsz double %u, %x3
  store double %y3, ptr %pw, align 8
  %x4 = load double, ptr %pw, align 8
  %y4 = fadd nsz double %t, %x4
  store double %y4, ptr %pw, align 8
"""


def _ir(body: str = _ACCUMULATE, h_attr: str = "noalias", hi_offset: int = 8,
        lo_base: str = "%p", extra: str = "") -> str:
    return _IR.format(body=body + extra, h_attr=h_attr, hi_offset=hi_offset, lo_base=lo_base)


def _retimed(text: str) -> tuple[bool, str]:
    module = parse_module(text)
    changed = retime_accumulations(module.functions["f"])
    return changed, print_module(module)


_ENGINES = []


def _run(text: str, d: np.ndarray, g: np.ndarray, h: np.ndarray, n: int, w: int = 0) -> None:
    module = parse(text)
    engine = llvm.create_mcjit_compiler(module, _target_machine())
    engine.finalize_object()
    _ENGINES.append(engine)
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_int64, ctypes.c_int64)(engine.get_function_address("f"))
    fn(d.ctypes.data, g.ctypes.data, h.ctypes.data, n, w)


def _same_results(before: str, after: str, n: int, h_at: int | None = None) -> None:
    rng = np.random.default_rng(n)
    g = rng.standard_normal(n + 1)
    d0 = rng.standard_normal(n + 16) * 1e3           # rounding differs if the order does
    outs = []
    for text in (before, after):
        d = d0.copy()
        h = d[4 + h_at:] if h_at is not None else np.zeros(n + 8)
        _run(text, d[4:], g, h, n)                   # offsets down to -2 from iv + 1
        outs.append(d)
    assert outs[0].tobytes() == outs[1].tobytes()


@pytest.mark.parametrize("n", [0, 1, 2, 5, 40])
def test_three_offsets_retimed_bit_identical(n):
    before = _ir()
    changed, after = _retimed(before)
    assert changed and "carry2" in after and "unretimed" in after    # wraparound select: guarded
    _same_results(before, after, n)


def test_five_offsets_retimed():
    body = "".join(f"""
  %q{k} = getelementptr i8, ptr %p, i64 {8 * k}
  %a{k} = load double, ptr %q{k}, align 8
  %b{k} = fadd nsz double %a{k}, %u
  store double %b{k}, ptr %q{k}, align 8
""" for k in (2, -1, 0, 1, -2))
    before = _ir(body)
    changed, after = _retimed(before)
    assert changed and "carry4" in after and "unretimed" not in after    # nothing to check
    for n in (0, 3, 17):
        _same_results(before, after, n)


def test_access_of_another_argument_checked_at_run_time():
    extra = """
  %hp = getelementptr double, ptr %h, i64 %iv
  %hx = load double, ptr %hp, align 8
  %hy = fadd double %hx, %t
  store double %hy, ptr %hp, align 8
"""
    before = _ir(h_attr="", extra=extra)
    changed, after = _retimed(before)
    assert changed and "unretimed" in after
    for h_at in (None, 0, 1, 2, 3, 5):        # apart, or inside the window: the copy runs
        _same_results(before, after, 20, h_at)


@pytest.mark.parametrize("case", ["plain store in window", "non-constant offset", "gap",
                                  "interleaved", "call", "other stride"])
def test_left_unchanged(case):
    text = {
        "plain store in window": _ir(extra="  store double 0.0, ptr %lo, align 8\n"),
        "non-constant offset": _ir(lo_base="%pv", extra="").replace(
            "%lo = ", "%pv = getelementptr double, ptr %p, i64 %w\n  %lo = "),
        "gap": _ir(body=_ACCUMULATE.split("  %x3")[0], hi_offset=16),
        "interleaved": _ir(body="""
  %x1 = load double, ptr %hi, align 8
  %x2 = load double, ptr %lo, align 8
  %y1 = fadd nsz double %t, %x1
  %y2 = fadd nsz double %x2, %u
  store double %y1, ptr %hi, align 8
  store double %y2, ptr %lo, align 8
"""),
        "call": _ir(extra="  call void @opaque()\n"),
        "other stride": _ir(h_attr="", extra="""
  %hp = getelementptr double, ptr %h, i64 %j
  %hq = getelementptr double, ptr %hp, i64 %j
  store double 1.0, ptr %hq, align 8
"""),
    }[case]
    changed, after = _retimed(text)
    assert not changed


def test_subtractions_retimed_from_plus_zero():
    """`d[k] -= t` carries +0.0 for terms of iterations that did not run (`x - +0.0 == x`,
    while `-0.0 - -0.0` would be +0.0); a seed of -0.0 keeps its sign."""
    body = _ACCUMULATE.replace("%y2 = fadd nsz double %x2, %u", "%y2 = fsub double %x2, %u")
    before = _ir(body)
    changed, after = _retimed(before)
    assert changed and "fsub double" in after
    for n in (0, 1, 6):
        _same_results(before, after, n)
    outs = []
    for text in (before, after):
        d = np.full(12, -0.0)
        _run(text, d[4:], np.zeros(8), np.zeros(8), 3)
        outs.append(d)
    assert outs[0].tobytes() == outs[1].tobytes()


def test_loop_leaving_when_the_decrement_is_zero():
    """`phi [n, entry], [iv - 1, loop]` leaving when `iv - 1 == 0`: iterations n .. 1."""
    before = _ir().replace("%done = icmp eq i64 %iv, 0", "%done = icmp eq i64 %iv.next, 0")
    changed, after = _retimed(before)
    assert changed
    for n in (1, 2, 9):
        _same_results(before, after, n)
