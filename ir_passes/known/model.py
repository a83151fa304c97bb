"""One record per external function the pass understands (`KnownCall`), and their registry.

A record says what a call does to memory (what the analyses read), what role it plays in the
memory model the synthesizers shadow (an owned array's allocation, its data pointer, its
reference counts, a raw buffer), how its derivative is emitted in each mode, and, for calls
that are never differentiable, what to tell the user. The synthesizers know no function by
name: they ask `call_record`.

Generic records (LLVM's memory intrinsics and inert intrinsics) are registered by
`known.generic`; a front end registers the records of its runtime (the Numba front end:
enzyme_py/numba_bridge/known_calls.py). Adding a library call is one `register(KnownCall(...))`.

Emitters receive a context from the synthesizer (`ForwardCalls`, `ReverseCalls`): the builder,
the derivative's values of primal operands, the shadows of pointer operands. A forward emitter
writes the tangent of what the call writes into the shadows of its outputs (once per lane); a
reverse emitter adds the adjoint of its outputs (read from their shadows, then zeroed) to the
shadows of its inputs. Both may call the library again (a BLAS call's derivative is BLAS calls).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

from ..ir.types import FloatType, Type
from ..ir.values import Instruction, Module, Value

if TYPE_CHECKING:
    from ..diff.raising import DeferredRaise
    from ..diagnostics import Diagnostics
    from ..ir.builder import Builder
    from .calls import CallProblem


class Role(enum.Enum):
    """The part a call plays in the memory model the synthesizers give shadows to. Each role
    fixes the call's signature, so the pass can emit it for shadows."""
    NONE = "none"
    HANDLE_ALLOC = "handle_alloc"   # ptr (i64 size, i32 align): a refcounted owner of fresh memory
    HANDLE_NEW = "handle_new"       # other constructors of an owner (fresh, never shadowed)
    HANDLE_DTOR = "handle_dtor"     # ptr (i64 size, ptr dtor): an owner whose release first
    #                                 calls void dtor(ptr data, i64 size, ptr info)
    HANDLE_DATA = "handle_data"     # ptr (ptr owner): the memory of an owner
    INCREF = "incref"               # void (ptr owner)
    DECREF = "decref"               # void (ptr owner): may release the memory
    RAW_ALLOC = "raw_alloc"         # ptr (i64 size): a fresh buffer
    RAW_FREE = "raw_free"           # void (ptr buffer)
    HANDLE_VARSIZE = "handle_varsize"   # ptr (i64 size, ptr dtor): an owner of growable memory
    #                                     (a list's storage) whose release calls void dtor(ptr)
    VARSIZE_REALLOC = "varsize_realloc"  # ptr (ptr owner, i64 size): resizes such memory
    #                                      (it may move: the owner's data pointer changes)


@dataclass(frozen=True)
class Flow:
    """Values move from the memory at argument positions `sources` (or from the argument
    itself, for a scalar) into that at `dest`; `raw`: bytes are copied as they are (pointers
    stored there move too)."""
    dest: int
    sources: tuple[int, ...]
    raw: bool = False


class CallContext(Protocol):
    """What both synthesizers offer a record's emitters and checks."""
    b: Builder
    module: Module
    diag: Diagnostics

    def has_shadow(self, v: Value) -> bool: ...
    def describe(self, ptr: Value) -> str: ...     # the memory `ptr` addresses, for errors


class ForwardCalls(CallContext, Protocol):
    width: int                                     # lanes of vector forward mode

    def value(self, v: Value) -> Value: ...        # the derivative's copy of a primal value
    def tangent(self, v: Value) -> Value: ...      # of a float value (a vector of lanes)
    def shadow(self, ptr: Value, lane: int) -> Value: ...
    def entry_alloca(self, t: Type) -> Value: ...  # a scratch stack slot
    def deferred_raise(self) -> DeferredRaise: ...  # exceptions raised when it returns


class ReverseCalls(CallContext, Protocol):
    def value(self, v: Value) -> Value: ...        # a primal value, available in reverse
    def shadow(self, ptr: Value) -> Value: ...
    def element_type(self, ptr: Value) -> FloatType | None: ...   # floats the memory holds
    def add_adjoint(self, v: Value, delta: Value) -> None: ...    # of a float operand
    def entry_alloca(self, t: Type) -> Value: ...  # a scratch stack slot
    def deferred_raise(self) -> DeferredRaise: ...  # exceptions raised when it returns


