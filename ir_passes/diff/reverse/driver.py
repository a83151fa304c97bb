"""Reverse mode: augmented forward pass, then the reverse pass, in one function.

Layout of the derivative:
  entry        allocas (return slot and its shadow, adjoints, tape, loop counters)
  forward      a clone of the primal; loops get a counter; blocks with several predecessors
               record which one was taken; blocks push the values their reverse needs
  RE           reached from every normal return: seeds the return adjoint (1.0 for a float
               return, `d_ret` for returned tuples and arrays), then jumps to the reverse of
               the block that returned
  B.rev        one per primal block: pops its tape frame, runs the adjoints of its
               instructions backwards, then continues with the reverse of the predecessor
               it was entered from (recorded, or `counter == 0` for loop headers); phi
               adjoints move to their incoming values on those edges
  done         packs results (primal value, gradients of active scalars), frees the tape

Split mode cuts this function in two at the reverse entry (`split.py`).

A reverse loop runs its primal loop's iterations backwards: entering it from an exit stores
the trip counter, each back edge decrements it, and induction variables are rebuilt from it.
Adjoints live in allocas that LLVM promotes to registers. Values the reverse needs are
classified by `ReversePlan` (direct / iv / recompute / tape).

The parts: `state.py` (analyses and shared maps), `augmented.py` (forward pass),
`control.py` (reverse entry, blocks, edges, done), `adjoints.py` (adjoint slots and
instruction adjoints), `availability.py` (primal values and shadows in a reverse block).
"""
from __future__ import annotations

from typing import Callable

from ...ir.builder import Builder
from ...ir.values import Function, Module
from ...subtracted_reductions import negate_subtracted_adjoints
from ..spec import DiffSpec
from .adjoints import Adjoints
from .augmented import AugmentedForward
from .availability import Availability
from .control import ReverseControl
from .presize import presized_loops, reserve_tapes, unchecked_blocks
from .retained import Retained
from .parked_shadows import emit_release_all, release_symbol
from .split import split_reverse
from .unreversed import release_unreversed
from .state import ReverseState


def synthesize_reverse(module: Module, spec: DiffSpec,
                       observe: Callable[[Retained], None] | None = None) -> Function:
    """Add the reverse-mode derivative described by `spec` to `module` and return it.

    `observe`, when given, hears every decision about a value the reverse pass needs.
    """
    st = ReverseState(module, spec, observe or (lambda event: None))
    forward = AugmentedForward(st)
    avail = Availability(st)
    st.synthesize = lambda callee: synthesize_reverse(module, callee)
    control = ReverseControl(st, avail, Adjoints(st, avail))
    for block in st.order:
        forward.block(block)
    forward.fill_phis()
    control.entry()
    for block in st.order:
        if block in st.rev:
            control.block(block)
    avail.share_carried()
    st.tape.fit([[v.type for v, _ in frame] for frame in st.frames.values()])
    control.pop_frames()
    control.finish()
    st.tables.finish()
    first = st.fwd[st.primal.entry]          # pushes split blocks: st.fwd moves to the tails
    presized = presized_loops(st)
    unchecked = unchecked_blocks(st, presized)
    for block in st.order:
        if st.frames.get(block):
            forward.push_frame(block, checked=block not in unchecked)
        if st.owned_pushes.get(block):
            forward.push_owned(block)
    reserve_tapes(st, presized)
    release_unreversed(st)
    Builder(st.entry).br(first)
    negate_subtracted_adjoints(st.fn)
    if spec.split is not None:
        split = spec.split
        forward, reverse = split_reverse(module, st, (split.forward, split.reverse),
                                         split.ident)
        module.add_function(forward)
        module.add_function(reverse)
        if not split.callee:         # a front end's halves (a callee's are internal)
            emit_release_all(module, release_symbol(forward.name))   # R's names its destructor
        return reverse
    module.add_function(st.fn)
    emit_release_all(module, release_symbol(st.fn.name))
    return st.fn


__all__ = ["synthesize_reverse"]
