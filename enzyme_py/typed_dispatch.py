"""Numba dispatchers whose body is generated per argument types, and what the helpers share.

`typed_dispatcher(name, slots, make_source)` returns an njit dispatcher whose body, for each
set of argument types (first call from Python or typing inside `@njit` code), is the
function whose source `make_source(argtypes)` writes; `make_source` may derive derivatives
(`derive_diff`) for those types. The helpers (`grad`, `jacobian`, ...) are built on it.
"""
from __future__ import annotations

from types import FunctionType

import numpy as np
from numba import types

from ir_passes.errors import ActivityError

from .api import as_dispatcher
from .call_boundary import guard_first_calls
from .numba_bridge.link import njit_generated
from .omitted import Slots, default_scope, fill, given_prefix

def primal_of(f):
    """`f` as a dispatcher (`api.as_dispatcher`), the same one for the same plain function
    (kept on the function), so that helpers made again for it find its derivatives `kept`."""
    if isinstance(f, FunctionType):
        if "_enzyme_primal" not in f.__dict__:
            f._enzyme_primal = as_dispatcher(f)
        return f._enzyme_primal
    return as_dispatcher(f)


def typed_dispatcher(name: str, slots: Slots, make_source, extras: tuple[str, ...] = ()):
    """An njit dispatcher taking the parameters `slots` describes, then `extras` (labels
    of trailing arguments such as `hvp`'s `v`), whose body for argument types `t` (types
    unliteral, computed once per `t`) is the function `make_source(t)` defines (it returns
    the source of `impl` and its globals besides `np`), compiled directly (`njit_generated`).
    A call may leave out trailing parameters with defaults (`omitted.fill`): `t` then holds
    their defaults' types and `impl` starts by binding them."""
    labels = list(slots.labels) + list(extras)
    params = [f"a{i}" for i in range(len(labels))]
    impls: dict = {}

    def impl_for(argtypes: tuple):
        given = given_prefix(argtypes, params, name)
        filled = fill(slots, given, params[len(slots.labels):], name)
        key = tuple(types.unliteral(t) for t in filled.types + tuple(t for _, t in
                                                                     filled.extras))
        if (key, filled.lines) not in impls:
            source, namespace = make_source(key)
            head, body = source.split("\n", 1)
            impls[key, filled.lines] = compile_impl("\n".join([head, *filled.lines, body]),
                                                    {**namespace,
                                                     **default_scope(slots.defaults)})
        return impls[key, filled.lines]

    dispatcher = njit_generated(params, False, impl_for, name)
    guard_first_calls(dispatcher, name, labels, slots.required + len(extras))
    return dispatcher


def parameter_slots(names: list[str], defaults: dict, nums: tuple[int, ...],
                    helper: str) -> Slots:
    """The slots of a helper's dispatcher: one per parameter of the function; the
    differentiated ones (`nums`) must be passed."""
    must_pass = {i: (f"differentiated ({helper}'s argnums)",
                     "differentiate with respect to other parameters") for i in nums}
    return Slots(tuple(range(len(names))), tuple(names), tuple(names), defaults, must_pass)


def kept(primal, key: tuple, make):
    """`make()`, computed once per `key` and kept on the dispatcher `primal`: helpers made
    again for the same function reuse its compiled derivatives."""
    store = primal.__dict__.setdefault("_enzyme_helpers", {})
    if key not in store:
        store[key] = make()
    return store[key]


def compile_impl(source: str, namespace: dict):
    """The function `impl` defined by `source`, with `np` and `namespace` as its globals."""
    scope = {"np": np, **namespace}
    exec(compile(source, "<enzyme_py helper>", "exec"), scope)
    return scope["impl"]


def float_kind(t) -> str | None:
    """"float" (a float scalar), "array" (an array of floats) or None (not differentiable)."""
    if isinstance(t, types.Float):
        return "float"
    if isinstance(t, types.Array) and isinstance(t.dtype, types.Float):
        return "array"
    return None


def normalize_argnums(helper: str, fname: str, names: list[str], argnums,
                      single_only: bool = False) -> tuple[int, ...]:
    """`argnums` (an int or a tuple of ints) as a tuple of parameter indices, checked."""
    where = f"{helper}({fname}): argnums={argnums!r}"
    params = f"{fname} has parameters ({', '.join(names)})"
    if _is_int(argnums):
        nums = (argnums,)
    elif isinstance(argnums, tuple) and not single_only:
        nums = argnums
        if not nums or not all(_is_int(i) for i in nums):
            raise ActivityError(f"{where}: a tuple of argnums must hold at least one int")
    else:
        need = "an int" if single_only else "an int or a tuple of ints"
        raise ActivityError(f"{where}: argnums must be {need}")
    out = []
    for i in nums:
        if not -len(names) <= i < len(names):
            raise ActivityError(f"{where}: {i} is out of range; {params}")
        out.append(i % len(names))
    if len(set(out)) != len(out):
        raise ActivityError(f"{where}: a parameter is named twice; {params}")
    return tuple(out)


def _is_int(i) -> bool:
    return isinstance(i, (int, np.integer)) and not isinstance(i, bool)


def activities_for(helper: str, fname: str, names: list[str], argtypes: tuple,
                   nums: tuple[int, ...], mode: str) -> tuple[str, ...]:
    """One activity per parameter: the `nums` differentiated ("active" floats in reverse
    mode, "dup" otherwise), the others "const"."""
    acts = []
    for i, (name, t) in enumerate(zip(names, argtypes)):
        if i not in nums:
            acts.append("const")
            continue
        kind = float_kind(t)
        if kind is None:
            raise ActivityError(
                f"{helper}({fname}): cannot differentiate with respect to '{name}' (argnums "
                f"{i}), which is {t}: only float scalars and arrays of floats can be")
        acts.append("active" if kind == "float" and mode == "reverse" else "dup")
    return tuple(acts)


def return_type(primal, argtypes: tuple):
    """The Numba type `primal` returns for `argtypes` (compiling it if needed)."""
    primal.compile(argtypes)
    return primal.overloads[tuple(argtypes)].signature.return_type


def require_float_return(helper: str, fname: str, primal, argtypes: tuple, hint: str):
    restype = return_type(primal, argtypes)
    if not isinstance(restype, types.Float):
        raise ActivityError(f"{helper}({fname}) needs {fname} to return a float scalar; it "
                            f"returns {restype} for arguments ({', '.join(map(str, argtypes))})"
                            f": {hint}")
    return restype


def contiguous_line(var: str, arg: str, t) -> str:
    """A line binding `var` to `arg`, copied to C order if it is an array in another layout
    (the derivative's shadows are allocated C-contiguous)."""
    if isinstance(t, types.Array) and t.layout != "C":
        return f"    {var} = np.ascontiguousarray({arg})"
    return f"    {var} = {arg}"


__all__ = ["activities_for", "compile_impl", "contiguous_line", "float_kind", "kept",
           "normalize_argnums", "parameter_slots", "primal_of", "require_float_return",
           "return_type", "typed_dispatcher"]
