"""Held references (ir_passes/diff/held_references.py): a reference the derivative takes per
loop iteration and drops later, which Numba's reference-count pruning must not pair with the
array's one release after the loop. Run through llvmlite's `refprune` pass itself: the
runtime's NRT_incref in that shape is dropped with the release (the array would be freed
early), the held reference is not."""
from __future__ import annotations

import llvmlite.binding as llvm
import pytest

import enzyme_py  # noqa: F401  (registers Numba's runtime: INCREF is NRT_incref)
from ir_passes.canonicalize import verify
from ir_passes.diff.held_references import DROP, HOLD, held_reference
from ir_passes.ir.builder import Builder
from ir_passes.ir.parser import parse_module
from ir_passes.ir.printer import print_module
from ir_passes.ir.types import VOID
from ir_passes.ir.values import GlobalRef, Instruction
from ir_passes.known.model import Role, call_record, runtime_call

_LOOP = """
declare void @NRT_incref(ptr)
declare void @NRT_decref(ptr)
declare void @use(ptr)

define void @f(ptr %owner, i64 %n) {
entry:
  br label %loop

loop:
  %i = phi i64 [ 0, %entry ], [ %j, %loop ]
  call void @use(ptr %owner)
  %j = add i64 %i, 1
  %more = icmp slt i64 %j, %n
  br i1 %more, label %loop, label %exit

exit:
  call void @NRT_decref(ptr %owner)
  ret void
}
"""


def _with_reference_per_iteration(held: bool) -> str:
    """`_LOOP` with a reference to %owner taken before each `use`: held or the runtime's."""
    module = parse_module(_LOOP)
    fn = module.functions["f"]
    loop = next(b for b in fn.blocks if b.name == "loop")
    use = next(i for i in loop.instructions if i.opcode == "call")
    owner = fn.args[0]
    tail = loop.instructions[loop.instructions.index(use):]
    del loop.instructions[loop.instructions.index(use):]
    b = Builder(loop)
    if held:
        held_reference(b, module, owner, Role.INCREF)
    else:
        b.call(module.functions[runtime_call(Role.INCREF).name], [owner], VOID)
    loop.instructions.extend(tail)
    return print_module(module)


def _pruned(text: str) -> str:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(text)
    machine = llvm.Target.from_default_triple().create_target_machine()
    builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(0))
    passes = llvm.create_new_module_pass_manager()
    passes.add_refprune_pass(llvm.RefPruneSubpasses.ALL)
    passes.run(module, builder)
    return str(module.get_function("f"))


@pytest.mark.parametrize("held", [False, True], ids=["runtime", "held"])
def test_refprune_pairs_only_the_runtimes_reference(held):
    text = _with_reference_per_iteration(held)
    verify(text)
    after = _pruned(text)
    if held:
        assert after.count(f"call void @{HOLD}(ptr %owner)") == 1
        assert after.count("call void @NRT_decref(ptr %owner)") == 1
    else:       # the hazard: reference and release both gone
        assert "NRT_incref" not in after and "NRT_decref" not in after


def test_held_functions_call_the_runtime_and_are_never_inlined():
    module = parse_module(_LOOP)
    b = Builder(module.functions["f"].blocks[-1])
    for role in (Role.INCREF, Role.DECREF):
        held_reference(b, module, module.functions["f"].args[0], role)
    text = print_module(module)
    for name, runtime in ((HOLD, "NRT_incref"), (DROP, "NRT_decref")):
        fn = module.functions[name]
        assert fn.linkage == "internal" and fn.fn_attrs == "noinline"
        calls = [i for i in fn.instructions() if i.opcode == "call"]
        assert [c.callee_name for c in calls] == [runtime]
        assert f"define internal void @{name}(ptr %owner) noinline" in text


def test_held_calls_are_known_as_their_roles_but_never_stand_for_the_runtime():
    """Also a copy the linker renamed (two derivatives' modules linked into one)."""
    for name, role in ((HOLD, Role.INCREF), (DROP, Role.DECREF)):
        for called in (name, name + ".1"):
            record = call_record(Instruction("call", VOID, [], None, callee=GlobalRef(called)))
            assert record is not None and record.role is role and record.inert
        assert runtime_call(role).name != name
