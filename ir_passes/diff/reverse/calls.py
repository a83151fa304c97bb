"""What the reverse pass offers the emitters and checks of known calls (`ReverseCalls`)."""
from __future__ import annotations

from typing import Callable

from ...ir.types import FloatType, Type
from ...ir.values import Instruction, Value
from ...known.model import call_record
from ..common import describe_memory
from ..raising import DeferredRaise
from .availability import Availability, BlockContext
from .state import ReverseState


class ReverseCallContext:
    """Known-call emitters in the reverse of one block (`avail`, `block`), or their checks
    before anything is emitted (neither given: only `has_shadow` and `describe` then)."""

    def __init__(self, st: ReverseState, avail: Availability | None = None,
                 block: BlockContext | None = None,
                 add: Callable[[Value, Value], None] | None = None) -> None:
        self.st = st
        self.b, self.module, self.diag = st.b, st.module, st.diag
        self._avail = avail
        self._block = block
        self._add = add

    def has_shadow(self, v: Value) -> bool:
        return v in self.st.info.shadowed

    def describe(self, ptr: Value) -> str:
        return describe_memory(self.st.spec, ptr)

    def value(self, v: Value) -> Value:
        assert self._avail is not None and self._block is not None
        return self._avail.value(self._block, v)

    def shadow(self, ptr: Value) -> Value:
        assert self._avail is not None and self._block is not None
        return self._avail.shadow(self._block, ptr)

    def element_type(self, ptr: Value) -> FloatType | None:
        return self.st.memory_types.float_element(ptr)

    def add_adjoint(self, v: Value, delta: Value) -> None:
        assert self._add is not None
        self._add(v, delta)

    def entry_alloca(self, t: Type) -> Value:
        return self.st.zeroed_alloca(t, "call.scratch")

    def deferred_raise(self) -> DeferredRaise:
        return self.st.deferred_raise()


def emits_reverse(st: ReverseState, inst: Instruction) -> bool:
    """Whether a known call's reverse emitter runs for `inst`: it writes shadowed memory."""
    record = call_record(inst)
    return record is not None and record.reverse is not None and record.writes is not None \
        and any(inst.operands[i] in st.info.shadowed for i in record.writes)
