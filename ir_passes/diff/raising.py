"""Raising a Python exception from synthesized code, the way Numba-compiled code does.

Numba's ABI reports an exception by storing, through `excinfo`, a pointer to a constant
`{ptr pickled, i32 length, ptr sha1, ptr null, i32 0}` describing `(class, args, location)`
and returning status 1; the caller (Python wrapper or enclosing `@njit` code) re-raises it.
Used for errors that only the derivative can see, e.g. a `d_ret` of the wrong shape, or
that only a run can (`raise_unless`: a matrix whose derivative is not defined).

`DeferredRaise` carries an exception a call inside the derivative reported (a user's rule,
which may call the primal, compiled with Numba's default error model; a callee's
derivative) to the derivative's returns: the first failure's status and excinfo are kept in
two stack slots, the derivative runs on with the values it has (its results are discarded,
the caller raises), and each return reports that failure instead of its own status. No new
exits: the reverse pass still frees its tape, and blocks are never split.
"""
from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass

from ..ir.builder import Builder
from ..ir.split import split_before
from ..ir.types import I32, PTR
from ..ir.values import Block, GlobalRef, Instruction, Module, Value, const_int


def raise_exception(b: Builder, module: Module, excinfo: Value, exc: type,
                    message: str) -> None:
    """Store the exception `exc(message)` into `excinfo` and return status 1."""
    b.store(_exception_constant(module, exc, message), excinfo)
    b.ret(const_int(I32, 1))


def _exception_constant(module: Module, exc: type, message: str) -> GlobalRef:
    data = pickle.dumps((exc, (message,), None), protocol=4)
    digest = hashlib.sha1(data).digest()
    name = f"enzyme_py.exc.{digest.hex()}"
    if name not in module.globals:
        module.globals[f"{name}.data"] = _bytes_global(f"{name}.data", data)
        module.globals[f"{name}.sha1"] = _bytes_global(f"{name}.sha1", digest)
        module.globals[name] = (f'@"{name}" = internal constant {{ ptr, i32, ptr, ptr, i32 }} '
                                f'{{ ptr @"{name}.data", i32 {len(data)}, ptr @"{name}.sha1", '
                                'ptr null, i32 0 }')
    return GlobalRef(name)


def _bytes_global(name: str, data: bytes) -> str:
    text = "".join(chr(c) if 32 <= c < 127 and c not in (34, 92) else f"\\{c:02X}"
                   for c in data)
    return f'@"{name}" = internal constant [{len(data)} x i8] c"{text}"'


def raise_unless(module: Module, inst: Instruction, ok: Value, exc: type,
                 message: str) -> None:
    """Split `inst`'s block before `inst` and raise `exc(message)` there unless `ok` (an i1
    computed before `inst`), for a Numba-ABI function (excinfo is its second argument)."""
    block, fn = inst.block, inst.block.function  # type: ignore[union-attr]
    assert block is not None and fn is not None
    rest = split_before(inst, f"enzyme_py.checked{len(fn.blocks)}")
    fail = Block(f"{rest.name}.raise", fn)
    fn.blocks.insert(fn.blocks.index(rest) + 1, fail)
    b = Builder(block)
    b.cbr(ok, rest, fail)
    b.position_at_end(fail)
    raise_exception(b, module, fn.args[1], exc, message)


_NONE_RETURNED = -2          # Numba's status of a function that returned None (not a failure)


@dataclass(frozen=True)
class DeferredRaise:
    status: Value            # i32 slot, initially 0: the first failure's status
    excinfo: Value           # ptr slot: the first failure's exception

    def note(self, b: Builder, status: Value, excinfo: Value) -> None:
        """After a call that returned `status`, its exception (if any) in the slot `excinfo`."""
        failed = b.binop("and", b.icmp("ne", status, const_int(I32, 0)),
                         b.icmp("ne", status, const_int(I32, _NONE_RETURNED)))
        noted = b.load(I32, self.status)
        first = b.binop("and", failed, b.icmp("eq", noted, const_int(I32, 0)))
        b.store(b.select(first, status, noted), self.status)
        # read `excinfo` only on a failure: a caller that cannot fail may pass null (C front end)
        b.store(b.load(PTR, b.select(first, excinfo, self.excinfo)), self.excinfo)

    def returned(self, b: Builder, excinfo: Value, status: Value) -> Value:
        """The status to return instead of `status`: the first failure's, if any, with its
        exception stored through the derivative's `excinfo` argument."""
        noted = b.load(I32, self.status)
        failed = b.icmp("ne", noted, const_int(I32, 0))
        b.store(b.load(PTR, self.excinfo), b.select(failed, excinfo, self.excinfo))
        return b.select(failed, noted, status)
