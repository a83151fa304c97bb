"""The typed builder (ir_passes/ir/builder.py): it checks operand types before emitting, so a
pass bug is an AssertionError at the faulty call; what it builds prints as valid IR."""
from __future__ import annotations

import pytest

from ir_passes.canonicalize import verify
from ir_passes.ir.builder import Builder, add_incoming, declare
from ir_passes.ir.printer import print_function, print_module
from ir_passes.ir.types import (DOUBLE, FLOAT, I1, I32, I64, PTR, VOID, FunctionType,
                                StructType, VectorType)
from ir_passes.ir.values import Constant, Function, Module, const_float, const_int
from tests.support.filecheck import check


def _function(*params, ret=DOUBLE, names=None):
    module = Module()
    fn = Function("f", FunctionType(ret, tuple(params)), names)
    module.add_function(fn)
    return module, fn, Builder(fn.add_block("entry"))


# --------------------------------------------------------------------------------- type checks

def test_binop_operands_must_have_the_same_type():
    _, fn, b = _function(DOUBLE, FLOAT)
    x, y = fn.args
    with pytest.raises(AssertionError, match="fadd: double vs float"):
        b.fadd(x, y)


def test_float_ops_need_floats_and_int_ops_need_ints():
    _, fn, b = _function(I64, I64, DOUBLE, DOUBLE)
    i, j, x, y = fn.args
    with pytest.raises(AssertionError, match="fmul on i64"):
        b.fmul(i, j)
    with pytest.raises(AssertionError):
        b.add(x, y)
    with pytest.raises(AssertionError):
        b.binop("fpow", x, y)                      # not an opcode
    with pytest.raises(AssertionError):
        b.fneg(i)


def test_comparisons_check_operand_types():
    _, fn, b = _function(I64, DOUBLE, I32)
    i, x, k = fn.args
    with pytest.raises(AssertionError):
        b.fcmp("olt", i, i)                        # fcmp on ints
    with pytest.raises(AssertionError, match="icmp: i64 vs i32"):
        b.icmp("eq", i, k)
    with pytest.raises(AssertionError):
        b.fcmp("olt", x, const_float(FLOAT, 1.0))


def test_select_needs_an_i1_condition_and_equal_arms():
    _, fn, b = _function(I64, DOUBLE, FLOAT, I1)
    i, x, y, c = fn.args
    with pytest.raises(AssertionError, match="select i64"):
        b.select(i, x, x)
    with pytest.raises(AssertionError, match="select i1 double float"):
        b.select(c, x, y)


def test_memory_operations_need_pointers():
    _, fn, b = _function(I64, DOUBLE, PTR)
    i, x, p = fn.args
    with pytest.raises(AssertionError, match="load from i64"):
        b.load(DOUBLE, i)
    with pytest.raises(AssertionError, match="store to double"):
        b.store(x, x)
    with pytest.raises(AssertionError, match="gep on double"):
        b.gep(DOUBLE, x, [i])
    with pytest.raises(AssertionError):
        b.gep(DOUBLE, p, [x])                      # float index


def test_calls_check_arity_and_argument_types():
    module, fn, b = _function(DOUBLE, FLOAT)
    x, y = fn.args
    sin = declare(module, "llvm.sin.f64", DOUBLE, [DOUBLE])
    with pytest.raises(AssertionError, match="arity"):
        b.call(sin, [x, x], DOUBLE)
    with pytest.raises(AssertionError, match=r"call @llvm.sin.f64: \['float'\] vs \['double'\]"):
        b.call(sin, [y], DOUBLE)
    printf = declare(module, "printf", I32, [PTR], vararg=True)
    b.call(printf, [Constant(PTR, "null"), x], I32)   # varargs: extra arguments allowed


def test_branches_phis_and_vectors_check_types():
    _, fn, b = _function(I64, DOUBLE, VectorType(2, DOUBLE))
    i, x, v = fn.args
    other = fn.add_block("other")
    with pytest.raises(AssertionError):
        b.cbr(i, other, other)                     # condition must be i1
    phi = Builder(other).phi(DOUBLE)
    with pytest.raises(AssertionError, match="phi double <- i64"):
        add_incoming(phi, i, fn.entry)
    with pytest.raises(AssertionError):
        b.insertelement(v, i, 0)                   # element type mismatch
    with pytest.raises(AssertionError):
        b.extractelement(x, 0)                     # not a vector
    with pytest.raises(AssertionError):
        b.insertvalue(x, x, (0,))                  # not an aggregate


def test_a_rejected_instruction_is_not_emitted():
    _, fn, b = _function(DOUBLE, FLOAT)
    with pytest.raises(AssertionError):
        b.fadd(*fn.args)
    assert fn.entry.instructions == []


# --------------------------------------------------------------------------------- what it builds

