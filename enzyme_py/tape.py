"""The tape of a split derivative (API.md, "Split mode"): what the forward half leaves for the
reverse half, as a Numba value that can be stored and passed between `@njit` functions.

A `Tape` holds one uint8 array, the state the forward half packed (layout in
`ir_passes.diff.reverse.split`): a used flag, the id of the derivative specialisation that
made it, the bytes kept (state plus the tape it points to), then the values. The reverse half
claims a tape before it runs (`claim`): a tape is used once and only by its own derivative.
When a tape dies unused, its array's destructor frees what it holds.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.experimental import structref
from numba.extending import overload_attribute

from ir_passes.diff.reverse.split import IDENT, KEPT, USED

STATE = types.Array(types.uint8, 1, "C")


@structref.register
class TapeType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(t)) for name, t in fields)


class Tape(structref.StructRefProxy):
    """What `fwd` of `derive_diff(..., mode="split")` returns for `rev`; use it once."""

    def __new__(cls, state):
        return structref.StructRefProxy.__new__(cls, state)

    @property
    def nbytes(self) -> int:
        """Bytes this tape keeps alive (its state and the values taped for the reverse)."""
        return _nbytes(self)

    def __repr__(self) -> str:
        return f"<enzyme_py Tape: {self.nbytes} bytes>"


structref.define_proxy(Tape, TapeType, ["state"])
TAPE_TYPE = TapeType([("state", STATE)])


@njit
def _read_i64(state, offset):
    value = 0
    for i in range(8):
        value |= np.int64(state[offset + i]) << np.int64(8 * i)
    return value


@overload_attribute(TapeType, "nbytes")
def _tape_nbytes(tape):
    def get(tape):
        return _read_i64(tape.state, KEPT)
    return get


@njit
def _nbytes(tape):
    return tape.nbytes


@njit
def make_tape(state):
    return Tape(state)


@njit
def claim(tape, ident):
    """Mark `tape` used by the reverse half of derivative specialisation `ident`."""
    state = tape.state
    if state[USED] != 0:
        raise ValueError("this tape was already used: a tape of a split derivative is used "
                         "by one reverse call; run the forward half again for a new one")
    if _read_i64(state, IDENT) != ident:
        raise ValueError("this tape comes from another derivative (or other argument types): "
                         "pass the tape the forward half of this derivative returned")
    state[USED] = 1


__all__ = ["STATE", "TAPE_TYPE", "Tape", "TapeType", "claim", "make_tape"]
