"""The decisions the reverse synthesizer reports about each primal value its reverse needs."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from ...analysis.cfg import Loop
from ...ir.values import Block, Value
from .plan import Access


class Retention(Enum):
    """How a needed value is kept: pushed per execution of its block ("tape"), in one stack
    slot written at most once ("spill"), cloned from available operands ("recompute"), or
    rebuilt from a reverse loop counter ("iv"), or taped once per run of a loop it is
    invariant in and kept in a stack slot while the loop's reverse runs ("hoist"), or
    rebuilt backwards in a stack slot from its value after the loop ("recurrence"), or
    stored into a table slot per inner iteration of the outermost loop it does not vary
    with ("table", `tables.py`)."""
    TAPE = "tape"
    SPILL = "spill"
    RECOMPUTE = "recompute"
    IV = "iv"
    HOIST = "hoist"
    RECURRENCE = "recurrence"
    TABLE = "table"

    @staticmethod
    def of(access: Access) -> Retention:
        """The retention of a value the plan does not find directly available."""
        return Retention(access.value)


class Need(Enum):
    """What is needed: the primal value itself, the shadow pointer of the value, or the
    choice of which predecessor ran (recomputed from the value, a branch condition)."""
    VALUE = "value"
    SHADOW = "shadow"
    CHOICE = "choice"


@dataclass(frozen=True)
class Retained:
    """How the reverse of `block` obtains `value` (`what` of it), reported to observers.
    `invariant_in`: for a value taped at the exit `block` of a loop it is invariant in.
    `carrier`: the block that tapes it instead when other blocks of the same loop iteration
    need it too (`ReversePlan.carrier`)."""
    kind: Retention
    what: Need
    block: Block
    value: Value
    invariant_in: Loop | None = None
    carrier: Block | None = None


__all__ = ["Need", "Retained", "Retention"]
