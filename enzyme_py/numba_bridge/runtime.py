"""What Numba's C runtime helpers do to memory, declared to LLVM before canonicalisation.

Numba declares its helpers without attributes, so LLVM must assume a call may write any
memory reachable from its arguments. `numba_attempt_nocopy_reshape` receives pointers into
the stack slot of an array struct (its shape and strides fields); without attributes LLVM
cannot forward the array's data pointer across the call, and the derivative would see a
pointer reloaded from memory. Giving the declarations their true memory effects lets
canonicalisation forward such reloads to the stored values.
"""
from __future__ import annotations

import re

# numba/_helperlib.c: reads nd dims and strides and newnd newdims; writes newnd newstrides.
_DECLARATIONS = {
    "numba_attempt_nocopy_reshape": (
        "declare i32 @numba_attempt_nocopy_reshape(i64, ptr readonly captures(none), "
        "ptr readonly captures(none), i64, ptr readonly captures(none), "
        "ptr writeonly captures(none), i64, i32) nounwind memory(argmem: readwrite)"),
}
_DECLARE = re.compile(r"^declare [^@\n]*@(" + "|".join(_DECLARATIONS) + r")\(.*$", re.MULTILINE)


def annotate_runtime(module_text: str) -> str:
    """`module_text` with Numba's runtime helpers declared with their memory effects."""
    return _DECLARE.sub(lambda m: _DECLARATIONS[m.group(1)], module_text)
