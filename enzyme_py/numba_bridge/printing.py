"""Printing active values: `print(x)` in a differentiated function boxes `x` into a Python
float (`PyFloat_FromDouble`) that only Python's printing functions see.

The boxed object carries no derivative. That is right when nothing reads a native value back
out of it, so the record allows the call only when every use of the object is one of the
printing functions Numba's `print` lowers to, a release of the reference or its null
check: an object that
could reach other Python code (`with numba.objmode()`, which unboxes its results) is refused.
The print runs in the derivative too, with the primal values (in reverse mode, during the
forward sweep).
"""
from __future__ import annotations

from ir_passes.known.model import CallContext, KnownCall, register
from ir_passes.ir.values import Instruction

BOX_FLOAT = "PyFloat_FromDouble"
_PRINTING = ("PyObject_Str", "PyObject_Repr", "PySys_FormatStdout", "PySys_WriteStdout",
             "PyObject_Print", "Py_DecRef", "Py_DECREF", "Py_XDecRef")


def _printed_only(ctx: CallContext, inst: Instruction) -> None:
    fn = inst.block.function if inst.block is not None else None
    objects, seen = [inst], {id(inst)}
    while objects and fn is not None:            # through phis merging it with other objects
        obj = objects.pop()
        for user in (u for u in fn.instructions() if obj in u.operands):
            if user.opcode in ("phi", "select") and id(user) not in seen:
                seen.add(id(user))
                objects.append(user)
            elif not (user.opcode in ("phi", "select", "icmp")     # icmp: its null check
                      or user.opcode == "call" and user.callee_name in _PRINTING):
                raise ctx.diag.unsupported(
                    f"an active value boxed into a Python object ('{BOX_FLOAT}') that reaches "
                    f"'{user.callee_name or user.opcode}' (object mode or another Python use)",
                    user, "compute the value outside the differentiated function, or only "
                    "print it")


def _no_derivative(ctx, inst: Instruction) -> None:
    """The boxed object has no derivative: nothing to emit."""


register(KnownCall(BOX_FLOAT, pointer_neutral=True, writes=(), check=_printed_only,
                   forward=_no_derivative, reverse=_no_derivative))
