"""origins: calls and stores of a module calling a watched function are tagged with their
defining function (Numba quotes its names); other modules are left alone."""
from __future__ import annotations

import llvmlite.binding as llvm

from enzyme_py.numba_bridge.origins import ORIGIN_KIND, tag_origins, watch

_TEXT = '''declare i32 @"watched_fn"(ptr)

define i32 @"impl"(ptr %".1") {
entry:
  store double 0.000000e+00, ptr %".1", align 8
  %".3" = call i32 @"watched_fn"(ptr %".1")
  ret i32 %".3"
}

define void @other(ptr %p) {
entry:
  tail call void @llvm.donothing()
  ret void
}

declare void @llvm.donothing()
'''


def test_calls_and_stores_carry_their_defining_function():
    watch("watched_fn")
    tagged = tag_origins(_TEXT)
    module = llvm.parse_assembly(tagged)           # still valid IR
    module.verify()
    lines = tagged.splitlines()
    assert sum(f"!{ORIGIN_KIND} " in line for line in lines) == 3
    assert '!{!"impl"}' in tagged and '!{!"other"}' in tagged
    store, call = (next(line for line in lines if key in line) for key in ("store", "call i32"))
    assert store.rsplit("!", 1)[1] == call.rsplit("!", 1)[1]    # one node for one function


def test_modules_not_calling_a_watched_function_are_unchanged():
    text = _TEXT.replace("watched_fn", "unwatched_fn")
    assert tag_origins(text) == text
