"""The tape of a split derivative (API.md, "Split mode"): what the forward half leaves for the
reverse half, as a Numba value that can be stored and passed between `@njit` functions.

A `Tape` holds one uint8 array, the state the forward half packed (layout in
`ir_passes.diff.reverse.split`): a used flag, the id of the derivative specialisation that
made it, the bytes kept (state plus the tape it points to), then the values; and `made`, what
the tape's layout depends on as `fwd` saw it (the shapes of the array arguments, the values
of the scalar ones: a loop's trip count, a branch). The reverse half checks a tape before it
runs (`check_tape`, then its wrapper compares `made` with its own arguments) and claims it
(`claim`): a tape is used once, only by its own derivative, with the sizes it was made for.
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

    def __new__(cls, state, made):
        return structref.StructRefProxy.__new__(cls, state, made)

    @property
    def nbytes(self) -> int:
        """Bytes this tape keeps alive (its state and the values taped for the reverse)."""
        return _nbytes(self)

    def __repr__(self) -> str:
        return f"<enzyme_py Tape: {self.nbytes} bytes>"


structref.define_proxy(Tape, TapeType, ["state", "made"])


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
def make_tape(state, made):
    return Tape(state, made)


@njit
def check_tape(tape, ident):
    """Refuse a used `tape`, or one made by another specialisation than `ident`."""
    state = tape.state
    if state[USED] != 0:
        raise ValueError("this tape was already used: a tape of a split derivative is used "
                         "by one reverse call; run the forward half again for a new one")
    if _read_i64(state, IDENT) != ident:
        raise ValueError("this tape comes from another derivative (or other argument types): "
                         "pass the tape the forward half of this derivative returned")


@njit
def claim(tape, ident):
    """Mark `tape` used by the reverse half of derivative specialisation `ident`."""
    check_tape(tape, ident)
    tape.state[USED] = 1


@njit
def shape_text(shape):
    """`shape` (a tuple of ints) as Python prints it."""
    out = "("
    for i, n in enumerate(shape):
        out += (", " if i else "") + str(n)
    return out + ("," if len(shape) == 1 else "") + ")"


@njit
def differs(a, b):
    """Scalars `a` and `b` differ (NaN is the same as NaN)."""
    return not (a == b or (a != a and b != b))


def _recorded(params) -> list[tuple[str, str, object, str]]:
    """What `made` records of the wrapper's `(name, identifier, type, ...)` per parameter:
    `(name, expression, type, what)`: an array's shape (and strides unless its layout fixes
    them: the reverse addresses the copy `fwd` made of it with them), a number's value."""
    out = []
    for name, ident, t, *_ in params:
        if isinstance(t, types.Array):
            out.append((name, f"{ident}.shape", types.UniTuple(types.intp, t.ndim), "shape"))
            if t.layout == "A":
                out.append((name, f"{ident}.strides", types.UniTuple(types.intp, t.ndim),
                            "strides"))
        elif isinstance(t, (types.Number, types.Boolean)):
            out.append((name, ident, t, "value"))
    return out


def made_expression(params) -> str:
    """The forward wrapper's expression of `made` (a tuple)."""
    return "(" + "".join(expr + ", " for _, expr, _, _ in _recorded(params)) + ")"


def made_checks(params, tape_type, ident: int) -> list[str]:
    """The reverse wrapper's lines refusing a tape whose `made` differs from its arguments
    (`ArgumentError` naming the parameter and both shapes or values). A tape of other types
    is another specialisation's: `check_tape(tape, ident)` refuses it first."""
    recorded = _recorded(params)
    lines = [f"    __check_tape(tape, {ident})"]
    if tape_type.field_dict.get("made") != types.Tuple(tuple(t for _, _, t, _ in recorded)):
        return lines
    fix = repr(": pass rev the arguments fwd had (the same shapes and scalars)")
    for k, (name, expr, t, what) in enumerate(recorded):
        made = f"tape.made[{k}]"
        if what != "value":
            test = f"{made} != {expr}"
            text = (f"{repr(f'{name!r} has {what} ')} + __shape_text({expr}) + "
                    f"{repr(f', but the tape was made for {what} ')} + __shape_text({made})")
        elif isinstance(t, types.Integer):
            test = f"__differs({made}, {expr})"
            text = (f"{repr(repr(name) + ' is ')} + str({expr}) + ', but the tape was made "
                    f"with ' + str({made})")
        else:
            test = f"__differs({made}, {expr})"
            text = repr(f"{name!r} differs from the value the tape was made with")
        lines += [f"    if {test}:", f"        raise __ArgumentError({text} + {fix})"]
    return lines


NAMESPACE = {"__make_tape": make_tape, "__check_tape": check_tape, "__claim": claim,
             "__shape_text": shape_text, "__differs": differs}

__all__ = ["NAMESPACE", "STATE", "Tape", "TapeType", "claim", "made_checks", "made_expression"]
