"""What to differentiate: per-parameter activities and the calling-convention facts we need.

`DiffSpec` is everything the synthesizers know about the outside world. It is built by the
front end (the Numba bridge, or a C front end) and contains no Numba objects.

Derivative signature (both modes), Numba's ABI: `i32 @name(ptr retptr, ptr excinfo, ...)`
followed, for every primal parameter in order, by its primal LLVM arguments and then, when
it is dup/dupnoneed, by its shadow's arguments; in vector forward mode (width k > 1) a
shadow is an array with a leading axis of length k, and a float return's k tangents go to
one extra trailing 1-D array argument. The scalar results (primal value, gradients of active
parameters, tangent) are stored as the fields of `ret_type` through `retptr`.

Returned tuples and arrays (`ret_leaves`): in reverse mode the derivative takes, after the
parameters, the adjoint of every active leaf of the result (a float for a float leaf, an
exploded array for an array leaf); in forward mode the tangent of the whole result (arrays
replaced by their shadow arrays) follows the primal value in `ret_type`.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from ..ir.types import Type
from ..known.array_layout import DATA, exploded_count


class Activity(enum.Enum):
    CONST = "const"
    DUP = "dup"
    ACTIVE = "active"
    DUPNONEED = "dupnoneed"

    @property
    def has_shadow(self) -> bool:
        return self in (Activity.DUP, Activity.DUPNONEED)

    @property
    def is_differentiated(self) -> bool:
        return self is not Activity.CONST



@dataclass(frozen=True, slots=True)
class ParamSpec:
    name: str
    activity: Activity
    args: tuple[int, ...]          # indices of the primal's LLVM arguments for this parameter
    ndim: int | None = None        # array rank; None for a scalar
    dtype: Type | None = None      # array element type, when the front end knows it
    source: str | None = None      # "file:line" of the definition, for diagnostics

    @property
    def is_array(self) -> bool:
        return self.ndim is not None

    @property
    def data_arg(self) -> int:
        assert self.ndim is not None
        return self.args[DATA]

    def shadow_arg_count(self, width: int) -> int:
        if not self.activity.has_shadow:
            return 0
        if width == 1:
            return len(self.args)
        return exploded_count((self.ndim or 0) + 1)


@dataclass(frozen=True, slots=True)
class ReturnLeaf:
    """A differentiable part of the returned value: a float, or a float array (`ndim` set),
    at index path `path` inside the return slot's type (`()`: the whole slot)."""
    path: tuple[int, ...]
    type: Type                     # the float type, or the array's element type
    ndim: int | None = None
    label: str = "d_ret"           # how the user passes its adjoint (for error messages)

    @property
    def is_array(self) -> bool:
        return self.ndim is not None


@dataclass(frozen=True, slots=True)
class SplitSpec:
    """Split mode: names of the forward and reverse halves, and the id their state carries
    (the front end checks a state is used with the derivative that made it). `callee`: the
    halves of a callee that is not inlined (see callees.py), internal to their caller, which
    drops the state after the reverse half ran (its destructor releases what the reverse
    would have, when the caller leaves without it: a raise). `raw_state`: the state is a raw
    buffer (no owner, no destructor), with `reused_state`: taken from a slot the caller parks
    it in after the reverse half (a recomputed callee's, whose halves run once per iteration
    of its caller's reverse).
    `unchanged`: the parameters (positions in `params`) whose memory the caller promises not
    to change between the halves, which the reverse half reads again; what it reads from other
    argument memory is kept (`split_inputs.py`). None: no argument memory changes (a callee's
    halves handed none that may, whose caller checks the rest: `reverse/callees.py`)."""
    forward: str
    reverse: str
    ident: int
    raw_state: bool = False
    reused_state: bool = False
    unchanged: frozenset[int] | None = frozenset()
    callee: bool = False


@dataclass(frozen=True, slots=True)
class DiffSpec:
    primal: str                      # name of the primal function in the module
    name: str                        # symbol of the derivative to create
    mode: str                        # "forward" | "reverse"
    params: tuple[ParamSpec, ...]
    ret: Activity                    # activity of the primal's return value
    ret_type: Type | None            # retptr pointee of the derivative (None: no results)
    width: int = 1
    return_primal: bool = False      # reverse mode: also return the primal value
    retptr: int = 0                  # primal argument indices of the return slot / excinfo
    excinfo: int = 1
    ret_slot: Type | None = None     # the primal's return slot type (None: from its stores)
    ret_leaves: tuple[ReturnLeaf, ...] | None = None   # active parts (None: a float return
                                                       # when `ret` is differentiated)
    ret_arrays: tuple[tuple[int, ...], ...] = ()   # paths of every array in the return
                                                   # value (released when it is dropped)
    split: SplitSpec | None = None   # reverse mode: cut into forward and reverse halves
    noalias_arrays: bool = False     # every call guarantees that an array argument (primal or
                                     # shadow) written overlaps no other array argument
    vector_math: frozenset[str] = frozenset()   # scalar math callees the linked derivative
                                     # calls libmvec for in vectorised loops (`vector_math`)
    strong_zero: bool = False        # a zero tangent/adjoint times an infinite or NaN partial
                                     # gives 0 (`common.zero_guard`), in callees too

    def param_of_arg(self, index: int) -> ParamSpec | None:
        for p in self.params:
            if index in p.args:
                return p
        return None
