"""Calls that leave out trailing parameters with defaults (API.md, "Options").

`f(k, r, v, tol=1e-8)` may be called as `f(k, r, v)`; so may its derivatives (every mode)
and helpers. Their dispatchers take every argument (defaulting to None, so that a short call
reaches the generated wrapper); `fill` reads which arguments a call gave (the types before
the first omitted one) and which trailing extras (`d_ret`, `hvp`'s `v`, a tape) follow them,
and writes the wrapper's first lines: each extra bound to its own name, each omitted
parameter bound to its default (a constant of the wrapper, typed as Numba types the value).
The rest of the wrapper, and the derivative, then see a complete call.

Activities: a parameter left out is "const". One marked "active" or "dup" (or named by a
helper's `argnums`) must be passed: what the derivative takes and returns depends on it, so
leaving it out is an `ArgumentError` naming it. (`parse_spec` also lets the activities stop
before trailing parameters with defaults, which are then "const".)
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

import numba
from numba import types

from ir_passes.errors import ArgumentError

__all__ = ["Filled", "Slots", "default_scope", "fill", "given_prefix", "is_omitted",
           "parameter_defaults"]


def parameter_defaults(py_func) -> dict[int, object]:
    """Parameter index -> default value, for the parameters of `py_func` that have one (none
    for the wrappers enzyme_py generates: theirs default to None only so that a short call
    reaches them, `njit_generated`)."""
    if getattr(py_func, "_enzyme_generated", False):
        return {}
    params = inspect.signature(py_func).parameters.values()
    return {i: p.default for i, p in enumerate(params) if p.default is not p.empty}


def default_scope(defaults: dict[int, object]) -> dict[str, object]:
    """The wrapper's globals holding the defaults (Numba freezes them as constants)."""
    return {_default_name(i): value for i, value in defaults.items()}


def _default_name(i: int) -> str:
    return f"__default{i}"


def is_omitted(t) -> bool:
    """An argument the call left out (Numba types it `Omitted`)."""
    return t is None or isinstance(t, types.Omitted)


def given_prefix(argtypes, names: list[str], what: str) -> list[tuple[str, object]]:
    """(name, type) of the arguments a call gave: those before the first omitted one (an
    argument given after an omitted one, by keyword, is an ArgumentError)."""
    given = []
    for name, t in zip(names, argtypes):
        if is_omitted(t):
            break
        given.append((name, t))
    later = [n for n, t in zip(names[len(given):], argtypes[len(given):]) if not is_omitted(t)]
    if later:
        raise ArgumentError(f"{what}: {later[0]} is given but an argument before it is not: "
                            "pass the arguments positionally, in order")
    return given


@dataclass(frozen=True)
class Slots:
    """A wrapper's parameters: per slot, the parameter of `f` it belongs to (a "dup"
    parameter has two slots: value, shadow); `labels` name the slots in messages."""
    owners: tuple[int, ...]
    labels: tuple[str, ...]
    params: tuple[str, ...]                 # f's parameter names
    defaults: dict                          # parameter index -> default
    must_pass: dict    # parameter index -> (why, alternative): "marked 'active'", "make it
    #                    'const' to use its default"

    @property
    def required(self) -> int:
        """How many slots every call gives: those before the first parameter with a
        default."""
        return next((s for s, p in enumerate(self.owners) if p in self.defaults),
                    len(self.owners))


@dataclass(frozen=True)
class Filled:
    types: tuple            # one per slot, an omitted parameter typed as its default
    extras: tuple           # (name, type) of each trailing extra
    lines: tuple[str, ...]  # the wrapper's first lines


def fill(slots: Slots, given: list[tuple[str, object]], extra_names: list[str],
         what: str) -> Filled:
    """The complete call when `given` (name, type) holds the slots given, in order, and then
    one trailing extra per `extra_names` (bound to those names)."""
    n = len(given) - len(extra_names)
    owners, count = slots.owners, len(slots.owners)
    if n < 0 or n > count:
        raise ArgumentError(f"{what} takes {count} arguments ({', '.join(slots.labels)})"
                            f"{' and then ' + ', '.join(extra_names) if extra_names else ''}"
                            f", got {len(given)}")
    lines = [f"    {target} = {name}" for (name, _), target in zip(given[n:], extra_names)
             if name != target]
    lines += [f"    a{s} = {name}" for s, (name, _) in enumerate(given[:n]) if name != f"a{s}"]
    filled = [t for _, t in given[:n]]
    for s in range(n, count):
        p = owners[s]
        if p not in slots.defaults or (s > 0 and owners[s - 1] == p):
            missing = ", ".join(slots.labels[n:])
            raise ArgumentError(f"{what} expected {count} arguments ({', '.join(slots.labels)}"
                                f"), got {n}: missing {missing}")
        if p in slots.must_pass:
            why, alternative = slots.must_pass[p]
            raise ArgumentError(f"{what}: {slots.params[p]} was left out (its default is "
                                f"{slots.defaults[p]!r}), but it is {why}: pass it, or "
                                f"{alternative}")
        lines.append(f"    a{s} = {_default_name(p)}")
        filled.append(numba.typeof(slots.defaults[p]))
    return Filled(tuple(filled), tuple((name, t) for (_, t), name in
                                       zip(given[n:], extra_names)), tuple(lines))
