"""The reverse pass's tape (ir_passes/diff/reverse/tape.py), built into a tiny function with
the Builder and run natively (MCJIT, tests/unit/ir_passes/diff/rules/jit_harness.py).

``void @lifo(ptr %in, ptr %out, i64 %n)`` pushes frames ``(in[i], i)`` for i = 0..n-1 in a
first loop, pops them in a second loop writing ``out[j] = value * 1000 + index``, then
releases the tape. Frames must come back last-in first-out, intact across the tape's growth
(the first block is 64 KiB, i.e. 4096 two-slot frames).
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest

from ir_passes.canonicalize import verify
from ir_passes.diff.reverse.tape import SLOT, Tape, pop_placeholder
from ir_passes.ir.builder import Builder, add_incoming
from ir_passes.ir.printer import print_module
from ir_passes.ir.types import DOUBLE, I64, PTR, VOID, FunctionType
from ir_passes.ir.values import Function, Module, const_float, const_int
from tests.support.filecheck import check
from tests.unit.ir_passes.diff.rules.jit_harness import compile_modules


def build_lifo(reserved: bool = False) -> Module:
    """`reserved`: the entry reserves n frames, the pushes are unchecked (pre-sized tape)."""
    module = Module()
    fn = Function("lifo", FunctionType(VOID, (PTR, PTR, I64)), ["in", "out", "n"])
    module.add_function(fn)
    src, dst, n = fn.args
    entry = fn.add_block("entry")
    tape = Tape(module, fn, entry)
    push_head, push_body = fn.add_block("push.head"), fn.add_block("push.body")
    pop_head, pop_body, done = (fn.add_block("pop.head"), fn.add_block("pop.body"),
                                fn.add_block("done"))
    b = Builder(entry)
    b.br(push_head)
    if reserved:
        b.position_before(entry.instructions[-1])
        need = b.mul(n, const_int(I64, 2 * SLOT))
        entry = tape.reserve(entry, need)

    b.position_at_end(push_head)
    i = b.phi(I64, "i")
    b.cbr(b.icmp("ult", i, n, "more"), push_body, pop_head)
    b.position_at_end(push_body)
    v = b.load(DOUBLE, b.gep(DOUBLE, src, [i]), "v")
    i_next = b.add(i, const_int(I64, 1), "i.next")
    b.br(push_head)
    latch = tape.push(push_body, [v, i], checked=not reserved)   # checked: splits push_body
    add_incoming(i, const_int(I64, 0), entry)
    add_incoming(i, i_next, latch)

    b.position_at_end(pop_head)
    j = b.phi(I64, "j")
    b.cbr(b.icmp("ult", j, n, "left"), pop_body, done)
    b.position_at_end(pop_body)
    value, index = pop_placeholder(DOUBLE, "value"), pop_placeholder(I64, "index")
    tape.pop(b, [value, index])
    packed = b.fadd(b.fmul(value, const_float(DOUBLE, 1000.0)),
                    b.cast("sitofp", index, DOUBLE), "packed")
    b.store(packed, b.gep(DOUBLE, dst, [j]))
    j_next = b.add(j, const_int(I64, 1), "j.next")
    b.br(pop_head)
    add_incoming(j, const_int(I64, 0), push_head)
    add_incoming(j, j_next, pop_body)

    b.position_at_end(done)
    tape.release(b)
    b.ret()
    assert tape.used
    return module


@pytest.fixture(scope="module", params=[False, True], ids=["checked", "reserved"])
def lifo(request):
    module = build_lifo(request.param)
    jit = compile_modules(module)
    fn = jit.function("lifo", None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)

    def run(values: np.ndarray) -> np.ndarray:
        out = np.full(values.size, np.nan)
        fn(values.ctypes.data, out.ctypes.data, values.size)
        return out
    run.jit = jit                                   # keep the engine alive
    return run


def test_tape_ir_verifies_and_has_the_expected_shape():
    module = build_lifo()
    verify(print_module(module))
    check(print_module(module), """
        CHECK-LABEL: define void @lifo(ptr %in, ptr %out, i64 %n)
        CHECK: %tape.base = alloca ptr
        CHECK: %tape.top = alloca ptr
        CHECK: %tape.end = alloca ptr
        CHECK: %tape.parked = atomicrmw xchg ptr @enzyme_py.tape.parked, ptr null acquire
        CHECK: store ptr %tape.parked, ptr %tape.base
        CHECK-LABEL: push.body:
        CHECK: [[TOP:%[^ ]+]] = load ptr, ptr %tape.top
        CHECK-NEXT: [[NEW:%[^ ]+]] = getelementptr i8, ptr [[TOP]], i64 16
        CHECK: icmp ugt ptr [[NEW]]
        CHECK: br i1 {{%[^ ]+}}, label %push.body.tape.grow, label %push.body.tape.push
        CHECK-LABEL: pop.body:
        CHECK: [[T:%[^ ]+]] = load ptr, ptr %tape.top
        CHECK-NEXT: [[FRAME:%[^ ]+]] = getelementptr i8, ptr [[T]], i64 -16
        CHECK-NEXT: store ptr [[FRAME]], ptr %tape.top
        CHECK-NEXT: %value = load double, ptr [[FRAME]]
        CHECK-NEXT: [[SECOND:%[^ ]+]] = getelementptr i8, ptr [[FRAME]], i64 8
        CHECK-NEXT: %index = load i64, ptr [[SECOND]]
        CHECK-LABEL: done:
        CHECK: call void @enzyme_py.tape.release(ptr
        CHECK-LABEL: push.body.tape.grow:
        CHECK: call { ptr, ptr, ptr } @enzyme_py.tape.grow(
        CHECK-LABEL: push.body.tape.push:
        CHECK: %tape.at = phi ptr
        CHECK: br label %push.head
        CHECK-LABEL: define internal { ptr, ptr, ptr } @enzyme_py.tape.grow(
        CHECK-SAME: ptr %base, ptr %top, ptr %end, i64 %need) noinline
        CHECK: call ptr @realloc(ptr %base,
        CHECK-LABEL: define internal void @enzyme_py.tape.release(ptr %base, ptr %end) noinline
        CHECK: store i64 {{%[^ ]+}}, ptr %base
        CHECK: %before = atomicrmw xchg ptr @enzyme_py.tape.parked, ptr %base acq_rel
        CHECK: call void @free(ptr %before)
    """)
    assert SLOT == 8


def test_reserved_tape_pushes_without_a_check():
    module = build_lifo(reserved=True)
    verify(print_module(module))
    check(print_module(module), """
        CHECK-LABEL: entry:
        CHECK: [[NEED:%[^ ]+]] = mul i64 %n, 16
        CHECK: br i1 {{%[^ ]+}}, label %entry.tape.grow, label %entry.tape.push
        CHECK-LABEL: push.body:
        CHECK: [[TOP:%[^ ]+]] = load ptr, ptr %tape.top
        CHECK-NEXT: store double %v, ptr [[TOP]]
        CHECK: %tape.reserved.push = getelementptr i8, ptr [[TOP]], i64 16
        CHECK-NEXT: store ptr %tape.reserved.push, ptr %tape.top
        CHECK-NEXT: br label %push.head
        CHECK-LABEL: entry.tape.grow:
        CHECK: call { ptr, ptr, ptr } @enzyme_py.tape.grow({{.*}}, i64 [[NEED]])
    """)


@pytest.mark.parametrize("n", [0, 1, 5, 4095, 4096, 4097, 50_000])
def test_frames_pop_last_in_first_out(lifo, n):
    values = np.linspace(-1.0, 1.0, n) if n else np.zeros(0)
    out = lifo(values)
    indices = np.arange(n)[::-1]
    np.testing.assert_array_equal(out, values[::-1] * 1000.0 + indices)


def test_repeated_runs_start_from_an_empty_tape(lifo):
    values = np.arange(10_000, dtype=np.float64)
    first = lifo(values)
    for _ in range(20):
        np.testing.assert_array_equal(lifo(values), first)
