"""Unroll-and-jam of count-down nests (`ir_passes.jam_loops`): jammed only when exact, and
then bit-identical to the nest it replaces (run through MCJIT for several trip counts)."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ir_passes.ir.parser import parse_module
from ir_passes.jam_loops import jam_loop_nests
from tests.unit.ir_passes.diff.rules.jit_harness import compile_modules

# The reverse of `C[m, n] += a * B[k, n]` for one row m, as LLVM's simplification leaves it:
# for k = K-1 .. 0:  acc = -0.0; for n = N-1 .. 0: acc += dc[n] * b[k*N + n];
#                    db[k*N + n] += dc[n] * a[k]; dc[n] = dc[n];  da[k] += acc
_NEST = """
define void @f(ptr noalias %da, ptr noalias %a, ptr noalias %db, ptr {b_attr} %b, ptr noalias %dc, i64 %K, i64 %N, i64 %S) {{
entry:
  %empty = icmp slt i64 %N, 1
  %none = icmp slt i64 %K, 1
  br i1 %none, label %done, label %pre

pre:
  br label %head

head:
  %k.in = phi i64 [ %K, %pre ], [ %k, %latch ]
  %k = add nsw i64 %k.in, -1
  br i1 %empty, label %latch, label %inner.pre

inner.pre:
  %ak.p = getelementptr double, ptr %a, i64 %k
  %ak = load double, ptr %ak.p, align 8
  %row = mul i64 %k, {stride}
  %brow = getelementptr double, ptr %b, i64 %row
  %dbrow = getelementptr double, ptr %db, i64 %row
  br label %inner

inner:
  %n.in = phi i64 [ %n, %inner ], [ %N, %inner.pre ]
  %acc = phi double [ %acc.next, %inner ], [ -0.000000e+00, %inner.pre ]
  %n = add i64 %n.in, -1
  %dcn.p = getelementptr double, ptr %dc, i64 {dc_index}
  %dcn = load double, ptr %dcn.p, align 8
  %bkn.p = getelementptr double, ptr %brow, i64 %n
  %bkn = load double, ptr %bkn.p, align 8
  %t = fmul double %dcn, %bkn
  %acc.next = fadd double %acc, %t
  %u = fmul double %dcn, %ak
  %dbkn.p = getelementptr double, ptr %dbrow, i64 %n
  %dbkn = load double, ptr %dbkn.p, align 8
  %dbkn.new = fadd double %u, %dbkn
  store double %dbkn.new, ptr %dbkn.p, align 8
  store double %dcn, ptr %dcn.p, align 8
  {extra}
  %last = icmp eq i64 %n, 0
  br i1 %last, label %inner.exit, label %inner

inner.exit:
  %acc.lcssa = phi double [ %acc.next, %inner ]
  br label %latch

latch:
  %sum = phi double [ -0.000000e+00, %head ], [ %acc.lcssa, %inner.exit ]
  %dak.p = getelementptr double, ptr %da, i64 %k
  %dak = load double, ptr %dak.p, align 8
  %dak.new = fadd double %sum, %dak
  store double %dak.new, ptr %dak.p, align 8
  %end = icmp eq i64 %k, 0
  br i1 %end, label %exit, label %head

exit:
  br label %done

done:
  ret void
}}
"""
# LLVM's promotion of `da[k]` to a register: loaded before the inner loop, stored after it
_PROMOTED = (("  br label %inner\n", "  %dak.p = getelementptr double, ptr %da, i64 %k\n"
              "  %dak = load double, ptr %dak.p, align 8\n  br label %inner\n"),
             ("[ -0.000000e+00, %inner.pre ]", "[ %dak, %inner.pre ]"),
             ("  br label %latch\n", "  store double %acc.lcssa, ptr %dak.p, align 8\n"
              "  br label %latch\n"),
             ("  %sum = phi double [ -0.000000e+00, %head ], [ %acc.lcssa, %inner.exit ]\n"
              "  %dak.p = getelementptr double, ptr %da, i64 %k\n"
              "  %dak = load double, ptr %dak.p, align 8\n"
              "  %dak.new = fadd double %sum, %dak\n"
              "  store double %dak.new, ptr %dak.p, align 8\n", ""))
_EXACT = dict(b_attr="noalias", stride="%N", dc_index="%n", extra="")


def _module(promoted: bool = False, **changes: str):
    text = _NEST.format(**{**_EXACT, **changes})
    for old, new in _PROMOTED if promoted else ():
        assert old in text
        text = text.replace(old, new)
    return parse_module(text)


def test_the_reverse_matmul_row_is_jammed():
    module = _module()
    assert jam_loop_nests(module.functions["f"], 4)
    blocks = [b.name for b in module.functions["f"].blocks]
    assert "head.jam.inner" in blocks and "head" in blocks        # remainder: the original
    inner = next(b for b in module.functions["f"].blocks if b.name == "head.jam.inner")
    assert sum(i.opcode == "fadd" and "nsz" not in i.flags and i.type.is_float
               for i in inner.instructions) == 8   # 4 chains + 4 db updates


@pytest.mark.parametrize("changes, why", [
    (dict(stride="%S"), "rows k*S + n with S not the inner trip count may overlap"),
    (dict(dc_index="%k"), "dc[k] written in the inner loop: not one of the exact patterns"),
    (dict(b_attr=""), "b may alias any array"),
    (dict(extra="store double %t, ptr %a, align 8"), "a read as a[k] and written as a[0]"),
    (dict(extra="call void @g()"), "a call of unknown effect"),
])
def test_possible_overlap_is_left_unchanged(changes, why):
    text = _NEST.format(**{**_EXACT, **changes})
    if "@g()" in text:
        text = "declare void @g()\n" + text
    assert not jam_loop_nests(parse_module(text).functions["f"], 4), why


def test_a_loop_that_is_not_counted_is_left_unchanged():
    # the inner loop exits on a loaded value: not a count-down to zero
    text = _NEST.format(**_EXACT).replace("%last = icmp eq i64 %n, 0",
                                          "%last = fcmp olt double %dcn, 0.000000e+00")
    assert not jam_loop_nests(parse_module(text).functions["f"], 4)


def _run(module, K: int, N: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(size) for size in (K, K, K * N, K * N, N)]
    jit = compile_modules(module)             # keeps the engine (and the code) alive
    fn = jit.function(
        "f", None, *([ctypes.c_void_p] * 5), ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
    fn(*(a.ctypes.data for a in arrays), K, N, N)
    return arrays


@pytest.mark.parametrize("promoted", (False, True), ids=("latch", "promoted"))
@pytest.mark.parametrize("K, N", [(1, 5), (3, 7), (4, 1), (4, 8), (9, 13), (16, 64), (7, 0)])
def test_jammed_nest_is_bit_identical(K, N, promoted):
    """Trip counts below, at, and not a multiple of the factor, and an empty inner loop; the
    accumulator added in the latch or kept in a register (its store after the inner loop)."""
    plain, jammed = _module(promoted), _module(promoted)
    assert jam_loop_nests(jammed.functions["f"], 4)
    for x, y in zip(_run(plain, K, N, K * 100 + N), _run(jammed, K, N, K * 100 + N)):
        assert np.array_equal(x.view(np.int64), y.view(np.int64))


def test_a_value_used_after_the_nest_is_left_unchanged():
    # `%k` read after the loop without an exit phi (not LCSSA): its last value would change
    text = _NEST.format(**_EXACT).replace("exit:\n  br label %done",
                                          "exit:\n  %after = add i64 %k, 1\n  br label %done")
    assert "%after" in text
    assert not jam_loop_nests(parse_module(text).functions["f"], 4)