@dataclass(frozen=True)
class ReadInReverse:
    """Memory a reverse emitter reads (at argument positions `args`): it must hold the same
    values then as at the call, else the error says `what` and `hint`; `allowed(call, write)`
    exempts later writes known to leave what the emitter reads alone."""
    args: tuple[int, ...]
    what: str
    hint: str
    allowed: Callable[[Instruction, Instruction], bool] | None = None


Check = Callable[[CallContext, Instruction], None]
ForwardEmitter = Callable[[ForwardCalls, Instruction], None]
ReverseEmitter = Callable[[ReverseCalls, Instruction], None]


@dataclass(frozen=True)
class KnownCall:
    name: str
    prefix: bool = False            # matches every function whose name starts with `name`
    # Memory effects.
    inert: bool = False             # no effect on derivatives whatever its arguments
    pointer_neutral: bool = False   # keeps, returns and copies none of its pointer arguments
    #                                 (except as `flow` says)
    fresh: bool = False             # returns fresh memory, never an address it was handed
    writes: tuple[int, ...] | None = None   # arguments written through (None: any pointer)
    flow: Flow | None = None
    more_flows: tuple[Flow, ...] = ()       # into other outputs (with `flow`)
    role: Role = Role.NONE
    # Derivatives: `check` refuses what the emitters cannot handle (both modes, before any
    # code); `reverse_reads`: memory the reverse emitter reads, which must not change (or a
    # function of the call giving it, for a rule whose reads depend on how the call is used).
    check: Check | None = None
    forward: ForwardEmitter | None = None
    reverse: ReverseEmitter | None = None
    reverse_reads: ReadInReverse | Callable[[Instruction], ReadInReverse | None] | None = None
    # Rewrites the call (when it touches derivatives) in the derivative's copy of the primal
    # before synthesis, so that it also computes what its derivative reads (eigenvalues with
    # their eigenvectors); the call's results must stay the same (up to rounding). Its third
    # argument tells the operands whose memory may change before the call's reverse other
    # than through the function (arguments the caller may write between split halves).
    prepare: Callable[[Module, Instruction, Callable[[Value], bool]], None] | None = None
    # Never differentiable: the construct in the user's terms and a fix ("{name}": the callee).
    problem: CallProblem | None = None


_EXACT: dict[str, KnownCall] = {}
_PREFIXES: list[KnownCall] = []


def register(*records: KnownCall) -> None:
    """Make `records` known (a later record for the same name replaces the earlier one)."""
    for r in records:
        if r.prefix:
            _PREFIXES[:] = [p for p in _PREFIXES if p.name != r.name] + [r]
            _PREFIXES.sort(key=lambda p: -len(p.name))     # longest prefix first
        else:
            _EXACT[r.name] = r


def known_call(name: str | None) -> KnownCall | None:
    """The record of function `name`: by exact name, else by the longest registered prefix."""
    if not name:
        return None
    exact = _EXACT.get(name)
    if exact is not None:
        return exact
    return next((p for p in _PREFIXES if name.startswith(p.name)), None)


def call_record(v: Value) -> KnownCall | None:
    """The record of the function `v` calls, if `v` is a call to a known function."""
    return known_call(v.callee_name) if isinstance(v, Instruction) and v.opcode == "call" \
        else None


def role_of(v: Value) -> Role:
    record = call_record(v)
    return record.role if record is not None else Role.NONE


def is_local_allocation(v: Value) -> bool:
    """A call returning memory the function allocated: an owner's data, a raw buffer."""
    return role_of(v) in (Role.HANDLE_DATA, Role.RAW_ALLOC)


def runtime_call(role: Role) -> KnownCall:
    """The function registered by exact name that plays `role`, for the pass to call on
    shadows (a prefix record names a family of functions, never the runtime's one)."""
    found = next((r for r in _EXACT.values() if r.role is role), None)
    if found is None:
        raise LookupError(f"no function registered for the role {role.value}: the front end "
                          "must register its runtime (see ir_passes/known/model.py)")
    return found


def written_arguments(inst: Instruction) -> list[Value]:
    """The pointer arguments a call may write through."""
    record = call_record(inst)
    if record is not None and record.inert:
        return []
    if record is not None and record.writes is not None:
        return [inst.operands[i] for i in record.writes]
    return [op for op in inst.operands if op.type.is_pointer]
