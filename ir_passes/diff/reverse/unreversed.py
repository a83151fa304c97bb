"""What a derivative releases when it leaves without running its reverse pass: a raise in its
forward pass (the primal's exception, a `d_ret` of the wrong shape), or, in split mode, a
state that dies unreversed.

The reverse pass releases what the forward pass took for it: the temporaries kept between
calls and their shadows (parked in their slots again), the shadows of other temporaries (at
the reverse of their allocation), and the references that keep an array a call's reverse
reads alive (`kept.hold_until_reverse`). An exit that skips the reverse drops, so that they
do not leak on every raise (the next call allocates what a slot then lacks):
- outside split mode, the temporaries kept between calls and their shadows, and the
  temporaries run once per call held for reloads (`ReversePlan.live_arrays`), each taken
  so far in an entry stack slot (null until taken);
- everything on the owned list (a tape of owners, `state.owned`): in split mode, which the
  state's destructor drops too, and outside it when the primal allocates in loops or calls
  callees that are not inlined (the shadows of temporaries made in loops, those held for
  reloads, references held for calls reading them, the callees' states, whose destructor
  frees their tapes).
Not yet: in forward mode, the shadow of a temporary the primal leaks on a raise (Numba
releases no array on an exception) leaks with it; so does a reference the primal's IR takes
around a call that is not inlined (Numba's refprune keeps it when the callee may raise).
"""
from __future__ import annotations

from ...ir.builder import Builder, counted_loop
from ...ir.types import I64, PTR, VOID, FunctionType
from ...ir.values import Function, Module, Value, const_int
from ..shadows import release
from .state import ReverseState

RELEASE_LISTED = "enzyme_py.owned.release"


def release_unreversed(st: ReverseState) -> None:
    """At each exit that skips the reverse (`ReverseState.exit_unreversed`), before the tapes
    are released: drop what the module docstring lists."""
    for first_release in st.unreversed_exits:
        b = Builder()
        b.position_before(first_release)
        for slot in st.kept_owners:
            release(b, st.module, b.load(PTR, slot))
        if st.owned is not None:
            release_listed(b, st.module, b.load(PTR, st.owned.base), b.load(PTR, st.owned.top))


def release_listed(b: Builder, module: Module, base: Value, top: Value) -> None:
    """Drop one reference to each owner on the list between `base` and `top`."""
    b.call(_release_listed_function(module), [base, top], VOID)


def _release_listed_function(module: Module) -> Function:
    fn = module.functions.get(RELEASE_LISTED)
    if fn is not None and not fn.is_declaration:
        return fn
    fn = Function(RELEASE_LISTED, FunctionType(VOID, (PTR, PTR)), ["base", "top"],
                  linkage="internal")
    fn.fn_attrs = "noinline"
    base, top = fn.args
    b = Builder(fn.add_block("entry"))
    used = b.sub(b.cast("ptrtoint", top, I64), b.cast("ptrtoint", base, I64))
    counted_loop(b, b.binop("lshr", used, const_int(I64, 3)), lambda b, i: release(
        b, module, b.load(PTR, b.gep(PTR, base, [i]))))
    b.ret()
    module.add_function(fn)
    return fn


__all__ = ["release_listed", "release_unreversed"]
