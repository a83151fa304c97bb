"""stack_restores: a stacksave/stackrestore pair is dropped when the function has no
dynamic alloca (the restore then restores nothing), and kept otherwise."""
from __future__ import annotations

from ir_passes.canonicalize import verify
from ir_passes.ir.parser import parse_module
from ir_passes.ir.printer import print_module
from ir_passes.stack_restores import drop_idle_stack_restores

_TEXT = """define double @f(ptr %x, i64 %n) {
entry:
  %slot = alloca double, align 8
  br label %body

body:
  %s = call ptr @llvm.stacksave.p0()
  DYNAMIC
  %v = load double, ptr %x
  store double %v, ptr %slot
  call void @llvm.stackrestore.p0(ptr %s)
  %r = load double, ptr %slot
  ret double %r
}

declare ptr @llvm.stacksave.p0()
declare void @llvm.stackrestore.p0(ptr)
"""


def _run(text):
    module = parse_module(text)
    changed = drop_idle_stack_restores(module.functions["f"])
    out = print_module(module)
    verify(out)
    return changed, out


def test_idle_pairs_are_dropped():
    changed, out = _run(_TEXT.replace("  DYNAMIC\n", ""))
    assert changed
    assert "call ptr @llvm.stacksave" not in out and "call void @llvm.stackrestore" not in out


def test_pairs_around_dynamic_allocas_stay():
    changed, out = _run(_TEXT.replace("DYNAMIC", "%buf = alloca double, i64 %n"))
    assert not changed
    assert "call void @llvm.stackrestore" in out
