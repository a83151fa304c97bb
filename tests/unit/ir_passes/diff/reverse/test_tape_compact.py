"""Compact tape slots (issue 10): i1 values take one byte, i32 and float four, frames follow
one another unpadded and accesses carry the alignment the frames guarantee.

``void @mixed(ptr %in, ptr %out, i64 %n)`` pushes one frame per element: ``in[i] < 0`` (i1),
``in[i]`` (double) and ``i`` (i32), 13 bytes, so most doubles sit misaligned; it pops them in
reverse order writing ``value * 1000 + index + 0.5 * flag``, run natively across growth.
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ir_passes.canonicalize import verify
from ir_passes.diff.reverse.tape import SLOT, Tape, frame_layout, pop_placeholder, slot_bytes
from ir_passes.ir.builder import Builder, add_incoming
from ir_passes.ir.printer import print_module
from ir_passes.ir.types import DOUBLE, FLOAT, I1, I32, I64, PTR, VOID, FunctionType, IntType
from ir_passes.ir.values import Function, Module, const_float, const_int
from tests.support.filecheck import check
from tests.unit.ir_passes.diff.rules.jit_harness import compile_modules


def test_slot_sizes_and_frame_layout():
    assert [slot_bytes(t) for t in (I1, IntType(8), I32, FLOAT, I64, DOUBLE, PTR)] == \
        [1, 1, 4, 4, 8, 8, 8]
    offsets, size = frame_layout([I1, DOUBLE, I32, I1, PTR])
    assert size == 1 + 8 + 4 + 1 + 8
    assert offsets == [20, 0, 16, 21, 8]          # largest first: each at a multiple of its size
    assert frame_layout([]) == ([], 0)


def build_mixed(reserved: bool) -> Module:
    module = Module()
    fn = Function("mixed", FunctionType(VOID, (PTR, PTR, I64)), ["in", "out", "n"])
    module.add_function(fn)
    src, dst, n = fn.args
    entry = fn.add_block("entry")
    tape = Tape(module, fn, entry)
    tape.fit([[I1, DOUBLE, I32]])
    push_head, push_body = fn.add_block("push.head"), fn.add_block("push.body")
    pop_head, pop_body, done = (fn.add_block("pop.head"), fn.add_block("pop.body"),
                                fn.add_block("done"))
    b = Builder(entry)
    b.br(push_head)
    if reserved:
        b.position_before(entry.instructions[-1])
        entry = tape.reserve(entry, b.mul(n, const_int(I64, frame_layout([I1, DOUBLE, I32])[1])))
    b.position_at_end(push_head)
    i = b.phi(I64, "i")
    b.cbr(b.icmp("ult", i, n, "more"), push_body, pop_head)
    b.position_at_end(push_body)
    v = b.load(DOUBLE, b.gep(DOUBLE, src, [i]), "v")
    flag = b.fcmp("olt", v, const_float(DOUBLE, 0.0), "flag")
    index = b.cast("trunc", i, I32, "index")
    i_next = b.add(i, const_int(I64, 1), "i.next")
    b.br(push_head)
    latch = tape.push(push_body, [flag, v, index], checked=not reserved)
    add_incoming(i, const_int(I64, 0), entry)
    add_incoming(i, i_next, latch)

    b.position_at_end(pop_head)
    j = b.phi(I64, "j")
    b.cbr(b.icmp("ult", j, n, "left"), pop_body, done)
    b.position_at_end(pop_body)
    flag_, value, index_ = (pop_placeholder(I1, "flag.t"), pop_placeholder(DOUBLE, "value"),
                            pop_placeholder(I32, "index.t"))
    tape.pop(b, [flag_, value, index_])
    packed = b.fadd(b.fmul(value, const_float(DOUBLE, 1000.0)),
                    b.cast("sitofp", index_, DOUBLE))
    half = b.select(flag_, const_float(DOUBLE, 0.5), const_float(DOUBLE, 0.0))
    b.store(b.fadd(packed, half), b.gep(DOUBLE, dst, [j]))
    j_next = b.add(j, const_int(I64, 1), "j.next")
    b.br(pop_head)
    add_incoming(j, const_int(I64, 0), push_head)
    add_incoming(j, j_next, pop_body)
    b.position_at_end(done)
    tape.release(b)
    b.ret()
    return module


def test_frames_are_unpadded_and_accesses_say_their_alignment():
    text = print_module(build_mixed(False))
    verify(text)
    check(text, """
        CHECK-LABEL: push.body:
        CHECK: getelementptr i8, ptr {{%[^ ]+}}, i64 13
        CHECK-LABEL: pop.body:
        CHECK: [[FRAME:%[^ ]+]] = getelementptr i8, ptr {{%[^ ]+}}, i64 -13
        CHECK: getelementptr i8, ptr [[FRAME]], i64 12
        CHECK-NEXT: %flag.t = load i1, ptr {{%[^ ]+}}, align 1
        CHECK-NEXT: %value = load double, ptr [[FRAME]], align 1
        CHECK: %index.t = load i32, ptr {{%[^ ]+}}, align 1
    """)
    assert SLOT == 8


@pytest.mark.parametrize("reserved", [False, True], ids=["checked", "reserved"])
def test_mixed_frames_come_back_intact_across_growth(reserved):
    jit = compile_modules(build_mixed(reserved))
    fn = jit.function("mixed", None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
    n = 12_000                                     # 156 KB: the 64 KiB first block grows twice
    values = np.random.default_rng(3).standard_normal(n)
    out = np.full(n, np.nan)
    fn(values.ctypes.data, out.ctypes.data, n)
    k = np.arange(n)[::-1]
    expected = values[k] * 1000.0 + k + 0.5 * (values[k] < 0.0)
    np.testing.assert_array_equal(out, expected)
