"""Pre-sized tapes: a loop whose trip count is known when it is entered reserves its tape
once in its preheader, so each push inside it is plain stores (no capacity check, no call to
the grow function), which lets LLVM vectorise the forward sweep.

Only loops whose pushing blocks are all directly in them (no pushes in loops nested inside)
qualify: each such block pushes at most once per iteration, so `trips * frame bytes` is an
upper bound of what the loop pushes (see `trips.py`)."""
from __future__ import annotations

from ...analysis.cfg import Loop
from ...ir.builder import Builder
from ...ir.split import retarget_phis
from ...ir.types import I64
from ...ir.values import Block, const_int
from .state import ReverseState
from .tape import frame_layout
from .trips import TripCount, emit_trip_count, entry_trip_count


def presized_loops(st: ReverseState) -> dict[Loop, TripCount]:
    """The loops whose pushes can be unchecked, with their trip counts."""
    out: dict[Loop, TripCount] = {}
    for loop in st.plan.loops:
        pushing = [b for b in loop.blocks if st.frames.get(b) and b in st.fwd]
        if not pushing or any(st.plan.loop_of[b] is not loop for b in pushing):
            continue
        tc = entry_trip_count(st.plan, loop)
        if tc is not None and st.plan.preheader(loop) in st.fwd:
            out[loop] = tc
    return out


def unchecked_blocks(st: ReverseState, loops: dict[Loop, TripCount]) -> set[Block]:
    return {b for loop in loops for b in loop.blocks if st.frames.get(b)}


def reserve_tapes(st: ReverseState, loops: dict[Loop, TripCount]) -> None:
    """At the end of each pre-sized loop's forward preheader: reserve trips * frame bytes."""
    for loop, tc in loops.items():
        pre = st.plan.preheader(loop)
        fblock = st.fwd[pre]
        assert fblock.terminator is not None
        b = Builder(fblock)
        b.position_before(fblock.terminator)
        trips = emit_trip_count(b, tc, st.map(tc.start), st.map(tc.bound))
        frame = sum(frame_layout([v.type for v, _ in st.frames[blk]])[1]
                    for blk in unchecked_blocks(st, {loop: tc}))
        need = b.mul(trips, const_int(I64, frame))
        cont = st.tape.reserve(fblock, need)
        retarget_phis(fblock, cont)
        st.fwd[pre] = cont
