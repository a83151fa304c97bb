"""IR types (ir_passes/ir/types.py) and instruction cloning (ir_passes/ir/clone.py).

Sizes and alignments are compared with LLVM's own answer for the host data layout (the tape
sizes its slots with them); a cloned function must print and verify like the original.
"""
from __future__ import annotations

import llvmlite.binding as llvm
import pytest

from ir_passes.canonicalize import verify
from ir_passes.ir.clone import clone_instruction
from ir_passes.ir.parser import parse_function, parse_type
from ir_passes.ir.printer import print_function, print_module
from ir_passes.ir.types import (DOUBLE, FLOAT, I1, I64, PTR, FunctionType, VectorType,
                                align_of, size_of)
from ir_passes.ir.values import Function, Module
from tests.support.filecheck import check

LAYOUT = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
TYPES = ["i1", "i8", "i16", "i32", "i64", "i128", "float", "double", "ptr", "<2 x double>",
         "<4 x float>", "<3 x float>", "[5 x double]", "{ double, i32 }", "{ i8, double, i8 }",
         "<{ i8, double }>", "{ ptr, ptr, i64, i64, ptr, [2 x i64], [2 x i64] }",
         "[2 x { float, i8 }]"]


def _llvm_type(text: str):
    module = llvm.parse_assembly(f'target datalayout = "{LAYOUT}"\n'
                                 f"@g = global {text} zeroinitializer\n")
    return module.get_global_variable("g").global_value_type


@pytest.mark.parametrize("text", TYPES)
def test_size_and_alignment_match_llvm(text):
    td = llvm.create_target_data(LAYOUT)
    ty = parse_type(text)
    assert str(ty) == text
    assert size_of(ty) == td.get_abi_size(_llvm_type(text))
    if hasattr(td, "get_abi_alignment"):
        assert align_of(ty) == td.get_abi_alignment(_llvm_type(text))


def test_type_predicates_and_equality():
    assert DOUBLE.is_float and not DOUBLE.is_int and I64.is_int and PTR.is_pointer
    v = VectorType(4, FLOAT)
    assert v.is_float_vector and v.scalar == FLOAT and DOUBLE.scalar == DOUBLE
    assert not VectorType(2, I1).is_float_vector
    assert parse_type("{ double, i64 }") == parse_type("{ double, i64 }")
    assert parse_type("<2 x double>") != parse_type("[2 x double]")
    assert hash(parse_type("[3 x float]")) == hash(parse_type("[3 x float]"))


SOURCE = """
define double @src(ptr %a, i64 %n, double %x) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i.next, %loop ]
  %acc = phi double [ %x, %entry ], [ %acc.next, %loop ]
  %p = getelementptr inbounds double, ptr %a, i64 %i
  %v = load double, ptr %p, align 8
  %m = fmul fast double %v, %acc
  %acc.next = call double @llvm.maxnum.f64(double %m, double 1.0)
  %i.next = add nuw i64 %i, 1
  %c = icmp ult i64 %i.next, %n
  br i1 %c, label %loop, label %exit
exit:
  ret double %acc.next
}
declare double @llvm.maxnum.f64(double, double)
"""


def test_clone_a_function_with_remapped_operands():
    src = parse_function(SOURCE)
    module = Module()
    module.add_function(Function("llvm.maxnum.f64", FunctionType(DOUBLE, (DOUBLE, DOUBLE))))
    dst = Function("copy", src.ftype, [a.name for a in src.args])
    module.add_function(dst)
    vmap = dict(zip(src.args, dst.args))
    bmap = {b: dst.add_block(b.name) for b in src.blocks}
    phis = []
    for block in src.blocks:
        for inst in block.instructions:
            new = clone_instruction(inst, lambda v: vmap.get(v, v), bmap.__getitem__)
            bmap[block].append(new)
            vmap[inst] = new
            if inst.opcode == "phi":
                phis.append((inst, new))
    for old, new in phis:                             # phi operands are the caller's job
        assert new.operands == []
        new.operands = [vmap.get(v, v) for v in old.operands]
        new.incoming = [bmap[b] for b in old.incoming]
    text = print_module(module)
    verify(text)
    assert print_function(dst).replace("@copy", "@src") == print_function(src)
    check(print_function(dst), """
        CHECK: %p = getelementptr inbounds double, ptr %a, i64 %i
        CHECK-NEXT: %v = load double, ptr %p, align 8
        CHECK-NEXT: %m = fmul fast double %v, %acc
        CHECK-NEXT: %acc.next = call double @llvm.maxnum.f64(double %m, double 1.0)
    """)
    # the clone is independent: editing it leaves the source alone
    dst.blocks[1].instructions[4].flags = ()
    assert "fmul fast" in print_function(src)
