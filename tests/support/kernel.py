"""How a test kernel is described.

A ``Kernel`` is a plain Python function (Numba-compatible; tests ``numba.njit`` it with whatever
options they exercise) plus a deterministic argument factory and the facts a derivative
checker needs: which array arguments it writes, which float arguments are constant data, and
how accurate finite differences are at the points ``make_args`` produces.

Differentiable inputs are inferred from the arguments themselves (see ``support.arrays``):
every float scalar and every float array is differentiable unless its index is in ``const``;
integers, booleans and integer arrays are always const.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

#: Every tag a kernel may carry, with its meaning.
TAGS: dict[str, str] = {
    "scalar": "only scalar arguments (plus integer sizes)",
    "branch": "if/else (or a conditional expression) on float comparisons",
    "loop": "counted for-loop",
    "while": "while loop with a data-dependent exit",
    "nested-loop": "a loop inside a loop (possibly triangular)",
    "break": "break out of a loop",
    "continue": "continue inside a loop",
    "early-return": "return from inside a branch or loop before the end",
    "array1d": "1-D array argument(s)",
    "array2d": "2-D array argument(s)",
    "strided": "make_args passes non-contiguous views (a[::2], A[:, 1:], A.T, a[::-1])",
    "output": "writes results into array argument(s) listed in `outputs`",
    "inplace-overwrite": "overwrites values of an array it also reads (needs caching in reverse)",
    "alloc": "allocates an array inside the function (np.empty / .copy())",
    "const-array": "reads a float array that is marked const (weights, data)",
    "math": "calls math-library functions",
    "int-power": "x**n with an integer exponent",
    "minmax": "min / max builtins",
    "float32": "float32 data and arithmetic",
    "callee": "calls another @numba.njit function",
    "int-arg": "takes integer parameters (sizes, iteration counts), always const",
    "realistic": "a small but real numerical program",
    "view": "reshapes, flattens or broadcasts an array (an array struct kept in memory)",
}


@dataclass(frozen=True)
class Kernel:
    """A test kernel.

    name:       unique identifier (used as the pytest id and as the derivative's name suffix).
    fn:         the plain Python function (do not pre-jit it; helpers it calls are @njit).
    make_args:  ``rng -> tuple`` of fresh arguments (new arrays on every call, so callers may
                mutate them). Deterministic given the generator's state.
    outputs:    indices of array arguments the function writes (pure outputs and in-place).
    const:      indices of float arguments to treat as constant data (no derivative).
    tags:       subset of ``TAGS``.
    fd_rtol / fd_atol: tolerance when comparing a derivative against finite differences;
                ``None`` means the checker's default for the kernel's float type.
    fd_step:    relative finite-difference step (``h_i = fd_step * max(1, |x_i|)``); ``None``
                means the default for the float type.
    fd_order:   2 (central) or 4 (five-point); ``None`` means the default for the float type.
    doc:        one line saying what the kernel computes.
    """

    name: str
    fn: Callable[..., Any]
    make_args: Callable[[np.random.Generator], tuple]
    outputs: tuple[int, ...] = ()
    const: tuple[int, ...] = ()
    tags: frozenset[str] = field(default_factory=frozenset)
    fd_rtol: float | None = None
    fd_atol: float | None = None
    fd_step: float | None = None
    fd_order: int | None = None
    doc: str = ""

    def __post_init__(self) -> None:
        unknown = set(self.tags) - TAGS.keys()
        if unknown:
            raise ValueError(f"kernel {self.name}: unknown tags {sorted(unknown)}")
        if self.fd_order not in (None, 2, 4):
            raise ValueError(f"kernel {self.name}: fd_order must be 2 or 4")

    def args(self, seed: int = 0) -> tuple:
        """Fresh arguments from ``np.random.default_rng(seed)``."""
        return self.make_args(np.random.default_rng(seed))

    @property
    def is_float32(self) -> bool:
        return "float32" in self.tags

    def __repr__(self) -> str:  # short, for pytest ids and messages
        return f"Kernel({self.name})"


def kernel(name: str, fn: Callable[..., Any], make_args: Callable[[np.random.Generator], tuple],
           *tags: str, outputs: tuple[int, ...] = (), const: tuple[int, ...] = (),
           **options: Any) -> Kernel:
    """Shorthand constructor: ``kernel("dot", dot, args, "loop", "array1d")``."""
    return Kernel(name=name, fn=fn, make_args=make_args, outputs=tuple(outputs),
                  const=tuple(const), tags=frozenset(tags), doc=(fn.__doc__ or "").strip(),
                  **options)
