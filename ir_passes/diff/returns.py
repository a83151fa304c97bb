"""The primal's return slot and the derivative's packed results.

Numba returns values by storing them through `retptr`; derivatives keep a local slot (and a
shadow slot) for the primal's value and, at each return, store their results (primal value,
tangent, gradients) as the fields of the derivative's own return type.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..analysis.activity import carries_float
from ..diagnostics import Diagnostics
from ..ir.builder import Builder
from ..ir.types import PTR, ArrayType, StructType, Type
from ..ir.values import Argument, Constant, Function, Value


@dataclass(frozen=True)
class ReturnSlot:
    type: Type

    @property
    def has_value(self) -> bool:
        """False for `None` returns (Numba stores a null pointer)."""
        return self.type != PTR

    @property
    def differentiable(self) -> bool:
        return carries_float(self.type)


def find_return_type(primal: Function, retptr_index: int) -> Type:
    retptr = primal.args[retptr_index]
    types = {inst.operands[0].type for inst in primal.instructions()
             if inst.opcode == "store" and inst.operands[1] is retptr}
    if len(types) > 1:
        raise ValueError(f"@{primal.name} stores values of several types to its return slot")
    return types.pop() if types else PTR


def pack_results(b: Builder, retptr: Argument, ret_type: Type | None, results: list[Value],
                 diag: Diagnostics) -> None:
    if ret_type is None:
        assert not results, "results without a return type"
        return
    if isinstance(ret_type, (StructType, ArrayType)):
        agg: Value = Constant(ret_type, "poison")
        for i, r in enumerate(results):
            agg = b.insertvalue(agg, r, (i,))
        b.store(agg, retptr)
    else:
        if len(results) != 1 or results[0].type != ret_type:
            raise diag.unsupported(f"results {[str(r.type) for r in results]} do not match "
                                   f"the return type {ret_type}")
        b.store(results[0], retptr)
