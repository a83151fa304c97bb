"""Kernels over a list of floats, each in two kinds written to the same shape: a reflected list
(`[]`: NRT_MemInfo_new_varsize_dtor / NRT_MemInfo_varsize_realloc storage) and a
`numba.typed.List` (rewritten onto that storage: enzyme_py/numba_bridge/typed_list.py).
Tests parametrize over both with ``LIST_KINDS`` ids; the line marked "list made here" is the
one refusals name."""
from __future__ import annotations

from numba import typed, types

from tests.support.kernel import kernel


def first_last(x):
    out = []  # list made here
    for v in x:
        out.append(v * v)
    return out[0] + out[-1]


def typed_first_last(x):
    out = typed.List.empty_list(types.float64)  # list made here
    for v in x:
        out.append(v * v)
    return out[0] + out[-1]


def pop_insert(x):
    """pop from the end and from the middle (the items move down: llvm.memmove) and insert."""
    out = []
    for v in x:
        out.append(v * 1.5)
    a = out.pop()
    out.insert(2, a * 3.0)
    out.insert(0, out[4] * out[1])
    out[0] = out[0] * out[5]
    for _ in range(6):
        a += out.pop(1) * out[1]
    for v in out:
        a += v * v
    return a


def typed_pop_insert(x):
    out = typed.List.empty_list(types.float64)
    for v in x:
        out.append(v * 1.5)
    a = out.pop()
    out.insert(2, a * 3.0)
    out.insert(0, out[4] * out[1])
    out[0] = out[0] * out[5]
    for _ in range(6):
        a += out.pop(1) * out[1]
    for v in out:
        a += v * v
    return a




LIST_KINDS = ("list", "typed")
FIRST_LAST = dict(zip(LIST_KINDS, (first_last, typed_first_last)))


def _floats(rng):
    return (rng.uniform(0.3, 1.1, 14),)


POP_INSERT = {kind: kernel(f"{kind}_pop_insert", fn, _floats)
              for kind, fn in zip(LIST_KINDS, (pop_insert, typed_pop_insert))}
