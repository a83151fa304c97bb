"""The derivative's signature: which new arguments stand for which primal argument or shadow.

Shared by forward and reverse synthesis; the layout is documented in `spec.py`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ActivityError
from ..ir.types import I32, PTR, FunctionType, Type
from ..ir.values import Argument, Function
from ..known.array_layout import DATA, exploded_types, stride_args
from .spec import DiffSpec, ParamSpec


@dataclass
class Signature:
    fn: Function
    retptr: Argument
    excinfo: Argument
    primal_args: dict[Argument, Argument] = field(default_factory=dict)   # primal arg -> new arg
    shadow_args: dict[str, list[Argument]] = field(default_factory=dict)  # param name -> shadow
    tangent_out: list[Argument] = field(default_factory=list)  # width>1: trailing 1-D array
    ret_adjoints: list[list[Argument]] = field(default_factory=list)  # reverse: per ret leaf


def build_signature(primal: Function, spec: DiffSpec) -> Signature:
    types: list[Type] = [PTR, PTR]
    names: list[str | None] = ["retptr", "excinfo"]
    slots: list[tuple[str, object]] = []
    for p in spec.params:
        for i in p.args:
            arg = primal.args[i]
            types.append(arg.type)
            names.append(arg.name)
            slots.append(("primal", arg))
        for j, t in enumerate(_shadow_types(primal, p, spec.width)):
            types.append(t)
            names.append(f"{p.name}'" if j == 0 else f"{p.name}'.{j}")
            slots.append(("shadow", p.name))
    n_out = 0
    if spec.mode == "forward" and spec.width > 1 and spec.ret.is_differentiated:
        out_types = _array_types(1)
        types += out_types
        names += ["ret'"] + [f"ret'.{j}" for j in range(1, len(out_types))]
        n_out = len(out_types)
    leaf_args = _return_adjoint_types(spec)
    for k, group in enumerate(leaf_args):
        types += group
        names += [f"d_ret.{k}.{j}" for j in range(len(group))]
        n_out += len(group)
    fn = Function(spec.name, FunctionType(I32, tuple(types)), names)
    sig = Signature(fn, fn.args[0], fn.args[1])
    for arg, (kind, what) in zip(fn.args[2:len(fn.args) - n_out], slots):
        if kind == "primal":
            sig.primal_args[what] = arg  # type: ignore[index]
        else:
            sig.shadow_args.setdefault(what, []).append(arg)  # type: ignore[arg-type]
    trailing = list(fn.args[len(fn.args) - n_out:]) if n_out else []
    for group in leaf_args:
        sig.ret_adjoints.append(trailing[:len(group)])
        trailing = trailing[len(group):]
    sig.tangent_out = trailing
    sig.primal_args[primal.args[spec.retptr]] = sig.retptr
    sig.primal_args[primal.args[spec.excinfo]] = sig.excinfo
    if spec.noalias_arrays and spec.split is None:
        _mark_noalias(sig, primal, spec)
    return sig


def _mark_noalias(sig: Signature, primal: Function, spec: DiffSpec) -> None:
    """`noalias` on the data pointer of every array argument and array shadow.

    LLVM's `noalias` only constrains memory that is modified during the call: two read-only
    arrays may share memory; a written one must share none with any other argument, which is
    what the front end's call checks guarantee (`spec.noalias_arrays`). Not in split mode:
    the reverse half reaches shadows through pointers the forward half taped as well.
    """
    for p in spec.params:
        if p.is_array:
            sig.primal_args[primal.args[p.data_arg]].attrs = "noalias"
        shadow = sig.shadow_args.get(p.name, [])
        if p.activity.has_shadow and (p.is_array or spec.width > 1) and len(shadow) > DATA:
            shadow[DATA].attrs = "noalias"


def _return_adjoint_types(spec: DiffSpec) -> list[list[Type]]:
    """Reverse mode with explicit return leaves: the argument types of each leaf's d_ret."""
    if spec.mode != "reverse" or spec.ret_leaves is None or not spec.ret.is_differentiated:
        return []
    return [[leaf.type] if not leaf.is_array else _array_types(leaf.ndim)  # type: ignore[arg-type]
            for leaf in spec.ret_leaves]


def _shadow_types(primal: Function, p: ParamSpec, width: int) -> list[Type]:
    if not p.activity.has_shadow:
        return []
    if width == 1:
        return [primal.args[i].type for i in p.args]
    if not p.is_array and len(p.args) != 1:
        raise ActivityError(f"parameter '{p.name}': vector forward mode needs a float scalar or array")
    return _array_types((p.ndim or 0) + 1)


def _array_types(ndim: int) -> list[Type]:
    return exploded_types(ndim)


def lane_stride(args: list[Argument]) -> Argument:
    """Byte stride of the leading (lane) axis of an exploded array's argument list."""
    return stride_args(args)[0]
