"""Returned tuples and arrays at the Numba boundary (API.md, "Functions that return arrays
or tuples").

Decides, from the primal's Numba return type and the activity specification: the return
slot's layout and its differentiated leaves for `DiffSpec`; how the wrapper passes `d_ret`
(reverse mode) to the derivative; and that something is differentiated at all.
"""
from __future__ import annotations

from numba import types

from ir_passes.api import Activity, ReturnLeaf
from ir_passes.errors import ActivityError
from ir_passes.ir.parser import parse_type
from ir_passes.ir.types import DOUBLE, FLOAT

from .activities import (ActivitySpec, element_activities, ret_words, return_activity,
                         returned_elements)
from .numba_bridge.link import llvm_abi


def return_fields(spec: ActivitySpec, restype) -> dict:
    """The `DiffSpec` fields describing the primal's return value."""
    fields: dict = {"ret_arrays": _array_paths(restype, ())}
    acts = element_activities(spec, restype)
    if acts is None:
        if _split_float_result(spec, restype):
            fields["ret_slot"] = parse_type(llvm_abi((), restype)[1])
            fields["ret_leaves"] = (ReturnLeaf((), _llvm_float(restype), None, "d_ret"),)
        return fields
    if spec.mode == "forward" and any(a.is_differentiated for a in acts):
        for t in returned_elements(restype):
            if not isinstance(t, (types.Number, types.Boolean, types.Array)):
                raise ActivityError(f"forward mode cannot form the tangent of a returned {t} "
                                    f"(in {restype}): return numbers and arrays, or use "
                                    "ret='const'")
    fields["ret_slot"] = parse_type(llvm_abi((), restype)[1])
    single = isinstance(restype, types.Array)
    parts = [(i, t) for i, (t, a) in enumerate(zip(returned_elements(restype), acts))
             if a.is_differentiated]
    leaves = []
    for k, (i, t) in enumerate(parts):
        label = "d_ret" if len(parts) == 1 else f"d_ret[{k}]"
        path = () if single else (i,)
        if isinstance(t, types.Array):
            leaves.append(ReturnLeaf(path, _llvm_float(t.dtype), t.ndim, label))
        else:
            leaves.append(ReturnLeaf(path, _llvm_float(t), None, label))
    fields["ret_leaves"] = tuple(leaves)
    return fields


def _array_paths(t, path: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    if isinstance(t, types.Array):
        return (path,)
    if isinstance(t, types.BaseTuple):
        return tuple(p for i, e in enumerate(t.types) for p in _array_paths(e, path + (i,)))
    return ()


def _llvm_float(t):
    return DOUBLE if t.bitwidth == 64 else FLOAT


def _split_float_result(spec: ActivitySpec, restype) -> bool:
    """Split mode: the reverse half takes a float result's adjoint as `d_ret`."""
    return spec.split and isinstance(restype, types.Float) and \
        return_activity(spec, restype).is_differentiated


def _active_parts(spec: ActivitySpec, restype) -> list:
    acts = element_activities(spec, restype)
    if acts is None:
        return [restype] if _split_float_result(spec, restype) else []
    return [t for t, a in zip(returned_elements(restype), acts) if a.is_differentiated]


def takes_d_ret(spec: ActivitySpec, restype) -> bool:
    """Whether the reverse derivative takes `d_ret` for a function returning `restype`."""
    return spec.mode == "reverse" and bool(_active_parts(spec, restype))


def d_ret_arguments(spec: ActivitySpec, restype, dret_type, name: str,
                    fname: str) -> list[tuple[str, bool]]:
    """Reverse mode: the expressions the wrapper passes to the derivative for `d_ret` (of
    type `dret_type`, `none` when omitted), one per differentiated part of the result, each
    with whether it is an array."""
    parts = _active_parts(spec, restype) if spec.mode == "reverse" else []
    omitted = dret_type is None or isinstance(dret_type, (types.NoneType, types.Omitted))
    if not parts:
        if not omitted:
            raise ActivityError(f"d_ret was given, but {fname} returns {restype}: d_ret (the "
                                "adjoint of the result) is only taken for returned arrays and "
                                "tuples with active elements")
        return []
    expected = _describe(parts)
    if omitted:
        raise ActivityError(f"missing d_ret: {fname} returns {restype}; pass the adjoint of "
                            f"the result as the last argument ({expected})")
    if len(parts) == 1 and not isinstance(dret_type, types.BaseTuple):
        given, exprs = [dret_type], [name]
    elif isinstance(dret_type, types.BaseTuple) and len(dret_type.types) == len(parts):
        given, exprs = list(dret_type.types), [f"{name}[{k}]" for k in range(len(parts))]
    else:
        raise ActivityError(f"d_ret has type {dret_type}; expected {expected}")
    out = []
    for part, got, expr in zip(parts, given, exprs):
        if isinstance(part, types.Array):
            if not (isinstance(got, types.Array) and got.ndim == part.ndim
                    and got.dtype == part.dtype):
                raise ActivityError(f"d_ret has type {dret_type}; expected {expected}")
            if not got.mutable:
                raise ActivityError(f"{expr} is read-only: the derivative consumes it (leaves it "
                                    "zeroed); pass a writable copy")
            out.append((expr, True))
        elif isinstance(got, (types.Float, types.Integer)):
            out.append((f"np.{part}({expr})", False))
        else:
            raise ActivityError(f"d_ret has type {dret_type}; expected {expected}")
    return out


def _describe(parts: list) -> str:
    names = [f"a {p.dtype} {p.ndim}-D array shaped like the returned one"
             if isinstance(p, types.Array) else "a float" for p in parts]
    if len(names) == 1:
        return names[0]
    return f"a tuple of {len(names)}: " + ", ".join(names) + " (one per active element)"


def check_differentiates_something(spec: ActivitySpec, cap, ret_act: Activity,
                                   fname: str) -> None:
    """ActivityError when no output is differentiated: the return value is const and no
    array is marked dup/dupnoneed. (Whether a dup array is written is not asked of the IR:
    the optimiser may remove a write, such as `a[i] = a[i]`, that the user wrote.)"""
    if ret_act.is_differentiated or any(
            act.has_shadow and isinstance(layout.numba_type, types.Array)
            for layout, act in zip(cap.params, spec.activities)):
        return
    if cap.restype == types.none:
        what = "returns nothing"
    elif spec.ret is not None and not isinstance(spec.ret, tuple) and not \
            spec.ret.is_differentiated:
        what = "has a const return value (ret='const')"
    elif isinstance(spec.ret, tuple):
        what = f"has only const return values (ret={ret_words(spec.ret)})"
    else:
        what = f"returns {cap.restype}, not a float (array)"
    raise ActivityError(f"nothing would be differentiated: {fname} {what} and has no array "
                        "marked 'dup'; differentiate its return value or mark an array it "
                        "writes 'dup'")