def test_built_function_prints_verifies_and_matches():
    module, fn, b = _function(PTR, I64, DOUBLE, names=["a", "n", "x"])
    a, n, x = fn.args
    loop, done = fn.add_block("loop"), fn.add_block("done")
    b.br(loop)
    b.position_at_end(loop)
    i = b.phi(I64, "i")
    acc = b.phi(DOUBLE, "acc")
    p = b.gep(DOUBLE, a, [i], "p")
    v = b.load(DOUBLE, p, "v", align=8)
    sin = declare(module, "llvm.sin.f64", DOUBLE, [DOUBLE])
    s = b.call(sin, [b.fmul(v, x, "vx")], DOUBLE, "s")
    nxt_acc = b.fadd(acc, s, "acc.next")
    nxt = b.add(i, const_int(I64, 1), "i.next")
    b.cbr(b.icmp("ult", nxt, n, "more"), loop, done)
    for phi, start, step in ((i, const_int(I64, 0), nxt), (acc, const_float(DOUBLE, 0.0),
                                                            nxt_acc)):
        add_incoming(phi, start, fn.entry)
        add_incoming(phi, step, loop)
    b.position_at_end(done)
    pair = b.insertvalue(Constant(StructType((DOUBLE, I64)), "poison"), nxt_acc, (0,), "pair")
    b.ret(b.extractvalue(pair, (0,), "r"))
    text = print_module(module)
    verify(text)
    check(text, """
        CHECK-LABEL: define double @f(ptr %a, i64 %n, double %x)
        CHECK: loop:
        CHECK-NEXT: %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
        CHECK-NEXT: %acc = phi double [ 0.000000e+00, %entry ], [ %acc.next, %loop ]
        CHECK-NEXT: %p = getelementptr double, ptr %a, i64 %i
        CHECK-NEXT: %v = load double, ptr %p, align 8
        CHECK-NEXT: %vx = fmul double %v, %x
        CHECK-NEXT: %s = call double @llvm.sin.f64(double %vx)
        CHECK-NEXT: %acc.next = fadd double %acc, %s
        CHECK-NEXT: %i.next = add i64 %i, 1
        CHECK-NEXT: %more = icmp ult i64 %i.next, %n
        CHECK-NEXT: br i1 %more, label %loop, label %done
        CHECK: %pair = insertvalue { double, i64 } poison, double %acc.next, 0
        CHECK-NEXT: %r = extractvalue { double, i64 } %pair, 0
        CHECK-NEXT: ret double %r
        CHECK: declare double @llvm.sin.f64(double)
    """)


def test_clashing_names_are_made_unique():
    module, fn, b = _function(DOUBLE, names=["x"])
    (x,) = fn.args
    first = b.fmul(x, x, "t")
    second = b.fmul(first, x, "t")
    b.ret(b.fadd(second, first, "x"))                # clashes with the argument too
    text = print_module(module)
    verify(text)
    check(text, """
        CHECK: [[T1:%t[^ ]*]] = fmul double %x, %x
        CHECK-NEXT: [[T2:%t[^ ]*]] = fmul double [[T1]], %x
        CHECK-NEXT: [[X:%x[^ ]+]] = fadd double [[T2]], [[T1]]
        CHECK-NEXT: ret double [[X]]
    """)


def test_fast_math_flags_go_on_float_ops_only():
    module, fn, b = _function(DOUBLE, I64, names=["x", "i"])
    b.fast_math = ("nnan", "ninf")
    x, i = fn.args
    y = b.fmul(x, x, "y")
    j = b.add(i, i, "j")
    z = b.fadd(y, b.cast("sitofp", j, DOUBLE, "jf"), "z")
    b.ret(b.fneg(z, "w"))
    text = print_function(fn)
    check(text, """
        CHECK: %y = fmul nnan ninf double %x, %x
        CHECK-NEXT: %j = add i64 %i, %i
        CHECK-NEXT: %jf = sitofp i64 %j to double
        CHECK-NEXT: %z = fadd nnan ninf double %y, %jf
        CHECK-NEXT: %w = fneg nnan ninf double %z
    """)
    verify(print_module(module))


def test_positioning_insert_before_and_at_end():
    module, fn, b = _function(DOUBLE, names=["x"])
    (x,) = fn.args
    last = b.fmul(x, x, "last")
    b.ret(last)
    b.position_before(last)
    b.fadd(x, x, "first")
    other = fn.add_block("unused")
    with b.at_end(other) as inner:
        inner.unreachable()
    b.fsub(x, x, "second")                            # back before `last`
    assert [i.name for i in fn.entry.instructions] == ["first", "second", "last", None]
    assert other.instructions[0].opcode == "unreachable"
    b.position_after_phis(fn.entry)
    assert b.index == 0
    verify(print_module(module))


def test_splat_and_vector_lanes():
    module, fn, b = _function(DOUBLE, ret=VectorType(4, DOUBLE), names=["x"])
    (x,) = fn.args
    v = b.splat(x, 4)
    c = b.splat(const_float(DOUBLE, 2.0), 4)
    assert isinstance(c, Constant)
    b.ret(b.fmul(v, c, "twice"))
    text = print_module(module)
    verify(text)
    check(text, """
        CHECK: insertelement <4 x double> poison, double %x, i64 0
        CHECK-NEXT: shufflevector <4 x double>
        CHECK-NEXT: %twice = fmul <4 x double> {{%[^ ]+}}, <double 2.000000e+00,
        CHECK-SAME: double 2.000000e+00, double 2.000000e+00, double 2.000000e+00>
    """)


def test_declare_reuses_an_existing_declaration():
    module = Module()
    a = declare(module, "free", VOID, [PTR])
    assert declare(module, "free", VOID, [PTR]) is a
