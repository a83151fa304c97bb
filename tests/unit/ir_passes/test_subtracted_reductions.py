"""Adjoint slots a loop only subtracts from, kept negated (`ir_passes.subtracted_reductions`):
each case runs the function before and after through LLVM's JIT and compares bit for bit (the
slot after the loop and a read of it inside; a zero may change sign, nothing else); slots the
loop also resets or adds to are left alone."""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
import pytest

from ir_passes.canonicalize import _target_machine, parse
from ir_passes.ir.parser import parse_module
from ir_passes.ir.printer import print_module
from ir_passes.subtracted_reductions import negate_subtracted_adjoints

_IR = """
define double @f(ptr noalias %x, ptr noalias %out, i64 %n, double %r0) {{
entry:
  %slot = alloca double
  store double %r0, ptr %slot
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %p = getelementptr double, ptr %x, i64 %i
  %v = load double, ptr %p, align 8
  %t = fmul double %v, 3.0
  %a = load double, ptr %slot
  %nt = fneg double %t
  %s = fadd double %a, %nt
  store double %s, ptr %slot
  %b = load double, ptr %slot
  %u = {second} double %b, %v
  store double %u, ptr %slot
  %seen = load double, ptr %slot
  %q = getelementptr double, ptr %out, i64 %i
  store double %seen, ptr %q, align 8
  %i.next = add i64 %i, 1
  %done = icmp eq i64 %i.next, %n
  br i1 %done, label %exit, label %loop

exit:
  %last = load double, ptr %slot
  ret double %last
}}
"""

_ENGINES = []


def _run(text: str, x: np.ndarray, r0: float) -> tuple[float, np.ndarray]:
    engine = llvm.create_mcjit_compiler(parse(text), _target_machine())
    engine.finalize_object()
    _ENGINES.append(engine)
    fn = ctypes.CFUNCTYPE(ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                          ctypes.c_double)(engine.get_function_address("f"))
    out = np.zeros_like(x)
    return fn(x.ctypes.data, out.ctypes.data, len(x), r0), out


def _negated(text: str) -> tuple[bool, str]:
    module = parse_module(text)
    changed = negate_subtracted_adjoints(module.functions["f"])
    return changed, print_module(module)


def _unsigned(v) -> bytes:
    return (np.asarray(v, dtype=float) + 0.0).tobytes()


@pytest.mark.parametrize("r0", [0.0, -0.0, 1e16, -3.5])
@pytest.mark.parametrize("n", [1, 2, 7, 100])
def test_bit_identical(n, r0):
    before = _IR.format(second="fsub")
    changed, after = _negated(before)
    assert changed and "%slot.neg = alloca double" in after
    assert "fsub" not in after.split("loop:")[1].split("exit:")[0]
    x = np.random.default_rng(n).standard_normal(n) * 1e3
    x[0] = 0.0                                       # a zero term: the sign of zero may flip
    (v0, out0), (v1, out1) = _run(before, x, r0), _run(after, x, r0)
    assert _unsigned(v0) == _unsigned(v1) and _unsigned(out0) == _unsigned(out1)


@pytest.mark.parametrize("case", ["adds too", "reset"])
def test_left_unchanged(case):
    before = _IR.format(second="fadd") if case == "adds too" else \
        _IR.format(second="fsub").replace("  store double %u, ptr %slot\n",
                                          "  store double %u, ptr %slot\n"
                                          "  store double -0.0, ptr %slot\n")
    changed, after = _negated(before)
    assert not changed and after == print_module(parse_module(before))
